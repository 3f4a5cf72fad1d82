"""IPAMClaims in per-node mode: only the claims of the node's VMs, read when a VM arrives, kept by one watch.

A claim names no node, and custom resources select on labels and name only, so a per-node instance cannot ask the
apiserver for "this node's claims". It asks for the claims of its VMs instead, by the label KubeVirt's IPAM
extension puts on every claim it makes for a VM (`kubevirt.io/vm=<VM name>`, in the VM's namespace: the same
selector that extension lists a VM's claims by):

- at start (and after 410 Gone, and on `relist()`), one LIST with `limit=1` gives the collection's current
  resourceVersion (one object's bytes, not 100,000); the claims of the VMs already known are re-read (`_list`);
- ONE cluster-wide WATCH runs from that resourceVersion; an event is kept only for a claim of a local VM (or one
  held already) and dropped otherwise (`_wanted`). Claims do not change when VMs migrate, so a migration elsewhere
  costs nothing, and a claim created or changed for a local VM arrives as it would through a full watch;
- when a VM appears in the node's VMI watches (`offer`, which every VMI event of the instance passes through) its
  claims are read by label, in batches (`kubevirt.io/vm in (...)`, up to `BATCH_NAMES` VMs a request) by
  `FETCH_WORKERS` threads, retried with backoff. Until they are read, the VM's events are held back: the VM is
  not in the instance's view, so nothing about it is announced from a lower-trust source (a launcher pod's
  annotation, a guest report) that its claim may contradict. A VMI watch's SYNCED waits for every VM whose claims
  are being read when it arrives, so the first plan sees every VM with its claims;
- a VM that leaves both VMI watches (migrated away, a failed migration into the node over) keeps its claims for
  `DEPARTED_GRACE` seconds (a VMI whose migration completed arrives through the node watch as it leaves the
  target watch, in whichever order the two streams deliver it), then they leave the view as objects that moved,
  never as deletions (`Resource.moves`: fail static counts no mass deletion when a node drains).

Claims linked to their VM by an ownerReference only (no `kubevirt.io/vm` label) are not found by the read on
arrival; the watch still keeps them from their next change on.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from bgpadv.core import yamlsafe
from bgpadv.core.resources import Resource
from bgpadv.core.selectors import valid_value
from bgpadv.core.views import Claim, View
from bgpadv.observe.observers import SourcesObserver
from bgpadv.sources.decode.claims import VM_LABEL
from bgpadv.sources.decode.dispatch import decode
from bgpadv.sources.reflector import (
    Reflector,
    ReflectorSettings,
    WatchEvent,
    _Listing,
    deleted_object,
    list_page_arguments,
)

log = logging.getLogger(__name__)

Key = tuple[str, str]

FETCH_WORKERS = 4
"""Reads of arriving VMs' claims in flight at once."""
BATCH_NAMES = 100
"""Most VMs one read asks for (`kubevirt.io/vm in (...)`): the selector stays a few kilobytes of URL."""
DEPARTED_GRACE = 10.0
"""Seconds a VM that left the node's watches keeps its claims (a completed migration in may arrive in either
order through the two VMI watches), after which they leave the view."""

READS = (
    "by the VMs' label, not older than the claim watch",
    "by the VMs' label, at the latest state",
    "one VM at a time (kubevirt.io/vm=<VM>), at the latest state",
)
"""How the claims of arriving VMs are read, from the cheapest for the apiserver down: an apiserver (or a proxy in
front of it) that refuses a read as malformed (400, 422) gets the next way from then on, rather than a retry of what
it refused, which would keep the node's VMs back for ever."""

TOMBSTONE_SECONDS = 120.0
"""How long a claim the watch saw deleted is remembered: longer than a read of arriving VMs' claims can take."""


def _newer_than(view: View, version: str) -> bool:
    """`view` was written after the list at `version` (delivered by the watch while the list ran)."""
    mine = view.resource_version
    return mine.isdigit() and version.isdigit() and int(mine) > int(version)


def _newer(old: View | None, version: str) -> bool:
    """`version` is newer than `old`'s (etcd revisions compare as numbers; anything else counts as newer)."""
    if old is None:
        return True
    mine = old.resource_version
    if mine.isdigit() and version.isdigit():
        return int(version) > int(mine)
    return version != mine


class ClaimReflector(Reflector):
    """The IPAMClaim reflector of a per-node instance: a `Reflector` whose LIST reads only the claims of local VMs
    and whose watch keeps only theirs; `offer` is the `emit` of the instance's VMI reflectors."""

    def __init__(
        self,
        api_client: ApiClient,
        resource: Resource,
        emit: Callable[[WatchEvent], None],
        settings: ReflectorSettings | None = None,
        observer: SourcesObserver | None = None,
    ) -> None:
        super().__init__(api_client, resource, emit, settings, observer)
        self._lock = threading.RLock()
        self._work = threading.Condition(self._lock)
        self._vms: dict[Key, set[Resource]] = {}  # local VMs: the VMI watches holding each
        self._read: set[Key] = set()  # local VMs whose claims were read (or kept since)
        self._pending: dict[Key, list[WatchEvent]] = {}  # VMs whose claims are being read: their held VMI events
        self._todo: dict[Key, float] = {}  # VMs to read, when they may be tried (monotonic), in arrival order
        self._tries: dict[Key, int] = {}
        self._barriers: list[tuple[set[Key], WatchEvent]] = []  # a SYNCED waiting for these VMs' claims
        self._departed: dict[Key, float] = {}  # VMs that left every VMI watch, since (monotonic)
        self._workers: list[threading.Thread] = []
        # claims the watch saw deleted, with the deletion's resourceVersion and when: a read that began before the
        # deletion and answers after it must not bring the claim back (kept `TOMBSTONE_SECONDS`)
        self._tombstones: dict[Key, tuple[str, float]] = {}
        self._way = 0  # index into READS: how claims are read (`_fetch`)

    # -- the VMI side: which VMs are local -------------------------------------------------------------------------
    def offer(self, event: WatchEvent) -> None:
        """A VMI event of this instance (any thread): forwarded, or held while its VM's claims are read."""
        with self._lock:
            if event.type == "SYNCED":
                waiting = set(self._pending)
                if waiting:
                    self._barriers.append((waiting, event))
                else:
                    self._forward(event)
                return
            key = event.object_key()
            if not isinstance(key, tuple):
                self._forward(event)
                return
            held = self._pending.get(key)
            if held is not None:
                held.append(event)
                self._track(key, event)
                return
            known = key in self._vms or key in self._departed
            self._track(key, event)
            if event.type == "DELETED" or known or not self._readable_name(key):
                if key in self._vms:
                    self._read.add(key)
                self._forward(event)
                return
            self._pending[key] = [event]
            self._todo[key] = 0.0
            self._work.notify()

    def _track(self, key: Key, event: WatchEvent) -> None:
        holders = self._vms.get(key)
        if event.type == "DELETED":
            if holders is not None:
                holders.discard(event.resource)
                if not holders:
                    del self._vms[key]
                    self._read.discard(key)
                    self._departed[key] = time.monotonic()
            return
        if holders is None:
            holders = self._vms[key] = set()
            self._departed.pop(key, None)
        holders.add(event.resource)

    @staticmethod
    def _readable_name(key: Key) -> bool:
        """A VM whose claims can be asked for by label: its name is a valid label value (a longer name cannot be
        one, so no claim can carry it)."""
        return bool(key[1]) and valid_value(key[1])

    def _forward(self, event: WatchEvent) -> None:
        try:
            self._emit_to(event)
        except Exception:
            log.exception("virtualmachineinstances: the event consumer failed")

    def _release(self, vm: Key) -> None:
        """`vm`'s claims are read: its held VMI events go on, then any SYNCED that waited only for it."""
        for event in self._pending.pop(vm, ()):
            self._forward(event)
        self._todo.pop(vm, None)
        self._tries.pop(vm, None)
        if vm in self._vms:
            self._read.add(vm)
        barriers, self._barriers = self._barriers, []
        for waiting, synced in barriers:
            waiting.discard(vm)
            if waiting or self._barriers:
                self._barriers.append((waiting, synced))
            else:
                self._forward(synced)

    # -- the claim side ---------------------------------------------------------------------------------------------
    def _wanted(self, key: Any, view: View) -> bool:
        """A watched claim is kept: it is held already, or it belongs to a local VM (or one that just left)."""
        if key in self._cache:
            return True
        if not isinstance(view, Claim) or view.vm is None:
            return False
        vm = (view.key[0], view.vm)
        return vm in self._vms or vm in self._departed

    def _wanted_deletion(self, key: Any, obj: dict) -> bool:
        """A watched deletion goes on for a claim held; for one of a local VM not held yet (its read in flight) it
        is only remembered, so that the read does not bring it back (`_buried`)."""
        if key in self._cache:
            return True
        if isinstance(key, tuple) and self._wanted(key, decode(self.resource, obj, key)):
            version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            self._tombstones[key] = (version, time.monotonic())
        return False

    def _handle(self, line: bytes, at: float) -> None:
        with self._lock:
            super()._handle(line, at)

    def _current_version(self) -> str:
        """The collection's resourceVersion now: a LIST of one object."""
        response = self._call(
            limit=1,
            _preload_content=False,
            _request_timeout=(self.settings.connect_timeout, self.settings.request_timeout),
        )
        try:
            data = response.data
        finally:
            response.release_conn()
        page, _, _ = yamlsafe.loads_list_page(data)
        return str((page.get("metadata") or {}).get("resourceVersion") or "")

    def _fetch(self, vms: Iterable[Key], at: str | None) -> tuple[dict[Key, View], str]:
        """The claims of `vms` (by their `kubevirt.io/vm` label, filtered to the VMs' namespaces), by store key, and
        the resourceVersion they were read at, read the cheapest way the apiserver accepts (`READS`). Raises what the
        request raises."""
        wanted = set(vms)
        names = sorted({name for _, name in wanted})
        while True:
            way = self._way
            try:
                if way < 2:
                    return self._read_selected(f"{VM_LABEL} in ({','.join(names)})", wanted, at if way == 0 else None)
                found: dict[Key, View] = {}
                version = ""
                for name in names:
                    part, read_at = self._read_selected(f"{VM_LABEL}={name}", wanted, None)
                    found.update(part)
                    version = version or read_at
                return found, version
            except ApiException as e:
                if e.status not in (400, 422) or way + 1 >= len(READS):
                    raise
                with self._lock:
                    if self._way == way:
                        self._way = way + 1
                        log.warning(
                            "the apiserver refused a claim read (%s %s): reading claims %s from now on",
                            e.status,
                            e.reason,
                            READS[way + 1],
                            extra={"resource": self.resource.plural},
                        )

    def _read_selected(self, selector: str, wanted: set[Key], at: str | None) -> tuple[dict[Key, View], str]:
        """One selected read of claims (every page), kept to the claims of `wanted` VMs.

        `at`: the claim watch's resourceVersion; the read asks for a state not older than it
        (`resourceVersionMatch=NotOlderThan`), which the apiserver serves from its watch cache, filtering in memory,
        instead of reading every claim of the cluster from etcd for each request (what a read without a
        resourceVersion costs before consistent reads from the cache, Kubernetes 1.31)."""
        r, s = self.resource, self.settings
        found: dict[Key, View] = {}
        token: str | None = None
        version = ""
        while True:
            kwargs = list_page_arguments(r, s, token) | {"label_selector": selector}
            if at and not token:
                kwargs["resource_version"] = at
                kwargs["resource_version_match"] = "NotOlderThan"
            response = self._call(**kwargs)
            try:
                data = response.data
            finally:
                response.release_conn()
            page, items, _ = yamlsafe.loads_list_page(data)
            for obj in items:
                obj = self._normalize(obj)
                key = r.key(obj)
                view = decode(r, obj, key)
                if isinstance(view, Claim) and view.vm is not None and (view.key[0], view.vm) in wanted:
                    found[view.key] = view  # the view's own key (`stored_key`): one tuple per claim
            meta = page.get("metadata") or {}
            version = version or str(meta.get("resourceVersion") or "")
            token = meta.get("continue") or None
            if token is None:
                return found, version

    def _list(self) -> None:
        """The claim collection's resourceVersion, then the claims of every VM already read, as a relist: what
        changed since is emitted (ADDED, MODIFIED, and DELETED for a claim gone), then SYNCED."""
        version = self._current_version()
        with self._lock:
            vms = sorted(self._read | {vm for vm in self._departed if vm not in self._pending})
        read = set(vms)
        fresh: dict[Key, View] = {}
        for start in range(0, len(vms), BATCH_NAMES):
            found, _ = self._fetch(vms[start : start + BATCH_NAMES], version)
            fresh.update(found)
            if self._stop.is_set():
                return
        with self._lock:
            listing = _Listing()
            for claim_key, claim in fresh.items():
                listing.views[claim_key] = claim
            for key, view in self._cache.items():  # read on arrival or watched while this LIST ran: kept as is
                if key in fresh or not isinstance(view, Claim) or view.vm is None:
                    continue
                vm = (view.key[0], view.vm)
                arrived = vm not in read and (vm in self._vms or vm in self._departed)
                if arrived or _newer_than(view, version):
                    listing.views[key] = view
            listing.pages.append((len(listing.views), time.monotonic()))
            self._replace(listing, version)

    def _emit(
        self,
        kind: Any,
        obj: dict | None,
        at: float,
        from_list: bool = False,
        view: View | None = None,
        wall: float | None = None,
        key: tuple[str, str] | str | None = None,
    ) -> None:
        if kind == "DELETED" and obj is not None and not from_list:  # a deletion the watch delivered
            gone = self.resource.key(obj)
            if isinstance(gone, tuple):
                version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                self._tombstones[gone] = (version, time.monotonic())
        super()._emit(kind, obj, at, from_list, view, wall, key)

    def _buried(self, key: Key, view: View) -> bool:
        """The watch saw `key` deleted after `view` was read."""
        tomb = self._tombstones.get(key)
        return tomb is not None and not _newer_than(view, tomb[0])

    def _settle(self, vms: list[Key], found: dict[Key, View], at: float) -> None:
        """Claims read for arriving `vms`: the new or newer ones emitted, then the VMs' held events."""
        for key, view in found.items():
            vm = (key[0], view.vm) if isinstance(view, Claim) else None
            old = self._cache.get(key)
            if vm not in self._pending or not _newer(old, view.resource_version) or self._buried(key, view):
                continue
            self._cache[key] = view
            self._emit("ADDED" if old is None else "MODIFIED", None, at, view=view, key=key)
        for vm in vms:
            if vm in self._pending:
                self._release(vm)

    def _drop_departed(self, now: float) -> None:
        """Claims of VMs gone from the node's watches for `DEPARTED_GRACE`: they leave the view (moved)."""
        gone = {vm for vm, since in self._departed.items() if now - since >= DEPARTED_GRACE}
        if not gone:
            return
        for vm in gone:
            del self._departed[vm]
        for key, view in list(self._cache.items()):
            if isinstance(view, Claim) and view.vm is not None and (view.key[0], view.vm) in gone:
                del self._cache[key]
                moved = deleted_object(self.resource, key, view.resource_version)
                Reflector._emit(self, "DELETED", moved, now, key=key)  # moved away: no tombstone, it may come back

    # -- reading arriving VMs' claims -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        super().start()
        for i in range(FETCH_WORKERS):
            worker = threading.Thread(target=self._fetch_loop, name=f"claims-fetch-{i}", daemon=True)
            self._workers.append(worker)
            worker.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._work:
            self._stop.set()
            self._work.notify_all()
        super().stop(timeout)
        for worker in self._workers:
            worker.join(timeout)

    def _next_batch(self) -> list[Key] | None:
        """Up to `BATCH_NAMES` VMs due for a read (taken off the to-do list), waiting for some; None when stopping."""
        with self._work:
            while not self._stop.is_set():
                now = time.monotonic()
                self._drop_departed(now)
                for key in [k for k, (_, since) in self._tombstones.items() if now - since >= TOMBSTONE_SECONDS]:
                    del self._tombstones[key]
                due = [vm for vm, when in self._todo.items() if when <= now][:BATCH_NAMES]
                if due:
                    for vm in due:
                        del self._todo[vm]
                    return due
                wait = min((when for when in self._todo.values()), default=now + DEPARTED_GRACE) - now
                self._work.wait(max(0.05, min(wait, DEPARTED_GRACE)))
        return None

    def _fetch_loop(self) -> None:
        while (batch := self._next_batch()) is not None:
            try:
                found, _ = self._fetch(batch, self._rv)
            except Exception as e:  # any failure: the VMs wait and the read is retried (nothing escapes the thread)
                self._retry(batch, e)
                continue
            with self._lock:
                self._settle(batch, found, time.monotonic())

    def _retry(self, batch: list[Key], error: Exception) -> None:
        """A read failed: its VMs wait (still held) and are tried again after a backoff with jitter. A resource
        that is not installed has no claims: the VMs go on without any."""
        s = self.settings
        with self._work:
            if isinstance(error, ApiException) and error.status == 404 and not self._readable:
                for vm in batch:
                    if vm in self._pending:
                        self._release(vm)
                return
            tries = max(self._tries.get(vm, 0) for vm in batch) + 1
            delay = min(s.backoff_max, s.backoff_min * 2 ** min(tries - 1, 30))
            delay *= random.uniform(1 - s.backoff_jitter, 1 + s.backoff_jitter)
            log.warning(
                "ipamclaims: reading the claims of %d arriving VMs failed (%s); their VMs wait, retrying in %.1fs",
                len(batch),
                f"{type(error).__name__}: {error}"[:200],
                delay,
            )
            due = time.monotonic() + delay
            for vm in batch:
                if vm in self._pending:
                    self._tries[vm] = tries
                    self._todo[vm] = due
            self._work.notify()
