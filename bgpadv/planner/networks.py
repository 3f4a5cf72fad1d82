"""ClusterUserDefinedNetworks: which are advertised, their address ranges, and their subnet routes.

Selection (both filters apply when both are configured):

- `networks.selector` must match the CUDN's `metadata.labels` (no selector: every CUDN).
- With `networks.followRouteAdvertisements`, some RouteAdvertisements must also select it: `PodNetwork` in
  `spec.advertisements`, a `ClusterUserDefinedNetworks` entry of `spec.networkSelectors` whose `networkSelector`
  matches the CUDN's labels, and condition `Accepted=True` whose `observedGeneration` equals `metadata.generation`
  when both are present (an RA without conditions counts when its legacy `status.status` is `Accepted`).

A CUDN being deleted (`deletionTimestamp`) or whose `NetworkCreated` condition is False contributes nothing: its
routes are withdrawn and claims on it are skipped without a refusal. A selected CUDN that is neither a primary Layer2
or Layer3 network nor an IPAM-less secondary Layer2 one (Localnet, other Secondary) is refused as
`network-not-advertisable`, and so is every claim on it.

Namespaces: on every network, claims and guest reports count only from the namespaces the CUDN's
`namespaceSelector` selects (`Network.selects_namespace`, `namespace-not-selected` otherwise), evaluated on the
real Namespace labels; a namespace bgpadv has not listed (a dump without Namespaces, an event racing its
Namespace's) only by its `kubernetes.io/metadata.name` label and only when the selector reads no other label. A
Namespace appearing, going or relabelled changes the networks (the incremental planner rebuilds its host caches).

VRFs (`vrf-not-served`, the CUDN refused whole with every claim on it): bgpadv's sessions are the default VRF's
(peers have no VRF). A selected CUDN with `spec.network.transport: EVPN` (its `evpn: {vtep, macVRF, ipVRF}`
block: routes in its own MAC-VRF/IP-VRF) is refused; with `followRouteAdvertisements`, so is one that only
RouteAdvertisements with a `targetVRF` other than absent/`default` select (`auto`: VRF-Lite, the network's own
VRF; or a VRF name). One default-VRF RouteAdvertisements among them is enough to serve it.

RouteAdvertisements, the rest of the spec (with `followRouteAdvertisements`): `nodeSelector` of the default-VRF
RouteAdvertisements selecting a network bounds the nodes it is advertised on (`Network.node_selectors`; OVN-K's
CRD demands `{}` with PodNetwork, i.e. every node); a host route or Layer3 host subnet pointing at another node is
refused `node-not-selected`, and so, in per-node mode, is a Layer2 subnet (next hop self) announced by a speaker whose
node the selectors leave out. `advertisements` other than `PodNetwork` (`EgressIP`) are not bgpadv's: each gets
one `advertisement-not-implemented` refusal on the RouteAdvertisements when it selects a network bgpadv's selector
selects. `frrConfigurationSelector` picks frr-k8s FRRConfigurations (peers for OVN-K's own FRR): bgpadv's peers are
its configuration's, so it is not read.

IPAM-less secondary Layer2 networks (`role: Secondary`, `ipam.mode: Disabled`): OVN-K assigns no address, the guests
configure their own, and `vms` reads them from the VMIs (rule 9 there). What may be announced is bounded by the CUDN's
`subnets` when it has one (as the epic describes; then the subnet is announced as for any Layer2 network, its
network/broadcast and gateway addresses are refused) and by `networks.secondary[].allowedPrefixes` of bgpadv's
configuration when set (`outside-allowed-prefixes`). Without a subnet (the CRD today), the allowed prefixes are the
network's ranges (the guard, node next hops and overlaps see them; they are not announced themselves; their network and
broadcast addresses are refused like a subnet's); with neither, nothing is announced.
A primary network with `ipam.mode: Disabled` (the CRD forbids it) is refused `invalid-network-definition`.

Definitions are validated like OVN-K's own CRD validation (the CEL rules of
`go-controller/pkg/crd/userdefinednetwork/v1/shared.go`), plus what a route may never be. Any violation refuses the
CUDN whole: one refusal per offending value on the CUDN (`invalid-network-definition`; `malformed-address` for a
string that does not parse; `malformed-object` for a field that is not a list), no route, and every claim on it
refused `invalid-network-definition`. A cluster with an older CRD (or a hand-written dump) may hold such objects.

- Every subnet (Layer2 `subnets`, Layer3 `cidr`): not a default route, not a /32 or /128 (a VM host route has that
  size), and overlapping no range that never holds unicast hosts (0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16,
  224.0.0.0/4, 255.255.255.255, ::, ::1, ::ffff:0:0/96, fe80::/10, ff00::/8; see `nodes.SPECIAL_RANGES`).
- Layer2 `subnets`: 1 or 2 CIDRs, of different families when 2; required unless `ipam.mode` is Disabled.
- Layer2 `infrastructureSubnets` (1-4) and `reservedSubnets` (1-25): masked (no host bits), each inside a subnet,
  no infrastructure subnet overlapping a reserved one.
- Layer2 `defaultGatewayIPs`: 1 or 2 bare IPs of different families, one per subnet (as many as `subnets`), each
  inside a subnet, and inside an `infrastructureSubnets` entry when those are set.
- Layer3 `subnets`: 1-400 entries; cidrs neither overlapping nor repeated. `hostSubnet` an integer from 1 to 127,
  longer than the cidr's prefix, shorter than 32 for IPv4; absent, OVN-K's default applies (`DEFAULT_HOST_SUBNET`:
  24 for IPv4, 64 for IPv6), which must then be longer than the cidr's prefix too. Entries of one family set the same
  `hostSubnet` (or all leave it unset). `"24"` or `true` is not an integer. Stricter than the CRD, as OVN-K's own
  subnet parser (`config.ParseClusterSubnetEntries`) is when it renders the network: an IPv6 `hostSubnet` is 64.

Not checked (the CRD checks them, but they change no route): `mtu`, `joinSubnets`, `ipam.lifecycle`, immutability.

Overlaps: when subnets of two valid, selected networks overlap (same family, one range meets the other), the older
network (`metadata.creationTimestamp`, then name; no timestamp is the youngest) keeps the address space, and the
younger is refused whole as `network-overlap` (naming the older network) with every claim on it. So advertised
networks never overlap: one address belongs to at most one of them.

Node and infrastructure space (`space`): a valid, selected network (any topology) one of whose subnets contains a
node address, overlaps a node's connected network, the default pod network or an OVN-K internal range, contains a
BGP session's address or overlaps a session's connected subnet is refused whole, before overlaps are resolved, with
the reason of what it meets (`contains-peer-address`, `overlaps-node-network`, `overlaps-cluster-network`,
`overlaps-ovn-internal`), with every claim on it; so is one whose configured allowed prefixes overlap a special range
(`special-prefix`). A Layer3 network's host subnets lie in its cidrs, so one containing a node address is refused
by the same rule. A refused network takes no address space, so it never refuses another network's routes: node
addresses inside it stay next hops (they are inside no advertised network).

Routes: a Layer2 CUDN announces each of its `subnets` with next hop self (`node` None). A Layer3 CUDN announces each
node's host subnet, read from the node annotation `k8s.ovn.org/node-subnets` under the key `cluster_udn_<name>`
(a string or a list), with next hop that node's address of the same family (see `nodes`). A host subnet outside
every `cidr` of the CUDN is refused (`outside-network-subnets`), one whose prefix length is not the `hostSubnet` of
its `cidr` is `malformed-address`. Two nodes naming the same host subnet (within a network every host subnet has its
cidr's length, and advertised networks do not overlap, so overlapping host subnets are equal ones): the older node
(`creationTimestamp`, then name) keeps it, the younger node's entry is refused `host-subnet-conflict`; a node naming
its own subnet twice gets it once. A node without a valid address of the family gives `no-node-address`, or
`invalid-node-address` when its only addresses of that family can never be next hops.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bgpadv.config import DEFAULT_MAX_ADDRESSES_PER_INTERFACE, Config, SecondaryNetworkConfig
from bgpadv.core import reasons, views
from bgpadv.core.addressing import other_family_note, special_range
from bgpadv.core.model import Attributes, PlannedNetwork, Refusal, Route, RouteKind
from bgpadv.core.selectors import LabelSelector
from bgpadv.core.space import InfrastructureSpace
from bgpadv.core.state import ClusterState
from bgpadv.planner import checks
from bgpadv.planner.advertised import Network
from bgpadv.planner.checks import SubnetRange
from bgpadv.planner.fast import make_route
from bgpadv.planner.host_subnets import holders
from bgpadv.planner.nodes import NodeInfo, oldest_first
from bgpadv.planner.policy import Policies
from bgpadv.planner.space import infrastructure_space

CUDN_PREFIX = "cluster_udn_"


@dataclass(slots=True)
class Networks:
    """The outcome of CUDN selection.

    `advertised`: selected, live, primary Layer2/Layer3 networks by CUDN name. `claim_refusals`: CUDN name → the
    reason code every claim on it gets (not selected, not advertisable). `withdrawn`: CUDNs being deleted or not
    created, whose claims are skipped silently. `refusals`: refusals of CUDN objects themselves.
    """

    advertised: dict[str, Network] = field(default_factory=dict)
    claim_refusals: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (reason, message)
    withdrawn: set[str] = field(default_factory=set)
    refusals: list[Refusal] = field(default_factory=list)


def advertised_subnets(networks: Networks) -> tuple[SubnetRange, ...]:
    """Every subnet (Layer2 subnet, Layer3 cidr) of every advertised network: no node address inside one is a next
    hop (see `nodes`)."""
    return tuple(s for n in networks.advertised.values() for s in n.subnets)


def planned_networks(networks: Networks) -> dict[str, PlannedNetwork]:
    """The advertised networks as the plan carries them (`Plan.context.networks`)."""
    return {
        n.name: PlannedNetwork(n.name, tuple(s.network for s in n.subnets), n.network_id)
        for n in networks.advertised.values()
    }


def _config_selects(labels: Mapping[str, str], config: Config) -> bool:
    selector = config.networks.selector
    return selector is None or selector.matches(labels)


def _advertising(labels: Mapping[str, str], ras: list[views.RouteAdvertisement]) -> list[views.RouteAdvertisement]:
    """The counting RouteAdvertisements (Accepted for their generation, PodNetwork) that select a CUDN's labels."""
    return [ra for ra in ras if any(s.matches(labels) for s in ra.selectors)]


def _node_selectors(default: list[views.RouteAdvertisement]) -> tuple[LabelSelector, ...] | None:
    """The nodes a network is advertised on, from its default-VRF RouteAdvertisements: None for every node (one of
    them has the empty `nodeSelector`, as OVN-K's CRD requires with PodNetwork), else their valid selectors (a
    malformed one selects no node)."""
    empty = LabelSelector()
    if any(ra.node_selector == empty for ra in default):
        return None
    return tuple(ra.node_selector for ra in default if ra.node_selector is not None)


def _vrf_refusal(view: views.Network, advertising: list[views.RouteAdvertisement] | None) -> Refusal | None:
    """The `vrf-not-served` refusal of a CUDN bound to a VRF bgpadv's default-VRF sessions do not serve, or None:
    EVPN transport, or (`advertising`: followRouteAdvertisements) only RouteAdvertisements with another `targetVRF`."""
    name = view.name
    if view.transport == "EVPN":
        vrfs = f" ({view.evpn})" if view.evpn else ""
        message = (
            f"CUDN {name} uses transport EVPN{vrfs}: its routes belong to its own VRF, and bgpadv's sessions serve "
            "the default VRF only"
        )
        return Refusal(view.ref, "EVPN", reasons.VRF_NOT_SERVED, message, name)
    if advertising is None or any(ra.default_vrf for ra in advertising):
        return None
    ra = min(advertising, key=lambda r: r.name)
    message = (
        f"RouteAdvertisements {ra.name} advertises CUDN {name} in VRF {ra.target_vrf!r}, not the default VRF that "
        "bgpadv's sessions serve (announcing it there would leak the VRF-isolated network)"
    )
    return Refusal(view.ref, ra.target_vrf, reasons.VRF_NOT_SERVED, message, name)


def _unimplemented(state: ClusterState, config: Config, ras: list[views.RouteAdvertisement], result: Networks) -> None:
    """One `advertisement-not-implemented` refusal per advertisement type bgpadv does not implement (anything but
    PodNetwork: EgressIP) of each accepted RouteAdvertisements that selects a CUDN bgpadv's selector selects."""
    for ra in ras:
        others = sorted({a for a in ra.advertisements if a != "PodNetwork"})
        if not others or ra.ref is None:
            continue
        served = (v for v in state.cudns.values() if _config_selects(v.labels, config))
        if not any(any(s.matches(v.labels) for s in ra.network_selectors) for v in served):
            continue
        for kind in others:
            message = (
                f"bgpadv announces pod networks only; the {kind} advertisement of RouteAdvertisements {ra.name} is "
                "left to OVN-K's own FRR integration"
            )
            result.refusals.append(Refusal(ra.ref, kind, reasons.ADVERTISEMENT_NOT_IMPLEMENTED, message, ""))


def _from_view(view: views.Network) -> Network:
    """The planner's network of a valid CUDN view, its ranges as integers for the address checks."""
    return Network(
        name=view.name,
        ref=view.ref,
        topology=view.topology or "",
        subnets=tuple(SubnetRange.of(p) for p in view.subnets),
        gateways=frozenset((a.version, a.value) for a in view.gateways),
        infrastructure=tuple(SubnetRange.of(p) for p in view.infrastructure),
        infrastructure_addresses=frozenset((a.version, a.value) for a in view.infrastructure_addresses),
        ipam_disabled=view.ipam_disabled,
        persistent_ips=view.persistent_ips,
        host_subnet_lengths=tuple((SubnetRange.of(p), n) for p, n in view.host_subnet_lengths),
        network_id=view.network_id,
        labels=view.labels,
    )


class _Space:
    """Address ranges held by the networks kept so far, which never overlap: sorted by first address per family,
    so a new range is checked against its one possible neighbour (bisect) instead of every kept range."""

    def __init__(self) -> None:
        self._firsts: dict[int, list[int]] = {4: [], 6: []}
        self._held: dict[int, list[tuple[SubnetRange, Network]]] = {4: [], 6: []}

    def holder(self, subnet: SubnetRange) -> tuple[SubnetRange, Network] | None:
        """The kept range (and its network) that overlaps `subnet`, or None."""
        i = bisect_right(self._firsts[subnet.version], subnet.last)
        if i:
            held = self._held[subnet.version][i - 1]
            if held[0].last >= subnet.first:
                return held
        return None

    def take(self, network: Network) -> None:
        for subnet in network.subnets:
            i = bisect_right(self._firsts[subnet.version], subnet.first)
            self._firsts[subnet.version].insert(i, subnet.first)
            self._held[subnet.version].insert(i, (subnet, network))


def _classify(state: ClusterState, config: Config, result: Networks) -> list[tuple[tuple[str, str], Network]]:
    """Sort every CUDN into withdrawn, not selected, refused (into `result`) or valid; the valid ones as
    ((creationTimestamp, name), network), in state order."""
    follow = config.networks.follow_route_advertisements
    counting = [ra for ra in state.route_advertisements.values() if ra.selectors] if follow else []
    secondaries = {s.name: s for s in config.networks.secondary}
    valid: list[tuple[tuple[str, str], Network]] = []
    for view in state.cudns.values():
        name = view.name
        if not name:
            continue
        if view.withdrawn:
            result.withdrawn.add(name)
            continue
        advertising = _advertising(view.labels, counting) if follow else None
        if not _config_selects(view.labels, config) or advertising == []:
            result.claim_refusals[name] = (checks.NETWORK_NOT_SELECTED, f"CUDN {name} is not selected")
            continue
        if not view.valid:
            result.refusals.extend(Refusal(view.ref, p.value, p.reason, p.message, name) for p in view.problems)
            result.claim_refusals[name] = view.claim_problem or (checks.INVALID_NETWORK_DEFINITION, f"CUDN {name}")
            continue
        vrf = _vrf_refusal(view, advertising)
        if vrf is not None:
            result.refusals.append(vrf)
            result.claim_refusals[name] = (vrf.reason, vrf.message)
            continue
        network = _with_namespaces(_from_view(view), view.namespace_selector, state.namespaces)
        if advertising is not None:
            network = replace(network, node_selectors=_node_selectors([ra for ra in advertising if ra.default_vrf]))
        if view.secondary:
            network = _secondary(network, secondaries.get(name))
        valid.append((view.age, network))
    if follow:
        _unimplemented(state, config, [ra for ra in state.route_advertisements.values() if ra.accepted], result)
        _malformed_selectors(state, result)
    return valid


def _malformed_selectors(state: ClusterState, result: Networks) -> None:
    """One `malformed-selector` refusal per malformed selector of a RouteAdvertisements (it selects nothing)."""
    for ra in state.route_advertisements.values():
        if ra.ref is None:
            continue
        for at, line in ra.malformed_selectors:
            message = f"RouteAdvertisements {ra.name}: {line}"
            result.refusals.append(Refusal(ra.ref, at, reasons.MALFORMED_SELECTOR, message, ""))


def _refuse_network(result: Networks, network: Network, value: str, reason: str, message: str) -> None:
    result.refusals.append(Refusal(network.ref, value, reason, message, network.name))
    result.claim_refusals[network.name] = (reason, f"CUDN {network.name}: {message}")


def index_networks(state: ClusterState, config: Config, space: InfrastructureSpace | None = None) -> Networks:
    """Classify every CUDN (advertised, refused for claims, withdrawn), take the valid ones, refuse those over node
    and infrastructure space (`space`, by default built from the state and the configuration), and resolve
    overlaps between the others (the older keeps the space)."""
    result = Networks()
    valid = _classify(state, config, result)
    if space is None:
        space = infrastructure_space(state.nodes, config)
    held = _Space()
    losers: set[str] = set()
    allowed = frozenset(config.networks.allow_special_ranges)
    for _age, network in sorted(valid, key=lambda v: v[0]):
        bad = infrastructure_refusal(network, space, allowed)
        if bad is not None:
            subnet, reason, message = bad
            losers.add(network.name)
            _refuse_network(result, network, str(subnet.network), reason, message + whole_network(network, subnet))
            continue
        clash = next(((ours, h) for ours in network.subnets if (h := held.holder(ours)) is not None), None)
        if clash is None:
            held.take(network)
            continue
        ours, (theirs, older) = clash
        losers.add(network.name)
        message = f"{ours.network} overlaps {theirs.network} of CUDN {older.name}, which is older and keeps it"
        message += whole_network(network, ours)
        _refuse_network(result, network, str(ours.network), checks.NETWORK_OVERLAP, message)
    for _age, network in valid:
        if network.name not in losers:
            result.advertised[network.name] = network
    return result


def whole_network(network: Network, refused: SubnetRange) -> str:
    """What a refusal of one subnet means for the network's other family (`other_family_note`)."""
    return other_family_note(refused.version, [str(s.network) for s in network.subnets if s.version != refused.version])


def infrastructure_refusal(
    network: Network, space: InfrastructureSpace, allowed: frozenset[str] = frozenset()
) -> tuple[SubnetRange, str, str] | None:
    """(the offending subnet, reason code, message) when a subnet of the network overlaps a special range (one of
    the `allowed` groups, `networks.allowSpecialRanges`, may; the decoder refuses CUDN subnets in the ranges that
    never may) or meets node and infrastructure space (`bgpadv.planner.space`); None when the network may be
    advertised."""
    for subnet in network.subnets:
        entry = special_range(subnet.version, subnet.first, subnet.last, allowed)
        if entry is not None:
            what, group = entry.what, entry.group
            never = (
                f"not a VM network unless networks.allowSpecialRanges lists {group}" if group else "never a VM network"
            )
            return subnet, checks.SPECIAL_PREFIX, f"{subnet.network} overlaps {what}, {never}"
        found = space.conflict(subnet.version, subnet.first, subnet.last)
        if found is not None:
            reason, what = found
            message = f"{subnet.network} meets {what}: node and infrastructure space is never a VM network"
            return subnet, reason, message
    return None


def selected_namespaces(selector: LabelSelector | None, namespaces: Mapping[str, views.Namespace]) -> frozenset[str]:
    """The names of the Namespaces whose labels a CUDN's `namespaceSelector` matches (a malformed selector selects
    none; the CRD requires one, so an absent one selects none either)."""
    if selector is None:
        return frozenset()
    return frozenset(name for name, ns in namespaces.items() if selector.matches(ns.labels))


def _with_namespaces(
    network: Network, selector: LabelSelector | None, namespaces: Mapping[str, views.Namespace]
) -> Network:
    """The network with the listed namespaces its `namespaceSelector` selects and those it does not."""
    selected = selected_namespaces(selector, namespaces)
    unselected = frozenset(namespaces) - selected
    return replace(network, namespaces=selected, unselected=unselected, namespace_selector=selector)


def _secondary(network: Network, conf: SecondaryNetworkConfig | None) -> Network:
    """An IPAM-less secondary Layer2 network: its selected namespaces and the ranges guest addresses may lie in.

    With a CUDN subnet, the subnet (its network/broadcast and gateway addresses excluded) and, when configured, the
    allowed prefixes both bound the addresses; the subnet is announced. Without one, the allowed prefixes are the
    network's ranges (so the guard and the overlap rules see them) and nothing but host routes is announced; with
    neither, nothing is.
    """
    allowed = tuple(SubnetRange.of(p) for p in conf.allowed_prefixes) if conf is not None else ()
    limit = conf.max_addresses_per_interface if conf is not None else DEFAULT_MAX_ADDRESSES_PER_INTERFACE
    if network.subnets:
        return replace(network, guest_reports=True, allowed=allowed, max_addresses=limit)
    return replace(network, guest_reports=True, subnets=allowed, max_addresses=limit, announce_subnets=False)


def _layer3_routes(
    nodes: Mapping[str, views.Node],
    index: Mapping[str, NodeInfo],
    layer3: list[Network],
    attrs: Mapping[str, Attributes],
    routes: list[Route],
    refusals: list[Refusal],
) -> None:
    """The host subnet routes of the Layer3 networks (into `routes`): each host subnet towards the node that holds
    it (`host_subnets.holders`, on a node the network's RouteAdvertisements select), and the refusals of the others
    (into `refusals`): a node's malformed annotation (once), a malformed or misplaced entry, one on a node not
    selected, a subnet an older node holds, and a node without a next hop of the family."""
    subnet = RouteKind.SUBNET
    route = make_route
    node: NodeInfo | None = None
    ref, node_name, hop4, hop6 = None, "", None, None
    last: Network | None = None
    name, network_attrs = "", None
    ordered = oldest_first(nodes.values())
    for info, network, net, entry in holders(ordered, lambda node: index.get(node.name), layer3, refusals):
        if info is not node:  # a node's host subnets come one after the other: read once per node and network
            node, ref, node_name, hop4, hop6 = info, info.ref, info.name, info.address(4), info.address(6)
        if network is not last:
            last, name, network_attrs = network, network.name, attrs[network.name]
        version = net.version
        next_hop = hop4 if version == 4 else hop6
        if next_hop is None:
            reason, message = info.no_address(version)
            refusals.append(Refusal(info.ref, entry.text, reason, message, name))
            continue
        routes.append(route(net, next_hop, name, subnet, ref, node_name, network_attrs))


def subnet_routes(
    state: ClusterState,
    config: Config,
    networks: Networks,
    nodes: Mapping[str, NodeInfo],
    policies: Policies | None = None,
) -> tuple[list[Route], list[Refusal]]:
    """Layer2 subnets (next hop self) and Layer3 per-node host subnets (next hop the node), with each network's
    attributes (`bgpadv.planner.policy`)."""
    routes: list[Route] = []
    refusals: list[Refusal] = []
    if not config.networks.subnets:
        return routes, refusals
    policies = policies if policies is not None else Policies(config)
    layer3: list[Network] = []
    layer3_attrs: dict[str, Attributes] = {}
    for network in networks.advertised.values():
        attrs = policies.subnet(network)
        if network.topology != "Layer2":
            layer3_attrs[network.name] = attrs
            layer3.append(network)
        elif network.announce_subnets:
            here = _unselected_speaker(network, config, nodes)
            if here is not None:  # per-node mode on a node OVN-K does not advertise the network on
                message = f"no RouteAdvertisements advertising CUDN {network.name} selects node {here} (this speaker's)"
                refusals.extend(
                    Refusal(network.ref, str(s.network), reasons.NODE_NOT_SELECTED, message, network.name)
                    for s in network.subnets
                )
                continue
            routes.extend(
                Route(s.network, None, network.name, RouteKind.SUBNET, network.ref, None, attrs)
                for s in network.subnets
            )
    if not layer3:
        return routes, refusals
    _layer3_routes(state.nodes, nodes, layer3, layer3_attrs, routes, refusals)
    return routes, refusals


def _unselected_speaker(network: Network, config: Config, nodes: Mapping[str, NodeInfo]) -> str | None:
    """In per-node mode, this speaker's node when the network's RouteAdvertisements do not select it (its Layer2
    subnet, next hop self, would pull traffic to a node without the network's ingress path); else None."""
    here = config.node_name
    if not here or network.node_selectors is None:
        return None
    info = nodes.get(here)
    return None if info is not None and network.selects_node(info.labels) else here
