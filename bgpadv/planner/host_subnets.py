"""Layer3 host subnets as held: which node each one belongs to, for the addresses OVN-K gives pods out of them.

On a Layer3 network OVN-K gives every node a host subnet (`k8s.ovn.org/node-subnets`, the node's entry for
`cluster_udn_<name>`) and every pod on that node an address from it. A host subnet belongs to the oldest node naming
it (creationTimestamp, then name), as for its route (`networks`, `host-subnet-conflict`), and only when it passes
the network's placement rules (`networks.host_subnet_check`: inside a cidr, of its hostSubnet length); a node whose
annotation is malformed holds none. Whether RouteAdvertisements select the node does not matter here: the host
route of a VM on an unselected node is refused for that (`node-not-selected`).

`pod_networks` refuses a Layer3 address read from a launcher pod's `k8s.ovn.org/pod-networks` that does not lie in
a host subnet of the pod's own node (`outside-node-subnet`). The holders of a network are worked out the first time
one of its addresses is looked up (most plans look up none: a cluster with Layer3 networks and no claimless VMs on
them pays nothing), from the node views taken when the index was made.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping

from bgpadv.core import reasons, views
from bgpadv.core.prefix import Prefix
from bgpadv.planner.networks import Network, host_subnet_check
from bgpadv.planner.nodes import NodeInfo, oldest_first

_Rows = tuple[list[tuple[int, int]], list[tuple[int, str, Prefix]]]
"""A network's held host subnets sorted by (version, first address), and (last address, node, prefix) of each."""

Inputs = tuple[object, ...]
"""What the holders depend on (`inputs`): equal inputs, equal holders."""


class HostSubnets:
    """The held host subnets of the Layer3 networks among those given, per network on first use (see the module)."""

    def __init__(self, nodes: Iterable[views.Node], networks: Iterable[Network]) -> None:
        self._networks = {n.name: n for n in networks if n.topology == "Layer3"}
        named = (n for n in nodes if n.name and n.host_subnets and n.host_subnets_problem is None)
        self._nodes = oldest_first(named) if self._networks else []
        self._rows: dict[str, _Rows] = {}

    def holder(self, network: str, version: int, value: int) -> tuple[Prefix, str] | None:
        """The held host subnet of `network` containing the address, and its node; None when none does."""
        starts, rows = self._held(network)
        i = bisect_right(starts, (version, value))
        if i == 0:
            return None
        v = starts[i - 1][0]
        last, node, prefix = rows[i - 1]
        return (prefix, node) if v == version and value <= last else None

    def of_node(self, network: str, node: str) -> list[Prefix]:
        """The host subnets `node` holds on `network` (for messages)."""
        return [prefix for _last, holder, prefix in self._held(network)[1] if holder == node]

    def _held(self, name: str) -> _Rows:
        rows = self._rows.get(name)
        if rows is None:
            rows = self._rows[name] = self._compute(name)
        return rows

    def _compute(self, name: str) -> _Rows:
        network = self._networks.get(name)
        if network is None:
            return [], []
        check = host_subnet_check(network)
        held: dict[tuple[int, int, int], tuple[str, Prefix]] = {}
        for node in self._nodes:
            entries = node.host_subnets.get(name)
            if not entries:
                continue
            info = NodeInfo(node.name, node.ref)  # the placement rules read no more of it
            for entry in entries:
                prefix = entry.prefix
                if prefix is None or prefix.key in held:
                    continue
                refusal = check(info, entry)
                if refusal is None or refusal.reason == reasons.NODE_NOT_SELECTED:
                    held[prefix.key] = (node.name, prefix)
        ordered = sorted(held.values(), key=lambda item: item[1].key)
        return [(p.version, p.value) for _n, p in ordered], [(p.last, n, p) for n, p in ordered]


def inputs(nodes: Mapping[str, views.Node], networks: Iterable[Network]) -> Inputs:
    """What `HostSubnets(nodes.values(), networks)` depends on: the Layer3 networks' ranges and every node's name,
    age and host subnets (nothing when no network is Layer3). The incremental planner compares them after a node
    or network change."""
    layer3 = tuple((n.name, n.subnets, n.host_subnet_lengths) for n in networks if n.topology == "Layer3")
    if not layer3:
        return ()
    named = tuple(
        (n.name, n.age, n.host_subnets) for n in nodes.values() if n.host_subnets and n.host_subnets_problem is None
    )
    return layer3, named
