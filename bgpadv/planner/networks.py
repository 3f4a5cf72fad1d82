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

IPAM-less secondary Layer2 networks (`role: Secondary`, `ipam.mode: Disabled`): OVN-K assigns no address, the guests
configure their own, and `vms` reads them from the VMIs (rule 9 there). The CUDN's `namespaceSelector` is evaluated
on the real Namespace labels (`Network.namespaces`). What may be announced is bounded by the CUDN's `subnets` when
it has one (as the epic describes; then the subnet is announced as for any Layer2 network, its network/broadcast and
gateway addresses are refused) and by `networks.secondary[].allowedPrefixes` of bgpadv's configuration when set
(`outside-allowed-prefixes`). Without a subnet (the CRD today), the allowed prefixes are the network's ranges (the
guard, node next hops and overlaps see them; they are not announced themselves; their network and broadcast
addresses are refused like a subnet's); with neither, nothing is announced.
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

Session addresses: a valid, selected network one of whose subnets contains an address of bgpadv's own BGP sessions
(a peer's address, a session's local address, a nextHopSelf address: the fabric's own network) is refused whole as
`covers-infrastructure`, with every claim on it, before overlaps are resolved. Announcing it would pull the ToR's
own connected network into the cluster; and the nodes on that network keep their addresses as next hops.

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

import json
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from bgpadv.config import DEFAULT_MAX_ADDRESSES_PER_INTERFACE, Config, SecondaryNetworkConfig
from bgpadv.core import selectors
from bgpadv.core.model import ObjectRef, Refusal, Route, RouteKind
from bgpadv.core.prefix import Prefix
from bgpadv.core.selectors import LabelSelector
from bgpadv.core.state import ClusterState
from bgpadv.planner import checks
from bgpadv.planner.checks import Address, SubnetRange, mapping
from bgpadv.planner.nodes import NodeInfo, special_range_reason

CUDN_PREFIX = "cluster_udn_"
NODE_SUBNETS_ANNOTATION = "k8s.ovn.org/node-subnets"
CUDN_KIND = "ClusterUserDefinedNetwork"
_BITS = {4: 32, 6: 128}
DEFAULT_HOST_SUBNET = {4: 24, 6: 64}
"""OVN-K's host subnet length when a Layer3 subnet sets no `hostSubnet` (its cluster-subnet parser's defaults)."""
_NEWEST = "\uffff"  # sorts after every timestamp: an object without creationTimestamp is the youngest


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
    host_subnet_lengths: tuple[tuple[SubnetRange, int], ...] = ()  # Layer3: (cidr, hostSubnet) when set
    # IPAM-less secondary Layer2 networks (guest-reported addresses, see `vms`); None on every other network:
    namespaces: frozenset[str] | None = None  # the namespaces its namespaceSelector selects (real labels)
    allowed: tuple[SubnetRange, ...] = ()  # networks.secondary[].allowedPrefixes, beside a CUDN subnet
    max_addresses: int = 0  # networks.secondary[].maxAddressesPerInterface
    announce_subnets: bool = True  # False: `subnets` are the configured allowed prefixes (no CUDN subnet)

    check: Callable[[int, int], str | None] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        checker = checks.address_checker(
            self.subnets, self.gateways, self.infrastructure, self.infrastructure_addresses
        )
        if self.allowed:
            checker = _bounded(checker, self.allowed)
        object.__setattr__(self, "check", checker)

    def address_reason(self, version: int, value: int) -> str | None:
        """Why a VM address may not be announced on this network (a reason code), or None.

        `check` is the same function, precompiled; `checks.host_address_reason` is the reference it must equal.
        """
        return self.check(version, value)


def _bounded(
    checker: Callable[[int, int], str | None], allowed: tuple[SubnetRange, ...]
) -> Callable[[int, int], str | None]:
    """`checker`, and then: inside one of the `allowed` ranges (`outside-allowed-prefixes`)."""

    def check(version: int, value: int) -> str | None:
        reason = checker(version, value)
        if reason is None and checks.containing(allowed, version, value) is None:
            return checks.OUTSIDE_ALLOWED_PREFIXES
        return reason

    return check


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


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def selector_from_dict(raw: object) -> LabelSelector | None:
    """A label selector of a CUDN or RouteAdvertisements (`bgpadv.core.selectors`); None when malformed: a malformed
    selector selects nothing. An absent one (null) is read as the empty selector, which matches everything."""
    if raw is None:
        return LabelSelector()
    return selectors.parse(raw)[0]


def condition(obj: Mapping, kind: str) -> Mapping | None:
    """The status condition of the given type, or None."""
    for c in _list(mapping(obj.get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def _labels(obj: Mapping) -> dict[str, str]:
    labels = mapping(obj.get("metadata")).get("labels")
    if not isinstance(labels, dict):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def route_advertisement_selectors(ras: Mapping[str, dict]) -> list[LabelSelector]:
    """The CUDN selectors of every RouteAdvertisements that advertises PodNetwork and is Accepted (current)."""
    out: list[LabelSelector] = []
    for ra in ras.values():
        if not isinstance(ra, dict):
            continue
        spec = mapping(ra.get("spec"))
        if "PodNetwork" not in _list(spec.get("advertisements")):
            continue
        accepted = condition(ra, "Accepted")
        if accepted is None:
            if _list(mapping(ra.get("status")).get("conditions")) or mapping(ra.get("status")).get("status") != (
                "Accepted"
            ):
                continue
        else:
            if accepted.get("status") != "True":
                continue
            observed = accepted.get("observedGeneration")
            generation = mapping(ra.get("metadata")).get("generation")
            if observed is not None and generation is not None and observed != generation:
                continue
        for entry in _list(spec.get("networkSelectors")):
            if not isinstance(entry, dict) or entry.get("networkSelectionType") != "ClusterUserDefinedNetworks":
                continue
            inner = mapping(entry.get("clusterUserDefinedNetworkSelector"))
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


class _Problems:
    """The definition errors of one CUDN: each becomes a refusal of the CUDN, and any of them refuses it whole."""

    def __init__(self, ref: ObjectRef, name: str) -> None:
        self.ref, self.name = ref, name
        self.refusals: list[Refusal] = []

    def add(self, value: object, reason: str, message: str) -> None:
        self.refusals.append(Refusal(self.ref, checks.describe(value), reason, message, self.name))

    def invalid(self, value: object, message: str) -> None:
        self.add(value, checks.INVALID_NETWORK_DEFINITION, message)


def _masked(parsed: tuple[int, int, int | None]) -> bool:
    version, value, prefixlen = parsed
    assert prefixlen is not None
    return value & ((1 << (_BITS[version] - prefixlen)) - 1) == 0


def _cidr_list(
    values: object, path: str, problems: _Problems, *, required: bool, max_items: int
) -> list[tuple[str, SubnetRange, bool]] | None:
    """(text, range, masked) of each CIDR of a list field; None (with a refusal) when anything in it is wrong."""
    if values is None:
        if required:
            problems.invalid(values, f"{path} is required")
            return None
        return []
    if not isinstance(values, list):
        problems.add(values, checks.MALFORMED_OBJECT, f"{path} is not a list")
        return None
    if not 1 <= len(values) <= max_items:
        problems.invalid(f"{len(values)} entries", f"{path} must hold 1 to {max_items} CIDRs")
        return None
    out: list[tuple[str, SubnetRange, bool]] = []
    ok = True
    for v in values:
        parsed = checks.parse_address(v)
        net = checks.parse_cidr(v) if parsed is not None and parsed[2] is not None else None
        if parsed is None or net is None:
            problems.add(v, checks.MALFORMED_ADDRESS, f"{path}: not a CIDR")
            ok = False
            continue
        out.append((v, SubnetRange.of(net), _masked(parsed)))
    return out if ok else None


def _network_subnet_problem(subnet: SubnetRange) -> str | None:
    """Why a network subnet can never be announced, or None: a default route, a host-route-sized prefix, or a
    range that overlaps addresses that are never unicast host addresses."""
    if subnet.prefixlen == 0:
        return "is a default route"
    if subnet.prefixlen == _BITS[subnet.version]:
        return f"is a /{subnet.prefixlen}, the size of a VM host route"
    what = special_range_reason(subnet.version, subnet.first, subnet.last)
    return f"overlaps {what}" if what is not None else None


def _families_differ(entries: list[tuple[str, SubnetRange, bool]], path: str, problems: _Problems) -> bool:
    if len(entries) == 2 and entries[0][1].version == entries[1][1].version:
        problems.invalid([e[0] for e in entries], f"{path}: two values of one IP family (one per family at most)")
        return False
    return True


def _inner_subnets(
    entries: list[tuple[str, SubnetRange, bool]], subnets: tuple[SubnetRange, ...], path: str, problems: _Problems
) -> bool:
    ok = True
    for text, inner, masked in entries:
        if not masked:
            problems.invalid(text, f"{path}: must be a masked network address (no host bits set)")
            ok = False
        elif not any(s.covers(inner) for s in subnets):
            problems.invalid(text, f"{path}: must lie inside one of the subnets")
            ok = False
    return ok


def _layer2(cudn_name: str, ref: ObjectRef, layer2: Mapping, problems: _Problems) -> Network | None:
    ipam = mapping(layer2.get("ipam"))
    ipam_disabled = ipam.get("mode") == "Disabled"
    path = "spec.network.layer2"
    entries = _cidr_list(layer2.get("subnets"), f"{path}.subnets", problems, required=not ipam_disabled, max_items=2)
    if entries is None or not _families_differ(entries, f"{path}.subnets", problems):
        return None
    ok = True
    for text, subnet, _ in entries:
        problem = _network_subnet_problem(subnet)
        if problem is not None:
            problems.invalid(text, f"{path}.subnets: {text} {problem}")
            ok = False
    subnets = tuple(e[1] for e in entries)
    infra_entries = _cidr_list(
        layer2.get("infrastructureSubnets"), f"{path}.infrastructureSubnets", problems, required=False, max_items=4
    )
    reserved_entries = _cidr_list(
        layer2.get("reservedSubnets"), f"{path}.reservedSubnets", problems, required=False, max_items=25
    )
    if infra_entries is None or reserved_entries is None:
        return None
    ok &= _inner_subnets(infra_entries, subnets, f"{path}.infrastructureSubnets", problems)
    ok &= _inner_subnets(reserved_entries, subnets, f"{path}.reservedSubnets", problems)
    infra = tuple(e[1] for e in infra_entries)
    for text, reserved, _m in reserved_entries:
        if any(i.covers(reserved) or reserved.covers(i) for i in infra):
            problems.invalid(text, f"{path}.reservedSubnets: overlaps the infrastructureSubnets")
            ok = False
    explicit: dict[int, int] = {}
    raw_gw = layer2.get("defaultGatewayIPs")
    gw_path = f"{path}.defaultGatewayIPs"
    if raw_gw is not None:
        if not isinstance(raw_gw, list):
            problems.add(raw_gw, checks.MALFORMED_OBJECT, f"{gw_path} is not a list")
            return None
        if not 1 <= len(raw_gw) <= 2:
            problems.invalid(f"{len(raw_gw)} entries", f"{gw_path} must hold 1 or 2 IPs")
            return None
        for gw in raw_gw:
            parsed = checks.parse_address(gw)
            if parsed is None or parsed[2] is not None:
                problems.add(gw, checks.MALFORMED_ADDRESS, f"{gw_path}: not an IP address")
                return None
            version, value = parsed[0], parsed[1]
            if version in explicit:
                problems.invalid(raw_gw, f"{gw_path}: two IPs of one family (one per family at most)")
                return None
            explicit[version] = value
            if checks.containing(subnets, version, value) is None:
                problems.invalid(gw, f"{gw_path}: must lie inside one of the subnets")
                ok = False
            elif infra and checks.containing(infra, version, value) is None:
                problems.invalid(gw, f"{gw_path}: must lie inside one of the infrastructureSubnets")
                ok = False
        if ok and len(explicit) != len(subnets):
            problems.invalid(raw_gw, f"{gw_path}: one gateway per subnet (every IP family) is required")
            ok = False
    if not ok:
        return None
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
    return Network(
        name=cudn_name,
        ref=ref,
        topology="Layer2",
        subnets=subnets,
        gateways=frozenset(gateways),
        infrastructure=infra,
        infrastructure_addresses=frozenset(implied_infra),
        ipam_disabled=ipam_disabled,
    )


def _layer3(cudn_name: str, ref: ObjectRef, layer3: Mapping, problems: _Problems) -> Network | None:
    path = "spec.network.layer3.subnets"
    raw = layer3.get("subnets")
    if raw is None or raw == []:
        problems.invalid("0 entries" if raw == [] else raw, f"{path} is required (1 to 400 entries)")
        return None
    if not isinstance(raw, list):
        problems.add(raw, checks.MALFORMED_OBJECT, f"{path} is not a list")
        return None
    if len(raw) > 400:
        problems.invalid(f"{len(raw)} entries", f"{path}: at most 400 entries")
        return None
    ok = True
    parsed: list[tuple[str, SubnetRange, int, bool]] = []  # (cidr text, range, host subnet length, explicit)
    for entry in raw:
        if not isinstance(entry, dict):
            problems.add(entry, checks.MALFORMED_OBJECT, f"{path}[] is not an object")
            ok = False
            continue
        text = entry.get("cidr")
        net = checks.parse_cidr(text)
        if net is None:
            problems.add(text, checks.MALFORMED_ADDRESS, f"{path}[].cidr: not a CIDR")
            ok = False
            continue
        cidr = SubnetRange.of(net)
        problem = _network_subnet_problem(cidr)
        if problem is not None:
            problems.invalid(text, f"{path}[].cidr: {text} {problem}")
            ok = False
            continue
        length = entry.get("hostSubnet")
        explicit = length is not None
        if not explicit:
            length = DEFAULT_HOST_SUBNET[cidr.version]
            if length <= cidr.prefixlen:
                message = f"{path}[]: no hostSubnet, and OVN-K's default /{length} is not longer than {text}"
                problems.invalid(text, message)
                ok = False
                continue
        elif length.__class__ is not int or not 1 <= length <= 127:
            problems.invalid(length, f"{path}[].hostSubnet of {text}: must be an integer from 1 to 127")
            ok = False
            continue
        elif length <= cidr.prefixlen:
            problems.invalid(length, f"{path}[].hostSubnet of {text}: must be longer than the cidr's prefix")
            ok = False
            continue
        elif cidr.version == 4 and length >= 32:
            problems.invalid(length, f"{path}[].hostSubnet of {text}: must be shorter than 32 for IPv4")
            ok = False
            continue
        elif cidr.version == 6 and length != 64:
            # the CRD allows up to 127, but OVN-K's subnet parser refuses the network: no node would get a host subnet
            problems.invalid(length, f"{path}[].hostSubnet of {text}: OVN-K supports only /64 IPv6 host subnets")
            ok = False
            continue
        parsed.append((str(text), cidr, length, explicit))
    # in address order, a cidr overlaps an earlier one iff it starts before the widest earlier one of its family ends
    widest: dict[int, tuple[str, SubnetRange]] = {}
    for text, cidr, _length, _explicit in sorted(parsed, key=lambda p: (p[1].version, p[1].first, -p[1].last)):
        earlier = widest.get(cidr.version)
        if earlier is not None and cidr.first <= earlier[1].last:
            problems.invalid(text, f"{path}: {text} overlaps (or repeats) {earlier[0]}")
            ok = False
        if earlier is None or cidr.last > earlier[1].last:
            widest[cidr.version] = (text, cidr)
    first_of_family: dict[int, tuple[str, int, bool]] = {}
    for text, cidr, length, explicit in parsed:
        other_text, other_length, other_explicit = first_of_family.setdefault(cidr.version, (text, length, explicit))
        if (explicit, length) != (other_explicit, other_length):
            problems.invalid(text, f"{path}: {text} and {other_text} (one IP family) need the same hostSubnet")
            ok = False
    if not ok:
        return None
    return Network(
        name=cudn_name,
        ref=ref,
        topology="Layer3",
        subnets=tuple(p[1] for p in parsed),
        host_subnet_lengths=tuple((p[1], p[2]) for p in parsed),
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


def index_networks(state: ClusterState, config: Config) -> Networks:
    """Classify every CUDN (advertised, refused for claims, withdrawn), validate and parse the advertised ones, and
    resolve overlaps between them (the older keeps the space)."""
    result = Networks()
    ra_selectors = (
        route_advertisement_selectors(state.route_advertisements)
        if (config.networks.follow_route_advertisements)
        else []
    )
    valid: list[tuple[tuple[str, str], Network]] = []  # ((creationTimestamp, name), network), in state order
    secondaries = {s.name: s for s in config.networks.secondary}
    for key, cudn in state.cudns.items():
        if not isinstance(cudn, dict):
            continue
        meta = mapping(cudn.get("metadata"))
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
        network_spec = mapping(mapping(cudn.get("spec")).get("network"))
        topology = network_spec.get("topology")
        block = network_spec.get(topology.lower()) if isinstance(topology, str) else None
        if not isinstance(block, dict):
            result.refusals.append(
                Refusal(ref, checks.describe(topology), checks.MALFORMED_OBJECT, "spec.network is malformed", name)
            )
            result.claim_refusals[name] = (checks.NETWORK_NOT_ADVERTISABLE, f"CUDN {name} is malformed")
            continue
        role = block.get("role")
        ipam_disabled = mapping(block.get("ipam")).get("mode") == "Disabled"
        if topology == "Layer2" and role == "Primary" and ipam_disabled:
            # the CRD allows ipam.mode Disabled only on Secondary networks: an older CRD or a hand-written object
            message = "ipam.mode Disabled is only valid on a Secondary network (the CRD refuses it on a Primary one)"
            result.refusals.append(Refusal(ref, "Disabled", checks.INVALID_NETWORK_DEFINITION, message, name))
            result.claim_refusals[name] = (checks.INVALID_NETWORK_DEFINITION, f"CUDN {name}: {message}")
            continue
        secondary = topology == "Layer2" and role == "Secondary" and ipam_disabled
        if not secondary and (topology not in ("Layer2", "Layer3") or role != "Primary"):
            value = f"{topology}/{role}" if role is not None else str(topology)
            message = "only primary Layer2/Layer3 and IPAM-less secondary Layer2 networks can be advertised"
            result.refusals.append(Refusal(ref, checks.describe(value), checks.NETWORK_NOT_ADVERTISABLE, message, name))
            result.claim_refusals[name] = (checks.NETWORK_NOT_ADVERTISABLE, f"CUDN {name} is {value}: {message}")
            continue
        problems = _Problems(ref, name)
        network = (_layer2 if topology == "Layer2" else _layer3)(name, ref, block, problems)
        result.refusals.extend(problems.refusals)
        if network is None:
            first = problems.refusals[0].message if problems.refusals else "malformed"
            result.claim_refusals[name] = (
                checks.INVALID_NETWORK_DEFINITION,
                f"CUDN {name} has an invalid definition ({first})",
            )
            continue
        if secondary:
            raw_selector = mapping(cudn.get("spec")).get("namespaceSelector")
            network = _secondary(network, raw_selector, state.namespaces, secondaries.get(name))
        stamp = meta.get("creationTimestamp")
        valid.append(((stamp if isinstance(stamp, str) and stamp else _NEWEST, name), network))
    sessions = _session_addresses(config)
    space = _Space()
    losers: set[str] = set()
    for _age, network in sorted(valid, key=lambda v: v[0]):
        covered = next(((s, a, what) for s in network.subnets for a, what in sessions if s.contains(*a)), None)
        if covered is not None:
            subnet, _, what = covered
            losers.add(network.name)
            message = f"{subnet.network} covers {what}: announcing it would hijack the BGP session's own network"
            refusal = Refusal(network.ref, str(subnet.network), checks.COVERS_INFRASTRUCTURE, message, network.name)
            result.refusals.append(refusal)
            result.claim_refusals[network.name] = (checks.COVERS_INFRASTRUCTURE, f"CUDN {network.name}: {message}")
            continue
        clash = next(((ours, held) for ours in network.subnets if (held := space.holder(ours)) is not None), None)
        if clash is None:
            space.take(network)
            continue
        ours, (theirs, older) = clash
        losers.add(network.name)
        message = f"{ours.network} overlaps {theirs.network} of CUDN {older.name}, which is older and keeps it"
        result.refusals.append(Refusal(network.ref, str(ours.network), checks.NETWORK_OVERLAP, message, network.name))
        result.claim_refusals[network.name] = (checks.NETWORK_OVERLAP, f"CUDN {network.name}: {message}")
    for _age, network in valid:
        if network.name not in losers:
            result.advertised[network.name] = network
    return result


def selected_namespaces(raw_selector: object, namespaces: Mapping[str, dict]) -> frozenset[str]:
    """The names of the Namespaces whose `metadata.labels` a CUDN's `namespaceSelector` matches (a malformed
    selector selects none; the CRD requires one, so an absent one selects none either)."""
    selector = selectors.parse(raw_selector)[0] if isinstance(raw_selector, dict) else None
    if selector is None:
        return frozenset()
    return frozenset(name for name, ns in namespaces.items() if isinstance(ns, dict) and selector.matches(_labels(ns)))


def _secondary(
    network: Network, raw_selector: object, namespaces: Mapping[str, dict], conf: SecondaryNetworkConfig | None
) -> Network:
    """An IPAM-less secondary Layer2 network: its selected namespaces and the ranges guest addresses may lie in.

    With a CUDN subnet, the subnet (its network/broadcast and gateway addresses excluded) and, when configured, the
    allowed prefixes both bound the addresses; the subnet is announced. Without one, the allowed prefixes are the
    network's ranges (so the guard and the overlap rules see them) and nothing but host routes is announced; with
    neither, nothing is.
    """
    # the configuration's prefixes are netaddr values with no host bits set (config refuses them)
    allowed = (
        tuple(SubnetRange.of(Prefix(p.version, p.first, p.prefixlen)) for p in conf.allowed_prefixes)
        if conf is not None
        else ()
    )
    limit = conf.max_addresses_per_interface if conf is not None else DEFAULT_MAX_ADDRESSES_PER_INTERFACE
    selected = selected_namespaces(raw_selector, namespaces)
    if network.subnets:
        return replace(network, namespaces=selected, allowed=allowed, max_addresses=limit)
    return replace(network, namespaces=selected, subnets=allowed, max_addresses=limit, announce_subnets=False)


def _session_addresses(config: Config) -> list[tuple[Address, str]]:
    """The addresses of bgpadv's own BGP sessions (peers, local addresses, nextHopSelf), from the configuration."""
    out: list[tuple[Address, str]] = []
    for peer in config.peers:
        out.append(((peer.address.version, peer.address.value), f"BGP peer {peer.address}"))
        if peer.local_address is not None:
            a = peer.local_address
            out.append(((a.version, a.value), f"the local address {a} of the session with {peer.address}"))
    out.extend(((a.version, a.value), f"the nextHopSelf address {a}") for a in config.next_hop_self)
    return out


def _node_subnets(node: Mapping, key: str) -> tuple[list[object], str | None]:
    """The host-subnet strings of one network in a node's `k8s.ovn.org/node-subnets`; an error message if malformed."""
    annotations = mapping(mapping(node.get("metadata")).get("annotations"))
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


def _node_age(node: Mapping, name: str) -> tuple[str, str]:
    stamp = mapping(node.get("metadata")).get("creationTimestamp")
    return (stamp if isinstance(stamp, str) and stamp else _NEWEST, name)


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
            if not network.announce_subnets:
                continue
            routes.extend(
                Route(s.network, None, network.name, RouteKind.SUBNET, network.ref, None, attrs)
                for s in network.subnets
            )
        else:
            layer3.append(network)
    if not layer3:
        return routes, refusals
    malformed_nodes: set[str] = set()
    # well-formed host subnets, by node age: (age, node, network, value as written, subnet)
    wanted: list[tuple[tuple[str, str], NodeInfo, Network, object, Prefix]] = []
    for key, node in state.nodes.items():
        if not isinstance(node, dict):
            continue
        name = mapping(node.get("metadata")).get("name") or key
        info = nodes.get(name) if isinstance(name, str) else None
        if info is None:
            continue
        age = _node_age(node, info.name)
        for network in layer3:
            values, error = _node_subnets(node, CUDN_PREFIX + network.name)
            if error is not None:
                if name not in malformed_nodes:
                    malformed_nodes.add(name)
                    raw = mapping(mapping(node.get("metadata")).get("annotations")).get(NODE_SUBNETS_ANNOTATION)
                    refusals.append(Refusal(info.ref, checks.describe(raw), checks.MALFORMED_OBJECT, error, ""))
                continue
            for value in values:
                net, refusal = _host_subnet(network, info, value)
                if refusal is not None:
                    refusals.append(refusal)
                elif net is not None:
                    wanted.append((age, info, network, value, net))
    # within a network every host subnet has its cidr's hostSubnet length and cidrs never overlap, and advertised
    # networks never overlap each other: two host subnets overlap only when they are the same prefix
    holder: dict[Prefix, NodeInfo] = {}
    for _age, info, network, value, net in sorted(wanted, key=lambda w: w[0]):
        older = holder.get(net)
        if older is not None:
            if older is not info:
                message = f"host subnet {net} is also named by node {older.name}, which is older and keeps it"
                refusals.append(
                    Refusal(info.ref, checks.describe(value), checks.HOST_SUBNET_CONFLICT, message, network.name)
                )
            continue  # the same node naming it twice: once is enough
        holder[net] = info
        next_hop = info.address(net.version)
        if next_hop is None:
            invalid, message = info.no_address(net.version)
            reason = checks.INVALID_NODE_ADDRESS if invalid else checks.NO_NODE_ADDRESS
            refusals.append(Refusal(info.ref, checks.describe(value), reason, message, network.name))
            continue
        routes.append(Route(net, next_hop, network.name, RouteKind.SUBNET, info.ref, info.name, attrs))
    return routes, refusals


def _host_subnet(network: Network, info: NodeInfo, value: object) -> tuple[Prefix | None, Refusal | None]:
    """The host subnet a node annotation entry names, or the refusal of a malformed or misplaced one."""
    net = checks.parse_cidr(value)
    if net is None:
        return None, Refusal(
            info.ref, checks.describe(value), checks.MALFORMED_ADDRESS, "host subnet is not a CIDR", network.name
        )
    host = SubnetRange.of(net)
    if not any(s.covers(host) for s in network.subnets):
        message = f"host subnet of node {info.name} lies outside every subnet of CUDN {network.name}"
        return None, Refusal(info.ref, checks.describe(value), checks.OUTSIDE_NETWORK_SUBNETS, message, network.name)
    for cidr, length in network.host_subnet_lengths:
        if cidr.covers(host) and host.prefixlen != length:
            # e.g. the whole cluster cidr: announcing it towards one node would pull every node's pods to it
            message = f"host subnet of node {info.name} is not a /{length} (hostSubnet of CUDN {network.name})"
            return None, Refusal(info.ref, checks.describe(value), checks.MALFORMED_ADDRESS, message, network.name)
    return net, None
