"""ClusterUserDefinedNetworks → `views.Network`: the definition validated like OVN-K's CRD, with the rules of
`bgpadv.planner.networks`; a CUDN that is no network bgpadv can advertise carries the problem every claim on it
gets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bgpadv.core import reasons, selectors
from bgpadv.core.addressing import other_family_note, parse_address, parse_cidr, special_range_reason
from bgpadv.core.bounded import describe
from bgpadv.core.model import ObjectRef
from bgpadv.core.prefix import BITS, Address, Prefix
from bgpadv.core.views import NEWEST, Network, Problem
from bgpadv.sources.decode.fields import _OPT_IN, _condition, _key_name, _labels, _map, _str, _version, selector_problem

CUDN_KIND = "ClusterUserDefinedNetwork"
NETWORK_ID_ANNOTATION = "k8s.ovn.org/network-id"
# A CUDN's: OVN-K's userdefinednetwork controller and its network cluster controller.
CREATED_CONDITION, NETWORK_ALLOCATED_CONDITION = "NetworkCreated", "NetworkAllocationSucceeded"
PERSISTENT = "Persistent"  # `ipam.lifecycle`: the VMs' addresses are kept in IPAMClaims
NADS_DELETED = "NetworkAttachmentDefinitionDeleted"  # NetworkCreated False while its NADs go away
DEFAULT_HOST_SUBNET = {4: 24, 6: 64}
"""OVN-K's host subnet length when a Layer3 subnet sets no `hostSubnet` (its cluster-subnet parser's defaults)."""


class _Problems:
    """The definition errors of one CUDN: any of them refuses it whole."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, value: object, reason: str, message: str) -> None:
        self.items.append(Problem(describe(value), reason, message))

    def invalid(self, value: object, message: str) -> None:
        self.add(value, reasons.INVALID_NETWORK_DEFINITION, message)


_Cidr = tuple[str, Prefix, bool]  # (text, prefix with host bits cleared, was masked)


def _cidr_list(values: object, path: str, problems: _Problems, *, required: bool, max_items: int) -> list[_Cidr] | None:
    """(text, prefix, masked) of each CIDR of a list field; None (with a problem) when anything in it is wrong."""
    if values is None:
        if required:
            problems.invalid(values, f"{path} is required")
            return None
        return []
    if not isinstance(values, list):
        problems.add(values, reasons.MALFORMED_OBJECT, f"{path} is not a list")
        return None
    if not 1 <= len(values) <= max_items:
        problems.invalid(f"{len(values)} entries", f"{path} must hold 1 to {max_items} CIDRs")
        return None
    out: list[_Cidr] = []
    ok = True
    for v in values:
        found = parse_cidr(v)
        if found is None:
            problems.add(v, reasons.MALFORMED_ADDRESS, f"{path}: not a CIDR")
            ok = False
            continue
        out.append((v, found[0], found[1]))
    return out if ok else None


def _network_subnet_problem(subnet: Prefix) -> str | None:
    """Why a network subnet can never be announced, or None: a default route, a host-route-sized prefix, or a
    range that overlaps addresses that are never unicast host addresses (ranges an operator may allow are left to
    the planner)."""
    if subnet.length == 0:
        return "is a default route"
    if subnet.length == BITS[subnet.version]:
        return f"is a /{subnet.length}, the size of a VM host route"
    what = special_range_reason(subnet.version, subnet.first, subnet.last, _OPT_IN)
    return f"overlaps {what}" if what is not None else None


def _inner_subnets(entries: list[_Cidr], subnets: tuple[Prefix, ...], path: str, problems: _Problems) -> bool:
    ok = True
    for text, inner, masked in entries:
        if not masked:
            problems.invalid(text, f"{path}: must be a masked network address (no host bits set)")
            ok = False
        elif not any(inner in s for s in subnets):
            problems.invalid(text, f"{path}: must lie inside one of the subnets")
            ok = False
    return ok


def _inside(prefixes: Iterable[Prefix], version: int, value: int) -> bool:
    return any(p.version == version and p.first <= value <= p.last for p in prefixes)


def _layer2_subnets(
    layer2: Mapping, path: str, problems: _Problems, ipam_disabled: bool
) -> tuple[tuple[Prefix, ...], bool] | None:
    """The `subnets` of a Layer2 definition and whether each may be announced; None when refused outright."""
    entries = _cidr_list(layer2.get("subnets"), f"{path}.subnets", problems, required=not ipam_disabled, max_items=2)
    if entries is None:
        return None
    if len(entries) == 2 and entries[0][1].version == entries[1][1].version:
        values = [e[0] for e in entries]
        problems.invalid(values, f"{path}.subnets: two values of one IP family (one per family at most)")
        return None
    ok = True
    for text, subnet, _ in entries:
        problem = _network_subnet_problem(subnet)
        if problem is not None:
            others = other_family_note(subnet.version, [t for t, s, _ in entries if s.version != subnet.version])
            problems.invalid(text, f"{path}.subnets: {text} {problem}{others}")
            ok = False
    return tuple(e[1] for e in entries), ok


def _gateways(
    raw_gw: object, subnets: tuple[Prefix, ...], infra: tuple[Prefix, ...], path: str, problems: _Problems
) -> tuple[dict[int, int], bool] | None:
    """The explicit `defaultGatewayIPs` by family and whether they are valid; None when refused outright."""
    explicit: dict[int, int] = {}
    ok = True
    if raw_gw is None:
        return explicit, ok
    gw_path = f"{path}.defaultGatewayIPs"
    if not isinstance(raw_gw, list):
        problems.add(raw_gw, reasons.MALFORMED_OBJECT, f"{gw_path} is not a list")
        return None
    if not 1 <= len(raw_gw) <= 2:
        problems.invalid(f"{len(raw_gw)} entries", f"{gw_path} must hold 1 or 2 IPs")
        return None
    for gw in raw_gw:
        parsed = parse_address(gw)
        if parsed is None or parsed[2] is not None:
            problems.add(gw, reasons.MALFORMED_ADDRESS, f"{gw_path}: not an IP address")
            return None
        version, value = parsed[0], parsed[1]
        if version in explicit:
            problems.invalid(raw_gw, f"{gw_path}: two IPs of one family (one per family at most)")
            return None
        explicit[version] = value
        if not _inside(subnets, version, value):
            problems.invalid(gw, f"{gw_path}: must lie inside one of the subnets")
            ok = False
        elif infra and not _inside(infra, version, value):
            problems.invalid(gw, f"{gw_path}: must lie inside one of the infrastructureSubnets")
            ok = False
    if ok and len(explicit) != len(subnets):
        problems.invalid(raw_gw, f"{gw_path}: one gateway per subnet (every IP family) is required")
        ok = False
    return explicit, ok


def _layer2(layer2: Mapping, problems: _Problems) -> dict[str, Any] | None:
    """The definition of a Layer2 CUDN (the fields of `views.Network`), or None with its problems."""
    ipam_disabled = _map(layer2.get("ipam")).get("mode") == "Disabled"
    path = "spec.network.layer2"
    found = _layer2_subnets(layer2, path, problems, ipam_disabled)
    if found is None:
        return None
    subnets, ok = found
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
        if any(reserved in i or i in reserved for i in infra):
            problems.invalid(text, f"{path}.reservedSubnets: overlaps the infrastructureSubnets")
            ok = False
    gateways = _gateways(layer2.get("defaultGatewayIPs"), subnets, infra, path, problems)
    if gateways is None:
        return None
    explicit, gw_ok = gateways
    if not (ok and gw_ok):
        return None
    gateways_set: set[tuple[int, int]] = set(explicit.items())
    management: set[tuple[int, int]] = set()
    for s in subnets:
        v = s.version
        family_infra = [i for i in infra if i.version == v]
        if v not in explicit:
            gateways_set.add((v, family_infra[0].first + 1 if family_infra else s.first + 1))
        if not family_infra:
            mgmt = s.first + 2
            if (v, mgmt) in gateways_set:
                mgmt = s.first + 1
            management.add((v, mgmt))
    return {
        "subnets": subnets,
        "gateways": frozenset(Address(v, a) for v, a in gateways_set),
        "infrastructure": infra,
        "infrastructure_addresses": frozenset(Address(v, a) for v, a in management),
        "reserved": tuple(e[1] for e in reserved_entries),
    }


def _host_subnet_length(entry: Mapping, text: object, cidr: Prefix, path: str, problems: _Problems) -> int | None:
    """An entry's `hostSubnet` (OVN-K's default when unset), or None with a problem."""
    length = entry.get("hostSubnet")
    if length is None:
        length = DEFAULT_HOST_SUBNET[cidr.version]
        if length <= cidr.length:
            problems.invalid(text, f"{path}[]: no hostSubnet, and OVN-K's default /{length} is not longer than {text}")
            return None
        return length
    where = f"{path}[].hostSubnet of {text}"
    if length.__class__ is not int or not 1 <= length <= 127:
        problems.invalid(length, f"{where}: must be an integer from 1 to 127")
    elif length <= cidr.length:
        problems.invalid(length, f"{where}: must be longer than the cidr's prefix")
    elif cidr.version == 4 and length >= 32:
        problems.invalid(length, f"{where}: must be shorter than 32 for IPv4")
    elif cidr.version == 6 and length != 64:
        # the CRD allows up to 127, but OVN-K's subnet parser refuses the network: no node would get a host subnet
        problems.invalid(length, f"{where}: OVN-K supports only /64 IPv6 host subnets")
    else:
        return length
    return None


def _layer3_entries(raw: list, path: str, problems: _Problems) -> tuple[list[tuple[str, Prefix, int, bool]], bool]:
    ok = True
    parsed: list[tuple[str, Prefix, int, bool]] = []  # (cidr text, prefix, host subnet length, explicit)
    for entry in raw:
        if not isinstance(entry, dict):
            problems.add(entry, reasons.MALFORMED_OBJECT, f"{path}[] is not an object")
            ok = False
            continue
        text = entry.get("cidr")
        found = parse_cidr(text)
        if found is None:
            problems.add(text, reasons.MALFORMED_ADDRESS, f"{path}[].cidr: not a CIDR")
            ok = False
            continue
        cidr = found[0]
        problem = _network_subnet_problem(cidr)
        if problem is not None:
            problems.invalid(text, f"{path}[].cidr: {text} {problem}")
            ok = False
            continue
        length = _host_subnet_length(entry, text, cidr, path, problems)
        if length is None:
            ok = False
            continue
        parsed.append((str(text), cidr, length, entry.get("hostSubnet") is not None))
    return parsed, ok


def _layer3(layer3: Mapping, problems: _Problems) -> dict[str, Any] | None:
    """The definition of a Layer3 CUDN (the fields of `views.Network`), or None with its problems."""
    path = "spec.network.layer3.subnets"
    raw = layer3.get("subnets")
    if raw is None or raw == []:
        problems.invalid("0 entries" if raw == [] else raw, f"{path} is required (1 to 400 entries)")
        return None
    if not isinstance(raw, list):
        problems.add(raw, reasons.MALFORMED_OBJECT, f"{path} is not a list")
        return None
    if len(raw) > 400:
        problems.invalid(f"{len(raw)} entries", f"{path}: at most 400 entries")
        return None
    parsed, ok = _layer3_entries(raw, path, problems)
    # in address order, a cidr overlaps an earlier one iff it starts before the widest earlier one of its family ends
    widest: dict[int, tuple[str, Prefix]] = {}
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
    return {"subnets": tuple(p[1] for p in parsed), "host_subnet_lengths": tuple((p[1], p[2]) for p in parsed)}


def _network_id(annotations: Mapping) -> int | None:
    raw = annotations.get(NETWORK_ID_ANNOTATION)
    return int(raw) if isinstance(raw, str) and raw.isascii() and raw.isdigit() else None


def _classify(
    name: str, topology: object, block: object, role: object, ipam_disabled: bool
) -> tuple[Problem, tuple[str, str]] | None:
    """The problem of a CUDN that is no network bgpadv can advertise and the (reason, message) every claim on it
    gets, or None (the rules of `planner.networks`)."""
    if not isinstance(block, dict):
        problem = Problem(describe(topology), reasons.MALFORMED_OBJECT, "spec.network is malformed")
        return problem, (reasons.NETWORK_NOT_ADVERTISABLE, f"CUDN {name} is malformed")
    if topology == "Layer2" and role == "Primary" and ipam_disabled:
        # the CRD allows ipam.mode Disabled only on Secondary networks: an older CRD or a hand-written object
        message = "ipam.mode Disabled is only valid on a Secondary network (the CRD refuses it on a Primary one)"
        problem = Problem("Disabled", reasons.INVALID_NETWORK_DEFINITION, message)
        return problem, (reasons.INVALID_NETWORK_DEFINITION, f"CUDN {name}: {message}")
    secondary = topology == "Layer2" and role == "Secondary" and ipam_disabled
    if not secondary and (topology not in ("Layer2", "Layer3") or role != "Primary"):
        value = f"{topology}/{role}" if role is not None else str(topology)
        message = "only primary Layer2/Layer3 and IPAM-less secondary Layer2 networks can be advertised"
        problem = Problem(describe(value), reasons.NETWORK_NOT_ADVERTISABLE, message)
        return problem, (reasons.NETWORK_NOT_ADVERTISABLE, f"CUDN {name} is {value}: {message}")
    return None


def _not_created(name: str, status: Mapping) -> tuple[Problem, tuple[str, str]] | None:
    """OVN-K's word that the CUDN's network is not there: `NetworkCreated` or `NetworkAllocationSucceeded` False
    (reason and message verbatim), as the problem of the CUDN and the (reason, message) of every claim on it."""
    for kind in (CREATED_CONDITION, NETWORK_ALLOCATED_CONDITION):
        condition = _condition(status, kind)
        if condition is None or condition.get("status") != "False":
            continue
        reason = describe(condition.get("reason") or "no reason given")
        message = f"OVN-K says the network is not there ({kind} False, {reason})"
        said = condition.get("message")
        if said:
            message += f": {describe(said)}"
        return Problem(reason, reasons.NETWORK_NOT_CREATED, message), (
            reasons.NETWORK_NOT_CREATED,
            f"CUDN {name}: {message}",
        )
    return None


def decode_network(obj: object, key: object = None) -> Network:
    """A ClusterUserDefinedNetwork (the rules of `planner.networks`). An empty `name`: the planner skips it."""
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    given = meta.get("name")
    name = given if isinstance(given, str) and given else _key_name(key)
    created = _str(meta.get("creationTimestamp"))
    ref = ObjectRef(CUDN_KIND, name, "", _str(meta.get("uid")), created)
    status = _map(raw.get("status"))
    condition = _condition(status, CREATED_CONDITION)
    nads_deleted = (
        condition is not None and condition.get("status") == "False" and condition.get("reason") == NADS_DELETED
    )
    common: dict[str, Any] = {
        "name": name,
        "ref": ref,
        "resource_version": _version(meta),
        "age": (created or NEWEST, name),
        "labels": _labels(meta),
        "network_id": _network_id(_map(meta.get("annotations"))),
        "withdrawn": bool(meta.get("deletionTimestamp")) or nads_deleted,
    }
    spec = _map(raw.get("spec"))
    network_spec = _map(spec.get("network"))
    topology = network_spec.get("topology")
    block = network_spec.get(topology.lower()) if isinstance(topology, str) else None
    role = block.get("role") if isinstance(block, dict) else None
    ipam = _map(block.get("ipam")) if isinstance(block, dict) else {}
    ipam_disabled = ipam.get("mode") == "Disabled"
    common.update(
        topology=topology if isinstance(topology, str) else None,
        role=role if isinstance(role, str) else None,
        ipam_disabled=ipam_disabled,
        persistent_ips=_persistent_ips(ipam, ipam_disabled),
    )
    refused = _classify(name, topology, block, role, ipam_disabled) or _not_created(name, status)
    if refused is not None:
        return Network(**common, problems=(refused[0],), claim_problem=refused[1])
    assert isinstance(block, dict)
    problems = _Problems()
    definition = (_layer2 if topology == "Layer2" else _layer3)(block, problems)
    if definition is None:
        first = problems.items[0].message if problems.items else "malformed"
        claim = (reasons.INVALID_NETWORK_DEFINITION, f"CUDN {name} has an invalid definition ({first})")
        return Network(**common, problems=tuple(problems.items), claim_problem=claim)
    secondary = topology == "Layer2" and role == "Secondary" and ipam_disabled
    raw_selector = spec.get("namespaceSelector")
    selector, bad = selectors.parse(raw_selector)
    if bad:
        return Network(**common, **_malformed_namespace_selector(name, bad))
    transport = network_spec.get("transport")
    return Network(
        **common,
        **definition,
        secondary=secondary,
        namespace_selector=selector,
        transport=describe(transport) if transport is not None else None,
        evpn=_evpn(network_spec.get("evpn")),
    )


def _persistent_ips(ipam: Mapping, ipam_disabled: bool) -> bool:
    """Whether the network's VMs keep their addresses in IPAMClaims: `ipam.lifecycle: Persistent` with IPAM enabled
    (the only value the CRD allows, and only with mode Enabled). Any other value, or none, is the CRD's default, no
    persistent IPs, as OVN-K reads it when it renders the NAD (`allowPersistentIPs` only for `Persistent`)."""
    return not ipam_disabled and ipam.get("lifecycle") == PERSISTENT


def _malformed_namespace_selector(name: str, problems: list[tuple[str, str]]) -> dict[str, Any]:
    """A CUDN whose `namespaceSelector` is malformed is refused whole: it selects no namespace, so no VM is on it."""
    at, line = selector_problem("spec.namespaceSelector", problems)
    message = f"{line}; the network is on no namespace and is not announced"
    return {
        "problems": (Problem(at, reasons.MALFORMED_SELECTOR, message),),
        "claim_problem": (reasons.MALFORMED_SELECTOR, f"CUDN {name}: {message}"),
    }


def _evpn(raw: object) -> str:
    """The VRFs of a CUDN's `spec.network.evpn` block (`{vtep, macVRF: {vni, routeTarget}, ipVRF: {...}}`, the shape
    of ovn-kubernetes test/e2e/testscenario/cudn's EVPN scenarios), as people should see them."""
    block = _map(raw)
    parts = []
    for key in ("macVRF", "ipVRF"):
        vrf = _map(block.get(key))
        if vrf:
            parts.append(f"{key} vni {describe(vrf.get('vni'))}")
    return ", ".join(parts)
