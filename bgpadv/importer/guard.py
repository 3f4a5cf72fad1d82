"""The import's last guard: a learned path that may never reach a kernel table, whatever the policy accepts. Pure.

`check(peer, prefix, next_hop, context)` answers None (the path may be installed) or `(reason, message)`, a code
of `bgpadv.core.reasons`. It is asked for every path the import policy accepts (`bgpadv.importer.policy`), so a bad
path is dropped alone: the good paths of the same prefix still make the (multipath) route, and a prefix whose every
path is bad is not installed at all. In order:

1. destination (`special-destination`): the prefix overlaps a range of `SPECIAL` ("this network", loopback,
   link-local with OVN-K's masquerade subnet, multicast, reserved 240/4, limited broadcast; ::, ::1, IPv4-mapped,
   fe80::/10, ff00::/8). The default routes (0.0.0.0/0, ::/0) are exempt: they are what egress needs.
2. destination (`inside-selected-network`): the prefix lies inside a subnet of any selected network (its own
   network's are `own-subnet`, checked by the policy first).
3. next hop (`next-hop-special`): in a range of `SPECIAL`, or the network or broadcast address of the subnet shared
   with the peer (IPv4, /30 and wider).
4. next hop: a configured peer's own address passes 5-7 (a node reporting the ToR's address cannot cut egress).
5. next hop (`next-hop-local`): one of this speaker's addresses (`localAddress`, `nextHopSelf`, the node's own
   interface addresses).
6. next hop (`next-hop-node`): any cluster node's address.
7. next hop (`next-hop-vm-network`): inside a selected network's subnets, where every VM address lies (a default
   route through a VM is refused under the default-only policy too).
8. next hop (`next-hop-off-link`), for single-hop eBGP peers (another AS; bgpadv has no multihop): on a subnet
   this node shares with the peer (its connected subnets holding the peer's address); when the node's connected
   subnets are unknown, or none holds the peer, only a configured peer's own address is provably on the link.
   iBGP peers' next hops are not checked for it (the kernel resolves them, or refuses).

`ImportContext` holds what the checks read, built once per change of the configuration, the selected networks, the
nodes or the node's interfaces (`context_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bgpadv.config import Config
from bgpadv.core import reasons
from bgpadv.core.addressing import parse_address
from bgpadv.core.prefix import Address, Prefix


def _p(text: str) -> Prefix:
    return Prefix.parse(text)


SPECIAL: dict[int, tuple[tuple[Prefix, str], ...]] = {
    4: (
        (_p("0.0.0.0/8"), "'this network' 0.0.0.0/8"),
        (_p("127.0.0.0/8"), "loopback 127.0.0.0/8"),
        (_p("169.254.0.0/17"), "OVN-K's masquerade subnet 169.254.0.0/17 (link-local)"),
        (_p("169.254.0.0/16"), "link-local 169.254.0.0/16"),
        (_p("224.0.0.0/4"), "multicast 224.0.0.0/4"),
        (_p("255.255.255.255/32"), "the limited broadcast address 255.255.255.255"),
        (_p("240.0.0.0/4"), "reserved 240.0.0.0/4"),
    ),
    6: (
        (_p("::/128"), "the unspecified address ::"),
        (_p("::1/128"), "loopback ::1"),
        (_p("::ffff:0:0/96"), "IPv4-mapped ::ffff:0:0/96"),
        (_p("fe80::/10"), "link-local fe80::/10"),
        (_p("ff00::/8"), "multicast ff00::/8"),
    ),
}
"""Per IP version, (range, what) that is never a learned destination or a next hop (the first match is named)."""

Refused = tuple[str, str]  # (reason code, message)


@dataclass(frozen=True, slots=True)
class ImportContext:
    """What the guard reads. `ebgp_single_hop`: the configured peers of another AS (on-link next hops only).
    `connected`: the node's connected subnets (its interfaces' address/length), None when unknown."""

    selected_subnets: tuple[Prefix, ...] = ()
    node_addresses: frozenset[Address] = frozenset()
    own_addresses: frozenset[Address] = frozenset()
    peers: frozenset[Address] = frozenset()
    ebgp_single_hop: frozenset[Address] = frozenset()
    connected: tuple[Prefix, ...] | None = None
    _shared: dict[Address, tuple[Prefix, ...]] = field(default_factory=dict, compare=False, repr=False)

    def shared_with(self, peer: Address) -> tuple[Prefix, ...]:
        """The connected subnets holding `peer`'s address (cached)."""
        out = self._shared.get(peer)
        if out is None:
            out = tuple(c for c in self.connected or () if peer in c)
            self._shared[peer] = out
        return out


EMPTY = ImportContext()


def _address(a: object) -> Address:
    """A netaddr address of the configuration as an `Address`."""
    return Address(a.version, a.value)  # type: ignore[attr-defined]


def context_of(
    config: Config,
    selected_subnets: Iterable[Prefix] = (),
    node_addresses: Iterable[Address] = (),
    interfaces: Iterable[tuple[Address, int]] | None = None,
    *,
    local_interfaces: bool = True,
) -> ImportContext:
    """The guard's context from the configuration, the selected networks' subnets, every node's addresses and the
    node's own interface addresses (address, prefix length; None: unknown). `local_interfaces` False: the interfaces
    give only the connected subnets, their addresses are not this speaker's (`render` in cluster mode reads every
    node's)."""
    own = {_address(p.local_address) for p in config.peers if p.local_address is not None}
    own |= {_address(a) for a in config.next_hop_self}
    connected: tuple[Prefix, ...] | None = None
    if interfaces is not None:
        seen: dict[Prefix, None] = {}
        for address, length in interfaces:
            if local_interfaces:
                own.add(address)
            seen[Prefix.parse(f"{address}/{length}", strict=False)] = None
        connected = tuple(seen)
    return ImportContext(
        selected_subnets=tuple(selected_subnets),
        node_addresses=frozenset(node_addresses),
        own_addresses=frozenset(own),
        peers=frozenset(_address(p.address) for p in config.peers),
        ebgp_single_hop=frozenset(_address(p.address) for p in config.peers if p.asn != config.local_asn),
        connected=connected,
    )


def interfaces_of_annotations(annotations: Mapping[str, object]) -> list[tuple[Address, int]]:
    """A Node's interface addresses with their lengths, from OVN-K's `k8s.ovn.org/node-primary-ifaddr` and
    `k8s.ovn.org/host-cidrs` annotations (what `render` knows of a node's connected subnets). Malformed entries are
    skipped."""
    import json

    out: list[tuple[Address, int]] = []
    values: list[object] = []
    for key in ("k8s.ovn.org/node-primary-ifaddr", "k8s.ovn.org/host-cidrs"):
        raw = annotations.get(key)
        try:
            decoded = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            values += decoded.values()
        elif isinstance(decoded, list):
            values += decoded
    for value in values:
        parsed = parse_address(value)
        if parsed is not None and parsed[2] is not None:
            out.append((Address(parsed[0], parsed[1]), parsed[2]))
    return out


def special(version: int, first: int, last: int) -> str | None:
    """What special range first..last overlaps, or None."""
    for prefix, what in SPECIAL[version]:
        if prefix.first <= last and first <= prefix.last:
            return what
    return None


def check_destination(prefix: Prefix, context: ImportContext) -> Refused | None:
    if prefix.length > 0:
        what = special(prefix.version, prefix.first, prefix.last)
        if what is not None:
            return reasons.IMPORT_SPECIAL_DESTINATION, f"the destination overlaps {what}"
    for subnet in context.selected_subnets:
        if prefix in subnet:
            return reasons.IMPORT_INSIDE_SELECTED_NETWORK, f"the destination is inside the selected network {subnet}"
    return None


def check_next_hop(peer: Address, next_hop: Address, context: ImportContext) -> Refused | None:
    what = special(next_hop.version, next_hop.value, next_hop.value)
    if what is not None:
        return reasons.IMPORT_NEXT_HOP_SPECIAL, f"the next hop {next_hop} is {what}"
    shared = context.shared_with(peer) if context.connected is not None else ()
    for subnet in shared:
        if (
            next_hop in subnet
            and subnet.version == 4
            and subnet.length <= 30
            and next_hop.value
            in (
                subnet.first,
                subnet.last,
            )
        ):
            return reasons.IMPORT_NEXT_HOP_SPECIAL, f"the next hop {next_hop} is the network or broadcast of {subnet}"
    if next_hop not in context.peers:
        if next_hop in context.own_addresses:
            return reasons.IMPORT_NEXT_HOP_LOCAL, f"the next hop {next_hop} is this speaker's own address"
        if next_hop in context.node_addresses:
            return reasons.IMPORT_NEXT_HOP_NODE, f"the next hop {next_hop} is a cluster node's address"
        for subnet in context.selected_subnets:
            if next_hop in subnet:
                return reasons.IMPORT_NEXT_HOP_VM_NETWORK, f"the next hop {next_hop} is inside the VM network {subnet}"
    if peer in context.ebgp_single_hop:
        if shared:
            if not any(next_hop in s for s in shared):
                on = ", ".join(str(s) for s in shared)
                return reasons.IMPORT_NEXT_HOP_OFF_LINK, f"the next hop {next_hop} is not on the peer's subnet {on}"
        elif next_hop not in context.peers:
            return (
                reasons.IMPORT_NEXT_HOP_OFF_LINK,
                f"the next hop {next_hop} is not a configured peer and no connected subnet of this node holds {peer}",
            )
    return None


def check(peer: Address, prefix: Prefix, next_hop: Address, context: ImportContext) -> Refused | None:
    """None when the path may be installed, else (reason, message): see the module's rules."""
    return check_destination(prefix, context) or check_next_hop(peer, next_hop, context)
