"""Peer moves: the peers one instance serves change while it runs, and the leaving peers lose their routes first.

A node's labels select its peers (`peers[].nodeSelector`, `bgpadv.runtime.peering`), and a changed configuration
file may add or remove peers. Either way the instance moves to the new peer set without dropping the sessions it
keeps: it withdraws every route from the leaving peers, waits until ExaBGP acknowledged those withdrawals (at most
`MOVE_WITHDRAW_SECONDS`), then reloads ExaBGP with the new neighbors and swaps the peers live. ExaBGP drops a removed
neighbor's TCP session without a NOTIFICATION, which the ToR takes for a graceful restart: without the withdrawals
first it would keep our routes, stale, for its restart time.

`PeerMoves` keeps what a move needs between loop turns (the peers served, this instance's Node as last seen, the
move waiting for its withdrawals) and answers the loop's questions; the loop (`bgpadv.runtime.controller`) carries
the move out (the speaker, ExaBGP's reload, the live swap).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from bgpadv.config import Config
from bgpadv.core.views import Node
from bgpadv.runtime.peering import Served

log = logging.getLogger(__name__)

MOVE_WITHDRAW_SECONDS = 5.0
"""A node's peers change (`peers[].nodeSelector`): how long the leaving peers' withdrawals may take to be acknowledged
before ExaBGP is reloaded without those peers anyway."""

_Routes = TypeVar("_Routes")


@dataclass(frozen=True, slots=True)
class PeerMove:
    """A change of the served peers: the configuration to run, the file's configuration it was narrowed from, the
    peers leaving (withdrawn first), since when, and whether a configuration file asked it."""

    config: Config
    configured: Config
    leaving: frozenset[str]
    since: float
    from_file: bool


class PeerMoves:
    """The served peers of one instance and the move between two peer sets.

    `node`: this instance's Node as last seen (None: unknown); `placement(configured, node)`: the configuration this
    instance runs of the file's `configured` on `node` (None: the peers `node`'s labels select,
    `Config.serving`)."""

    def __init__(
        self,
        running: Config,
        *,
        node: Node | None,
        placement: Callable[[Config, Node | None], Config] | None,
        clock: Callable[[], float],
        configured: Config | None = None,
    ) -> None:
        self.node = node
        self.placement = placement
        self.clock = clock
        # the peers the node's labels select of the file (`configured`), as the file names them: an interface peer's
        # placed name is its discovered address, or it is not placed yet while its link fails (bgpadv.runtime.
        # unnumbered); neither is a change of the selection
        self.served = (
            self._selected(configured) if configured is not None else Served(tuple(p.name for p in running.peers))
        )
        self.moving: PeerMove | None = None
        """The move waiting for the leaving peers' withdrawals (None: none)."""

    def narrow(self, configured: Config) -> Config:
        """The file's configuration `configured` as this instance runs it on its node (what a changed file is
        compared with: `bgpadv.runtime.reload.Reloader.decide`)."""
        return self.placement(configured, self.node) if self.placement is not None else configured

    def node_changed(self, configured: Config, node: Node) -> Config | None:
        """This instance's Node is now `node`: the configuration to move to when its labels select other peers of
        the file's `configured`, else None."""
        if node is self.node:
            return None
        previous, self.node = self.node, node
        if not self.served.moved(configured, node.labels):
            return None
        place = self.placement
        new = place(configured, node) if place is not None else configured.serving(node.labels)
        log.warning(
            "this node's labels select other peers: moving to them",
            extra={
                "node": node.name,
                "peers": [p.name for p in new.peers],
                "previous": list(self.served.names),
                "labels_before": dict(previous.labels) if previous is not None else None,
            },
        )
        return new

    def begin(self, running: Config, new: Config, configured: Config, *, from_file: bool, withdraw: bool) -> PeerMove:
        """Start moving from `running`'s peers to `new`'s (narrowed from the file's `configured`). With `withdraw`
        (the speaker has routes out) and peers leaving, the move waits for their withdrawals (`due`); the caller
        carries out a move that does not wait at once."""
        kept = {p.name for p in new.peers}
        leaving = frozenset(p.name for p in running.peers if p.name not in kept)
        self.served = self._selected(configured)  # do not start the same move on every Node event
        move = PeerMove(new, configured, leaving, self.clock(), from_file)
        self.moving = move if leaving and withdraw else None
        return move

    def _selected(self, configured: Config) -> Served:
        return Served.of(configured, self.node.labels if self.node is not None else None)

    def due(self, held: Callable[[str], Collection[object]]) -> PeerMove | None:
        """The waiting move, once ExaBGP holds nothing more for its leaving peers (`held(peer)`: what ExaBGP holds
        for a peer) or `MOVE_WITHDRAW_SECONDS` passed; it no longer waits then. None: none is due."""
        move = self.moving
        if move is None:
            return None
        if any(held(peer) for peer in move.leaving) and self.clock() - move.since < MOVE_WITHDRAW_SECONDS:
            return None
        self.moving = None
        return move

    def without_leaving(self, desired: Mapping[str, Iterable[_Routes]]) -> Mapping[str, Iterable[_Routes]]:
        """`desired` per peer with nothing for the peers leaving in the waiting move (their withdrawals go out
        before ExaBGP drops them)."""
        move = self.moving
        if move is None:
            return desired
        return {peer: (() if peer in move.leaving else routes) for peer, routes in desired.items()}

    def leaving(self, peer: str) -> bool:
        """`peer` leaves in the waiting move: it keeps getting nothing."""
        return self.moving is not None and peer in self.moving.leaving
