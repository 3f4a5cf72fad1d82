"""The routes the peers sent (ExaBGP's `receive { parsed; update; }` events), with graceful-restart timing. Pure:
every method takes the time it runs at.

- An UPDATE replaces the peer's path for each announced prefix (one path per prefix per peer: no add-path) and
  removes each withdrawn one. An IPv6 path's next hop may be two addresses (RFC 2545: the global one and the
  router's link-local one on a shared link, what FRR sends a directly connected neighbor), which ExaBGP reports as
  the same prefix announced twice: the global address is the path's next hop (`preferred`), whatever their order.
- A session that goes down keeps its routes, stale, for the peer's configured graceful-restart time (`PeerConfig.
  graceful_restart`; none: they go at once). When the session is back, a route the peer sends again is fresh; the
  stale rest goes `SETTLE_SECONDS` after the peer's End-of-RIB, or when the time is up. The settle time is there
  because FRR, measured in the lab, can send its End-of-RIB to a restarted neighbor ~0.1 s BEFORE the routes.
- Completeness at start-up (`complete`): a new controller knows nothing the peers sent before it started (ExaBGP
  does not replay received routes to a new API process). It asks ExaBGP for its adj-rib-in; a peer that was up when
  the dump was taken is complete `SETTLE_SECONDS` later (a session that came up just before the dump may not have
  sent its routes yet), any other one when its End-of-RIB arrives or its graceful-restart time
  passes (End-of-RIB: plus `SETTLE_SECONDS`). Until every peer is complete, nothing installed is removed for not
  being learned unless this instance learned it before (a withdrawal, a session's stale routes expiring): the kernel
  table keeps what the previous instance installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bgpadv.config import PeerConfig
from bgpadv.core.prefix import Address, Prefix

Path = Address | None  # the next hop of a peer's path
SETTLE_SECONDS = 2.0
_LINK_LOCAL = Prefix.parse("fe80::/10")


def _rank(next_hop: Path) -> int:
    return 0 if next_hop is None else 1 if next_hop in _LINK_LOCAL else 2


def preferred(old: Path, new: Path) -> Path:
    """The next hop of a path announced with `old` and then `new` in one UPDATE (or one adj-rib-in dump): a global
    address over a link-local one (RFC 2545's pair), an address over none; else the later one."""
    return old if _rank(old) > _rank(new) else new


class LearnedRoutes:
    def __init__(self, peers: Sequence[PeerConfig], now: float) -> None:
        self._gr = {p.name: float(p.graceful_restart or 0) for p in peers}
        self.routes: dict[str, dict[Prefix, Path]] = {p.name: {} for p in peers}
        self._stale: dict[str, set[Prefix]] = {p.name: set() for p in peers}
        self._stale_until: dict[str, float] = {}
        self._state: dict[str, str] = {}
        self._complete: set[str] = set()
        self._complete_at: dict[str, float] = {}
        self._startup_until = now + max(self._gr.values(), default=0.0)
        self._dumping = False
        self._touched: set[tuple[str, Prefix]] = set()
        self._dumped: set[tuple[str, Prefix]] = set()  # listed by the dump in progress
        self.version = 0  # bumped on every change
        self.seen: set[Prefix] = set()  # every prefix any peer announced to this instance

    @property
    def complete(self) -> bool:
        return len(self._complete) == len(self.routes)

    def stale(self, peer: str) -> int:
        return len(self._stale.get(peer, ()))

    def update(
        self,
        peer: str,
        announced: Sequence[tuple[Prefix, Path]],
        withdrawn: Sequence[Prefix],
        eor: Sequence[str],
        now: float,
    ) -> None:
        routes = self.routes.get(peer)
        if routes is None:
            return
        stale = self._stale[peer]
        this: dict[Prefix, Path] = {}
        for prefix, next_hop in announced:
            if prefix in this:
                next_hop = preferred(this[prefix], next_hop)
            this[prefix] = next_hop
            routes[prefix] = next_hop
            self.seen.add(prefix)
            stale.discard(prefix)
            if self._dumping:
                self._touched.add((peer, prefix))
        for prefix in withdrawn:
            routes.pop(prefix, None)
            stale.discard(prefix)
            if self._dumping:
                self._touched.add((peer, prefix))
        if eor:
            settled = now + SETTLE_SECONDS
            if stale:
                self._stale_until[peer] = min(self._stale_until.get(peer, settled), settled)
            if peer not in self._complete:
                self._complete_at[peer] = min(self._complete_at.get(peer, settled), settled)
        self.version += 1

    def peer_state(self, peer: str, state: str, now: float) -> None:
        if peer not in self.routes:
            return
        previous = self._state.get(peer)
        self._state[peer] = state
        if state == "down" and previous != "down":
            self._stale[peer] = set(self.routes[peer])
            if self._gr[peer] <= 0:
                self._drop_stale(peer)
            else:
                self._stale_until[peer] = now + self._gr[peer]
            self.version += 1

    def begin_dump(self, states: Mapping[str, str]) -> None:
        """ExaBGP's adj-rib-in is about to be listed; `states` is the neighbor list that preceded it."""
        for peer, state in states.items():
            if peer in self.routes:
                self._state[peer] = state
        self._dumping = True
        self._touched.clear()
        self._dumped.clear()

    def dump_route(self, peer: str, prefix: Prefix, next_hop: Path) -> None:
        routes = self.routes.get(peer)
        if routes is not None and (peer, prefix) not in self._touched:  # an UPDATE since is newer
            if (peer, prefix) in self._dumped:  # the same path's other next hop (RFC 2545)
                next_hop = preferred(routes.get(prefix), next_hop)
            self._dumped.add((peer, prefix))
            routes[prefix] = next_hop
            self.seen.add(prefix)
            self.version += 1

    def end_dump(self, now: float) -> None:
        self._dumping = False
        self._touched.clear()
        self._dumped.clear()
        for peer in self.routes:
            if self._state.get(peer) == "up":  # the session's adj-rib-in, unless it came up just now: settle
                self._complete_at[peer] = min(self._complete_at.get(peer, now + SETTLE_SECONDS), now + SETTLE_SECONDS)
        self.version += 1

    def expire(self, now: float) -> None:
        for peer, at in list(self._complete_at.items()):
            if now >= at:
                del self._complete_at[peer]
                self._complete.add(peer)
                self.version += 1
        for peer, until in list(self._stale_until.items()):
            if now >= until:
                self._drop_stale(peer)
        if now >= self._startup_until and not self.complete:
            self._complete.update(self.routes)
            self.version += 1

    def set_peers(self, peers: Sequence[PeerConfig]) -> None:
        """The peers changed while running (a live peer move): a new one starts empty and complete (nothing this
        instance installed can be its), a removed one's routes are forgotten."""
        names = {p.name for p in peers}
        for peer in [name for name in self.routes if name not in names]:
            for table in (self.routes, self._stale, self._gr, self._stale_until, self._state, self._complete_at):
                table.pop(peer, None)
            self._complete.discard(peer)
        for p in peers:
            if p.name not in self.routes:
                self._gr[p.name] = float(p.graceful_restart or 0)
                self.routes[p.name], self._stale[p.name] = {}, set()
                self._complete.add(p.name)
        self.version += 1

    def _drop_stale(self, peer: str) -> None:
        routes = self.routes[peer]
        for prefix in self._stale[peer]:
            routes.pop(prefix, None)
        self._stale[peer] = set()
        self._stale_until.pop(peer, None)
        self.version += 1
