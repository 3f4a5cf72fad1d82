"""The seams through which metrics, health and events observe the chain. Observers never steer it.

Times are `time.monotonic()` seconds unless a name says `wall` (`time.time()`, comparable to Kubernetes timestamps).
Every method must be cheap and must not raise: the chain calls them on its hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bgpadv.model import Cause, Plan, Route


@dataclass(frozen=True, slots=True)
class RouteChange:
    """One route the speaker sends: `op` is "announce" or "withdraw"."""

    peer: str
    op: str
    route: Route


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


class PlannerObserver(Protocol):
    def planned(self, plan: Plan, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        """The planner produced a plan (cause None: a timer or a start-up resync)."""


class SpeakerObserver(Protocol):
    def commands_written(self, batch: int, changes: Sequence[RouteChange], cause: Cause | None, at: float) -> None:
        """A command line carrying `changes` was written to ExaBGP (batch = the command's sequence number)."""

    def command_acked(self, batch: int, ok: bool, at: float) -> None:
        """ExaBGP answered the command `batch` with done (ok) or error."""

    def updates_sent(self, peer: str, announced: Sequence[str], withdrawn: Sequence[str], at: float) -> None:
        """ExaBGP's `send { update; }` echo: prefixes (canonical strings) that left for `peer`."""

    def peer_state(self, peer: str, state: str, at: float) -> None:
        """A peer changed state: "up", "down" or "connected"."""

    def synced(self, peer: str, advertised: int, at: float) -> None:
        """Everything desired for `peer` has been acknowledged; `advertised` routes are in ExaBGP's RIB."""


class NullObserver:
    """Observes nothing; the default for every seam."""

    def __getattr__(self, name: str):  # any observer method
        return _ignore


def _ignore(*args: object, **kwargs: object) -> None:
    return None
