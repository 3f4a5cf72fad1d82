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
   this node shares with the peer on the session's link, in the next hop's family (`ImportContext.on_link`). Of the
   session's own family these are the node's connected subnets holding the peer's address; of the other family
   (an IPv6 route over an IPv4 session, RFC 4760 MP_REACH, whose next hop is the router's global IPv6 address on
   the same link, what FRR sends by default; or the reverse) the node's connected subnets of that family on the
   interfaces holding those. When the node's connected subnets are unknown, or none of the family is on the link,
   only a configured peer's own address is provably on the link. A link-local next hop (fe80::/10) was refused at
   3: it is only valid with the interface it was learned on, which a kernel route made from it would not carry;
   except an unnumbered peer's own link-local address (`peers[].interface`), which passes every rule: it is on the
   session's link, and the route is installed with that interface (`via inet6 fe80::… dev eth1` for IPv4).
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
Link = int | str | None
"""The interface a connected address is on (its index; a node's name for its primary interface in `render`; None:
unknown, an interface of its own)."""
Interface = tuple[Address, int] | tuple[Address, int, Link]
"""A node's interface address: (address, prefix length[, link])."""


@dataclass(frozen=True, slots=True)
class ImportContext:
    """What the guard reads. `ebgp_single_hop`: the configured peers of another AS (on-link next hops only).
    `connected`: the node's connected subnets (its interfaces' address/length), None when unknown; `links`: the
    same subnets grouped by the interface they are on."""

    selected_subnets: tuple[Prefix, ...] = ()
    node_addresses: frozenset[Address] = frozenset()
    own_addresses: frozenset[Address] = frozenset()
    peers: frozenset[Address] = frozenset()
    ebgp_single_hop: frozenset[Address] = frozenset()
    connected: tuple[Prefix, ...] | None = None
    links: tuple[tuple[Prefix, ...], ...] = ()
    unnumbered: frozenset[Address] = frozenset()  # the interface peers' (link-local) addresses
    _on_link: dict[tuple[Address, int], tuple[Prefix, ...]] = field(default_factory=dict, compare=False, repr=False)

    def on_link(self, peer: Address, version: int) -> tuple[Prefix, ...]:
        """The connected subnets of IP `version` this node shares with `peer` on the session's link (cached): of
        the peer's family, those holding its address; of the other, those on the interfaces holding one of these
        (a special range such as fe80::/64 left out: no next hop lies there)."""
        key = (peer, version)
        out = self._on_link.get(key)
        if out is None:
            holding = tuple(c for c in self.connected or () if peer in c)
            if version == peer.version:
                out = holding
            else:
                on = (s for link in self.links if any(h in link for h in holding) for s in link)
                out = tuple(
                    dict.fromkeys(s for s in on if s.version == version and not special(version, s.first, s.last))
                )
            self._on_link[key] = out
        return out


EMPTY = ImportContext()


def context_of(
    config: Config,
    selected_subnets: Iterable[Prefix] = (),
    node_addresses: Iterable[Address] = (),
    interfaces: Iterable[Interface] | None = None,
    *,
    local_interfaces: bool = True,
) -> ImportContext:
    """The guard's context from the configuration, the selected networks' subnets, every node's addresses and the
    node's own interface addresses (`Interface`: address, prefix length, link; None: unknown). `local_interfaces`
    False: the interfaces give only the connected subnets, their addresses are not this speaker's (`render` in
    cluster mode reads every node's)."""
    own = {p.local_address for p in config.peers if p.local_address is not None}
    own |= set(config.next_hop_self)
    connected: tuple[Prefix, ...] | None = None
    links: dict[object, dict[Prefix, None]] = {}
    if interfaces is not None:
        for entry in interfaces:
            address, length, link = entry[0], entry[1], entry[2] if len(entry) > 2 else None
            if local_interfaces:
                own.add(address)
            subnet = Prefix.parse(f"{address}/{length}", strict=False)
            links.setdefault(object() if link is None else link, {})[subnet] = None  # None: an interface of its own
        connected = tuple(dict.fromkeys(s for subnets in links.values() for s in subnets))
    return ImportContext(
        selected_subnets=tuple(selected_subnets),
        node_addresses=frozenset(node_addresses),
        own_addresses=frozenset(own),
        peers=frozenset(p.address for p in config.peers),
        ebgp_single_hop=frozenset(p.address for p in config.peers if p.asn != config.local_asn),
        connected=connected,
        links=tuple(tuple(subnets) for subnets in links.values()),
        unnumbered=frozenset(p.address for p in config.peers if p.interface is not None),
    )


def interfaces_of_annotations(annotations: Mapping[str, object], primary: Link = "primary") -> list[Interface]:
    """A Node's interface addresses with their lengths, from OVN-K's `k8s.ovn.org/node-primary-ifaddr` (both on
    the node's primary interface, link `primary`: pass the node's name when several nodes' are read together) and
    `k8s.ovn.org/host-cidrs` (interface unknown) annotations: what `render` knows of a node's connected subnets.
    Malformed entries are skipped."""
    import json

    out: list[Interface] = []
    for key, link in (("k8s.ovn.org/node-primary-ifaddr", primary), ("k8s.ovn.org/host-cidrs", None)):
        raw = annotations.get(key)
        try:
            decoded = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            decoded = None
        values = decoded.values() if isinstance(decoded, dict) else decoded if isinstance(decoded, list) else ()
        for value in values:
            parsed = parse_address(value)
            if parsed is not None and parsed[2] is not None:
                out.append((Address(parsed[0], parsed[1]), parsed[2], link))
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
    if next_hop == peer and peer in context.unnumbered:
        return None  # an interface peer's own link-local address: on the session's link, installed with it
    what = special(next_hop.version, next_hop.value, next_hop.value)
    if what is not None:
        return reasons.IMPORT_NEXT_HOP_SPECIAL, f"the next hop {next_hop} is {what}"
    shared = context.on_link(peer, next_hop.version) if context.connected is not None else ()
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
        return _off_link(peer, next_hop, shared, context)
    return None


def _off_link(peer: Address, next_hop: Address, shared: tuple[Prefix, ...], context: ImportContext) -> Refused | None:
    """Rule 8 for a single-hop eBGP peer's next hop; `shared`: `context.on_link(peer, next_hop.version)`."""
    other = next_hop.version != peer.version
    if shared:
        if any(next_hop in s for s in shared):
            return None
        on = ", ".join(str(s) for s in shared)
        if other:
            where = f"the IPv{next_hop.version} subnets of the link to {peer}"
            return reasons.IMPORT_NEXT_HOP_OFF_LINK, f"the next hop {next_hop} is not on {where}: {on}"
        return reasons.IMPORT_NEXT_HOP_OFF_LINK, f"the next hop {next_hop} is not on the peer's subnet {on}"
    if next_hop in context.peers:
        return None
    if other and context.connected is not None and context.on_link(peer, peer.version):
        missing = f"no IPv{next_hop.version} subnet of this node is on the link to {peer}"
    else:
        missing = f"no connected subnet of this node holds {peer}"
    return reasons.IMPORT_NEXT_HOP_OFF_LINK, f"the next hop {next_hop} is not a configured peer and {missing}"


def check(peer: Address, prefix: Prefix, next_hop: Address, context: ImportContext) -> Refused | None:
    """None when the path may be installed, else (reason, message): see the module's rules."""
    return check_destination(prefix, context) or check_next_hop(peer, next_hop, context)
