"""Layer3 host subnets: which node holds each one, for its route and for the addresses OVN-K gives pods out of it.

On a Layer3 network OVN-K gives every node a host subnet (`k8s.ovn.org/node-subnets`, the node's entry for
`cluster_udn_<name>`) and every pod on that node an address from it. `holders` answers, once for both uses, which
node holds each host subnet and why an entry is held by none: the nodes are read oldest first (creationTimestamp,
then name) and the first to name a host subnet that passes the network's placement rules (`host_subnet_check`:
a CIDR, inside a cidr, of its hostSubnet length) holds it; a younger node naming it is refused
`host-subnet-conflict`; a node whose annotation is malformed holds none.

Whether the network's RouteAdvertisements select the node (`nodeSelector`) is the one difference between the uses,
the `node_selection` step of `holders`: a host subnet's route (`networks.subnet_routes`) needs it, so an entry on a
node not selected is refused `node-not-selected` and holds nothing; for a pod's addresses it does not matter (the
host route of a VM on a node not selected is refused for that), so `HostSubnets` skips the step.

`pod_networks` refuses a Layer3 address read from a launcher pod's `k8s.ovn.org/pod-networks` that does not lie in
a host subnet of the pod's own node (`outside-node-subnet`). `HostSubnets` works out the holders of a network the
first time one of its addresses is looked up (most plans look up none: a cluster with Layer3 networks and no
claimless VMs on them pays nothing), from the node views taken when the index was made.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence

from bgpadv.core import reasons, views
from bgpadv.core.model import Refusal
from bgpadv.core.prefix import Prefix
from bgpadv.planner import checks
from bgpadv.planner.advertised import Network
from bgpadv.planner.nodes import NodeInfo, oldest_first

__all__ = ["HostSubnetCheck", "HostSubnets", "Inputs", "holders", "host_subnet_check", "inputs"]

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
        held = holders(self._nodes, _info, (network,), [], node_selection=False)
        ordered = sorted(((info.name, prefix) for info, _network, prefix, _entry in held), key=lambda h: h[1].key)
        return [(p.version, p.value) for _n, p in ordered], [(p.last, n, p) for n, p in ordered]


def _info(node: views.Node) -> NodeInfo:
    return NodeInfo(node.name, node.ref)  # the placement rules read no more of it without node selection


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


HostSubnetCheck = Callable[[NodeInfo, views.HostSubnet], Refusal | None]
"""The refusal of a malformed or misplaced host subnet a node names for one network, or None."""

Holding = tuple[NodeInfo, Network, Prefix, views.HostSubnet]
"""A host subnet as held (`holders`): its node, its network, the prefix, and the entry naming it."""


def holders(
    nodes: Iterable[views.Node],
    info_of: Callable[[views.Node], NodeInfo | None],
    layer3: Sequence[Network],
    refusals: list[Refusal],
    *,
    node_selection: bool = True,
) -> list[Holding]:
    """Every host subnet the Layer3 networks `layer3` give a node, as held: in node order (`nodes`, oldest first;
    `info_of` gives each node's index entry, None: skipped), the first node to name a subnet that passes the
    network's rules holds it; the refusals of the entries held by none go into `refusals`, in the same order: a
    node's malformed annotation (once), an entry that is malformed, on a node the network's RouteAdvertisements do
    not select (`node_selection` only), misplaced (`host_subnet_check`) or held by an older node. A node naming its
    own subnet twice holds it once.

    Each network's rules are compiled once here (its cidrs per family, `_placement_spans`), the node selectors read
    once per node and network: an entry the fast path accepts costs a range test and one dict look-up; any other
    goes through `host_subnet_check`, which words the refusal. Within a network every host subnet has its cidr's
    hostSubnet length and cidrs never overlap, and advertised networks never overlap each other: two host subnets
    overlap only when they are the same prefix (held by its `key`).
    """
    rules = [(network, host_subnet_check(network), _placement_spans(network)) for network in layer3]
    holder: dict[tuple[int, int, int], NodeInfo] = {}
    held = holder.get
    out: list[Holding] = []
    hold = out.append
    for node in nodes:
        info = info_of(node)
        if info is None:
            continue
        problem = node.host_subnets_problem
        if problem is not None:
            refusals.append(Refusal(info.ref, problem.value, problem.reason, problem.message, ""))
            continue
        named = node.host_subnets
        if not named:
            continue
        for network, check, spans in rules:
            entries = named.get(network.name)
            if not entries:
                continue
            selected = not node_selection or network.node_selectors is None or network.selects_node(info.labels)
            fast = spans if selected else None
            for entry in entries:
                net = entry.prefix
                fits = False
                if fast is not None and net is not None:  # the fast path (`_placement_spans`)
                    first, length = net.value, net.length
                    for lo, hi, cidr_length, required in fast[net.version]:
                        if lo <= first <= hi and length >= cidr_length:
                            fits = required is None or required == length
                            break
                if not fits:  # `check` decides, and words the refusal
                    refusal = check(info, entry) if selected or net is None else _not_selected(info, entry, network)
                    if refusal is not None:
                        refusals.append(refusal)
                        continue
                assert net is not None  # check() refuses an entry that does not parse
                key = net.key
                older = held(key)
                if older is None:
                    holder[key] = info
                    hold((info, network, net, entry))
                elif older is not info:  # the same node naming it twice: once is enough
                    message = f"host subnet {net} is also named by node {older.name}, which is older and keeps it"
                    refusals.append(Refusal(info.ref, entry.text, checks.HOST_SUBNET_CONFLICT, message, network.name))
    return out


def _not_selected(info: NodeInfo, entry: views.HostSubnet, network: Network) -> Refusal:
    name = network.name
    message = f"no RouteAdvertisements advertising CUDN {name} selects node {info.name} (nodeSelector)"
    return Refusal(info.ref, entry.text, reasons.NODE_NOT_SELECTED, message, name)


def host_subnet_check(network: Network) -> HostSubnetCheck:
    """The placement rules of one Layer3 network's host subnets, precompiled once per plan: a CIDR, inside one of
    its cidrs, of that cidr's hostSubnet length (any cidr of `host_subnet_lengths` covering it).

    The cidrs of a valid network never overlap, so when every cidr of `host_subnet_lengths` is one of its `subnets`
    (as the decoder writes them) the one covering cidr tells both: one pass over the cidrs."""
    lengths = tuple((c.version, c.first, c.last, n) for c, n in network.host_subnet_lengths)
    by_cidr = {c: n for c, n in network.host_subnet_lengths}
    merged = set(by_cidr) <= set(network.subnets)
    spans = tuple((s.version, s.first, s.last, by_cidr.get(s) if merged else None) for s in network.subnets)
    name = network.name

    def check(info: NodeInfo, entry: views.HostSubnet) -> Refusal | None:
        net = entry.prefix
        if net is None:
            return Refusal(info.ref, entry.text, checks.MALFORMED_ADDRESS, "host subnet is not a CIDR", name)
        version, first, last, length = net.version, net.value, net.last, net.length
        required: int | None = -1  # -1: no cidr covers it
        for v, lo, hi, n in spans:
            if v == version and lo <= first and last <= hi:
                required = n
                break
        if required == -1:
            message = f"host subnet of node {info.name} lies outside every subnet of CUDN {name}"
            return Refusal(info.ref, entry.text, checks.OUTSIDE_NETWORK_SUBNETS, message, name)
        if merged:
            if required is None or required == length:
                return None
            return _wrong_length(info, entry, required, name)
        for v, lo, hi, n in lengths:
            if v == version and lo <= first and last <= hi and length != n:
                return _wrong_length(info, entry, n, name)
        return None

    return check


def _wrong_length(info: NodeInfo, entry: views.HostSubnet, length: int, network: str) -> Refusal:
    # e.g. the whole cluster cidr: announcing it towards one node would pull every node's pods to it
    message = f"host subnet of node {info.name} is not a /{length} (hostSubnet of CUDN {network})"
    return Refusal(info.ref, entry.text, checks.MALFORMED_ADDRESS, message, network)


def _placement_spans(network: Network) -> dict[int, tuple[tuple[int, int, int, int | None], ...]] | None:
    """Per IP version, (first, last, prefix length, required hostSubnet length or None) of each cidr of a Layer3
    network, for the fast path of its host-subnet rules; None when `host_subnet_check` must decide every entry (a
    `host_subnet_lengths` cidr that is not one of its subnets, which the decoder never writes).

    A well-formed entry (no host bits, as decoded) starting inside a cidr with a prefix at least as long lies
    inside it; with the required length (or none set) it passes every rule `host_subnet_check` applies."""
    by_cidr = {c: n for c, n in network.host_subnet_lengths}
    if not set(by_cidr) <= set(network.subnets):
        return None
    spans: dict[int, list[tuple[int, int, int, int | None]]] = {4: [], 6: []}
    for s in network.subnets:
        spans.setdefault(s.version, []).append((s.first, s.last, s.network.length, by_cidr.get(s)))
    return {version: tuple(rows) for version, rows in spans.items()}
