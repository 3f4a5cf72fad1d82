"""What the controller needs from the parts it drives: the speaker and the sources, as typed seams.

The real classes (`bgpadv.speaker.session.Speaker`, `bgpadv.sources.watches.Sources`) and every test double
implement these Protocols; the controller checks them when it is built, so a double that lacks something the real
speaker has fails at once instead of being probed around. The observer seams are in `bgpadv.observe.observers`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from bgpadv.config import PeerConfig
from bgpadv.core.model import Cause, Route


@runtime_checkable
class ControllerSpeaker(Protocol):
    """The speaker as the controller drives it (one thread: the controller's loop)."""

    @property
    def ready(self) -> bool:
        """The speaker knows what ExaBGP already advertises: a plan may be handed to it."""

    @property
    def closed(self) -> bool:
        """ExaBGP said it is shutting down: the loop ends."""

    @property
    def needs_retry(self) -> bool:
        """ExaBGP refused a command: the last desired set should be diffed again (`resync`)."""

    @property
    def no_extended_next_hop(self) -> frozenset[str]:
        """The interface peers whose session has not negotiated Extended Next Hop for IPv4 (the guard withholds
        their IPv4 routes)."""

    def held(self, peer: str) -> Collection[tuple[int, int, int]]:
        """The prefix keys ExaBGP holds for `peer` (the guard keeps a peer over its route limit on them)."""

    def start(self) -> None:
        """Begin learning what ExaBGP advertises."""

    def set_desired(self, desired: Mapping[str, Iterable[Route]], cause: Cause | None = None) -> None:
        """The whole set each peer should have; the speaker sends the difference."""

    def apply_delta(
        self, changes: Mapping[str, Mapping[tuple[int, int, int], Route | None]], cause: Cause | None = None
    ) -> None:
        """A change of the desired sets: per peer, prefix key -> the route it gets now (None: none)."""

    def set_peers(self, peers: Sequence[PeerConfig]) -> None:
        """The served peers changed live (ExaBGP already has them as neighbors): new ones start empty."""

    def handle_line(self, line: str, at: float | None = None) -> None:
        """One line from ExaBGP (an ack, a peer event, an UPDATE echo)."""

    def resync(self) -> None:
        """Diff the last desired set against what ExaBGP holds again."""

    def drain(self) -> None:
        """Re-announce every route with GRACEFUL_SHUTDOWN."""


@runtime_checkable
class ControllerSources(Protocol):
    """The watched resources: one reflector per resource, started and stopped together."""

    @property
    def synced(self) -> bool:
        """Every resource finished its first LIST."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def relist(self) -> None:
        """Ask every resource for a fresh full LIST (each ends in a SYNCED event)."""
