"""Node addresses: the next hop of every route that points at a node.

A node's next-hop candidates of one family are read once, by the decoder (`bgpadv.core.views.Node`): its
`status.addresses[]` entries of type `InternalIP` in that family, then the address in the OVN-K annotation
`k8s.ovn.org/node-primary-ifaddr` (`{"ipv4": "a.b.c.d/len", "ipv6": ...}`, mask stripped) — the address OVN-K's own
RouteAdvertisements controller uses. The first *valid* one is the next hop.

A candidate is invalid, and skipped in favour of the next source of its family, when it can never be a next hop:

- in a special-purpose range refused for next hops (`special_address_reason`, the `next_hop` column of
  `bgpadv.core.addressing.SPECIAL_PURPOSE`): unspecified, "this network", loopback, link-local, multicast, limited
  broadcast, IPv4-mapped, NAT64, 6to4, Teredo, ORCHID, documentation, benchmarking, reserved 240.0.0.0/4 ...;
- inside a subnet of an advertised network (a CUDN's subnet or Layer3 cidr, e.g. the VM's own address): traffic for
  the network would be sent into itself (a network over node space is refused, `space`, so this holds only for an
  address no node-space rule saw);
- a BGP peer's address (RFC 4271 §5.1.3: a next hop that is the receiving router's own address); in per-node mode, a
  session's local address or a `nextHopSelf` address on any node but bgpadv's own (`space.next_hop_exclusions`);
- an address an older node reports too (InternalIP, ExternalIP, primary-ifaddr, host-cidrs of two nodes: a cloned
  image, or one node's hostile annotation): the node that reported it first (the oldest by creationTimestamp, then
  name) keeps it, and it is no next hop of any later node (`duplicate-node-address`). So one node's annotation can
  never take, nor withdraw, another node's next hops: listing every other node's address only refuses them for the
  listing node itself. The later node is refused once, on the Node (`NodeInfo.refusals`: the first addresses it
  lost and the nodes that keep them), whatever the size of its annotation: one pass over every node address,
  one dictionary entry per distinct address (`taken_addresses`).

When a family had candidates but none is valid, a route that needs that family's next hop is refused
`invalid-node-address` (or `duplicate-node-address` when the first rejected candidate is an older node's; the
message names it and why) instead of `no-node-address`.

Every address a node has (`views.Node.addresses`: `InternalIP`, `ExternalIP`, `node-primary-ifaddr`, each entry of
`k8s.ovn.org/host-cidrs`, valid or not) is also a node address no VM may take (see `node_address_keys` and rule 8 of
`vms`); the guard's rule 5 reads the same set.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from bgpadv.core.addressing import SPECIAL_RANGES, special_address_reason, special_range_reason
from bgpadv.core.model import ObjectRef, Refusal
from bgpadv.core.prefix import Address
from bgpadv.core.reasons import DUPLICATE_NODE_ADDRESS, INVALID_NODE_ADDRESS, NO_NODE_ADDRESS
from bgpadv.core.views import EMPTY_LABELS, Node, address_key
from bgpadv.planner.checks import SubnetRange

__all__ = [
    "SPECIAL_RANGES",
    "NodeInfo",
    "index_nodes",
    "node_address_keys",
    "node_addresses",
    "node_refusals",
    "oldest_first",
    "special_address_reason",
    "special_range_reason",
    "taken_addresses",
]


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node: its reference (for route sources), its next-hop address per family (4, 6), and, per family whose
    candidates were all invalid, why the first of them was refused (`rejected`: (reason code, phrase)); `refusals`:
    the node's own refusals (addresses an older node reported first, `duplicate-node-address`)."""

    name: str
    ref: ObjectRef
    addresses: Mapping[int, Address] = field(default_factory=dict)
    rejected: Mapping[int, tuple[str, str]] = field(default_factory=dict)
    keys: frozenset[int] = frozenset()  # every address the node has, as vms.address_key integers
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY_LABELS)  # RouteAdvertisements nodeSelector
    refusals: tuple[Refusal, ...] = ()

    def address(self, version: int) -> Address | None:
        return self.addresses.get(version)

    def no_address(self, version: int) -> tuple[str, str]:
        """Why the node has no next hop of the family, as (reason code, message): `invalid-node-address` or
        `duplicate-node-address` when it had only refused candidates, `no-node-address` when it had none."""
        why = self.rejected.get(version)
        if why is not None:
            return why[0], f"node {self.name} has no valid IPv{version} address: {why[1]}"
        return NO_NODE_ADDRESS, f"node {self.name} has no IPv{version} address"


Sessions = Iterable[tuple[int, int, str]]
"""(version, value, what) of session addresses (`space.next_hop_exclusions`)."""


def node_addresses(
    node: Node,
    advertised: Iterable[SubnetRange] = (),
    sessions: Sessions = (),
    shared: Mapping[tuple[int, int], str] | None = None,
) -> tuple[dict[int, Address], dict[int, tuple[str, str]], frozenset[int]]:
    """One node's next hop per family, why a family with only refused candidates has none ((reason code, phrase)),
    and the keys of every address it has (see the module docstring). `shared`: (version, value) → the older node
    that reported the same address first (`taken_addresses`)."""
    inside = _Subnets(advertised)
    own = {(v, value): what for v, value, what in sessions}
    chosen: dict[int, Address] = {}
    rejected: dict[int, tuple[str, str]] = {}
    for candidate in node.next_hop_candidates:
        version, value = candidate.version, candidate.value
        if version in chosen:
            continue
        reason, why = INVALID_NODE_ADDRESS, special_address_reason(version, value)
        if why is None:
            why = own.get((version, value))
        if why is None:
            holder = inside.holder(version, value)
            if holder is not None:
                why = f"inside the advertised subnet {holder.network}"
        if why is None and shared is not None and (version, value) in shared:
            reason, why = DUPLICATE_NODE_ADDRESS, f"also an address of node {shared[version, value]}, {_FIRST}"
        if why is None:
            chosen[version] = candidate
        else:
            rejected.setdefault(version, (reason, f"{candidate} is {why}, never a next hop"))
    for version in chosen:
        rejected.pop(version, None)
    keys = frozenset(address_key(a.version, a.value) for a in (*node.next_hop_candidates, *node.addresses))
    return chosen, rejected, keys


class _Subnets:
    """The advertised subnets (which never overlap) sorted per family, for a bisection per address."""

    firsts: dict[int, list[int]]
    ranges: dict[int, list[SubnetRange]]

    def __init__(self, subnets: Iterable[SubnetRange]) -> None:
        if isinstance(subnets, _Subnets):
            self.firsts, self.ranges = subnets.firsts, subnets.ranges
            return
        ordered = sorted(subnets, key=lambda s: (s.version, s.first))
        self.ranges = {v: [s for s in ordered if s.version == v] for v in (4, 6)}
        self.firsts = {v: [s.first for s in r] for v, r in self.ranges.items()}

    def __iter__(self) -> Iterator[SubnetRange]:
        return iter((*self.ranges[4], *self.ranges[6]))

    def holder(self, version: int, value: int) -> SubnetRange | None:
        i = bisect_right(self.firsts[version], value)
        if i == 0:
            return None
        subnet = self.ranges[version][i - 1]
        return subnet if value <= subnet.last else None


_FIRST = "which reported it first (older) and keeps it"
_SHOWN = 4  # addresses a node's duplicate-node-address refusal names (the rest are counted)


def taken_addresses(nodes: Mapping[str, Node]) -> dict[str, dict[tuple[int, int], str]]:
    """Per node name, the addresses it reports that an older node reported first, each with that node (the oldest
    reporter: creationTimestamp, then name). One pass over every node's addresses, oldest node first."""
    first: dict[tuple[int, int], str] = {}
    out: dict[str, dict[tuple[int, int], str]] = {}
    for node in oldest_first(n for n in nodes.values() if n.name):
        name = node.name
        for a in (*node.next_hop_candidates, *node.addresses):
            key = a.key
            owner = first.setdefault(key, name)
            if owner != name:
                out.setdefault(name, {})[key] = owner
    return out


def oldest_first(nodes: Iterable[Node]) -> list[Node]:
    """`nodes` oldest first (creationTimestamp, then name; none: the youngest): the order in which the first to
    report an address, or to name a host subnet, keeps it."""
    return sorted(nodes, key=_age)


def _age(node: Node) -> tuple[str, str]:
    return node.age


def duplicate_refusal(node: Node, taken: Mapping[tuple[int, int], str]) -> Refusal:
    """The one refusal of a node that reports addresses older nodes reported first: the first few (in address
    order), each with the node that keeps it, and how many more (bounded whatever the annotation's size)."""
    keys = sorted(taken)
    first = [str(Address.of(*k)) for k in keys[:_SHOWN]]
    more = len(keys) - len(first)
    value = ", ".join(first) + (", …" if more else "")
    if len(keys) == 1:
        message = f"{first[0]} is also an address of node {taken[keys[0]]}, {_FIRST}"
    else:
        held = ", ".join(f"{a} (node {taken[k]})" for a, k in zip(first, keys, strict=False))
        message = f"{len(keys)} of its addresses are older nodes', which reported them first and keep them: {held}"
        message += f" and {more} more" if more else ""
    message += f"; never a next hop of node {node.name}"
    return Refusal(node.ref, value, DUPLICATE_NODE_ADDRESS, message)


def index_nodes(
    nodes: Mapping[str, Node],
    advertised: Iterable[SubnetRange] = (),
    peers: Sessions = (),
    own: Sessions = (),
    node_name: str | None = None,
) -> dict[str, NodeInfo]:
    """Every node by name, with its addresses. Nodes without a name are skipped.

    `advertised`: the subnets of every advertised network (a node address inside one is never a next hop).
    `peers`: the BGP peers' addresses, never a next hop. `own`: bgpadv's local and nextHopSelf addresses, a next hop
    only of the node bgpadv runs on: in per-node mode (`node_name`) of that node only (see
    `space.next_hop_exclusions`). An address two nodes report is the next hop of the older only; the younger is
    refused `duplicate-node-address` (`NodeInfo.refusals`).
    """
    subnets = _Subnets(advertised)
    theirs = tuple(peers)
    mine = tuple(own)
    taken = taken_addresses(nodes)
    out: dict[str, NodeInfo] = {}
    for node in nodes.values():
        if node.name:
            refused = theirs if node_name is None or node.name == node_name else (*theirs, *mine)
            lost = taken.get(node.name)
            chosen, rejected, keys = node_addresses(node, subnets, refused, lost)
            refusals = (duplicate_refusal(node, lost),) if lost else ()
            out[node.name] = NodeInfo(node.name, node.ref, chosen, rejected, keys, node.labels, refusals)
    return out


def node_refusals(nodes: Mapping[str, NodeInfo]) -> list[Refusal]:
    """The nodes' own refusals (`NodeInfo.refusals`), in node order."""
    return [r for info in nodes.values() for r in info.refusals]


def node_address_keys(nodes: Mapping[str, NodeInfo]) -> frozenset[int]:
    """The address keys of every address of every node (no VM host route may take one)."""
    keys: set[int] = set()
    for info in nodes.values():
        keys |= info.keys
    return frozenset(keys)
