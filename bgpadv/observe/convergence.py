"""Convergence tracking: each route change matched from its watch event to the UPDATE that carried it, bounded.

For every route change that has a cause (a watch event), `bgpadv_convergence_seconds{stage, op, kind}` gets the time
from the event reaching bgpadv to each stage of its life: `planned` (the planner returned), `written` (the command
line went to ExaBGP), `acked` (ExaBGP answered `done`) and `sent` (ExaBGP's `send { update; }` echo named the
prefix: the UPDATE left for the peer). Changes waiting for their ack or their echo are forgotten after `pending_ttl`
seconds (or beyond `max_pending`) and counted in `bgpadv_convergence_unmatched_total{stage}`.
`bgpadv_migration_handover_seconds`: from a migration target's ready time to the next UPDATE announcing the moved
host route.

Threads: the pending changes are owned by the controller's loop and never walked by another thread; other threads
(the HTTP server) read `pending_counts()` and `summary()`, snapshots published under the tracker's lock.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bgpadv.core.model import Cause
from bgpadv.core.prefix import Prefix
from bgpadv.observe.metrics import STAGES, Metrics
from bgpadv.observe.observers import RouteChange


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


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), math.ceil(q * len(sorted_values) - 1e-9)))
    return sorted_values[rank - 1]


class ConvergenceTracker:
    """Matches written route changes to their ack and their UPDATE echo; keeps a rolling window per stage.

    `to_monotonic(wall)`: a wall-clock time as the monotonic clock would have read it (for handover start times).
    """

    def __init__(
        self,
        metrics: Metrics,
        *,
        pending_ttl: float = 60.0,
        max_pending: int = 500_000,
        window: int = 1024,
        to_monotonic: Callable[[float], float] = lambda wall: time.monotonic() - (time.time() - wall),
    ) -> None:
        self.metrics = metrics
        self._ttl = pending_ttl
        self._max_pending = max_pending
        self._to_monotonic = to_monotonic
        self._lock = threading.Lock()  # guards _windows, _pending and _handover
        self._batches: OrderedDict[int, _Batch] = OrderedDict()  # loop thread only
        self._on_wire: OrderedDict[tuple[str, tuple[int, int, int], str], _Pending] = OrderedDict()  # by Prefix.key
        self._awaiting_ack = 0  # changes in _batches
        self._pending = {"acked": 0, "sent": 0}
        self._handover: OrderedDict[str, float] = OrderedDict()  # prefix (canonical text) -> ready time (monotonic)
        self._windows: dict[str, deque[float]] = {s: deque(maxlen=window) for s in (*STAGES, "handover")}
        self._last_sweep = 0.0

    # --- the loop's side ------------------------------------------------------------------------------------------

    def commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
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
                key = (change.peer, change.route.prefix.key, change.op)
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

    def command_acked(self, batch: int, ok: bool, at: float) -> None:
        entry = self._batches.pop(batch, None)
        if entry is None:
            return
        self._awaiting_ack -= len(entry.changes)
        self._publish_pending()
        if not ok or not entry.changes:
            return
        hist = self.metrics.convergence
        groups: dict[tuple[str, str, float], int] = {}  # the changes of one cause share their value: one child each
        for p in entry.changes:
            k = (p.op, p.kind, p.received_at)
            groups[k] = groups.get(k, 0) + 1
        for (op, kind, received_at), n in groups.items():
            _observe_n(hist.labels(stage="acked", op=op, kind=kind), max(0.0, at - received_at), n)
        last = max(0.0, at - entry.changes[-1].received_at)
        with self._lock:
            self._windows["acked"].append(last)

    def updates_sent(self, peer: str, announced: Sequence[Prefix], withdrawn: Sequence[Prefix], at: float) -> None:
        """ExaBGP's echo, parsed once by the speaker (`bgpadv.speaker.protocol`): matched by `Prefix.key`."""
        hist = self.metrics.convergence
        samples: list[float] = []
        handovers: list[float] = []
        groups: dict[tuple[str, str, float], int] = {}  # as in command_acked: one observation per group
        for op, prefixes in (("announce", announced), ("withdraw", withdrawn)):
            for prefix in prefixes:
                p = self._on_wire.pop((peer, prefix.key, op), None)
                if p is not None:
                    k = (op, p.kind, p.received_at)
                    groups[k] = groups.get(k, 0) + 1
                    samples.append(max(0.0, at - p.received_at))
                if op == "announce" and self._handover:
                    with self._lock:
                        ready = self._handover.pop(str(prefix), None)
                    if ready is not None:
                        value = max(0.0, at - ready)
                        self.metrics.migration_handover.observe(value)
                        handovers.append(value)
        for (op, kind, received_at), n in groups.items():
            _observe_n(hist.labels(stage="sent", op=op, kind=kind), max(0.0, at - received_at), n)
        with self._lock:
            self._windows["sent"].extend(samples)
            self._windows["handover"].extend(handovers)
            self._pending = {"acked": self._awaiting_ack, "sent": len(self._on_wire)}

    def migration_handover_started(self, prefix: str, ready_wall: float) -> None:
        """The next UPDATE announcing `prefix` (`str` of the route's `Prefix`: canonical text) to any peer closes the
        handover begun at `ready_wall`."""
        with self._lock:
            self._handover[prefix] = self._to_monotonic(ready_wall)

    def forget_peer(self, peer: str) -> None:
        for key in [k for k in self._on_wire if k[0] == peer]:
            del self._on_wire[key]
        self._publish_pending()

    # --- any thread -----------------------------------------------------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        """Changes awaiting their ack and their UPDATE echo, as of the loop's last change."""
        with self._lock:
            return dict(self._pending)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per stage (and handover): the number of recent samples and their p50, p90, p99 and max."""
        with self._lock:
            windows = {stage: sorted(values) for stage, values in self._windows.items()}
        return {
            stage: {
                "samples": len(ordered),
                "p50": percentile(ordered, 0.50),
                "p90": percentile(ordered, 0.90),
                "p99": percentile(ordered, 0.99),
                "max": ordered[-1] if ordered else None,
            }
            for stage, ordered in windows.items()
        }

    # --- bounded memory -------------------------------------------------------------------------------------------

    def _publish_pending(self) -> None:
        with self._lock:
            self._pending = {"acked": self._awaiting_ack, "sent": len(self._on_wire)}

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
    """Observe the same value n times (one sample per route change): the sum grows by n x value and the value's
    bucket by n, which is what n `observe(value)` calls do, at the cost of one (a bulk load is 100,000s of changes,
    four stages each: per-change observations were most of the controller's CPU in a bulk load, measured). Falls back
    to n calls where prometheus_client's histogram child is not shaped as expected."""
    if n <= 0:
        return
    try:
        total, buckets, bounds = child._sum, child._buckets, child._upper_bounds
    except AttributeError:
        total = None
    if n == 1 or total is None or len(buckets) != len(bounds):
        for _ in range(n):
            child.observe(value)
        return
    child._raise_if_not_observable()
    total.inc(value * n)
    for i, bound in enumerate(bounds):
        if value <= bound:
            buckets[i].inc(n)
            break
