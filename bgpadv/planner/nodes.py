"""Node addresses: the next hop of every route that points at a node.

Sources of a node's address of one family, in order: its `status.addresses[]` entries of type `InternalIP` in that
family, then the address in the OVN-K annotation `k8s.ovn.org/node-primary-ifaddr` (`{"ipv4": "a.b.c.d/len",
"ipv6": ...}`, mask stripped) — the address OVN-K's own RouteAdvertisements controller uses. The first *valid* one
is the next hop.

A candidate is invalid, and skipped in favour of the next source of its family, when it can never be a next hop:

- not a unicast address (`special_address_reason`): unspecified (0.0.0.0, ::), "this network" 0.0.0.0/8, loopback
  (127.0.0.0/8, ::1), link-local (169.254.0.0/16, fe80::/10), multicast (224.0.0.0/4, ff00::/8), the limited
  broadcast 255.255.255.255, or IPv4-mapped IPv6 (::ffff:0:0/96);
- inside a subnet of an advertised network (a CUDN's subnet or Layer3 cidr, e.g. the VM's own address): traffic for
  the network would be sent into itself.

When a family had candidates but none is valid, a route that needs that family's next hop is refused
`invalid-node-address` (naming the first rejected candidate and why) instead of `no-node-address`.

Every address a node has (`InternalIP`, `node-primary-ifaddr`, and each entry of `k8s.ovn.org/host-cidrs`, valid or
not) is also a node address no VM may take: see `node_address_keys` and the rule in `vms`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bgpadv.core.model import ObjectRef
from bgpadv.core.prefix import Address
from bgpadv.planner.checks import SubnetRange, parse_address

PRIMARY_IFADDR_ANNOTATION = "k8s.ovn.org/node-primary-ifaddr"
HOST_CIDRS_ANNOTATION = "k8s.ovn.org/host-cidrs"

_V6 = 1 << 128

# (first, last, what) of every range that never holds a unicast host address, per family
SPECIAL_RANGES: dict[int, tuple[tuple[int, int, str], ...]] = {
    4: (
        (0x00000000, 0x00FFFFFF, "unspecified or 'this network' (0.0.0.0/8)"),
        (0x7F000000, 0x7FFFFFFF, "loopback (127.0.0.0/8)"),
        (0xA9FE0000, 0xA9FEFFFF, "link-local (169.254.0.0/16)"),
        (0xE0000000, 0xEFFFFFFF, "multicast (224.0.0.0/4)"),
        (0xFFFFFFFF, 0xFFFFFFFF, "the limited broadcast address (255.255.255.255)"),
    ),
    6: (
        (0, 0, "the unspecified address (::)"),
        (1, 1, "loopback (::1)"),
        (0xFFFF << 32, (0xFFFF << 32) | 0xFFFFFFFF, "IPv4-mapped IPv6 (::ffff:0:0/96)"),
        (0xFE80 << 112, (0xFEBF << 112) | ((1 << 112) - 1), "link-local (fe80::/10)"),
        (0xFF << 120, (1 << 128) - 1, "multicast (ff00::/8)"),
    ),
}


def special_range_reason(version: int, first: int, last: int) -> str | None:
    """What special range the addresses first..last overlap (a phrase for people), or None."""
    for lo, hi, what in SPECIAL_RANGES[version]:
        if lo <= last and first <= hi:
            return what
    return None


def special_address_reason(version: int, value: int) -> str | None:
    """Why an address is never a unicast host address (a phrase for people), or None when it may be one."""
    return special_range_reason(version, value, value)


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


def _host(value: object) -> tuple[int, int] | None:
    parsed = parse_address(value)
    return None if parsed is None else (parsed[0], parsed[1])


def _json_annotation(annotations: object, key: str) -> object:
    raw = annotations.get(key) if isinstance(annotations, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _candidates(node: Mapping) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(next-hop candidates in source order, every other node address from `host-cidrs`) as (version, value)."""
    found: list[tuple[int, int]] = []
    status = node.get("status")
    addresses = status.get("addresses") if isinstance(status, dict) else None
    if isinstance(addresses, list):
        for entry in addresses:
            if isinstance(entry, dict) and entry.get("type") == "InternalIP":
                parsed = _host(entry.get("address"))
                if parsed is not None:
                    found.append(parsed)
    meta = node.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    decoded = _json_annotation(annotations, PRIMARY_IFADDR_ANNOTATION)
    if isinstance(decoded, dict):
        for key, version in (("ipv4", 4), ("ipv6", 6)):
            parsed = _host(decoded.get(key))
            if parsed is not None and parsed[0] == version:
                found.append(parsed)
    others: list[tuple[int, int]] = []
    host_cidrs = _json_annotation(annotations, HOST_CIDRS_ANNOTATION)
    if isinstance(host_cidrs, list):
        for value in host_cidrs:
            parsed = _host(value)
            if parsed is not None:
                others.append(parsed)
    return found, others


def _fmt(version: int, value: int) -> str:
    return str(Address(version, value))


def node_addresses(
    node: Mapping, advertised: Iterable[SubnetRange] = ()
) -> tuple[dict[int, Address], dict[int, str], frozenset[int]]:
    """One Node object's next hop per family, why a family with only invalid candidates has none, and the keys of
    every address it has (see the module docstring)."""
    candidates, others = _candidates(node)
    advertised = tuple(advertised)
    chosen: dict[int, Address] = {}
    rejected: dict[int, str] = {}
    for version, value in candidates:
        if version in chosen:
            continue
        why = special_address_reason(version, value)
        if why is None:
            inside = next((s for s in advertised if s.contains(version, value)), None)
            if inside is not None:
                why = f"inside the advertised subnet {inside.network}"
        if why is None:
            chosen[version] = Address(version, value)
        else:
            rejected.setdefault(version, f"{_fmt(version, value)} is {why}, never a next hop")
    for version in chosen:
        rejected.pop(version, None)
    keys = frozenset(value if version == 4 else value | _V6 for version, value in (*candidates, *others))
    return chosen, rejected, keys


def index_nodes(nodes: Mapping[str, dict], advertised: Iterable[SubnetRange] = ()) -> dict[str, NodeInfo]:
    """Every node by name, with its addresses. Objects that are not mappings are skipped.

    `advertised`: the subnets of every advertised network (a node address inside one is never a next hop).
    """
    subnets = tuple(advertised)
    out: dict[str, NodeInfo] = {}
    for key, node in nodes.items():
        if not isinstance(node, dict):
            continue
        meta = node.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            name = key if isinstance(key, str) else ""
        if not name:
            continue
        uid = meta.get("uid") if isinstance(meta, dict) else ""
        created = meta.get("creationTimestamp") if isinstance(meta, dict) else ""
        ref = ObjectRef(
            "Node", name, "", uid if isinstance(uid, str) else "", created if isinstance(created, str) else ""
        )
        chosen, rejected, keys = node_addresses(node, subnets)
        out[name] = NodeInfo(name, ref, chosen, rejected, keys)
    return out


def node_address_keys(nodes: Mapping[str, NodeInfo]) -> frozenset[int]:
    """The address keys of every address of every node (no VM host route may take one)."""
    keys: set[int] = set()
    for info in nodes.values():
        keys |= info.keys
    return frozenset(keys)
