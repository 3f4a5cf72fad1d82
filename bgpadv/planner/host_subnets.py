"""Layer3 host subnets as held: which node each one belongs to, for the addresses OVN-K gives pods out of them.

On a Layer3 network OVN-K gives every node a host subnet (`k8s.ovn.org/node-subnets`, the node's entry for
`cluster_udn_<name>`) and every pod on that node an address from it. A host subnet belongs to the oldest node naming
it (creationTimestamp, then name), as for its route (`networks`, `host-subnet-conflict`), and only when it passes
the network's placement rules (`networks.host_subnet_check`: inside a cidr, of its hostSubnet length); a node whose
annotation is malformed holds none. Whether RouteAdvertisements select the node does not matter here: the host
route of a VM on an unselected node is refused for that (`node-not-selected`).

`pod_networks` refuses a Layer3 address read from a launcher pod's `k8s.ovn.org/pod-networks` that does not lie in
a host subnet of the pod's own node (`outside-node-subnet`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bgpadv.core import reasons, views
from bgpadv.core.prefix import Prefix
from bgpadv.planner.networks import Network, host_subnet_check
from bgpadv.planner.nodes import NodeInfo

Held = tuple[tuple[int, int], tuple[int, str, Prefix]]
"""((version, first), (last, node, prefix)) of one held host subnet."""


@dataclass(frozen=True, slots=True)
class HostSubnets:
    """Per Layer3 network name, its held host subnets sorted by (version, first address), with their nodes. Equal
    when they say the same (the incremental planner keeps the previous object then)."""

    held: Mapping[str, tuple[Held, ...]]

    def holder(self, network: str, version: int, value: int) -> tuple[Prefix, str] | None:
        """The held host subnet of `network` containing the address, and its node; None when none does."""
        rows = self.held.get(network)
        if not rows:
            return None
        i = bisect_right(rows, ((version, value), (_TOP, "", _ANY)))
        if i == 0:
            return None
        (v, _first), (last, node, prefix) = rows[i - 1]
        return (prefix, node) if v == version and value <= last else None

    def of_node(self, network: str, node: str) -> list[Prefix]:
        """The host subnets `node` holds on `network` (for messages)."""
        return [prefix for _start, (_last, holder, prefix) in self.held.get(network, ()) if holder == node]


_TOP = 1 << 129  # sorts after every last address
_ANY = Prefix(4, 0, 0)
EMPTY = HostSubnets({})


def host_subnets(
    nodes: Mapping[str, views.Node], index: Mapping[str, NodeInfo], networks: Iterable[Network]
) -> HostSubnets:
    """The held host subnets of the Layer3 networks among `networks` (see the module); `index`: the node index
    (`nodes.index_nodes`), for the placement rules' node labels."""
    layer3 = [n for n in networks if n.topology == "Layer3"]
    if not layer3:
        return EMPTY
    rules = [(n.name, host_subnet_check(n)) for n in layer3]
    held: dict[str, dict[tuple[int, int, int], tuple[str, Prefix]]] = {name: {} for name, _check in rules}
    for node in sorted(nodes.values(), key=_age):
        info = index.get(node.name)
        if info is None or node.host_subnets_problem is not None or not node.host_subnets:
            continue
        for name, check in rules:
            for entry in node.host_subnets.get(name, ()):
                prefix = entry.prefix
                if prefix is None:
                    continue
                refusal = check(info, entry)
                if refusal is None or refusal.reason == reasons.NODE_NOT_SELECTED:
                    held[name].setdefault(prefix.key, (node.name, prefix))
    return HostSubnets(
        {
            name: tuple(sorted(((p.version, p.value), (p.last, node, p)) for node, p in subnets.values()))
            for name, subnets in held.items()
            if subnets
        }
    )


def _age(node: views.Node) -> tuple[str, str]:
    return node.age
