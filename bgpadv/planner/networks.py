"""ClusterUserDefinedNetworks: which are advertised, their address ranges, and their subnet routes.

Selection (both filters apply when both are configured):

- `networks.selector` must match the CUDN's `metadata.labels` (no selector: every CUDN).
- With `networks.followRouteAdvertisements`, some RouteAdvertisements must also select it: `PodNetwork` in
  `spec.advertisements`, a `ClusterUserDefinedNetworks` entry of `spec.networkSelectors` whose `networkSelector`
  matches the CUDN's labels, and condition `Accepted=True` whose `observedGeneration` equals `metadata.generation`
  when both are present (an RA without conditions counts when its legacy `status.status` is `Accepted`).

A CUDN being deleted (`deletionTimestamp`) or whose `NetworkCreated` condition is False contributes nothing: its
routes are withdrawn and claims on it are skipped without a refusal. A selected CUDN that is not a primary Layer2 or
Layer3 network (Localnet, Secondary) is refused as `network-not-advertisable`, and so is every claim on it.

Routes: a Layer2 CUDN announces each of its `subnets` with next hop self (`node` None). A Layer3 CUDN announces each
node's host subnet, read from the node annotation `k8s.ovn.org/node-subnets` under the key `cluster_udn_<name>`
(a string or a list), with next hop that node's address of the same family; a host subnet outside every `cidr` of
the CUDN is refused (`outside-network-subnets`), one whose prefix length is not the `hostSubnet` of its `cidr` (when
set) is `malformed-address`, and a node without an address of the family gives `no-node-address`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from netaddr import IPAddress

from bgpadv.config import Config, LabelSelector
from bgpadv.model import ObjectRef, Refusal, Route, RouteKind
from bgpadv.planner import checks
from bgpadv.planner.checks import Address, SubnetRange
from bgpadv.planner.nodes import NodeInfo
from bgpadv.sources.snapshot import ClusterState

CUDN_PREFIX = "cluster_udn_"
NODE_SUBNETS_ANNOTATION = "k8s.ovn.org/node-subnets"
CUDN_KIND = "ClusterUserDefinedNetwork"
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class Network:
    """One advertised CUDN, with its ranges as integers for the address checks."""

    name: str
    ref: ObjectRef
    topology: str  # "Layer2" | "Layer3"
    subnets: tuple[SubnetRange, ...]
    gateways: frozenset[Address] = frozenset()
    infrastructure: tuple[SubnetRange, ...] = ()
    infrastructure_addresses: frozenset[Address] = frozenset()  # implied management-port addresses
    ipam_disabled: bool = False
    namespace_selector: LabelSelector | None = None
    host_subnet_lengths: tuple[tuple[SubnetRange, int], ...] = ()  # Layer3: (cidr, hostSubnet) when set

    check: Callable[[int, int], str | None] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        checker = checks.address_checker(
            self.subnets, self.gateways, self.infrastructure, self.infrastructure_addresses
        )
        object.__setattr__(self, "check", checker)

    def address_reason(self, version: int, value: int) -> str | None:
        """Why a VM address may not be announced on this network (a reason code), or None.

        `check` is the same function, precompiled; `checks.host_address_reason` is the reference it must equal.
        """
        return self.check(version, value)


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


def _mapping(value: object) -> Mapping:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def selector_from_dict(raw: object) -> LabelSelector | None:
    """A Kubernetes LabelSelector from its JSON form; None when malformed (a malformed selector selects nothing).

    An empty selector (`{}`) matches everything, as in Kubernetes.
    """
    if raw is None:
        return LabelSelector()
    if not isinstance(raw, dict):
        return None
    labels = raw.get("matchLabels") or {}
    exprs = raw.get("matchExpressions") or []
    if not isinstance(labels, dict) or not isinstance(exprs, list):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return None
    parsed: list[tuple[str, str, tuple[str, ...]]] = []
    for e in exprs:
        if not isinstance(e, dict):
            return None
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if not isinstance(key, str) or op not in _OPERATORS or not isinstance(values, list):
            return None
        if not all(isinstance(v, str) for v in values):
            return None
        parsed.append((key, op, tuple(values)))
    return LabelSelector(tuple(sorted(labels.items())), tuple(parsed))


def condition(obj: Mapping, kind: str) -> Mapping | None:
    """The status condition of the given type, or None."""
    for c in _list(_mapping(obj.get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def _labels(obj: Mapping) -> dict[str, str]:
    labels = _mapping(obj.get("metadata")).get("labels")
    if not isinstance(labels, dict):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def route_advertisement_selectors(ras: Mapping[str, dict]) -> list[LabelSelector]:
    """The CUDN selectors of every RouteAdvertisements that advertises PodNetwork and is Accepted (current)."""
    out: list[LabelSelector] = []
    for ra in ras.values():
        if not isinstance(ra, dict):
            continue
        spec = _mapping(ra.get("spec"))
        if "PodNetwork" not in _list(spec.get("advertisements")):
            continue
        accepted = condition(ra, "Accepted")
        if accepted is None:
            if _list(_mapping(ra.get("status")).get("conditions")) or _mapping(ra.get("status")).get("status") != (
                "Accepted"
            ):
                continue
        else:
            if accepted.get("status") != "True":
                continue
            observed = accepted.get("observedGeneration")
            generation = _mapping(ra.get("metadata")).get("generation")
            if observed is not None and generation is not None and observed != generation:
                continue
        for entry in _list(spec.get("networkSelectors")):
            if not isinstance(entry, dict) or entry.get("networkSelectionType") != "ClusterUserDefinedNetworks":
                continue
            inner = _mapping(entry.get("clusterUserDefinedNetworkSelector"))
            if "networkSelector" not in inner:
                continue
            selector = selector_from_dict(inner.get("networkSelector"))
            if selector is not None:
                out.append(selector)
    return out


def _is_selected(labels: dict[str, str], config: Config, ra_selectors: list[LabelSelector]) -> bool:
    selector = config.networks.selector
    if selector is not None and not selector.matches(labels):
        return False
    return not config.networks.follow_route_advertisements or any(s.matches(labels) for s in ra_selectors)


def _cidrs(
    values: object, ref: ObjectRef, name: str, path: str, refusals: list[Refusal]
) -> tuple[SubnetRange, ...] | None:
    """Parse a list of CIDR strings; malformed entries are refused and skipped. None if not a list."""
    if values is None:
        return ()
    if not isinstance(values, list):
        refusals.append(Refusal(ref, checks.describe(values), checks.MALFORMED_OBJECT, f"{path} is not a list", name))
        return None
    out: list[SubnetRange] = []
    for v in values:
        net = checks.parse_cidr(v)
        if net is None:
            refusals.append(Refusal(ref, checks.describe(v), checks.MALFORMED_ADDRESS, f"{path}: not a CIDR", name))
            continue
        out.append(SubnetRange.of(net))
    return tuple(out)


def _layer2(cudn_name: str, ref: ObjectRef, layer2: Mapping, refusals: list[Refusal]) -> Network | None:
    subnets = _cidrs(layer2.get("subnets"), ref, cudn_name, "spec.network.layer2.subnets", refusals)
    infra = _cidrs(
        layer2.get("infrastructureSubnets"), ref, cudn_name, "spec.network.layer2.infrastructureSubnets", refusals
    )
    if subnets is None or infra is None:
        return None
    explicit: dict[int, int] = {}
    raw_gw = layer2.get("defaultGatewayIPs")
    if raw_gw is not None and not isinstance(raw_gw, list):
        refusals.append(
            Refusal(ref, checks.describe(raw_gw), checks.MALFORMED_OBJECT, "defaultGatewayIPs is not a list", cudn_name)
        )
        return None
    for gw in _list(raw_gw):
        parsed = checks.parse_address(gw)
        if parsed is None:
            refusals.append(
                Refusal(ref, checks.describe(gw), checks.MALFORMED_ADDRESS, "defaultGatewayIPs: not an IP", cudn_name)
            )
            continue
        explicit.setdefault(parsed[0], parsed[1])
    gateways: set[Address] = {(v, a) for v, a in explicit.items()}
    implied_infra: set[Address] = set()
    for s in subnets:
        v = s.version
        family_infra = [i for i in infra if i.version == v]
        if v not in explicit:
            gateways.add((v, family_infra[0].first + 1 if family_infra else s.first + 1))
        if not family_infra:
            mgmt = s.first + 2
            if (v, mgmt) in gateways:
                mgmt = s.first + 1
            implied_infra.add((v, mgmt))
    ipam = _mapping(layer2.get("ipam"))
    return Network(
        name=cudn_name,
        ref=ref,
        topology="Layer2",
        subnets=subnets,
        gateways=frozenset(gateways),
        infrastructure=infra,
        infrastructure_addresses=frozenset(implied_infra),
        ipam_disabled=ipam.get("mode") == "Disabled",
    )


def _layer3(cudn_name: str, ref: ObjectRef, layer3: Mapping, refusals: list[Refusal]) -> Network | None:
    raw = layer3.get("subnets")
    if raw is not None and not isinstance(raw, list):
        refusals.append(
            Refusal(ref, checks.describe(raw), checks.MALFORMED_OBJECT, "layer3.subnets is not a list", cudn_name)
        )
        return None
    cidrs = [e.get("cidr") if isinstance(e, dict) else e for e in _list(raw)]
    subnets = _cidrs(cidrs, ref, cudn_name, "spec.network.layer3.subnets[].cidr", refusals)
    if subnets is None:
        return None
    lengths: list[tuple[SubnetRange, int]] = []
    for entry in _list(raw):
        length = entry.get("hostSubnet") if isinstance(entry, dict) else None
        net = checks.parse_cidr(entry.get("cidr")) if isinstance(length, int) and not isinstance(length, bool) else None
        if net is not None:
            lengths.append((SubnetRange.of(net), length))
    return Network(name=cudn_name, ref=ref, topology="Layer3", subnets=subnets, host_subnet_lengths=tuple(lengths))


def index_networks(state: ClusterState, config: Config) -> Networks:
    """Classify every CUDN (advertised, refused for claims, withdrawn) and parse the advertised ones."""
    result = Networks()
    ra_selectors = (
        route_advertisement_selectors(state.route_advertisements)
        if (config.networks.follow_route_advertisements)
        else []
    )
    for key, cudn in state.cudns.items():
        if not isinstance(cudn, dict):
            continue
        meta = _mapping(cudn.get("metadata"))
        name = meta.get("name") if isinstance(meta.get("name"), str) and meta.get("name") else key
        if not isinstance(name, str) or not name:
            continue
        uid, created = meta.get("uid"), meta.get("creationTimestamp")
        ref = ObjectRef(
            CUDN_KIND, name, "", uid if isinstance(uid, str) else "", created if isinstance(created, str) else ""
        )
        created = condition(cudn, "NetworkCreated")
        if meta.get("deletionTimestamp") or (created is not None and created.get("status") == "False"):
            result.withdrawn.add(name)
            continue
        if not _is_selected(_labels(cudn), config, ra_selectors):
            result.claim_refusals[name] = (checks.NETWORK_NOT_SELECTED, f"CUDN {name} is not selected")
            continue
        network_spec = _mapping(_mapping(cudn.get("spec")).get("network"))
        topology = network_spec.get("topology")
        block = network_spec.get(topology.lower()) if isinstance(topology, str) else None
        if not isinstance(block, dict):
            result.refusals.append(
                Refusal(ref, checks.describe(topology), checks.MALFORMED_OBJECT, "spec.network is malformed", name)
            )
            result.claim_refusals[name] = (checks.NETWORK_NOT_ADVERTISABLE, f"CUDN {name} is malformed")
            continue
        role = block.get("role")
        if topology not in ("Layer2", "Layer3") or role != "Primary":
            value = f"{topology}/{role}" if role is not None else str(topology)
            message = "only primary Layer2 and Layer3 networks can be advertised"
            result.refusals.append(Refusal(ref, checks.describe(value), checks.NETWORK_NOT_ADVERTISABLE, message, name))
            result.claim_refusals[name] = (checks.NETWORK_NOT_ADVERTISABLE, f"CUDN {name} is {value}: {message}")
            continue
        network = (_layer2 if topology == "Layer2" else _layer3)(name, ref, block, result.refusals)
        if network is None:
            result.claim_refusals[name] = (checks.NETWORK_NOT_ADVERTISABLE, f"CUDN {name} is malformed")
            continue
        if network.ipam_disabled:
            selector = selector_from_dict(_mapping(cudn.get("spec")).get("namespaceSelector") or {})
            network = replace(network, namespace_selector=selector)
        result.advertised[name] = network
    return result


def _node_subnets(node: Mapping, key: str) -> tuple[list[object], str | None]:
    """The host-subnet strings of one network in a node's `k8s.ovn.org/node-subnets`; an error message if malformed."""
    annotations = _mapping(_mapping(node.get("metadata")).get("annotations"))
    raw = annotations.get(NODE_SUBNETS_ANNOTATION)
    if raw is None:
        return [], None
    try:
        decoded = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict):
        return [], f"annotation {NODE_SUBNETS_ANNOTATION} is not a JSON object"
    value = decoded.get(key)
    if value is None:
        return [], None
    if isinstance(value, str):
        return [value], None
    if isinstance(value, list):
        return value, None
    return [value], None


def subnet_routes(
    state: ClusterState, config: Config, networks: Networks, nodes: Mapping[str, NodeInfo]
) -> tuple[list[Route], list[Refusal]]:
    """Layer2 subnets (next hop self) and Layer3 per-node host subnets (next hop the node)."""
    routes: list[Route] = []
    refusals: list[Refusal] = []
    if not config.networks.subnets:
        return routes, refusals
    attrs = config.attributes
    layer3: list[Network] = []
    for network in networks.advertised.values():
        if network.topology == "Layer2":
            routes.extend(
                Route(s.network, None, network.name, RouteKind.SUBNET, network.ref, None, attrs)
                for s in network.subnets
            )
        else:
            layer3.append(network)
    if not layer3:
        return routes, refusals
    malformed_nodes: set[str] = set()
    for key, node in state.nodes.items():
        if not isinstance(node, dict):
            continue
        name = _mapping(node.get("metadata")).get("name") or key
        info = nodes.get(name) if isinstance(name, str) else None
        if info is None:
            continue
        for network in layer3:
            values, error = _node_subnets(node, CUDN_PREFIX + network.name)
            if error is not None:
                if name not in malformed_nodes:
                    malformed_nodes.add(name)
                    raw = _mapping(_mapping(node.get("metadata")).get("annotations")).get(NODE_SUBNETS_ANNOTATION)
                    refusals.append(Refusal(info.ref, checks.describe(raw), checks.MALFORMED_OBJECT, error, ""))
                continue
            for value in values:
                refusal = _host_subnet_route(network, info, value, attrs, routes)
                if refusal is not None:
                    refusals.append(refusal)
    return routes, refusals


def _host_subnet_route(network: Network, info: NodeInfo, value: object, attrs, routes: list[Route]) -> Refusal | None:
    net = checks.parse_cidr(value)
    if net is None:
        return Refusal(
            info.ref, checks.describe(value), checks.MALFORMED_ADDRESS, "host subnet is not a CIDR", network.name
        )
    host = SubnetRange.of(net)
    if not any(s.covers(host) for s in network.subnets):
        message = f"host subnet of node {info.name} lies outside every subnet of CUDN {network.name}"
        return Refusal(info.ref, checks.describe(value), checks.OUTSIDE_NETWORK_SUBNETS, message, network.name)
    for cidr, length in network.host_subnet_lengths:
        if cidr.covers(host) and host.prefixlen != length:
            # e.g. the whole cluster cidr: announcing it towards one node would pull every node's pods to it
            message = f"host subnet of node {info.name} is not a /{length} (hostSubnet of CUDN {network.name})"
            return Refusal(info.ref, checks.describe(value), checks.MALFORMED_ADDRESS, message, network.name)
    next_hop: IPAddress | None = info.address(host.version)
    if next_hop is None:
        message = f"node {info.name} has no IPv{host.version} address"
        return Refusal(info.ref, checks.describe(value), checks.NO_NODE_ADDRESS, message, network.name)
    routes.append(Route(net, next_hop, network.name, RouteKind.SUBNET, info.ref, info.name, attrs))
    return None
