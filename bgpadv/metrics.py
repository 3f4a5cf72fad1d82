"""Every bgpadv metric, defined in one module, and the observer that moves them.

`Metrics` holds the Prometheus objects on a dedicated `CollectorRegistry` (plus the process, platform and GC
collectors), named by Prometheus conventions with the `bgpadv_` prefix. `MetricsObserver` implements the three
observer seams of `bgpadv.observe` and turns what the chain reports into those metrics:

- `bgpadv_convergence_seconds{stage, op, kind}`: for every route change that has a cause (a watch event), the time
  from the event reaching bgpadv to each stage of its life: `planned` (the planner returned), `written` (the command
  line went to ExaBGP), `acked` (ExaBGP answered `done`) and `sent` (ExaBGP's `send { update; }` echo named the
  prefix: the UPDATE left for the peer). Changes waiting for their ack or their echo are forgotten after
  `pending_ttl` seconds and counted in `bgpadv_convergence_unmatched_total{stage}`.
- `bgpadv_routes_held{peer}`: withdrawals held back because a relist or full replan would have withdrawn too many
  of the peer's routes at once (fail static, bgpadv/hold.py); `bgpadv_resource_held{resource}`: 1 while a resource
  that was readable answers 404/403 and its objects are kept pending confirmation.
- `bgpadv_migration_handover_seconds`: from a migration target's ready time (a Kubernetes timestamp, so only as
  precise as the object records it) to the host route leaving with its new next hop.

Times handed to the observer are `time.monotonic()` seconds; Kubernetes timestamps are wall seconds and are turned
into monotonic ones with the offset between both clocks taken at the moment of conversion.

The observer also keeps a small rolling window of recent samples per stage and the peers' state for `/status`
and `bgpadv status`. Its methods are cheap, never raise, and may be called from the chain's thread while the HTTP
thread reads `status()`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netaddr import AddrFormatError, IPNetwork
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from bgpadv import __version__
from bgpadv.model import Cause, Plan
from bgpadv.observe import RouteChange

log = logging.getLogger(__name__)

# 1 ms ... 30 s: fine steps where a single change lives (a few ms), coarse ones for bulk loads and outages.
CONVERGENCE_BUCKETS: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
# Kubernetes timestamps mostly have one-second resolution: lag and handover need the coarse end too.
LAG_BUCKETS: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

STAGES: tuple[str, ...] = ("planned", "written", "acked", "sent")
OPS: tuple[str, ...] = ("announce", "withdraw")


class Metrics:
    """The Prometheus objects, registered on their own registry (`registry`)."""

    def __init__(self, registry: CollectorRegistry | None = None, *, process_collectors: bool = True):
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        if process_collectors:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)
        r = self.registry
        self.convergence = Histogram(
            "bgpadv_convergence_seconds",
            "Time from a watch event reaching bgpadv to each stage of the route change it caused "
            "(planned, written to ExaBGP, acked by ExaBGP, UPDATE sent to the peer).",
            ["stage", "op", "kind"],
            buckets=CONVERGENCE_BUCKETS,
            registry=r,
        )
        self.convergence_unmatched = Counter(
            "bgpadv_convergence_unmatched_total",
            "Route changes whose ack or UPDATE echo was not seen within the pending window (no sample taken).",
            ["stage"],
            registry=r,
        )
        self.object_lag = Histogram(
            "bgpadv_object_lag_seconds",
            "How old a change already was when its watch event reached bgpadv (from the object's newest timestamp).",
            ["resource"],
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.migration_handover = Histogram(
            "bgpadv_migration_handover_seconds",
            "From a migration target's ready timestamp to the host route leaving with the new next hop.",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.routes_advertised = Gauge(
            "bgpadv_routes_advertised",
            "Routes ExaBGP holds for the peer (announcements it acknowledged, less acknowledged withdrawals), by "
            "network, address family and kind.",
            ["peer", "network", "family", "kind"],
            registry=r,
        )
        self.routes_rejected = Counter(
            "bgpadv_routes_rejected_total",
            "Refusals by reason, each distinct (object, value, reason) counted once while it persists.",
            ["reason"],
            registry=r,
        )
        self.peer_up = Gauge(
            "bgpadv_peer_up", "1 while the BGP session with the peer is established.", ["peer"], registry=r
        )
        self.peer_transitions = Counter(
            "bgpadv_peer_transitions_total", "Changes of a peer's session between up and not up.", ["peer"], registry=r
        )
        self.peer_routes = Gauge(
            "bgpadv_peer_routes_advertised",
            "Routes ExaBGP holds for the peer, as of the last time everything desired was acknowledged.",
            ["peer"],
            registry=r,
        )
        self.exabgp_commands = Counter(
            "bgpadv_exabgp_commands_total",
            "Commands written to ExaBGP by answer: done, error.",
            ["result"],
            registry=r,
        )
        self.routes_held = Gauge(
            "bgpadv_routes_held",
            "Routes kept announced to the peer although the plan withdraws them: a relist or full replan would have "
            "withdrawn more than safety.maxWithdrawFraction of its routes; they wait for a confirming full LIST.",
            ["peer"],
            registry=r,
        )
        self.resource_held = Gauge(
            "bgpadv_resource_held",
            "1 while a resource that was readable answers 404/403: its objects are kept until a LIST "
            "safety.holdSeconds later confirms.",
            ["resource"],
            registry=r,
        )
        self.watch_restarts = Counter(
            "bgpadv_watch_restarts_total",
            "Restarts of a resource's list/watch loop by reason.",
            ["resource", "reason"],
            registry=r,
        )
        self.watch_lines_skipped = Counter(
            "bgpadv_watch_lines_skipped_total",
            "Watch lines (or listed objects) skipped by reason: undecodable, too-deep.",
            ["resource", "reason"],
            registry=r,
        )
        self.full_resync = Histogram(
            "bgpadv_full_resync_seconds",
            "Planner time for a full resync (start-up or timer).",
            buckets=CONVERGENCE_BUCKETS,
            registry=r,
        )
        self.last_sync = Gauge(
            "bgpadv_last_sync_timestamp_seconds",
            "Unix time when ExaBGP last held everything desired for a peer (all commands acknowledged).",
            registry=r,
        )
        self.build_info = Gauge("bgpadv_build_info", "bgpadv's version; always 1.", ["version"], registry=r)
        self.build_info.labels(version=__version__).set(1)
        self.events = Counter(
            "bgpadv_kubernetes_events_total",
            "Kubernetes Events about refusals by outcome: created, updated, dropped, failed.",
            ["result"],
            registry=r,
        )


@dataclass(slots=True)
class _Pending:
    """A change waiting for its ack (by batch) or its UPDATE echo (by peer, prefix, op)."""

    received_at: float
    written_at: float
    kind: str
    op: str


@dataclass(slots=True)
class _Batch:
    written_at: float
    changes: list[_Pending] = field(default_factory=list)


@dataclass(slots=True)
class PeerStatus:
    state: str = "unknown"
    since_wall: float | None = None  # wall time of the last state change
    up_since_wall: float | None = None
    routes: int | None = None  # from the last `synced`
    announced: int = 0  # prefixes seen leaving in UPDATEs
    withdrawn: int = 0


def canonical_prefix(prefix: str) -> str:
    """The canonical text of a prefix (as `str(IPNetwork)` writes it); the text itself if it does not parse."""
    try:
        return str(IPNetwork(prefix))
    except (AddrFormatError, ValueError, TypeError):
        return prefix


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), math.ceil(q * len(sorted_values) - 1e-9)))
    return sorted_values[rank - 1]


class MetricsObserver:
    """Implements SourcesObserver, PlannerObserver and SpeakerObserver over a `Metrics`.

    `expected_resources`: resources whose first LIST must be done for readiness (None: the first plan suffices,
    which the service produces only after every watched kind listed). `pending_ttl`/`max_pending` bound the memory
    held for changes awaiting their ack or echo. `window`: samples kept per stage for `status()` percentiles.
    """

    def __init__(
        self,
        metrics: Metrics | None = None,
        *,
        expected_resources: Iterable[str] | None = None,
        pending_ttl: float = 60.0,
        max_pending: int = 500_000,
        window: int = 1024,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ):
        self.metrics = metrics if metrics is not None else Metrics()
        self._expected = frozenset(expected_resources) if expected_resources is not None else None
        self._ttl = pending_ttl
        self._max_pending = max_pending
        self._clock = clock
        self._wall = wall_clock
        self._lock = threading.Lock()
        self._synced_resources: set[str] = set()
        self._planned_once = False
        # Changes awaiting their ack (by batch) or their UPDATE echo: owned by the loop's thread, never walked by
        # another; the HTTP thread reads only `_pending`, their sizes, published under the lock after every change.
        self._batches: OrderedDict[int, _Batch] = OrderedDict()
        self._awaiting_ack = 0  # changes in _batches
        self._pending = {"acked": 0, "sent": 0}
        self._on_wire: OrderedDict[tuple[str, str, str], _Pending] = OrderedDict()
        self._handover: OrderedDict[str, float] = OrderedDict()  # prefix -> ready time (monotonic)
        self._windows: dict[str, deque[float]] = {s: deque(maxlen=window) for s in (*STAGES, "handover")}
        self._peers: dict[str, PeerStatus] = {}
        # what ExaBGP holds per peer, from acknowledged commands: (peer, prefix key) -> gauge labels, and the counts
        self._unacked: OrderedDict[int, Sequence[RouteChange]] = OrderedDict()  # batch -> its route changes
        self._held: dict[tuple[str, tuple[int, int, int]], tuple[str, str, str, str]] = {}
        self._route_counts: dict[tuple[str, str, str, str], int] = {}
        self._planned_routes = 0
        self._refusals: set[tuple[str, str, str]] = set()
        self._routes_held: dict[str, int] = {}
        self._resources_held: set[str] = set()
        self._last_sync_wall: float | None = None
        self._last_plan_wall: float | None = None
        self._last_sweep = 0.0
        self._last_beat = clock()

    # --- clocks -------------------------------------------------------------------------------------------------

    def wall_to_monotonic(self, wall: float) -> float:
        """A wall-clock time as the monotonic clock would have read it then (offset sampled now)."""
        return self._clock() - (self._wall() - wall)

    def monotonic_to_wall(self, mono: float) -> float:
        return self._wall() - (self._clock() - mono)

    # --- SourcesObserver ------------------------------------------------------------------------------------------

    def watch_event(self, resource: str, event_type: str, at: float, object_wall_time: float | None) -> None:
        try:
            # Objects delivered by the initial LIST are as old as they are: their age is not a lag.
            if object_wall_time is None or event_type == "SYNCED" or resource not in self._synced_resources:
                return
            lag = self.monotonic_to_wall(at) - object_wall_time
            self.metrics.object_lag.labels(resource=resource).observe(max(0.0, lag))
        except Exception:  # never into the chain
            log.exception("metrics: watch_event")

    def watch_restart(self, resource: str, reason: str) -> None:
        try:
            self.metrics.watch_restarts.labels(resource=resource, reason=reason).inc()
        except Exception:
            log.exception("metrics: watch_restart")

    def watch_line_skipped(self, resource: str, reason: str) -> None:
        try:
            self.metrics.watch_lines_skipped.labels(resource=resource, reason=reason).inc()
        except Exception:
            log.exception("metrics: watch_line_skipped")

    def initial_sync(self, resource: str, at: float) -> None:
        with self._lock:
            self._synced_resources.add(resource)

    def resource_held(self, resource: str, held: bool) -> None:
        try:
            self.metrics.resource_held.labels(resource=resource).set(1 if held else 0)
            with self._lock:
                if held:
                    self._resources_held.add(resource)
                else:
                    self._resources_held.discard(resource)
        except Exception:
            log.exception("metrics: resource_held")

    # --- the withdrawal hold (called by the service) ----------------------------------------------------------------

    def routes_held(self, held: Mapping[str, int]) -> None:
        """Routes held per peer after a plan (bgpadv.hold)."""
        try:
            for peer, count in held.items():
                self.metrics.routes_held.labels(peer=peer).set(count)
            with self._lock:
                self._routes_held = dict(held)
        except Exception:
            log.exception("metrics: routes_held")

    # --- PlannerObserver ------------------------------------------------------------------------------------------

    def planned(self, plan: Plan, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        try:
            self._planned(plan, seconds, full_resync)
        except Exception:
            log.exception("metrics: planned")

    def _planned(self, plan: Plan, seconds: float, full_resync: bool) -> None:
        m = self.metrics
        if full_resync:
            m.full_resync.observe(max(0.0, seconds))
        # route gauges are not the plan's: they follow acknowledged commands (command_acked)
        refusals = {(str(x.source), x.value, x.reason) for x in plan.rejected}
        for _, _, reason in refusals - self._refusals:
            m.routes_rejected.labels(reason=reason).inc()
        with self._lock:
            self._planned_routes = len(plan.routes)
            self._refusals = refusals
            self._planned_once = True
            self._last_plan_wall = self._wall()

    # --- SpeakerObserver ------------------------------------------------------------------------------------------

    def commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
        try:
            self._commands_written(batch, changes, cause, at)
        except Exception:
            log.exception("metrics: commands_written")

    def _commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
        if changes:
            self._unacked[batch] = changes
            while len(self._unacked) > self._max_pending:  # never without an ack in practice (bounded in flight)
                self._unacked.popitem(last=False)
        entry = _Batch(written_at=at)
        if cause is not None:
            hist = self.metrics.convergence
            planned = max(0.0, cause.planned_at - cause.received_at)
            written = max(0.0, at - cause.received_at)
            per_labels: dict[tuple[str, str], int] = {}  # one child lookup per label set, not per change
            for change in changes:
                kind = str(change.route.kind)
                per_labels[(change.op, kind)] = per_labels.get((change.op, kind), 0) + 1
                pending = _Pending(cause.received_at, at, kind, change.op)
                entry.changes.append(pending)
                key = (change.peer, str(change.route.prefix), change.op)
                if key not in self._on_wire:  # keep the earliest cause of a prefix that changes again in flight
                    self._on_wire[key] = pending
            for (op, kind), n in per_labels.items():
                _observe_n(hist.labels(stage="planned", op=op, kind=kind), planned, n)
                _observe_n(hist.labels(stage="written", op=op, kind=kind), written, n)
            with self._lock:
                self._windows["planned"].append(planned)
                self._windows["written"].append(written)
        old = self._batches.pop(batch, None)
        self._awaiting_ack += len(entry.changes) - (len(old.changes) if old is not None else 0)
        self._batches[batch] = entry
        self._sweep(at)
        self._publish_pending()

    def _publish_pending(self) -> None:
        with self._lock:
            self._pending = {"acked": self._awaiting_ack, "sent": len(self._on_wire)}

    def command_acked(self, batch: int, ok: bool, at: float) -> None:
        try:
            self.metrics.exabgp_commands.labels(result="done" if ok else "error").inc()
            changes = self._unacked.pop(batch, None)
            if changes:
                self._hold(changes, ok)
            entry = self._batches.pop(batch, None)
            if entry is not None:
                self._awaiting_ack -= len(entry.changes)
                self._publish_pending()
            if entry is None or not ok or not entry.changes:
                return
            hist = self.metrics.convergence
            last = None
            for p in entry.changes:
                last = max(0.0, at - p.received_at)
                hist.labels(stage="acked", op=p.op, kind=p.kind).observe(last)
            if last is not None:
                with self._lock:
                    self._windows["acked"].append(last)
        except Exception:
            log.exception("metrics: command_acked")

    def _hold(self, changes: Sequence[RouteChange], ok: bool) -> None:
        """Move the route gauges by one acknowledged command: O(its routes). An `error` leaves its prefixes unknown
        to the speaker, so they are no longer counted (as in `bgpadv_peer_routes_advertised`)."""
        held = self._held
        delta: dict[tuple[str, str, str, str], int] = {}
        for change in changes:
            p = change.route.prefix
            key = (change.peer, (p._module.version, p._value, p._prefixlen))
            old = held.pop(key, None)
            if old is not None:
                delta[old] = delta.get(old, 0) - 1
            if ok and change.op == "announce":
                route = change.route
                labels = (change.peer, route.network, f"ipv{p._module.version}", str(route.kind))
                held[key] = labels
                delta[labels] = delta.get(labels, 0) + 1
        gauge = self.metrics.routes_advertised
        with self._lock:
            counts = self._route_counts
            for labels, d in delta.items():
                if d == 0:
                    continue
                n = counts.get(labels, 0) + d
                if n > 0:
                    counts[labels] = n
                    gauge.labels(*labels).set(n)
                else:
                    counts.pop(labels, None)
                    with contextlib.suppress(KeyError):
                        gauge.remove(*labels)

    def updates_sent(self, peer: str, announced: Sequence[str], withdrawn: Sequence[str], at: float) -> None:
        try:
            self._updates_sent(peer, announced, withdrawn, at)
        except Exception:
            log.exception("metrics: updates_sent")

    def _updates_sent(self, peer: str, announced: Sequence[str], withdrawn: Sequence[str], at: float) -> None:
        hist = self.metrics.convergence
        samples: list[float] = []
        handovers: list[float] = []
        for op, prefixes in (("announce", announced), ("withdraw", withdrawn)):
            for prefix in prefixes:
                p = self._on_wire.pop((peer, prefix, op), None)
                if p is None:
                    canon = canonical_prefix(prefix)
                    if canon != prefix:
                        prefix = canon
                        p = self._on_wire.pop((peer, prefix, op), None)
                if p is not None:
                    value = max(0.0, at - p.received_at)
                    hist.labels(stage="sent", op=op, kind=p.kind).observe(value)
                    samples.append(value)
                if op == "announce" and self._handover:
                    ready = self._handover.pop(prefix, None)
                    if ready is None and (canon := canonical_prefix(prefix)) != prefix:
                        ready = self._handover.pop(canon, None)
                    if ready is not None:
                        value = max(0.0, at - ready)
                        self.metrics.migration_handover.observe(value)
                        handovers.append(value)
        with self._lock:
            st = self._peers.setdefault(peer, PeerStatus())
            st.announced += len(announced)
            st.withdrawn += len(withdrawn)
            self._windows["sent"].extend(samples)
            self._windows["handover"].extend(handovers)
            self._pending = {"acked": self._awaiting_ack, "sent": len(self._on_wire)}

    def peer_state(self, peer: str, state: str, at: float) -> None:
        try:
            m = self.metrics
            now = self._wall()
            with self._lock:
                st = self._peers.setdefault(peer, PeerStatus())
                was_up = st.state == "up"
                is_up = state == "up"
                st.state = state
                st.since_wall = now
                if is_up and not was_up:
                    st.up_since_wall = now
                elif not is_up:
                    st.up_since_wall = None
            m.peer_up.labels(peer=peer).set(1 if is_up else 0)
            if was_up != is_up:
                m.peer_transitions.labels(peer=peer).inc()
        except Exception:
            log.exception("metrics: peer_state")

    def synced(self, peer: str, advertised: int, at: float) -> None:
        try:
            wall = self.monotonic_to_wall(at)
            self.metrics.peer_routes.labels(peer=peer).set(advertised)
            self.metrics.last_sync.set(wall)
            with self._lock:
                self._peers.setdefault(peer, PeerStatus()).routes = advertised
                self._last_sync_wall = wall
        except Exception:
            log.exception("metrics: synced")

    # --- calls from the service ----------------------------------------------------------------------------------

    def migration_handover_started(self, prefix: str, ready_wall: float) -> None:
        """A host route's next hop moves because a migration target became ready at `ready_wall` (epoch seconds).

        The next UPDATE announcing `prefix` to any peer closes the handover. Kubernetes timestamps usually have
        one-second resolution, so the figure is only as precise as the object's timestamp.
        """
        try:
            with self._lock:
                self._handover[canonical_prefix(prefix)] = self.wall_to_monotonic(ready_wall)
        except Exception:
            log.exception("metrics: migration_handover_started")

    def set_peers(self, peers: Iterable[str]) -> None:
        """The configured peers: new ones start at peer_up 0; label sets of peers no longer configured go away."""
        wanted = set(peers)
        for name in wanted:
            with self._lock:
                new = name not in self._peers
                if new:
                    self._peers[name] = PeerStatus(state="idle")
            if new:
                self.metrics.peer_up.labels(peer=name).set(0)
                self.metrics.peer_transitions.labels(peer=name)
        for name in set(self._peers) - wanted:
            self.forget_peer(name)

    def forget_peer(self, peer: str) -> None:
        """Delete every label set of a removed peer."""
        with self._lock:
            self._peers.pop(peer, None)
        for metric in (
            self.metrics.peer_up,
            self.metrics.peer_transitions,
            self.metrics.peer_routes,
            self.metrics.routes_held,
        ):
            with contextlib.suppress(KeyError):
                metric.remove(peer)
        for key in [k for k in self._on_wire if k[0] == peer]:
            del self._on_wire[key]
        self._publish_pending()
        for key in [k for k in self._held if k[0] == peer]:
            del self._held[key]
        with self._lock:
            gone = [labels for labels in self._route_counts if labels[0] == peer]
            for labels in gone:
                del self._route_counts[labels]
                with contextlib.suppress(KeyError):
                    self.metrics.routes_advertised.remove(*labels)

    # --- liveness, readiness and status -----------------------------------------------------------------------

    def heartbeat(self) -> None:
        """The main loop is alive (the controller calls this once per loop turn)."""
        self._last_beat = self._clock()

    def heartbeat_age(self) -> float:
        """Seconds since the last heartbeat (or since this observer was made)."""
        return self._clock() - self._last_beat

    def ready(self) -> tuple[bool, str]:
        """(ready, reason): the initial sync is done and at least one peer is established."""
        with self._lock:
            if self._expected is not None:
                missing = sorted(self._expected - self._synced_resources)
                if missing:
                    return False, "initial list not done for: " + ", ".join(missing)
            if not self._planned_once:
                return False, "initial sync not done (no plan yet)"
            if not any(p.state == "up" for p in self._peers.values()):
                return False, "no BGP peer established"
        return True, "ok"

    def pending_counts(self) -> dict[str, int]:
        """Changes awaiting their ack and their UPDATE echo, as of the loop's last change (safe from any thread)."""
        with self._lock:
            return dict(self._pending)

    def status(self) -> dict[str, Any]:
        """A JSON-ready snapshot for `/status`: peers, routes, convergence percentiles, last sync, version."""
        now = self._wall()
        with self._lock:
            peers = {
                name: {
                    "state": st.state,
                    "since": st.since_wall,
                    "uptime_seconds": (now - st.up_since_wall) if st.up_since_wall is not None else None,
                    "routes_advertised": st.routes,
                    "prefixes_announced": st.announced,
                    "prefixes_withdrawn": st.withdrawn,
                }
                for name, st in sorted(self._peers.items())
            }
            routes = [
                {"peer": peer, "network": net, "family": fam, "kind": kind, "count": n}
                for (peer, net, fam, kind), n in sorted(self._route_counts.items())
            ]
            convergence = {}
            for stage, values in self._windows.items():
                ordered = sorted(values)
                convergence[stage] = {
                    "samples": len(ordered),
                    "p50": percentile(ordered, 0.50),
                    "p90": percentile(ordered, 0.90),
                    "p99": percentile(ordered, 0.99),
                    "max": ordered[-1] if ordered else None,
                }
            out = {
                "version": __version__,
                "time": now,
                "peers": peers,
                "routes": routes,
                "routes_total": sum(self._route_counts.values()),
                "routes_planned": self._planned_routes,
                "refusals": len(self._refusals),
                "convergence": convergence,
                "last_sync": self._last_sync_wall,
                "last_plan": self._last_plan_wall,
                "held": {"routes": dict(sorted(self._routes_held.items())), "resources": sorted(self._resources_held)},
            }
        out["pending"] = self.pending_counts()
        ok, reason = self.ready()
        out["ready"] = {"ok": ok, "reason": reason}
        return out

    # --- bounded memory ------------------------------------------------------------------------------------------

    def _sweep(self, now: float) -> None:
        """Forget changes older than the TTL (or beyond the cap), counting them as unmatched."""
        if now - self._last_sweep < 1.0 and len(self._on_wire) <= self._max_pending:
            return
        self._last_sweep = now
        limit = now - self._ttl
        unmatched = self.metrics.convergence_unmatched
        expired = 0
        while self._on_wire:
            key, p = next(iter(self._on_wire.items()))
            if p.written_at >= limit and len(self._on_wire) <= self._max_pending:
                break
            del self._on_wire[key]
            expired += 1
        if expired:
            unmatched.labels(stage="sent").inc(expired)
        expired = 0
        while self._batches:
            batch, b = next(iter(self._batches.items()))
            if b.written_at >= limit and len(self._batches) <= self._max_pending:
                break
            del self._batches[batch]
            self._awaiting_ack -= len(b.changes)
            expired += len(b.changes)
        if expired:
            unmatched.labels(stage="acked").inc(expired)
        with self._lock:  # a handover may legitimately take a while: keep it for twice the TTL
            for prefix in [p for p, ready in self._handover.items() if ready < limit - self._ttl]:
                del self._handover[prefix]


def _observe_n(child: Any, value: float, n: int) -> None:
    """Observe the same value n times (one sample per route change)."""
    for _ in range(n):
        child.observe(value)
