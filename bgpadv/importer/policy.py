"""What each network's routing table should hold, from the learned routes and the import policy. Pure.

Per network (`ImportNetwork`): a learned prefix is imported when an accept rule takes it (inside the rule's prefix,
no longer than its `maxLength`, exactly the prefix when there is none; from one of its peers, any peer when it
lists none), it is not inside one of the network's own subnets (OVN-K would skip it anyway; the VMs reach those
inside the overlay), and its next hop is of the prefix's family. The safe default policy imports only the default
routes (0.0.0.0/0, ::/0): egress needs nothing more, and nothing else the fabric sends can steer a VM's traffic.

Every path the policy takes then passes the import's last guard (`bgpadv.importer.guard`: special destinations,
other selected networks, next hops that are special, local, a node's, inside a VM network or off the peer's link):
a refused path is dropped alone, so a bad path never joins a multipath route and the good ones are installed.

Every peer's path for a prefix counts as equal (bgpadv runs on a node below its ToRs: the same prefix from two ToRs
is ECMP); the kernel route carries all their next hops. At most `max_routes` prefixes per network and family are
imported, the shortest first (the default route always fits); the rest are refused with reason `limit`.

The reason codes are `bgpadv.core.reasons`' IMPORT_* codes; `Desired.refused` counts them per reason,
`Desired.refusals` lists the guard's and the next hops' refusals path by path (at most `MAX_LISTED`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bgpadv.config import AcceptRule, ImportNetwork
from bgpadv.core import reasons
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.guard import EMPTY, ImportContext, check

NextHops = frozenset[Address]
# reasons a learned route is not imported (bgpadv_import_refused{network, reason}); every code: reasons.IMPORT_*
POLICY, OWN_SUBNET, NEXT_HOP, LIMIT = (
    reasons.IMPORT_POLICY,
    reasons.IMPORT_OWN_SUBNET,
    reasons.IMPORT_NEXT_HOP,
    reasons.IMPORT_LIMIT,
)
MAX_LISTED = 1000


@dataclass(frozen=True, slots=True)
class RefusedPath:
    """One learned path refused by the guard (or for its next hop): who sent it, what, why."""

    peer: str
    prefix: Prefix
    next_hop: Address | None
    reason: str
    message: str

    def as_json(self) -> dict[str, str | None]:
        """The JSON form `bgpadv render --learned` prints and `/status` serves."""
        return {
            "peer": self.peer,
            "prefix": str(self.prefix),
            "nextHop": str(self.next_hop) if self.next_hop is not None else None,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(slots=True)
class Desired:
    routes: dict[Prefix, NextHops] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    refusals: list[RefusedPath] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Rule:
    """An `AcceptRule` compiled once: its listed peers as `Address.key`s."""

    prefix: Prefix
    max_length: int | None
    peers: frozenset[tuple[int, int]]  # `Address.key` of each listed peer; empty: every peer

    @staticmethod
    def of(rule: AcceptRule) -> _Rule:
        return _Rule(rule.prefix, rule.max_length, frozenset(a.key for a in rule.peers))

    def accepts(self, peer: Address, prefix: Prefix) -> bool:
        if self.peers and peer.key not in self.peers:
            return False
        if prefix not in self.prefix:
            return False
        if self.max_length is None:
            return prefix.length == self.prefix.length
        return prefix.length <= self.max_length


def _same_family(peer: Address, prefix: Prefix, next_hop: Address, context: ImportContext) -> bool:
    """The next hop is of the prefix's family, or an IPv6 one of an IPv4 route from an unnumbered peer (RFC 8950:
    its session negotiated Extended Next Hop)."""
    if next_hop.version == prefix.version:
        return True
    return prefix.version == 4 and next_hop.version == 6 and peer in context.unnumbered


def desired_routes(
    learned: Mapping[str, Mapping[Prefix, Address | None]],
    network: ImportNetwork,
    own_subnets: Iterable[Prefix],
    max_routes: int,
    context: ImportContext = EMPTY,
) -> Desired:
    """The routes `network`'s table should hold: prefix → next hops. `learned`: peer address (text) → prefix →
    next hop. `own_subnets`: the network's subnets (a CUDN's), plus `network.exclude`. `context`: what the guard
    reads (`bgpadv.importer.guard.context_of`; the empty one checks only special ranges)."""
    out = Desired()
    subnets = [*own_subnets, *network.exclude]
    rules = [_Rule.of(rule) for rule in network.accept]
    paths: dict[Prefix, set[Address]] = {}

    def refuse(reason: str, path: tuple[str, Prefix, Address | None] | None = None, message: str = "") -> None:
        out.refused[reason] = out.refused.get(reason, 0) + 1
        if path is not None and len(out.refusals) < MAX_LISTED:
            out.refusals.append(RefusedPath(*path, reason, message))

    for peer_text, routes in learned.items():
        try:
            peer = Address.parse(peer_text)
        except ValueError:
            for _ in routes:
                refuse(reasons.IMPORT_MALFORMED)
            continue
        for prefix, next_hop in routes.items():
            if not any(rule.accepts(peer, prefix) for rule in rules):
                refuse(POLICY)
            elif any(prefix in s for s in subnets):
                refuse(OWN_SUBNET)
            elif next_hop is None or next_hop.value == 0 or not _same_family(peer, prefix, next_hop, context):
                refuse(NEXT_HOP, (peer_text, prefix, next_hop), "no next hop, or one of the other family")
            elif (refused := check(peer, prefix, next_hop, context)) is not None:
                refuse(refused[0], (peer_text, prefix, next_hop), refused[1])
            else:
                paths.setdefault(prefix, set()).add(next_hop)
    for version in (4, 6):
        ordered = sorted((p for p in paths if p.version == version), key=lambda p: (p.length, p.value))
        for prefix in ordered[:max_routes]:
            out.routes[prefix] = frozenset(paths[prefix])
        for _ in ordered[max_routes:]:
            refuse(LIMIT)
    return out
