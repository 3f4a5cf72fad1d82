"""`MetricsObserver`: the observer the controller runs with — every seam of `bgpadv.observe.observers`, handed to the
part
that does each job.

- `bgpadv.observe.metrics`: the metric definitions (`Metrics`, on its own registry);
- `bgpadv.observe.convergence.ConvergenceTracker`: route changes matched from watch event to UPDATE echo, bounded;
- `bgpadv.observe.readiness.StatusModel`: peers, the routes ExaBGP holds, refusals, held withdrawals, readiness,
`/status`;
- here: what needs neither — object lag (`bgpadv_object_lag_seconds`), watch restarts, skipped lines, full-resync
  timing — and the clocks.

Times handed to the observer are `time.monotonic()` seconds; Kubernetes timestamps are wall seconds and are turned
into monotonic ones with the offset between both clocks taken at the moment of conversion. Every method is cheap and
never raises into the chain; `status()`, `ready()`, `pending_counts()` and `heartbeat_age()` may be called from the
HTTP thread while the chain's thread writes.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bgpadv.core.model import Cause, Outcome
from bgpadv.core.prefix import Prefix
from bgpadv.observe.convergence import ConvergenceTracker
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.observers import RouteChange
from bgpadv.observe.readiness import StatusModel
from bgpadv.observe.sessionstate import bfd_states, session_fields

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StatusParts:
    """What `/status` (and `/sent`) show beside the observer's own model, each read per request from the HTTP
    thread; None: that part does not run in this process."""

    imported: Callable[[], dict[str, Any]] | None = None
    """The egress import's snapshot (`bgpadv.importer.reconciler.Importer.snapshot`)."""
    placement: Callable[[], dict[str, Any]] | None = None
    """The peers this node serves (`bgpadv.runtime.peering.placement_status`)."""
    bfd: Callable[[], dict[str, Any]] | None = None
    """Peer → BFD state (`bgpadv.speaker.bfd`)."""
    sent: Callable[[Sequence[Prefix]], dict[str, Any]] | None = None
    """Prefixes → each peer's last acknowledged send of each, for /sent (`bgpadv.speaker.sent.SendLog.report`)."""
    sessions: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None
    """Per served peer what the configuration says of its session (asn, address, node):
    `bgpadv.observe.sessionstate.session_fields` completes /status's peers with it (and the BFD state above)."""


class LateStatusParts:
    """The `StatusParts` of a process that builds them after its observer: the speaker, the sources and the
    controller report to the observer, and /status reads them back, a construction cycle. Created first and handed
    to the observer (`MetricsObserver(status_parts=...)`), then bound once, when every part exists; until then
    /status shows the observer's own model only."""

    def __init__(self) -> None:
        self._parts: StatusParts | None = None

    def bind(self, parts: StatusParts) -> None:
        if self._parts is not None:
            raise RuntimeError("the status parts are bound already")
        self._parts = parts

    def __call__(self) -> StatusParts:
        return self._parts if self._parts is not None else _NO_PARTS


_NO_PARTS = StatusParts()


class MetricsObserver:
    """Implements `bgpadv.observe.observers.Observer` over a `Metrics`.

    `expected_resources`: resources whose first LIST must be done for readiness (None: the first plan suffices).
    `pending_ttl`/`max_pending` bound the memory held for changes awaiting their ack or echo. `window`: samples kept
    per stage for `status()` percentiles. `status_parts`: what `status()` shows beside the model (`StatusParts`, or
    a `LateStatusParts` bound once the parts exist).
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
        status_parts: StatusParts | LateStatusParts = _NO_PARTS,
    ):
        self.metrics = metrics if metrics is not None else Metrics()
        self._parts = status_parts
        self._bfd_peers: set[str] = set()
        self._clock = clock
        self._wall = wall_clock
        self.convergence = ConvergenceTracker(
            self.metrics,
            pending_ttl=pending_ttl,
            max_pending=max_pending,
            window=window,
            to_monotonic=self.wall_to_monotonic,
        )
        self.model = StatusModel(
            self.metrics,
            expected_resources=expected_resources,
            max_pending=max_pending,
            clock=clock,
            wall_clock=wall_clock,
        )

    # --- configuration reloads (bgpadv.runtime.reload) ----------------------------------------------------------------
    def config_reload(self, result: str) -> None:
        """A configuration change was "applied" or "refused" (both counted), or is "unchanged" (the file is back to
        the configuration in force: not counted). Refused sets `bgpadv_config_stale`, the others clear it."""
        if result != "unchanged":
            self.metrics.config_reloads.labels(result=result).inc()
        self.metrics.config_stale.set(1 if result == "refused" else 0)

    def config_applied(self) -> None:
        """The configuration in force was applied now."""
        self.metrics.config_last_reload_success.set(self._wall())

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
            if object_wall_time is None or event_type == "SYNCED" or not self.model.is_synced(resource):
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
        self.model.initial_sync(resource)

    def resource_held(self, resource: str, held: bool) -> None:
        try:
            self.model.resource_held(resource, held)
        except Exception:
            log.exception("metrics: resource_held")

    # --- ControllerObserver ---------------------------------------------------------------------------------------

    def routes_held(self, held: Mapping[str, int]) -> None:
        """Routes held per peer after a plan (bgpadv.safety.hold)."""
        try:
            self.model.routes_held(held)
        except Exception:
            log.exception("metrics: routes_held")

    def migration_handover_started(self, prefix: str, ready_wall: float) -> None:
        """A host route's next hop moves because a migration target became ready at `ready_wall` (epoch seconds).

        The next UPDATE announcing `prefix` to any peer closes the handover. Kubernetes timestamps usually have
        one-second resolution, so the figure is only as precise as the object's timestamp.
        """
        try:
            self.convergence.migration_handover_started(prefix, ready_wall)
        except Exception:
            log.exception("metrics: migration_handover_started")

    def heartbeat(self) -> None:
        """The main loop is alive (the controller calls this once per loop turn)."""
        self.model.heartbeat()

    # --- PlannerObserver ------------------------------------------------------------------------------------------

    def planned(self, outcome: Outcome, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        try:
            if full_resync:
                self.metrics.full_resync.observe(max(0.0, seconds))
            self.model.planned(outcome)
        except Exception:
            log.exception("metrics: planned")

    # --- SpeakerObserver ------------------------------------------------------------------------------------------

    def commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
        try:
            self.model.commands_written(batch, changes)
            self.convergence.commands_written(batch, changes, cause, at)
        except Exception:
            log.exception("metrics: commands_written")

    def command_acked(self, batch: int, ok: bool, at: float) -> None:
        try:
            self.model.command_acked(batch, ok)
            self.convergence.command_acked(batch, ok, at)
        except Exception:
            log.exception("metrics: command_acked")

    def updates_sent(self, peer: str, announced: Sequence[Prefix], withdrawn: Sequence[Prefix], at: float) -> None:
        try:
            self.convergence.updates_sent(peer, announced, withdrawn, at)
            self.model.updates_sent(peer, len(announced), len(withdrawn))
        except Exception:
            log.exception("metrics: updates_sent")

    def peer_state(self, peer: str, state: str, at: float) -> None:
        try:
            self.model.peer_state(peer, state)
        except Exception:
            log.exception("metrics: peer_state")

    def notification(self, peer: str, direction: str, code: int, subcode: int, message: str, at: float) -> None:
        try:
            self.model.notification(peer, direction, code, subcode, message)
        except Exception:
            log.exception("metrics: notification")

    def peer_error(self, peer: str, message: str, at: float) -> None:
        try:
            self.model.peer_error(peer, message)
        except Exception:
            log.exception("metrics: peer_error")

    def synced(self, peer: str, advertised: int, at: float) -> None:
        try:
            self.model.synced(peer, advertised, self.monotonic_to_wall(at))
        except Exception:
            log.exception("metrics: synced")

    # --- configuration --------------------------------------------------------------------------------------------

    def bfdd_failed(self, reason: str) -> None:
        """The supervisor gave up on bfdd (`reason`: e.g. missing capabilities): `bgpadv_bfdd_cannot_start` 1; the
        BFD peers' `bgpadv_bfd_session_up` series stay 0."""
        del reason  # logged by the BFD client; a label would be unbounded text
        self.metrics.bfdd_cannot_start.set(1)

    def bfd_peers(self, peers: Iterable[str]) -> None:
        """The peers with BFD enabled: each has a `bgpadv_bfd_session_up` series (0 until up); the others none."""
        wanted = set(peers)
        for name in self._bfd_peers - wanted:
            with contextlib.suppress(KeyError):
                self.metrics.bfd_up.remove(name)
        for name in wanted - self._bfd_peers:
            self.metrics.bfd_up.labels(peer=name).set(0)
        self._bfd_peers = wanted

    def bfd_state(self, peer: str, up: bool) -> None:
        """A BFD session's state (any thread)."""
        if peer in self._bfd_peers:
            self.metrics.bfd_up.labels(peer=peer).set(1 if up else 0)

    def bfd_changed(self, peer: str, state: str, failed: bool, diagnostic: int, at: float) -> None:
        """A BFD session changed (the controller's loop): a failure takes the peer as down (`StatusModel`); the
        BFD state itself is `/status`'s `bfd` (read from `StatusParts.bfd`)."""
        try:
            self.model.bfd_changed(peer, failed, diagnostic)
        except Exception:
            log.exception("metrics: bfd_changed")

    def set_peers(self, peers: Iterable[str]) -> None:
        """The configured peers: new ones start at peer_up 0; label sets of peers no longer configured go away."""
        for name in self.model.set_peers(peers):
            self.forget_peer(name)

    def forget_peer(self, peer: str) -> None:
        """Delete every label set of a removed peer, and its pending changes."""
        self.model.forget_peer(peer)
        self.convergence.forget_peer(peer)

    # --- liveness, readiness and status (any thread) --------------------------------------------------------------

    def heartbeat_age(self) -> float:
        """Seconds since the last heartbeat (or since this observer was made)."""
        return self.model.heartbeat_age()

    def ready(self) -> tuple[bool, str]:
        """(ready, reason): the initial sync is done and at least one peer is established."""
        return self.model.ready()

    def pending_counts(self) -> dict[str, int]:
        return self.convergence.pending_counts()

    def status(self) -> dict[str, Any]:
        """A JSON-ready snapshot for `/status`: peers, routes, convergence percentiles, last sync, version."""
        out = self.model.status(self.convergence.summary(), self.convergence.pending_counts())
        parts = self.status_parts
        if parts.imported is not None:
            out["import"] = parts.imported()
        if parts.placement is not None:
            out["placement"] = parts.placement()
        if parts.bfd is not None:
            out["bfd"] = parts.bfd()
        sessions = parts.sessions() if parts.sessions is not None else {}
        session_fields(out, sessions, bfd_states(out.get("bfd")))
        return out

    @property
    def status_parts(self) -> StatusParts:
        """What `status()` shows beside the model (none before a `LateStatusParts` is bound)."""
        parts = self._parts
        return parts if isinstance(parts, StatusParts) else parts()

    @property
    def sent_status(self) -> Callable[[Sequence[Prefix]], dict[str, Any]] | None:
        """The report /sent answers with (None: no speaker in this process)."""
        return self.status_parts.sent
