"""The seams through which metrics, health and events observe the chain. Observers never steer it.

Times are `time.monotonic()` seconds unless a name says `wall` (`time.time()`, comparable to Kubernetes timestamps).
Every method must be cheap and must not raise: the chain calls them on its hot path.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bgpadv.core.model import Cause, Outcome, Route
from bgpadv.core.prefix import Prefix

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RouteChange:
    """One route the speaker sends: `op` is "announce" or "withdraw"."""

    peer: str
    op: str
    route: Route


@runtime_checkable
class SourcesObserver(Protocol):
    def watch_event(self, resource: str, event_type: str, at: float, object_wall_time: float | None) -> None:
        """A watch event arrived; object_wall_time is the newest timestamp the object carries, if any."""

    def watch_restart(self, resource: str, reason: str) -> None:
        """A list/watch loop restarted: reason is one of gone-410, stream-ended, error, not-installed, relist,
        held-404/held-403 (refused after it was readable: objects kept), confirmed-404/confirmed-403 (still refused
        by a LIST `hold_seconds` later: objects deleted)."""

    def resource_held(self, resource: str, held: bool) -> None:
        """A resource that was readable answers 404/403 (held: its objects are kept), or no longer does."""

    def initial_sync(self, resource: str, at: float) -> None:
        """A resource finished its first LIST."""

    def watch_line_skipped(self, resource: str, reason: str) -> None:
        """A watch line or listed object was skipped: reason is undecodable or too-deep."""


@runtime_checkable
class PlannerObserver(Protocol):
    def planned(self, outcome: Outcome, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        """The planner produced a plan and the guard checked it (cause None: a timer or a start-up resync)."""


@runtime_checkable
class SpeakerObserver(Protocol):
    def commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
        """A command line carrying `changes` was written to ExaBGP (batch = the command's sequence number)."""

    def command_acked(self, batch: int, ok: bool, at: float) -> None:
        """ExaBGP answered the command `batch` with done (ok) or error."""

    def updates_sent(self, peer: str, announced: Sequence[Prefix], withdrawn: Sequence[Prefix], at: float) -> None:
        """ExaBGP's `send { update; }` echo: the prefixes that left for `peer`."""

    def peer_state(self, peer: str, state: str, at: float) -> None:
        """A peer changed state: "up", "down" or "connected"."""

    def synced(self, peer: str, advertised: int, at: float) -> None:
        """Everything desired for `peer` has been acknowledged; `advertised` routes are in ExaBGP's RIB."""

    def notification(self, peer: str, direction: str, code: int, subcode: int, message: str, at: float) -> None:
        """A BGP NOTIFICATION was sent to or received from `peer` (direction "send" | "receive", RFC 4271 codes)."""

    def peer_error(self, peer: str, message: str, at: float) -> None:
        """Something went wrong on `peer`'s session: the reason ExaBGP gave for a session going down, or a command
        for it that ExaBGP refused."""


@runtime_checkable
class ControllerObserver(Protocol):
    def heartbeat(self) -> None:
        """The main loop is alive (called once per loop turn)."""

    def routes_held(self, held: Mapping[str, int]) -> None:
        """Withdrawals held back per peer after a plan (bgpadv.safety.hold)."""

    def migration_handover_started(self, prefix: str, ready_wall: float) -> None:
        """A host route's next hop moves because a migration target became ready at `ready_wall` (epoch seconds)."""

    def bfd_changed(self, peer: str, state: str, failed: bool, diagnostic: int, at: float) -> None:
        """The peer's BFD session changed (bgpadv.speaker.bfd): `state` as bfdd says it (up, down, init, adm-down,
        unknown), `failed` a down after up (the peer is then taken as down), `diagnostic` RFC 5880's code."""


@runtime_checkable
class Observer(SourcesObserver, PlannerObserver, SpeakerObserver, ControllerObserver, Protocol):
    """Everything the controller and the parts it drives report: the four seams composed."""


class NullObserver:
    """Observes nothing; the default for every seam. Subclass it to observe only some things."""

    def watch_event(self, resource: str, event_type: str, at: float, object_wall_time: float | None) -> None:
        pass

    def watch_restart(self, resource: str, reason: str) -> None:
        pass

    def resource_held(self, resource: str, held: bool) -> None:
        pass

    def initial_sync(self, resource: str, at: float) -> None:
        pass

    def watch_line_skipped(self, resource: str, reason: str) -> None:
        pass

    def planned(self, outcome: Outcome, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        pass

    def commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
        pass

    def command_acked(self, batch: int, ok: bool, at: float) -> None:
        pass

    def updates_sent(self, peer: str, announced: Sequence[Prefix], withdrawn: Sequence[Prefix], at: float) -> None:
        pass

    def peer_state(self, peer: str, state: str, at: float) -> None:
        pass

    def synced(self, peer: str, advertised: int, at: float) -> None:
        pass

    def notification(self, peer: str, direction: str, code: int, subcode: int, message: str, at: float) -> None:
        pass

    def peer_error(self, peer: str, message: str, at: float) -> None:
        pass

    def heartbeat(self) -> None:
        pass

    def routes_held(self, held: Mapping[str, int]) -> None:
        pass

    def migration_handover_started(self, prefix: str, ready_wall: float) -> None:
        pass

    def bfd_changed(self, peer: str, state: str, failed: bool, diagnostic: int, at: float) -> None:
        pass


class Fanout:
    """Hands each observation to every observer; an observer's failure is logged, never raised into the chain."""

    def __init__(self, *observers: Observer) -> None:
        for o in observers:
            if not isinstance(o, Observer):
                raise TypeError(f"{type(o).__name__} does not implement bgpadv.observe.observers.Observer")
        self._observers = observers

    def _each(self, name: str, *args: object) -> None:
        for o in self._observers:
            try:
                getattr(o, name)(*args)  # name is one of Observer's methods, checked above
            except Exception:
                log.exception("observer %s failed", name)

    def watch_event(self, resource: str, event_type: str, at: float, object_wall_time: float | None) -> None:
        self._each("watch_event", resource, event_type, at, object_wall_time)

    def watch_restart(self, resource: str, reason: str) -> None:
        self._each("watch_restart", resource, reason)

    def resource_held(self, resource: str, held: bool) -> None:
        self._each("resource_held", resource, held)

    def initial_sync(self, resource: str, at: float) -> None:
        self._each("initial_sync", resource, at)

    def watch_line_skipped(self, resource: str, reason: str) -> None:
        self._each("watch_line_skipped", resource, reason)

    def planned(self, outcome: Outcome, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        self._each("planned", outcome, cause, seconds, full_resync)

    def commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
        self._each("commands_written", batch, changes, cause, at)

    def command_acked(self, batch: int, ok: bool, at: float) -> None:
        self._each("command_acked", batch, ok, at)

    def updates_sent(self, peer: str, announced: Sequence[Prefix], withdrawn: Sequence[Prefix], at: float) -> None:
        self._each("updates_sent", peer, announced, withdrawn, at)

    def peer_state(self, peer: str, state: str, at: float) -> None:
        self._each("peer_state", peer, state, at)

    def synced(self, peer: str, advertised: int, at: float) -> None:
        self._each("synced", peer, advertised, at)

    def notification(self, peer: str, direction: str, code: int, subcode: int, message: str, at: float) -> None:
        self._each("notification", peer, direction, code, subcode, message, at)

    def peer_error(self, peer: str, message: str, at: float) -> None:
        self._each("peer_error", peer, message, at)

    def heartbeat(self) -> None:
        self._each("heartbeat")

    def routes_held(self, held: Mapping[str, int]) -> None:
        self._each("routes_held", held)

    def migration_handover_started(self, prefix: str, ready_wall: float) -> None:
        self._each("migration_handover_started", prefix, ready_wall)

    def bfd_changed(self, peer: str, state: str, failed: bool, diagnostic: int, at: float) -> None:
        self._each("bfd_changed", peer, state, failed, diagnostic, at)
