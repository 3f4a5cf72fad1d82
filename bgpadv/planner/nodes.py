"""Node addresses: the next hop of every route that points at a node.

A node's next-hop candidates of one family are read once, by the decoder (`bgpadv.core.views.Node`): its
`status.addresses[]` entries of type `InternalIP` in that family, then the address in the OVN-K annotation
`k8s.ovn.org/node-primary-ifaddr` (`{"ipv4": "a.b.c.d/len", "ipv6": ...}`, mask stripped) — the address OVN-K's own
RouteAdvertisements controller uses. The first *valid* one is the next hop.

A candidate is invalid, and skipped in favour of the next source of its family, when it can never be a next hop:

- not a unicast address (`special_address_reason`): unspecified (0.0.0.0, ::), "this network" 0.0.0.0/8, loopback
  (127.0.0.0/8, ::1), link-local (169.254.0.0/16, fe80::/10), multicast (224.0.0.0/4, ff00::/8), the limited
  broadcast 255.255.255.255, or IPv4-mapped IPv6 (::ffff:0:0/96);
- inside a subnet of an advertised network (a CUDN's subnet or Layer3 cidr, e.g. the VM's own address): traffic for
  the network would be sent into itself.

When a family had candidates but none is valid, a route that needs that family's next hop is refused
`invalid-node-address` (naming the first rejected candidate and why) instead of `no-node-address`.

Every address a node has (`views.Node.addresses`: `InternalIP`, `ExternalIP`, `node-primary-ifaddr`, each entry of
`k8s.ovn.org/host-cidrs`, valid or not) is also a node address no VM may take (see `node_address_keys` and rule 8 of
`vms`); the guard's rule 5 reads the same set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bgpadv.core.addressing import SPECIAL_RANGES, special_address_reason, special_range_reason
from bgpadv.core.model import ObjectRef
from bgpadv.core.prefix import Address
from bgpadv.core.views import Node, address_key
from bgpadv.planner.checks import SubnetRange

__all__ = [
    "SPECIAL_RANGES",
    "NodeInfo",
    "index_nodes",
    "node_address_keys",
    "node_addresses",
    "special_address_reason",
    "special_range_reason",
]


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node: its reference (for route sources), its next-hop address per family (4, 6), and, per family whose
    candidates were all invalid, why the first of them was refused (`rejected`)."""

    name: str
    ref: ObjectRef
    addresses: Mapping[int, Address] = field(default_factory=dict)
    rejected: Mapping[int, str] = field(default_factory=dict)
    keys: frozenset[int] = frozenset()  # every address the node has, as vms.address_key integers

    def address(self, version: int) -> Address | None:
        return self.addresses.get(version)

    def no_address(self, version: int) -> tuple[bool, str]:
        """Why the node has no next hop of the family: (True, message) when it had only invalid candidates
        (`invalid-node-address`), (False, message) when it had none (`no-node-address`)."""
        why = self.rejected.get(version)
        if why is not None:
            return True, f"node {self.name} has no valid IPv{version} address: {why}"
        return False, f"node {self.name} has no IPv{version} address"


def node_addresses(
    node: Node, advertised: Iterable[SubnetRange] = ()
) -> tuple[dict[int, Address], dict[int, str], frozenset[int]]:
    """One node's next hop per family, why a family with only invalid candidates has none, and the keys of every
    address it has (see the module docstring)."""
    advertised = tuple(advertised)
    chosen: dict[int, Address] = {}
    rejected: dict[int, str] = {}
    for candidate in node.next_hop_candidates:
        version, value = candidate.version, candidate.value
        if version in chosen:
            continue
        why = special_address_reason(version, value)
        if why is None:
            inside = next((s for s in advertised if s.contains(version, value)), None)
            if inside is not None:
                why = f"inside the advertised subnet {inside.network}"
        if why is None:
            chosen[version] = candidate
        else:
            rejected.setdefault(version, f"{candidate} is {why}, never a next hop")
    for version in chosen:
        rejected.pop(version, None)
    keys = frozenset(address_key(a.version, a.value) for a in (*node.next_hop_candidates, *node.addresses))
    return chosen, rejected, keys


def index_nodes(nodes: Mapping[str, Node], advertised: Iterable[SubnetRange] = ()) -> dict[str, NodeInfo]:
    """Every node by name, with its addresses. Nodes without a name are skipped.

    `advertised`: the subnets of every advertised network (a node address inside one is never a next hop).
    """
    subnets = tuple(advertised)
    out: dict[str, NodeInfo] = {}
    for node in nodes.values():
        if node.name:
            chosen, rejected, keys = node_addresses(node, subnets)
            out[node.name] = NodeInfo(node.name, node.ref, chosen, rejected, keys)
    return out


def node_address_keys(nodes: Mapping[str, NodeInfo]) -> frozenset[int]:
    """The address keys of every address of every node (no VM host route may take one)."""
    keys: set[int] = set()
    for info in nodes.values():
        keys |= info.keys
    return frozenset(keys)
