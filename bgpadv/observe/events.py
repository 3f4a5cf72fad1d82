"""Kubernetes Events for refused values: people see why an address is not announced with `kubectl describe`.

`EventRecorder` takes the refusals of each plan (it implements `PlannerObserver.planned`) and turns them into
core/v1 Events of type Warning on the object the value came from:

- deduplicated: one Event per (object, reason, value). While the refusal persists, the Event's count and
  lastTimestamp are bumped at most once per `interval`, which also keeps it alive past the apiserver's event TTL.
  A refusal that leaves the plan is forgotten; if it comes back it gets a new Event.
- rate-limited: a token bucket (`rate` per second, `burst`) paces the API calls.
- bounded: every piece of the message (value, explanation, network) is cut before it is formatted, and the message
  is at most MAX_MESSAGE characters, whatever the refusal carries.
- asynchronous: calls go out from the recorder's own thread through a bounded queue; when the queue is full the
  Event is dropped and counted. Nothing here raises into the caller.

Cluster-scoped objects (ClusterUserDefinedNetwork, Node, RouteAdvertisements) get their Events in `default`.

Out of scope is quiet: refusals of objects on networks bgpadv does not serve (`reasons.OUT_OF_SCOPE_REASONS`: an
unselected CUDN, a namespaced UDN, a NAD network) get no Event, only a debug log line when they first appear (the
metric `bgpadv_out_of_scope_objects{reason}` counts them, see `readiness`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bgpadv.core import resources
from bgpadv.core.model import Cause, ObjectRef, Outcome, Refusal
from bgpadv.core.reasons import OUT_OF_SCOPE_REASONS
from bgpadv.observe.observers import NullObserver

log = logging.getLogger(__name__)

CLUSTER_SCOPED_NAMESPACE = "default"
MAX_MESSAGE = 1024

_Key = tuple[ObjectRef, str, str]  # (source, reason, value)


def _clip(text: object, limit: int) -> str:
    """At most `limit` characters of a string, cut *before* it is formatted into a message."""
    text = text if isinstance(text, str) else str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def event_reason(code: str) -> str:
    """A refusal code as an Event reason: "outside-network-subnets" -> "OutsideNetworkSubnets"."""
    return "".join(part[:1].upper() + part[1:] for part in code.replace("_", "-").split("-") if part) or "Refused"


def rfc3339(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class TokenBucket:
    """`rate` tokens per second, at most `burst` saved up."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self) -> float:
        """Take a token if there is one (returns 0.0); otherwise the seconds until one is due (nothing taken)."""
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate if self.rate > 0 else float("inf")


@dataclass(slots=True)
class _Tracked:
    name: str
    namespace: str
    count: int
    last_sent: float  # monotonic time the create or the last bump was queued


@dataclass(frozen=True, slots=True)
class _Call:
    action: str  # "create" | "bump"
    name: str
    namespace: str
    body: dict[str, Any]


class EventRecorder(NullObserver):
    """Turns plan refusals into Kubernetes Events (see the module docstring).

    `api_client`: a `kubernetes.client.ApiClient` (its `param_serialize` and `call_api` are used). `metrics`: an
    optional `bgpadv.observe.metrics.Metrics` whose `bgpadv_kubernetes_events_total{result}` counts
    created/updated/dropped/failed.
    """

    def __init__(
        self,
        api_client: Any,
        component: str = "bgpadv",
        *,
        host: str | None = None,
        interval: float = 300.0,
        rate: float = 1.0,
        burst: int = 25,
        queue_size: int = 1000,
        max_tracked: int = 10_000,
        metrics: Any = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        verb: str = "not announcing",
    ):
        from kubernetes.client.exceptions import ApiException

        self.verb = verb  # the message's start: "not announcing" (the plan), "not importing" (the egress import)
        self._api_client = api_client
        self._exc = ApiException
        self.component = component
        self.host = host or socket.gethostname()
        self.interval = interval
        self.max_tracked = max_tracked
        self._metrics = metrics
        self._clock = clock
        self._wall = wall_clock
        self._bucket = TokenBucket(rate, burst)  # real time: it paces real API calls
        self._queue: queue.Queue[_Call | None] = queue.Queue(maxsize=queue_size)
        self._tracked: dict[_Key, _Tracked] = {}
        self._quiet: set[_Key] = set()  # out-of-scope refusals of the last plan (logged once, no Event)
        # the last refusals recorded (a plan hands the same tuple while none changed) and when a reminder is due
        # next: a plan with the same refusals before then costs nothing per refusal
        self._seen: object = None
        self._next_bump = -math.inf
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seq = 0
        self.counts = {"created": 0, "updated": 0, "dropped": 0, "failed": 0}

    # --- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> EventRecorder:
        self._thread = threading.Thread(target=self._run, name="bgpadv-events", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread: queued calls still go out while tokens last (within `timeout`), the rest are dropped."""
        self._stop.set()
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued call went out; True if the queue emptied in time (for tests and shutdown)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._queue.unfinished_tasks == 0:
                return True
            time.sleep(0.01)
        return False

    # --- input ----------------------------------------------------------------------------------------------------

    def planned(self, outcome: Outcome, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        """PlannerObserver: record the plan's refusals."""
        self.record(outcome.rejected)

    def record(self, refusals: Iterable[Refusal]) -> None:
        """The complete current set of refusals: new ones get an Event, persisting ones a bump once per interval."""
        try:
            self._record(refusals)
        except Exception:
            log.exception("events: recording refusals failed")

    def _record(self, refusals: Iterable[Refusal]) -> None:
        now = self._clock()
        if refusals is self._seen and now < self._next_bump:  # the same refusals, and no reminder due yet
            return
        current: dict[_Key, Refusal] = {}
        quiet: set[_Key] = set()
        for r in refusals:
            key = (r.source, r.reason, r.value)
            if r.reason not in OUT_OF_SCOPE_REASONS:
                current[key] = r
                continue
            quiet.add(key)
            if key not in self._quiet:  # out of scope: no Warning, a debug line when it first appears
                log.debug(
                    "out of scope, no Event",
                    extra={"source": str(r.source), "reason": r.reason, "value": r.value, "detail": r.message},
                )
        self._quiet = quiet
        for key in [k for k in self._tracked if k not in current]:
            del self._tracked[key]
        complete = True  # every current refusal is tracked (else the next plan tries again)
        for key, refusal in current.items():
            tracked = self._tracked.get(key)
            if tracked is None:
                if len(self._tracked) >= self.max_tracked:
                    self._count("dropped")
                    complete = False
                    continue
                namespace = refusal.source.namespace or CLUSTER_SCOPED_NAMESPACE
                name = self._event_name(refusal.source)
                call = _Call("create", name, namespace, self._body(refusal, name, namespace))
                if self._enqueue(call):
                    self._tracked[key] = _Tracked(name, namespace, 1, now)
                else:
                    complete = False
            elif now - tracked.last_sent >= self.interval:
                stamp = rfc3339(self._wall())
                body = {**self._body(refusal, tracked.name, tracked.namespace), "count": tracked.count + 1}
                body["lastTimestamp"] = stamp
                if self._enqueue(_Call("bump", tracked.name, tracked.namespace, body)):
                    tracked.count += 1
                    tracked.last_sent = now
        self._seen = refusals
        first_sent = min((t.last_sent for t in self._tracked.values()), default=math.inf)
        self._next_bump = now if not complete else first_sent + self.interval

    def _enqueue(self, call: _Call) -> bool:
        try:
            self._queue.put_nowait(call)
            return True
        except queue.Full:
            self._count("dropped")
            return False

    def _event_name(self, ref: ObjectRef) -> str:
        self._seq += 1
        return f"{ref.name[:200]}.{time.time_ns():x}{self._seq:04x}"

    def _body(self, refusal: Refusal, name: str, namespace: str) -> dict[str, Any]:
        ref = refusal.source
        res = resources.BY_KIND.get(ref.kind)
        involved: dict[str, Any] = {"kind": ref.kind, "name": ref.name}
        if res is not None:
            involved["apiVersion"] = res.api_version
        if ref.namespace:
            involved["namespace"] = ref.namespace
        if ref.uid:
            involved["uid"] = ref.uid
        text = _clip(refusal.message or refusal.reason, MAX_MESSAGE)
        message = f"{self.verb} {_clip(refusal.value, 300)}: {text}"
        if refusal.network:
            message += f" (network {_clip(refusal.network, 253)})"
        stamp = rfc3339(self._wall())
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace or CLUSTER_SCOPED_NAMESPACE},
            "involvedObject": involved,
            "reason": event_reason(refusal.reason),
            "message": message[:MAX_MESSAGE],
            "type": "Warning",
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        return body

    def _count(self, result: str) -> None:
        self.counts[result] += 1
        if self._metrics is not None:
            try:
                self._metrics.events.labels(result=result).inc()
            except Exception:
                log.debug("events: metric update failed", exc_info=True)

    # --- the sending thread ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                call = self._queue.get(timeout=0.2)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            try:
                if call is None:
                    if self._stop.is_set():
                        return
                    continue
                if self._wait_token():
                    self._send(call)
            except Exception:
                self._count("failed")
                log.exception("events: sending failed")
            finally:
                self._queue.task_done()

    def _wait_token(self) -> bool:
        """Wait for a token; False when stopping without one (the call is dropped)."""
        while True:
            wait = self._bucket.take()
            if wait == 0.0:
                return True
            if self._stop.is_set() or self._stop.wait(min(wait, 1.0)):
                self._count("dropped")
                return False

    def _request(self, method: str, path: str, params: dict[str, str], body: dict, content_type: str | None) -> None:
        """One create or patch through the client's `ApiClient`, as `CoreV1Api` would send it (that class costs
        ~1.5 s of CPU to import, and its models are not needed: the bodies are plain dicts, the reply is not read
        into one). Raises the client's `ApiException` on a non-2xx status."""
        api = self._api_client
        headers = {"Accept": "application/json", "Content-Type": content_type or "application/json"}
        method, url, headers, body, post = api.param_serialize(
            method, path, path_params=params, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = api.call_api(method, url, headers, body, post)
        response.read()  # the connection goes back to the pool
        if not 200 <= response.status <= 299:
            raise self._exc.from_response(http_resp=response, body=None, data=None)

    def _send(self, call: _Call) -> None:
        try:
            if call.action == "bump":
                try:
                    self._request(
                        "PATCH",
                        "/api/v1/namespaces/{namespace}/events/{name}",
                        {"namespace": call.namespace, "name": call.name},
                        {"count": call.body["count"], "lastTimestamp": call.body["lastTimestamp"]},
                        "application/merge-patch+json",
                    )
                    self._count("updated")
                    return
                except self._exc as e:
                    if e.status != 404:
                        raise
                    # The apiserver expired it (event TTL): make it again.
                    body = {**call.body, "firstTimestamp": call.body["lastTimestamp"]}
                    body["metadata"] = {"name": call.name, "namespace": call.namespace}
                    call = _Call("create", call.name, call.namespace, body)
            self._request(
                "POST", "/api/v1/namespaces/{namespace}/events", {"namespace": call.namespace}, call.body, None
            )
            self._count("created")
        except self._exc as e:
            self._count("failed")
            log.warning(
                "could not write a Kubernetes Event",
                extra={"event": call.name, "namespace": call.namespace, "status": e.status, "error": e.reason},
            )
        except Exception as e:  # connection errors and the like
            self._count("failed")
            log.warning("could not write a Kubernetes Event", extra={"event": call.name, "error": str(e)})
