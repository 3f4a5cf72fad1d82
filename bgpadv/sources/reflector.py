"""List+watch loops ("reflectors"): one thread per watched resource, each turning the API into `WatchEvent`s.

A reflector LISTs its resource in pages, then WATCHes from the list's resourceVersion with bookmarks, remembering
the newest resourceVersion it saw (bookmarks included):

- a stream that ends (server timeout, apiserver restart, cut connection) is resumed from that resourceVersion,
  without a new LIST;
- 410 Gone (an ERROR event or an HTTP 410) means the history is gone: it relists and diffs the fresh list against
  its cache, emitting the DELETED events it missed, and ADDED/MODIFIED for objects whose resourceVersion changed;
  the relist first waits a random delay up to `relist_spread` (per-node mode), so many instances that lost their
  history together do not list in lockstep;
- 404 for a resource that was never readable (the CRD is not installed, e.g. KubeVirt absent) counts as
  synced-and-empty: SYNCED is emitted so the service never waits for an absent kind, and it retries with backoff until
  the CRD appears;
- 404 or 403 for a resource that WAS readable (listed at least once) is fail static: its cache and the store's
  objects are kept (no event), the resource is *held* (a warning, `watch_restarts_total{reason="held-404"}` per
  attempt, the `resource_held` gauge), and it retries with backoff. Only when a LIST begun `hold_seconds` or more
  after the first refusal still answers 404/403 are its objects deleted (DELETED events, then SYNCED); the resource
  then counts as not installed. A successful LIST ends the hold (the usual relist diff);
- 429, 5xx and connection errors back off exponentially with jitter, then resume (or relist if no list succeeded).

`relist()` asks for a fresh LIST now (the controller's confirming LIST for held withdrawals, `bgpadv.safety.hold`): the
open watch is cut and the loop lists before it watches again. Events from a LIST carry `from_list`; SYNCED carries
`listed_at`, when that LIST began. A LIST answered 404/403 after a `relist()` also ends in SYNCED, so a confirmation
never waits for a resource that cannot be listed.

Nothing escapes the thread: every failure is logged on this module's logger and retried. A watch line that
cannot be decoded, or whose object nests deeper than `yamlsafe.MAX_DEPTH` (`json.loads` alone raises
RecursionError near depth 1000), is skipped with a warning and counted (`watch_line_skipped`, reasons
`undecodable` and `too-deep`); so is a listed object nested too deep, even one that makes its whole page too deep
for `json.loads` (`yamlsafe.loads_list_page`): one hostile object never makes a resource unlistable.

Why raw lines rather than `kubernetes.watch.Watch`: the reflector calls the official client's list functions with
`_preload_content=False` and decodes the JSON itself, for LIST pages and for watch lines. Core objects then come
back as the same camelCase dicts as custom objects (no OpenAPI model classes), a custom-resource watch event is
decoded once instead of three times (~2x faster, measured on a watch of custom-resource events), and the reflector
handles BOOKMARK and ERROR events itself, where `Watch` retries a 410 once with the same stale resourceVersion
before raising, and resumes dropped streams by itself in ways the caller cannot count or back off.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from bgpadv.core import yamlsafe
from bgpadv.core.resources import Resource
from bgpadv.core.views import View
from bgpadv.core.yamlsafe import MAX_DEPTH
from bgpadv.observe.observers import NullObserver, SourcesObserver
from bgpadv.sources import rest
from bgpadv.sources.decode.dispatch import decode, stored_key
from bgpadv.sources.decode.vmis import decode_migration

log = logging.getLogger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED", "SYNCED"]
_OBJECT_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change of one watched object, or SYNCED: `resource` finished a full list (or is not installed, which
    counts as synced and empty). SYNCED is emitted after the first list and again after every relist."""

    resource: Resource
    type: EventType
    obj: dict | None  # the watched object; None for SYNCED and for an event found by a (re)LIST (`key` says which)
    received_at: float  # time.monotonic() when the bytes carrying the event arrived
    object_wall_time: float | None = None  # newest usable timestamp inside the object (epoch seconds), for lag
    from_list: bool = False  # an ADDED/MODIFIED/DELETED found by diffing a (re)LIST against the cache, not watched
    listed_at: float | None = None  # SYNCED: time.monotonic() when the LIST it completes began
    view: View | None = None  # ADDED/MODIFIED from a reflector: the object decoded on its thread (the store keeps it)
    # the object's store key when the reflector knows it: an event found by a (re)LIST carries it instead of an
    # object, so a 100k LIST queues 100k small events, not 100k identity documents (~54 MiB, measured)
    key: tuple[str, str] | str | None = None

    def object_key(self) -> tuple[str, str] | str | None:
        """The store key of the event's object: `key`, else read from `obj`; None for SYNCED."""
        if self.key is not None:
            return self.key
        return self.resource.key(self.obj) if self.obj is not None else None


@dataclass(frozen=True, slots=True)
class ReflectorSettings:
    """How a reflector lists, watches and backs off. Times are seconds."""

    page_size: int = 500
    """LIST page size (`limit`); pages are a consistent snapshot, so a big list costs no extra consistency."""
    watch_timeout: int = 300
    """`timeoutSeconds` asked of the server: it ends the stream cleanly after this long and we resume from the
    last resourceVersion (no relist); keeps connections fresh through load balancers."""
    inactivity_timeout: float = 360.0
    """Read timeout on a watch stream: when no byte (event or bookmark) arrives for this long, the connection is
    presumed dead and the watch is reopened. Keep it above `watch_timeout` unless bookmarks are frequent."""
    connect_timeout: float = 10.0
    """TCP connect timeout for every request."""
    request_timeout: float = 60.0
    """Read timeout for one LIST page."""
    backoff_min: float = 0.5
    """First delay after a failure (429, 5xx, connection error, CRD not installed)."""
    backoff_max: float = 30.0
    """Ceiling of the exponential backoff (it doubles per consecutive failure)."""
    backoff_jitter: float = 0.25
    """Each delay is multiplied by a random factor in [1 - jitter, 1 + jitter], so reflectors do not retry in step."""
    bookmarks: bool = True
    """Ask for BOOKMARK events, which advance the resourceVersion while nothing changes, so a resumed watch rarely
    falls out of the server's history window (and needs no relist)."""
    relist_spread: float = 0.0
    """A relist forced by 410 Gone first waits a random delay in [0, relist_spread) (`relist_delay`), so that
    instances that lost their history together (an apiserver restart, N per-node instances) do not LIST in lockstep;
    0 lists at once. A relist asked for (`relist()`) and the first LIST never wait."""
    hold_seconds: float = 120.0
    """A resource that answers 404/403 after it was readable keeps its objects until a LIST begun at least this long
    after the first refusal still refuses (`safety.holdSeconds`)."""


def relist_delay(settings: ReflectorSettings, draw: Callable[[float, float], float] = random.uniform) -> float:
    """How long a relist forced by 410 Gone waits first: uniform over [0, `relist_spread`) (full jitter: N
    instances that lost their watches at the same instant spread their LISTs evenly over the window)."""
    return draw(0.0, settings.relist_spread) if settings.relist_spread > 0 else 0.0


class _Gone(Exception):
    """The watch's resourceVersion is older than the server's history: relist."""


class _StreamError(Exception):
    """An ERROR event other than 410 arrived in the stream."""


def _parse_time(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


_parse_time_cached = functools.lru_cache(maxsize=4096)(_parse_time)


def selector_arguments(resource: Resource) -> dict[str, str]:
    """The client arguments of `resource`'s label and field selectors (none when it has none): every LIST page and
    every WATCH of it carries the same."""
    out: dict[str, str] = {}
    if resource.label_selector:
        out["label_selector"] = resource.label_selector
    if resource.field_selector:
        out["field_selector"] = resource.field_selector
    return out


def list_page_arguments(resource: Resource, settings: ReflectorSettings, token: str | None) -> dict[str, Any]:
    """The client arguments of one LIST page of `resource` (its selectors, the page size, the continue `token`),
    raw bytes back: what the reflectors and the read-only snapshot send alike."""
    kwargs: dict[str, Any] = {
        "limit": settings.page_size,
        "_preload_content": False,
        "_request_timeout": (settings.connect_timeout, settings.request_timeout),
    }
    kwargs.update(selector_arguments(resource))
    if token:
        kwargs["_continue"] = token
    return kwargs


def deleted_object(resource: Resource, key: tuple[str, str] | str, version: str) -> dict:
    """The object a DELETED of a confirmed 404 carries (an ordinary deletion downstream): type, name, namespace and
    resourceVersion, made from the key the reflector holds it under (its view is all the reflector keeps of an
    object; nothing downstream reads more of such an event than its key). Events found by a (re)LIST carry only
    their `key`."""
    namespace, name = key if isinstance(key, tuple) else (None, key)
    meta = {"name": name, "resourceVersion": version}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}


def unchanged(previous: View | None, view: View, obj: dict) -> bool:
    """A watched MODIFIED (or repeated ADDED) that says nothing new: its view equals the last one emitted for its key
    (views compare without their resourceVersion) and it is not being deleted. Launcher pods and VMIs are rewritten
    for status the planner never reads; the loop never queues behind those."""
    if previous is None or view != previous:
        return False
    meta = obj.get("metadata")
    return not (isinstance(meta, dict) and meta.get("deletionTimestamp"))


def object_wall_time(obj: dict, now: float | None = None) -> float | None:
    """The newest timestamp an object carries (managedFields[].time, VMI migrationState times, creation and
    deletion timestamps) as epoch seconds; timestamps in the future (a graceful deletion) are not usable."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    stamps: list[object] = [meta.get("creationTimestamp"), meta.get("deletionTimestamp")]
    managed = meta.get("managedFields")
    if isinstance(managed, list):
        stamps.extend(entry.get("time") for entry in managed if isinstance(entry, dict))
    status = obj.get("status")
    migration = decode_migration(status.get("migrationState")) if isinstance(status, dict) else None
    if migration is not None:
        stamps.extend(migration.timestamps)
    limit = (time.time() if now is None else now) + 1.0
    best: float | None = None
    for stamp in stamps:
        if not isinstance(stamp, str):
            continue
        at = _parse_time_cached(stamp)
        if at is not None and at <= limit and (best is None or at > best):
            best = at
    return best


def list_function(api_client: ApiClient, resource: Resource) -> Callable[..., Any]:
    """The list/watch call for a resource (all namespaces), with the official client's keyword arguments: a raw
    request through its `ApiClient` (`bgpadv.sources.rest`: the generated API classes cost seconds to import)."""
    return rest.list_call(api_client, resource)


def _lines(response: Any) -> Iterator[tuple[bytes, float]]:
    """Complete lines of a chunked watch response, each with the monotonic time its last bytes arrived."""
    pending = b""
    for chunk in response.stream(amt=None, decode_content=False):
        at = time.monotonic()
        pending += chunk
        if b"\n" not in chunk:
            continue
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line, at
    if pending.strip():
        yield pending, time.monotonic()


class _Listing:
    """A LIST in progress: its views by key in list order, when each page arrived (`pages`: the count of views
    after the page, its monotonic arrival), and, on a relist, each object's own wall time (`walls`, the watch lag).
    Not one (view, at, wall) tuple per object: at 100,000 objects per resource those were ~9 MiB, alive during the
    LIST on top of what the cache holds (a relist at steady state; traced)."""

    __slots__ = ("pages", "views", "walls")

    def __init__(self) -> None:
        self.views: dict[tuple[str, str] | str, View] = {}
        self.pages: list[tuple[int, float]] = []
        self.walls: dict[tuple[str, str] | str, float | None] = {}

    def items(self) -> Iterator[tuple[tuple[str, str] | str, View, float]]:
        """(key, view, the arrival of its page) in list order."""
        pages = iter(self.pages)
        end, at = next(pages, (0, 0.0))
        for i, (key, view) in enumerate(self.views.items()):
            while i >= end:
                end, at = next(pages)
            yield key, view, at


class Reflector:
    """One list+watch loop for one resource, on its own daemon thread. `emit` is called from that thread."""

    def __init__(
        self,
        api_client: ApiClient,
        resource: Resource,
        emit: Callable[[WatchEvent], None],
        settings: ReflectorSettings | None = None,
        observer: SourcesObserver | None = None,
    ) -> None:
        self.resource = resource
        self._call = list_function(api_client, resource)
        self._emit_to = emit
        self.settings = settings or ReflectorSettings()
        self._observer: SourcesObserver = observer if observer is not None else NullObserver()
        # what we last emitted, by key, as its view (shared with the store): what a relist compares resourceVersions
        # with, what a missed deletion is found from, what an unchanged MODIFIED is recognised by
        self._cache: dict[tuple[str, str] | str, View] = {}
        self._rv: str | None = None  # newest resourceVersion seen; None: a LIST is needed
        self._synced = False
        self._failures = 0  # consecutive failures, for the backoff
        self._not_installed_logged = False
        self._readable = False  # a LIST succeeded at least once since the resource was last found absent
        self._held_since: float | None = None  # first 404/403 after it was readable (monotonic); None: not held
        self._listing = False  # the request in progress (or that just failed) is a LIST, not a WATCH
        self._list_started = 0.0  # when the current or last LIST began (monotonic)
        self._relist_wanted = threading.Event()  # relist() was called: LIST before watching again
        self._answer_relist = False  # the current LIST answers a relist(): SYNCED even if it is refused
        self._stop = threading.Event()
        self._wake = threading.Event()  # cuts a backoff sleep short (stop, relist)
        self._response: Any = None  # the open watch response, so stop() can cut a blocking read
        self._thread: threading.Thread | None = None

    @property
    def synced(self) -> bool:
        """The resource finished its first list (or was found not installed)."""
        return self._synced

    @property
    def resource_version(self) -> str | None:
        return self._rv

    @property
    def held(self) -> bool:
        """The resource answered 404/403 after it was readable: its objects are kept, pending confirmation."""
        return self._held_since is not None

    def relist(self) -> None:
        """Ask for a full LIST now (thread-safe): the open watch is cut, a backoff sleep is cut short, and the loop
        lists before it watches again. The LIST ends in SYNCED, even when it is answered 404/403."""
        self._relist_wanted.set()
        self._wake.set()
        self._cut()

    def start(self) -> None:
        """Start the loop's thread (once: a second call changes nothing)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"reflector-{self.resource.plural}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self._cut()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _cut(self) -> None:
        response = self._response
        if response is not None:
            try:
                response.shutdown()  # urllib3 >= 2.3: interrupts a read blocked in another thread
            except Exception as e:  # pragma: no cover - best effort
                log.debug("cutting the %s watch: %s", self.resource.plural, e)

    # -- the loop -------------------------------------------------------------------------------------------------
    def _run(self) -> None:
        plural = self.resource.plural
        while not self._stop.is_set():
            try:
                if self._rv is None or self._relist_wanted.is_set():
                    self._answer_relist = self._answer_relist or self._relist_wanted.is_set()
                    self._relist_wanted.clear()
                    self._listing, self._list_started = True, time.monotonic()
                    self._list()
                self._listing = False
                started = time.monotonic()
                delivered = self._watch()
                if self._stop.is_set():
                    break
                if self._relist_wanted.is_set():
                    self._observer.watch_restart(plural, "relist")
                    continue
                self._observer.watch_restart(plural, "stream-ended")
                if delivered:
                    self._failures = 0
                elif time.monotonic() - started < self.settings.backoff_min:
                    self._sleep()  # a server that closes at once must not make us spin
            except _Gone as e:
                log.info("%s: %s; relisting", plural, e)
                self._gone()
            except ApiException as e:
                if e.status == 410:
                    log.info("%s: 410 Gone (%s); relisting", plural, e.reason)
                    self._gone()
                elif e.status in (403, 404) and self._readable:
                    self._unreadable(e.status)
                elif e.status == 404 and self.resource.optional:
                    self._not_installed()
                else:
                    self._error(f"HTTP {e.status} {e.reason}")
            except (_StreamError, urllib3.exceptions.HTTPError, OSError, ValueError) as e:
                self._error(f"{type(e).__name__}: {e}")
            except Exception as e:
                log.exception("%s: unexpected failure in the list/watch loop", plural)
                self._error(f"{type(e).__name__}: {e}")
        log.debug("%s reflector stopped", plural)

    def _gone(self) -> None:
        """The watch's history is gone: relist, after `relist_delay` (cut short by stop() or relist())."""
        self._observer.watch_restart(self.resource.plural, "gone-410")
        self._rv = None
        delay = relist_delay(self.settings)
        if delay > 0 and not self._stop.is_set() and not self._relist_wanted.is_set():
            self._wake.wait(delay)
            self._wake.clear()

    def _sleep(self) -> None:
        s = self.settings
        delay = min(s.backoff_max, s.backoff_min * 2 ** min(self._failures, 30))
        self._failures += 1
        if self._stop.is_set():
            return
        self._wake.wait(delay * random.uniform(1 - s.backoff_jitter, 1 + s.backoff_jitter))
        self._wake.clear()

    def _error(self, what: str) -> None:
        if self._stop.is_set():
            return
        if self._relist_wanted.is_set():  # relist() cut the stream on purpose: list at once
            self._observer.watch_restart(self.resource.plural, "relist")
            return
        log.warning("%s: list/watch failed (%s); retrying", self.resource.plural, what)
        self._observer.watch_restart(self.resource.plural, "error")
        self._sleep()

    def _not_installed(self) -> None:
        plural = self.resource.plural
        if not self._not_installed_logged:
            log.warning("%s: not served by the API (CRD not installed?); treated as empty, retrying", plural)
            self._not_installed_logged = True
        self._observer.watch_restart(plural, "not-installed")
        self._rv = None
        if not self._synced or (self._listing and self._answer_relist):
            self._synced = True
            self._answer_relist = False
            self._emit_synced(time.monotonic())
        self._sleep()

    def _unreadable(self, status: int) -> None:
        """404/403 after the resource was readable: fail static. Keep the cache and the store's objects (emit
        nothing), retry with backoff; delete them only when a LIST begun `hold_seconds` after the first refusal still
        refuses. A successful LIST ends the hold (`_replace`)."""
        plural, now = self.resource.plural, time.monotonic()
        self._rv = None
        if self._held_since is None:
            self._held_since = now
            log.warning(
                "%s: HTTP %d after it was readable: keeping its %d objects (fail static) and retrying; they are "
                "deleted only if a LIST %.0fs from now still answers 403/404",
                plural,
                status,
                len(self._cache),
                self.settings.hold_seconds,
            )
            self._report_held(True)
        elif self._listing and self._list_started - self._held_since >= self.settings.hold_seconds:
            log.warning(
                "%s: a LIST %.0fs after it became unreadable still answers HTTP %d: deleting its %d objects",
                plural,
                self._list_started - self._held_since,
                status,
                len(self._cache),
            )
            self._observer.watch_restart(plural, f"confirmed-{status}")
            for key, view in list(self._cache.items()):
                gone = deleted_object(self.resource, key, view.resource_version)
                self._emit("DELETED", gone, now)  # confirmed: ordinary deletions, not held again downstream
            self._cache.clear()
            self._readable = False
            self._held_since = None
            self._report_held(False)
            self._answer_relist = False
            self._emit_synced(now)
            self._sleep()
            return
        self._observer.watch_restart(plural, f"held-{status}")
        if self._listing and self._answer_relist:
            self._answer_relist = False
            self._emit_synced(now)  # the confirmation asked for this LIST: its answer is "still refused, kept"
        self._sleep()

    def _report_held(self, held: bool) -> None:
        try:
            self._observer.resource_held(self.resource.plural, held)
        except Exception:
            log.exception("%s: the observer failed", self.resource.plural)

    def _emit_synced(self, at: float) -> None:
        try:
            self._emit_to(WatchEvent(self.resource, "SYNCED", None, at, None, listed_at=self._list_started))
        except Exception:
            log.exception("%s: the event consumer failed", self.resource.plural)

    def _emit(
        self,
        kind: EventType,
        obj: dict | None,
        at: float,
        from_list: bool = False,
        view: View | None = None,
        wall: float | None = None,
        key: tuple[str, str] | str | None = None,
    ) -> None:
        try:
            self._emit_to(WatchEvent(self.resource, kind, obj, at, wall, from_list, view=view, key=key))
        except Exception:
            log.exception("%s: the event consumer failed", self.resource.plural)

    def _skipped(self, reason: str) -> None:
        self._observer.watch_line_skipped(self.resource.plural, reason)

    def _normalize(self, obj: dict) -> dict:
        """Typed lists carry no kind/apiVersion per item: add them, so every object names its type."""
        if "kind" not in obj:
            obj["kind"] = self.resource.kind
        if "apiVersion" not in obj:
            obj["apiVersion"] = self.resource.api_version
        return obj

    # -- LIST -----------------------------------------------------------------------------------------------------
    def _list(self) -> None:
        """LIST in pages, each object decoded into its view as its page arrives (the page's documents are let go
        at once: a 100k LIST never holds 100k raw objects), then `_replace`."""
        s, r = self.settings, self.resource
        fresh = _Listing()
        token: str | None = None
        restarts = 0
        while True:
            try:
                response = self._call(**list_page_arguments(r, s, token))
            except ApiException as e:
                if e.status == 410 and token and restarts < 3:  # the continue token expired: start over
                    log.info("%s: list continue token expired; listing again from the start", r.plural)
                    self._observer.watch_restart(r.plural, "relist")
                    fresh = _Listing()
                    token, restarts = None, restarts + 1
                    self._list_started = time.monotonic()
                    continue
                raise
            try:
                data = response.data
            finally:
                response.release_conn()
            at = time.monotonic()
            page, items, too_deep = yamlsafe.loads_list_page(data)
            for _ in range(too_deep):
                log.warning("%s: skipping a listed object nested deeper than %d levels", r.plural, MAX_DEPTH)
                self._skipped("too-deep")
            relisting = self._synced  # lag is observed after the first sync only: the first LIST skips the work
            views, walls = fresh.views, fresh.walls
            for obj in items:
                obj = self._normalize(obj)
                key = r.key(obj)
                view = decode(r, obj, key)
                key = stored_key(view, key)
                views[key] = view
                if relisting:
                    walls[key] = object_wall_time(obj)
            fresh.pages.append((len(views), at))
            del items
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                self._replace(fresh, str(meta.get("resourceVersion") or ""))
                return
            if self._stop.is_set():
                return

    def _replace(self, fresh: _Listing, rv: str) -> None:
        """Adopt a complete list: emit what differs from the cache (missed deletions included), then SYNCED."""
        cache = self._cache
        kept: dict[tuple[str, str] | str, View] = {}
        walls = fresh.walls
        for key, view, at in fresh.items():
            wall = walls.get(key)
            old = cache.get(key)
            version = view.resource_version
            if old is None:
                self._emit("ADDED", None, at, True, view, wall, key)
            elif old.resource_version != version and old != view:  # views compare without their resourceVersion
                self._emit("MODIFIED", None, at, True, view, wall, key)
            else:
                view = old  # what the store holds: one object, not two
            kept[key] = view
        now = time.monotonic()
        for key in cache.keys() - fresh.views.keys():
            self._emit("DELETED", None, now, from_list=True, key=key)
        self._cache = kept
        self._rv = rv or None
        first = not self._synced
        self._synced = True
        self._failures = 0
        self._readable = True
        self._answer_relist = False
        if self._held_since is not None:
            log.warning(
                "%s: readable again after %.0fs: hold ended, relisted (%d objects)",
                self.resource.plural,
                now - self._held_since,
                len(fresh.views),
            )
            self._held_since = None
            self._report_held(False)
        self._emit_synced(now)
        if first:
            log.info(
                "%s: initial list done (%d objects, resourceVersion %s)", self.resource.plural, len(fresh.views), rv
            )

    # -- WATCH ----------------------------------------------------------------------------------------------------
    def _watch(self) -> int:
        """Watch from the last resourceVersion until the stream ends; returns how many lines it delivered."""
        s, r = self.settings, self.resource
        kwargs: dict[str, Any] = {
            "watch": True,
            "resource_version": self._rv,
            "allow_watch_bookmarks": s.bookmarks,
            "timeout_seconds": int(s.watch_timeout),
            "_preload_content": False,
            "_request_timeout": (s.connect_timeout, s.inactivity_timeout),
        }
        kwargs.update(selector_arguments(r))
        response = self._call(**kwargs)
        self._response = response
        delivered = 0
        clean = False
        try:
            if self._stop.is_set() or self._relist_wanted.is_set():  # stop() or relist() came before the cut could
                return 0
            for line, at in _lines(response):
                delivered += 1
                self._handle(line, at)
            clean = True
        finally:
            self._response = None
            if not clean:
                response.close()
            response.release_conn()
        return delivered

    def _wanted(self, key: tuple[str, str] | str, view: View) -> bool:
        """A watched ADDED/MODIFIED is kept (every one here; per-node IPAMClaims keep their node's VMs' only)."""
        return True

    def _wanted_deletion(self, key: tuple[str, str] | str, obj: dict) -> bool:
        """A watched DELETED is kept (every one here)."""
        return True

    def _handle(self, line: bytes, at: float) -> None:
        plural = self.resource.plural
        try:
            event = yamlsafe.loads_json(line)
            kind, obj = event["type"], event["object"]  # type: ignore[index]
        except yamlsafe.TooDeep:
            log.warning(
                "%s: skipping a watch line nested deeper than %d levels (%d bytes)", plural, MAX_DEPTH, len(line)
            )
            self._skipped("too-deep")
            return
        except (ValueError, KeyError, TypeError):
            log.warning("%s: skipping an undecodable watch line (%d bytes)", plural, len(line))
            self._skipped("undecodable")
            return
        if not isinstance(obj, dict):
            log.warning("%s: skipping a %s event without an object", plural, kind)
            return
        if kind == "BOOKMARK":
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self._rv = str(rv)
            return
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Gone(obj.get("message") or "410 Gone")
            raise _StreamError(f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
        if kind not in _OBJECT_EVENTS:
            log.warning("%s: skipping a watch event of unknown type %r", plural, kind)
            return
        obj = self._normalize(obj)
        meta = obj.get("metadata")
        rv = str(meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""
        if rv:
            self._rv = rv
        key = self.resource.key(obj)
        if kind == "DELETED" and not self._wanted_deletion(key, obj):
            return
        wall = object_wall_time(obj)
        if kind == "DELETED":
            self._cache.pop(key, None)
            self._emit(kind, obj, at, wall=wall)
            return
        view = decode(self.resource, obj, key)
        key = stored_key(view, key)
        if not self._wanted(key, view):
            return
        if unchanged(self._cache.get(key), view, obj):  # the store keeps the equal view it has (one object)
            try:
                self._observer.watch_event(plural, kind, at, wall)  # observed (its lag), never queued
            except Exception:
                log.exception("%s: the observer failed", plural)
            return
        self._cache[key] = view
        self._emit(kind, obj, at, view=view, wall=wall, key=key)
