"""Raw objects → views (`bgpadv.core.views`): the one place the API's JSON is read, once, when an object arrives.

`decode(resource, obj, key)` never raises, whatever `obj` holds, and costs what a well-formed object costs: lists
the planner bounds (a claim's `status.ips`, a guest's addresses) are cut before they are parsed, so a hostile
40,000-entry list costs one refusal. What is malformed becomes a `Problem` on the view, with the reason code and the
message the planner has always refused it with; the rules are those of `bgpadv.planner.networks` (CUDN definitions,
validated like OVN-K's CRD), `bgpadv.planner.nodes` and `bgpadv.planner.vms`, whose docstrings state them.

`state_from_objects(objects)` sorts and decodes a list of objects into a `ClusterState` (for `bgpadv render`, tests
and benchmarks), as the store does event by event.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from bgpadv.core import reasons, resources, selectors
from bgpadv.core.addressing import (
    OPT_IN_GROUPS,
    other_family_note,
    parse_address,
    parse_cidr,
    parse_vm_address,
    special_range_reason,
)
from bgpadv.core.bounded import describe
from bgpadv.core.model import ObjectRef
from bgpadv.core.prefix import BITS, Address, Prefix
from bgpadv.core.resources import Resource
from bgpadv.core.selectors import LabelSelector
from bgpadv.core.state import ClusterState
from bgpadv.core.views import (
    EMPTY_LABELS,
    MAX_CLAIM_IPS,
    MAX_GUEST_ADDRESSES,
    NEWEST,
    Attachment,
    Claim,
    GuestInterface,
    HostSubnet,
    LauncherPod,
    Migration,
    Namespace,
    Network,
    Node,
    PodNetwork,
    Problem,
    RouteAdvertisement,
    View,
    VmAddress,
    Vmi,
    address_key,
)

CUDN_KIND = "ClusterUserDefinedNetwork"
RA_KIND = "RouteAdvertisements"
CLAIM_KIND = "IPAMClaim"
VMI_KIND = "VirtualMachineInstance"
CUDN_PREFIX = "cluster_udn_"
NODE_SUBNETS_ANNOTATION = "k8s.ovn.org/node-subnets"
PRIMARY_IFADDR_ANNOTATION = "k8s.ovn.org/node-primary-ifaddr"
HOST_CIDRS_ANNOTATION = "k8s.ovn.org/host-cidrs"
NETWORK_ID_ANNOTATION = "k8s.ovn.org/network-id"
VM_LABEL = "kubevirt.io/vm"
DOMAIN_ANNOTATION = "kubevirt.io/domain"
CREATED_BY_LABEL = "kubevirt.io/created-by"
TARGET_READY_ANNOTATION = "kubevirt.io/migration-target-ready-timestamp"
POD_NETWORKS_ANNOTATION = "k8s.ovn.org/pod-networks"
"""OVN-K's per-pod assignment, keyed by NAD name `<namespace>/<name>` (go-controller/pkg/util/pod_annotation.go,
`MarshalPodAnnotation`; `GetNADName` in pkg/util/multi_network.go)."""
# A launcher pod's claim reference: the `ipam-claim-reference` of its default-network selection, else the deprecated
# annotation (`_claim_ref`).
CLAIM_ANNOTATION = "k8s.ovn.org/primary-udn-ipamclaim"
DEFAULT_NETWORK_ANNOTATION = "v1.multus-cni.io/default-network"
ALLOCATED_CONDITION = "IPsAllocated"  # an IPAMClaim's (OVN-K's persistentips allocator)
# A CUDN's: OVN-K's userdefinednetwork controller and its network cluster controller.
CREATED_CONDITION, NETWORK_ALLOCATED_CONDITION = "NetworkCreated", "NetworkAllocationSucceeded"
NADS_DELETED = "NetworkAttachmentDefinitionDeleted"  # NetworkCreated False while its NADs go away
MAX_POD_NETWORKS = 16
"""Most entries of `k8s.ovn.org/pod-networks` read per pod (a pod has one primary network and a few secondary ones)."""
OWNER_KINDS = ("VirtualMachine", "VirtualMachineInstance")
DEFAULT_HOST_SUBNET = {4: 24, 6: 64}
"""OVN-K's host subnet length when a Layer3 subnet sets no `hostSubnet` (its cluster-subnet parser's defaults)."""
_TAIL = 9  # entries kept beyond MAX_GUEST_ADDRESSES: a refusal shows 8 entries and "..." (bounded.brief)
_SCAN = 4 * MAX_GUEST_ADDRESSES  # guest-reported entries parsed per interface (the plausible ones are kept)
_MIGRATION_TIMES = ("startTimestamp", "endTimestamp", "targetNodeDomainReadyTimestamp")
_EMPTY: Mapping = MappingProxyType({})


def _map(value: object) -> Mapping:
    return value if isinstance(value, dict) else _EMPTY


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


_SHARED_MAX = 253  # a DNS name: namespaces, node names, label keys and values, timestamps, phases


def _shared(value: str) -> str:
    """One string object for every view that holds this value (namespaces, node names, label keys and values,
    creation timestamps, phases repeat across 100,000 objects; each JSON document brings its own copy). Interned
    strings are freed with their last holder; long ones are left alone."""
    return sys.intern(value) if len(value) <= _SHARED_MAX else value


def _labels(meta: Mapping) -> Mapping[str, str]:
    labels = meta.get("labels")
    if not isinstance(labels, dict) or not labels:
        return EMPTY_LABELS
    return MappingProxyType(
        {_shared(k): _shared(v) for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
    )


def _version(meta: Mapping) -> str:
    return str(meta.get("resourceVersion") or "")


def _json(annotations: Mapping, key: str) -> tuple[object, bool]:
    """(decoded value, True) of a JSON annotation; (None, False) when absent, not a string or not JSON."""
    raw = annotations.get(key)
    if not isinstance(raw, str):
        return None, False
    try:
        return json.loads(raw), True
    except (ValueError, RecursionError):
        return None, False


def _key_name(key: object) -> str:
    return key if isinstance(key, str) else ""


def stored_key(view: View, key: tuple[str, str] | str) -> tuple[str, str] | str:
    """The key to store `view` under: the view's own key object when it equals `key` (one tuple per object, held by
    the view, the reflector's cache and the store alike), else `key`."""
    own = getattr(view, "key", None)
    return own if own is not None and own == key else key


def _key_pair(key: object) -> tuple[str, str]:
    if isinstance(key, tuple) and len(key) == 2:
        return (str(key[0]), str(key[1]))
    return ("", str(key) if key is not None else "")


# -- ClusterUserDefinedNetworks ---------------------------------------------------------------------------------------


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


_OPT_IN = frozenset(OPT_IN_GROUPS)
"""Special ranges the configuration may allow as network space (`networks.allowSpecialRanges`): the planner, which
reads the configuration, decides on those; the decoder refuses only the ranges that never are."""


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


def _condition(status: Mapping, kind: str) -> Mapping | None:
    for c in _list(status.get("conditions")):
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


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
    ipam_disabled = isinstance(block, dict) and _map(block.get("ipam")).get("mode") == "Disabled"
    common.update(
        topology=topology if isinstance(topology, str) else None,
        role=role if isinstance(role, str) else None,
        ipam_disabled=ipam_disabled,
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


def selector_problem(field: str, problems: list[tuple[str, str]]) -> tuple[str, str]:
    """(the field path, one line) of a malformed selector's first problem, with the rule that applies to it."""
    at, message = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{field}{at}", f"{field}{at} {message}{more}: a malformed label selector selects nothing"


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


# -- RouteAdvertisements, Namespaces ----------------------------------------------------------------------------------


def _accepted(raw: Mapping, meta: Mapping) -> bool:
    """`Accepted=True` for the current generation (or, without conditions, the legacy `status.status`)."""
    status = _map(raw.get("status"))
    accepted = _condition(status, "Accepted")
    if accepted is None:
        return not _list(status.get("conditions")) and status.get("status") == "Accepted"
    if accepted.get("status") != "True":
        return False
    observed, generation = accepted.get("observedGeneration"), meta.get("generation")
    return observed is None or generation is None or observed == generation


def decode_route_advertisement(obj: object, key: object = None) -> RouteAdvertisement:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    spec = _map(raw.get("spec"))
    found: list[LabelSelector] = []
    malformed: list[tuple[str, str]] = []
    for i, entry in enumerate(_list(spec.get("networkSelectors"))):
        if not isinstance(entry, dict) or entry.get("networkSelectionType") != "ClusterUserDefinedNetworks":
            continue
        inner = _map(entry.get("clusterUserDefinedNetworkSelector"))
        if inner.get("networkSelector") is None:  # required by the CRD: absent or null selects no CUDN
            continue
        selector, bad = selectors.parse(inner.get("networkSelector"))
        if selector is not None:
            found.append(selector)
        else:
            field = f"spec.networkSelectors[{i}].clusterUserDefinedNetworkSelector.networkSelector"
            malformed.append(selector_problem(field, bad))
    node_selector, bad = selectors.parse(spec.get("nodeSelector"))
    if bad:
        malformed.append(selector_problem("spec.nodeSelector", bad))
    elif node_selector is None:  # absent or null: Go's zero value, the empty selector (every node)
        node_selector = LabelSelector()
    name = _str(meta.get("name")) or _key_name(key)
    advertisements = tuple(describe(a) for a in _list(spec.get("advertisements")))
    vrf = spec.get("targetVRF")
    return RouteAdvertisement(
        name=name,
        resource_version=_version(meta),
        pod_network="PodNetwork" in advertisements,
        accepted=_accepted(raw, meta),
        network_selectors=tuple(found),
        ref=ObjectRef(RA_KIND, name, "", _str(meta.get("uid")), _str(meta.get("creationTimestamp"))),
        target_vrf=vrf if isinstance(vrf, str) else describe(vrf) if vrf is not None else "",
        node_selector=node_selector,
        advertisements=advertisements,
        malformed_selectors=tuple(malformed),
    )


def decode_namespace(obj: object, key: object = None) -> Namespace:
    meta = _map(_map(obj).get("metadata"))
    return Namespace(_str(meta.get("name")) or _key_name(key), _version(meta), _labels(meta))


# -- Nodes ----------------------------------------------------------------------------------------------------------


def _address(value: object) -> Address | None:
    parsed = parse_address(value)
    return None if parsed is None else Address.of(parsed[0], parsed[1])


def _node_addresses(raw: Mapping, annotations: Mapping) -> tuple[tuple[Address, ...], tuple[Address, ...]]:
    """(next-hop candidates in source order, every address the node has): see `bgpadv.core.views`."""
    candidates: list[Address] = []
    every: list[Address] = []
    for entry in _list(_map(raw.get("status")).get("addresses")):
        if isinstance(entry, dict) and entry.get("type") in ("InternalIP", "ExternalIP"):
            a = _address(entry.get("address"))
            if a is not None:
                every.append(a)
                if entry.get("type") == "InternalIP":
                    candidates.append(a)
    ifaddr, _ok = _json(annotations, PRIMARY_IFADDR_ANNOTATION)
    if isinstance(ifaddr, dict):
        for name, version in (("ipv4", 4), ("ipv6", 6)):
            a = _address(ifaddr.get(name))
            if a is not None:
                every.append(a)
                if a.version == version:
                    candidates.append(a)
    host_cidrs, _ok = _json(annotations, HOST_CIDRS_ANNOTATION)
    for value in host_cidrs if isinstance(host_cidrs, list) else ():
        a = _address(value)
        if a is not None:
            every.append(a)
    return tuple(candidates), tuple(dict.fromkeys(every))


def _node_space(annotations: Mapping) -> tuple[tuple[Prefix, ...], tuple[Prefix, ...]]:
    """(the node's connected networks from `k8s.ovn.org/host-cidrs`, its default pod subnets from
    `k8s.ovn.org/node-subnets` "default"): see `bgpadv.core.views`. Entries that do not parse are left out (the
    addresses of host-cidrs are node addresses anyway, `_node_addresses`)."""
    connected: list[Prefix] = []
    host_cidrs, _ok = _json(annotations, HOST_CIDRS_ANNOTATION)
    for value in host_cidrs if isinstance(host_cidrs, list) else ():
        found = parse_cidr(value)
        if found is not None:
            connected.append(found[0])
    pods: list[Prefix] = []
    subnets, _ok = _json(annotations, NODE_SUBNETS_ANNOTATION)
    default = subnets.get("default") if isinstance(subnets, dict) else None
    for value in default if isinstance(default, list) else [default]:
        found = parse_cidr(value)
        if found is not None:
            pods.append(found[0])
    return tuple(dict.fromkeys(connected)), tuple(dict.fromkeys(pods))


def _host_subnets(annotations: Mapping) -> tuple[Mapping[str, tuple[HostSubnet, ...]], Problem | None]:
    """The Layer3 host subnets of `k8s.ovn.org/node-subnets` per CUDN name, or the problem of the annotation."""
    raw = annotations.get(NODE_SUBNETS_ANNOTATION)
    if raw is None:
        return MappingProxyType({}), None
    decoded, ok = _json(annotations, NODE_SUBNETS_ANNOTATION)
    if not ok or not isinstance(decoded, dict):
        message = f"annotation {NODE_SUBNETS_ANNOTATION} is not a JSON object"
        return MappingProxyType({}), Problem(describe(raw), reasons.MALFORMED_OBJECT, message)
    out: dict[str, tuple[HostSubnet, ...]] = {}
    for k, value in decoded.items():
        if not k.startswith(CUDN_PREFIX) or value is None:
            continue
        values = value if isinstance(value, list) else [value]
        entries = []
        for v in values:
            found = parse_cidr(v)
            entries.append(HostSubnet(describe(v), found[0] if found is not None else None))
        out[k[len(CUDN_PREFIX) :]] = tuple(entries)
    return MappingProxyType(out), None


def decode_node(obj: object, key: object = None) -> Node:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        name = _key_name(key)
    created = _str(meta.get("creationTimestamp"))
    annotations = _map(meta.get("annotations"))
    candidates, every = _node_addresses(raw, annotations)
    subnets, problem = _host_subnets(annotations)
    connected, pods = _node_space(annotations)
    return Node(
        name=name,
        ref=ObjectRef("Node", name, "", _str(meta.get("uid")), created),
        resource_version=_version(meta),
        age=(created or NEWEST, name),
        labels=_labels(meta),
        next_hop_candidates=candidates,
        addresses=every,
        host_subnets=subnets,
        host_subnets_problem=problem,
        connected=connected,
        pod_subnets=pods,
    )


# -- IPAMClaims -----------------------------------------------------------------------------------------------------


def _vm_address(value: object) -> VmAddress:
    parsed = parse_vm_address(value)
    if parsed is None:
        return VmAddress(describe(value), None, 0)
    version, integer = parsed
    return VmAddress(describe(value), Address.of(version, integer), address_key(version, integer))


def claim_vm(meta: Mapping) -> tuple[str | None, str | None]:
    """The VMI an IPAMClaim belongs to, from its metadata (rule 2 of `planner.vms`): `(vmi_name, None)`, or
    `(None, problem)`.

    The name is the label `kubevirt.io/vm`, else the name of an ownerReference of kind VirtualMachine or
    VirtualMachineInstance (a VMI is named after its VM; the VMI lives in the claim's namespace). The claim name is
    never parsed. The problem is a message: no link at all, or a label and an ownerReference naming different VMs
    (ipam-extensions sets both to the same name; when they disagree the claim cannot be placed without guessing).
    This is the one place the claim → VM link is read (`views.Claim.vm`).
    """
    labels = meta.get("labels")
    name = labels.get(VM_LABEL) if isinstance(labels, dict) else None
    owners = meta.get("ownerReferences")
    if isinstance(name, str) and name:
        other = _other_owner(owners, name) if owners else None
        if other is None:
            return name, None
        return None, f"label kubevirt.io/vm names {name} but the ownerReference names {other}"
    if isinstance(owners, list):
        for owner in owners:
            if isinstance(owner, dict) and owner.get("kind") in OWNER_KINDS:
                owner_name = owner.get("name")
                if isinstance(owner_name, str) and owner_name:
                    return owner_name, None
    return None, "claim names no VM (label kubevirt.io/vm or a VirtualMachine ownerReference)"


def _other_owner(owners: object, vmi_name: str) -> str | None:
    """The name of a VirtualMachine/VirtualMachineInstance ownerReference that is not `vmi_name`, or None."""
    if not isinstance(owners, list):
        return None
    for owner in owners:
        if isinstance(owner, dict):
            name = owner.get("name")
            if name != vmi_name and owner.get("kind") in OWNER_KINDS and isinstance(name, str) and name:
                return name
    return None


def claim_ips(values: list) -> tuple[tuple[VmAddress, ...], Problem | None]:
    """The addresses of a claim's `status.ips` list (rule 3 of `planner.vms`): each distinct address once,
    malformed entries kept (each refused alone); or the problem that refuses the claim whole (more than
    `MAX_CLAIM_IPS` entries, two distinct addresses of one family). The problem's value is the whole list."""
    if len(values) > MAX_CLAIM_IPS:
        message = f"status.ips lists {len(values)} entries; OVN-K writes at most one address per family"
        return (), Problem(describe(values), reasons.MALFORMED_OBJECT, message)
    items: list[VmAddress] = []
    seen: set[int] = set()
    first: dict[int, object] = {}  # version -> the first address of that family, as written
    for value in values:
        found = _vm_address(value)
        if found.address is None:
            items.append(found)
            continue
        if found.key in seen:
            continue  # the same address listed twice by one object
        seen.add(found.key)
        version = found.address.version
        if version in first:
            message = (
                f"status.ips lists more than one IPv{version} address ({describe(first[version])}, "
                f"{describe(value)}); OVN-K allocates one per family, so the claim is refused whole"
            )
            return (), Problem(describe(values), reasons.MALFORMED_OBJECT, message)
        first[version] = value
        items.append(found)
    return tuple(items), None


def _age(meta: Mapping, name: str | None = None) -> tuple[str, str, str]:
    """(creationTimestamp, namespace, name): the smallest wins a conflict; no timestamp sorts last. `name`: the
    view's own string of the name (one object per view, not a second copy from the document)."""
    created = meta.get("creationTimestamp")
    return (
        _shared(created) if isinstance(created, str) and created else NEWEST,
        _shared(str(meta.get("namespace"))),
        name if name is not None else str(meta.get("name")),
    )


def _allocation_refused(status: Mapping) -> Problem | None:
    """OVN-K's refusal of a claim's addresses: its `IPsAllocated` condition False (reason and message verbatim)."""
    condition = _condition(status, ALLOCATED_CONDITION)
    if condition is None or condition.get("status") != "False":
        return None
    reason = describe(condition.get("reason") or "no reason given")
    message = f"OVN-K did not allocate the claim's addresses (IPsAllocated False, {reason})"
    said = condition.get("message")
    if said:
        message += f": {describe(said)}"
    return Problem(reason, reasons.ALLOCATION_REFUSED, message)


def decode_claim(obj: object, key: object = None) -> Claim:
    raw = _map(obj)
    meta_raw = raw.get("metadata")
    meta = _map(meta_raw)
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name or not isinstance(namespace, str) or not namespace:
        key_ns, key_name = _key_pair(key)
        return Claim((key_ns, key_name), ObjectRef(CLAIM_KIND, key_name, key_ns), _version(meta), identified=False)
    namespace = _shared(namespace)
    ref = ObjectRef(CLAIM_KIND, name, namespace, _str(meta.get("uid")), _shared(_str(meta.get("creationTimestamp"))))
    spec = raw.get("spec")
    net_name = spec.get("network") if isinstance(spec, dict) else None
    net_name = _shared(net_name) if isinstance(net_name, str) else net_name
    status = raw.get("status")
    ips = status.get("ips") if isinstance(status, dict) else None
    fields: dict[str, Any] = {"ips_pending": not ips}
    refused = _allocation_refused(status) if isinstance(status, dict) else None
    if refused is not None:
        fields["allocation_refused"] = refused
    if ips and not isinstance(ips, list):
        fields["ips_malformed"] = Problem(describe(ips), reasons.MALFORMED_OBJECT, "status.ips is not a list")
    elif ips:
        fields["ips"], fields["ips_refused"] = claim_ips(ips)
    vm, problem = claim_vm(meta)
    vm = _shared(vm) if vm is not None else None  # the VM's name: one string for its claim, VMI and pods
    if vm is None:
        labels = meta.get("labels")
        label = labels.get(VM_LABEL) if isinstance(labels, dict) else None
        value = label if isinstance(label, str) and label else net_name
        fields["vm_problem"] = Problem(describe(value), reasons.MALFORMED_OBJECT, str(problem))
    return Claim(
        key=(namespace, name),
        ref=ref,
        resource_version=_version(meta),
        age=_age(meta),
        network=net_name if isinstance(net_name, str) and net_name else None,
        network_text=_shared(describe(net_name)),
        deleting=bool(meta.get("deletionTimestamp")),
        vm=vm,
        **fields,
    )


# -- VirtualMachineInstances ----------------------------------------------------------------------------------------


def _wall(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _nonempty(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _side(source_state: Mapping, target_state: Mapping, uid: str, node: object, source_node: object) -> str | None:
    """Which side of a decentralized migration this VMI is: KubeVirt names each side's VMI uid
    (`sourceState/targetState.virtualMachineInstanceUID`); without them, the side whose node is the VMI's."""
    if uid:
        if source_state.get("virtualMachineInstanceUID") == uid:
            return "source"
        if target_state.get("virtualMachineInstanceUID") == uid:
            return "target"
    if isinstance(node, str) and node:
        if node in (source_node, source_state.get("node")):
            return "source"
        if node == target_state.get("node"):
            return "target"
    return None


def decode_migration(raw: object, uid: str = "", node: object = None) -> Migration | None:
    """A VMI's `status.migrationState` (None when it is not a mapping): the one reading of a live migration.
    `uid`, `node`: the VMI's, to tell the side of a decentralized migration."""
    if not isinstance(raw, dict):
        return None
    ready = raw.get("targetNodeDomainReadyTimestamp")
    source_state, target_state = raw.get("sourceState"), raw.get("targetState")
    side = None
    decentralized = (
        isinstance(source_state, dict)
        and isinstance(target_state, dict)
        and ((source_state.get("syncAddress") is None) != (target_state.get("syncAddress") is None))
    )
    if decentralized:
        assert isinstance(source_state, dict) and isinstance(target_state, dict)
        side = _side(source_state, target_state, uid, node, raw.get("sourceNode"))
        ready = ready or target_state.get("domainReadyTimestamp")
    return Migration(
        source_node=_nonempty(raw.get("sourceNode")),
        target_node=_nonempty(raw.get("targetNode")),
        target_pod=_nonempty(raw.get("targetPod")),
        completed=raw.get("completed") is True,
        given_up=raw.get("failed") is True or raw.get("abortStatus") == "Succeeded",
        target_ready=bool(ready),
        target_ready_at=_wall(ready),
        timestamps=tuple(s for s in (raw.get(n) for n in _MIGRATION_TIMES) if isinstance(s, str)),
        decentralized=decentralized,
        side=side,
    )


def _guest_reported(iface: Mapping) -> bool:
    """False when `infoSource` is given and does not name the guest agent: then the addresses come from the pod's
    network status (OVN-K assigns none on an IPAM-less network), not from the guest. No `infoSource` (KubeVirt
    before 0.59): taken."""
    source = iface.get("infoSource")
    if source is None:
        return True
    return isinstance(source, str) and "guest-agent" in (part.strip() for part in source.split(","))


def _plausible(a: VmAddress) -> bool:
    """A parsed address outside every special range (link-local, loopback, ...): one the planner may take."""
    address = a.address
    return address is not None and special_range_reason(address.version, address.value, address.value, _OPT_IN) is None


def _interface(iface: Mapping, name: str) -> GuestInterface:
    values = iface.get("ipAddresses")
    if values is None and iface.get("ipAddress") is not None:
        values = [iface.get("ipAddress")]
    guest = _guest_reported(iface)
    if values is None:
        return GuestInterface(name, guest)
    if not isinstance(values, list):
        return GuestInterface(
            name, guest, malformed=Problem(describe(values), reasons.MALFORMED_OBJECT, "ipAddresses is not a list")
        )
    scanned = [_vm_address(v) for v in values[:_SCAN]]
    if len(values) > MAX_GUEST_ADDRESSES:
        # the plausible ones first, so that a guest's real address is never cut off by link-local or garbage entries
        scanned.sort(key=lambda a: not _plausible(a))
    return GuestInterface(
        name,
        guest,
        addresses=tuple(scanned[:MAX_GUEST_ADDRESSES]),
        count=len(values),
        reported=tuple(values[: MAX_GUEST_ADDRESSES + _TAIL]) if len(values) > 1 else (),
    )


def _attachments(spec: Mapping) -> tuple[Attachment, ...]:
    out = []
    for entry in _list(spec.get("networks")):
        if not isinstance(entry, dict):
            continue
        iface_name = entry.get("name")
        nad = _map(entry.get("multus")).get("networkName")
        if not isinstance(iface_name, str) or not iface_name or not isinstance(nad, str) or not nad:
            continue
        nad_namespace, _, nad_name = nad.rpartition("/")
        out.append(Attachment(iface_name, nad_namespace, nad_name))
    return tuple(out)


def decode_vmi(obj: object, key: object = None) -> Vmi:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    name, namespace = meta.get("name"), meta.get("namespace")
    if isinstance(name, str) and isinstance(namespace, str) and name and namespace:
        identified, vkey = True, (_shared(namespace), _shared(name))
    else:
        identified, vkey = False, _key_pair(key)
    # the uid is shared with the launcher pods that state it (label, ownerReference)
    uid, created = _shared(_str(meta.get("uid"))), _shared(_str(meta.get("creationTimestamp")))
    status = _map(raw.get("status"))
    node = status.get("nodeName")
    node = _shared(node) if isinstance(node, str) else node
    phase = status.get("phase")
    phase = _shared(phase) if isinstance(phase, str) else phase
    attachments = _attachments(_map(raw.get("spec"))) if identified else ()
    interfaces: list[GuestInterface] = []
    if attachments:
        for iface in _list(status.get("interfaces")):
            if isinstance(iface, dict) and isinstance(iface.get("name"), str):
                interfaces.append(_interface(iface, iface["name"]))
    return Vmi(
        key=vkey,
        ref=ObjectRef(VMI_KIND, vkey[1], vkey[0], uid, created),
        resource_version=_version(meta),
        identified=identified,
        uid=uid,
        age=_age(meta, vkey[1] if identified else None),
        labels=_labels(meta),
        phase=phase if isinstance(phase, str) else None,
        deleting=bool(meta.get("deletionTimestamp")),
        node_name=node if isinstance(node, str) else None,
        node_name_set=node is not None,
        migration=decode_migration(status.get("migrationState"), uid, node),
        attachments=attachments,
        interfaces=tuple(interfaces),
    )


# -- virt-launcher pods ---------------------------------------------------------------------------------------------


def _vmi_owner(meta: Mapping) -> tuple[str | None, str | None]:
    """(name, uid) of the pod's VirtualMachineInstance ownerReference (virt-controller sets one, controller: true)."""
    for owner in _list(meta.get("ownerReferences"))[:16]:
        if isinstance(owner, dict) and owner.get("kind") == VMI_KIND:
            name, uid = _nonempty(owner.get("name")), _nonempty(owner.get("uid"))
            return (_shared(name) if name else None), (_shared(uid) if uid else None)
    return None, None


def _pod_network(entry: object) -> PodNetwork | None:
    """One `k8s.ovn.org/pod-networks` entry of role `primary` (None: another role, or not a mapping)."""
    if not isinstance(entry, dict) or entry.get("role") != "primary":
        return None
    values = entry.get("ip_addresses")
    if values is None and entry.get("ip_address") is not None:
        values = [entry.get("ip_address")]  # the deprecated single-address form
    if values is None:
        return PodNetwork()
    if not isinstance(values, list):
        return PodNetwork(refused=Problem(describe(values), reasons.MALFORMED_OBJECT, "ip_addresses is not a list"))
    addresses, problem = claim_ips(values)
    if problem is not None:
        message = problem.message.replace("status.ips", "ip_addresses").replace("the claim is", "it is")
        problem = Problem(problem.value, problem.reason, message)
    return PodNetwork(addresses, problem)


def _pod_networks(annotations: Mapping) -> tuple[Mapping[str, PodNetwork], Problem | None]:
    """The primary entries of `k8s.ovn.org/pod-networks` by NAD name, or the problem of the annotation."""
    raw = annotations.get(POD_NETWORKS_ANNOTATION)
    if raw is None:
        return _EMPTY, None
    decoded, ok = _json(annotations, POD_NETWORKS_ANNOTATION)
    if not ok or not isinstance(decoded, dict):
        message = f"annotation {POD_NETWORKS_ANNOTATION} is not a JSON object"
        return _EMPTY, Problem(describe(raw), reasons.MALFORMED_OBJECT, message)
    out: dict[str, PodNetwork] = {}
    for nad, entry in list(decoded.items())[:MAX_POD_NETWORKS]:
        network = _pod_network(entry)
        if network is not None and isinstance(nad, str):
            out[nad] = network
    return MappingProxyType(out), None


def _claim_ref(annotations: Mapping) -> str | None:
    """The IPAMClaim the pod's primary address comes from, as OVN-K reads it (go-controller/pkg/util/multi_network.go):
    the deprecated annotation, overridden by a non-empty `ipam-claim-reference` of the default-network selection."""
    ref = annotations.get(CLAIM_ANNOTATION)
    selections, ok = _json(annotations, DEFAULT_NETWORK_ANNOTATION)
    if ok and isinstance(selections, list) and len(selections) == 1 and isinstance(selections[0], dict):
        chosen = selections[0].get("ipam-claim-reference")
        if isinstance(chosen, str) and chosen:
            ref = chosen
    return describe(ref) if isinstance(ref, str) and ref else None


def decode_launcher_pod(obj: object, key: object = None) -> LauncherPod:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    namespace = meta.get("namespace")
    namespace = _shared(namespace) if isinstance(namespace, str) else namespace
    pkey = _key_pair(key) if key is not None else (_str(namespace), _str(meta.get("name")))
    pkey = (_shared(pkey[0]), pkey[1])
    annotations = _map(meta.get("annotations"))
    domain = annotations.get(DOMAIN_ANNOTATION)
    created_by = _map(meta.get("labels")).get(CREATED_BY_LABEL)
    node = _map(raw.get("spec")).get("nodeName")
    node = _shared(node) if isinstance(node, str) else node
    owner_name, owner_uid = _vmi_owner(meta)
    networks, problem = _pod_networks(annotations)
    return LauncherPod(
        key=pkey,
        resource_version=_version(meta),
        namespace=namespace if isinstance(namespace, str) else None,
        domain=_shared(domain) if isinstance(domain, str) else None,
        created_by=_shared(created_by) if isinstance(created_by, str) and created_by else None,
        owner_name=owner_name,
        owner_uid=owner_uid,
        node=node if isinstance(node, str) else None,
        finished=_map(raw.get("status")).get("phase") in ("Failed", "Succeeded"),
        target_ready=bool(annotations.get(TARGET_READY_ANNOTATION)),
        networks=networks,
        networks_problem=problem,
        claim_ref=_claim_ref(annotations),
    )


# -- the entry points -----------------------------------------------------------------------------------------------

DECODERS: dict[str, Callable[[object, object], View]] = {
    resources.CUDN.field: decode_network,
    resources.ROUTE_ADVERTISEMENTS.field: decode_route_advertisement,
    resources.IPAM_CLAIM.field: decode_claim,
    resources.VMI.field: decode_vmi,
    resources.LAUNCHER_POD.field: decode_launcher_pod,
    resources.NODE.field: decode_node,
    resources.NAMESPACE.field: decode_namespace,
}


def decode(resource: Resource, obj: object, key: object = None) -> View:
    """The view of one raw object of `resource`, stored under `key` (default: `resource.key(obj)`). Never raises."""
    if key is None:
        key = resource.key(obj) if isinstance(obj, dict) else ""
    return DECODERS[resource.field](obj, key)


def decode_state(buckets: Mapping[str, Mapping[object, object]]) -> ClusterState:
    """A ClusterState from raw objects already sorted by ClusterState field and key (tests that need their own
    keys); every object decoded as the store decodes it."""
    by_field = {r.field: r for r in resources.ALL}
    out: dict[str, dict] = {r.field: {} for r in resources.ALL}
    for fld, objects in buckets.items():
        res = by_field[fld]
        out[fld] = {k: decode(res, obj, k) for k, obj in objects.items()}
    return ClusterState(**out)


def state_from_objects(objects: Iterable[object]) -> tuple[ClusterState, list[object]]:
    """Sort objects into a state by apiVersion/kind and decode them; returns the state and the objects it did not
    take (`resources.resource_for`: unwatched kinds, pods that are no virt-launcher, anything but a mapping).

    The cyclic garbage collector waits meanwhile (views hold no cycles; a collection would walk every object)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _sorted_and_decoded(objects)
    finally:
        if paused:
            gc.enable()


def _sorted_and_decoded(objects: Iterable[object]) -> tuple[ClusterState, list[object]]:
    buckets: dict[str, dict] = {r.field: {} for r in resources.ALL}
    ignored: list[object] = []
    for obj in objects:
        try:
            res = resources.resource_for(obj) if isinstance(obj, dict) else None
        except (AttributeError, TypeError):
            res = None
        if res is None:
            ignored.append(obj)
            continue
        assert isinstance(obj, dict)  # resource_for answered only for a dict
        key = res.key(obj)
        view = decode(res, obj, key)
        buckets[res.field][stored_key(view, key)] = view
    return ClusterState(**buckets), ignored
