"""Address validation, and the stable reason codes of every refusal (re-exported from `bgpadv.core.reasons`, where
each is a documented constant: kebab-case, and never changed once published, as they become a metric label, a log
field and a Kubernetes Event reason).

Addresses are checked here as `(version, integer)` pairs: the decoder parsed them once (`bgpadv.core.addressing`,
`bgpadv.sources.decode`), and comparing integers is an order of magnitude cheaper than building an object per check,
as the planner validates every claim of the cluster on every plan. `SubnetRange` is a network's subnet as integers,
with the `Prefix` it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bgpadv.core import addressing
from bgpadv.core.addressing import parse_address
from bgpadv.core.bounded import describe
from bgpadv.core.prefix import Prefix
from bgpadv.core.reasons import (
    ALL_REASONS,
    CONTAINS_PEER_ADDRESS,
    COVERS_INFRASTRUCTURE,
    DEFAULT_GATEWAY_ADDRESS,
    DEFAULT_ROUTE,
    DUPLICATE_ADDRESS,
    DUPLICATE_NODE_ADDRESS,
    DUPLICATE_PREFIX,
    EXTENDED_NEXT_HOP_NOT_NEGOTIATED,
    FAMILY_NOT_CARRIED,
    HOST_SUBNET_CONFLICT,
    INFRASTRUCTURE_ADDRESS,
    INVALID_NETWORK_DEFINITION,
    INVALID_NEXT_HOP,
    INVALID_NODE_ADDRESS,
    LINK_LOCAL,
    LOOPBACK_OR_MULTICAST,
    MALFORMED_ADDRESS,
    MALFORMED_OBJECT,
    MALFORMED_SELECTOR,
    MAX_ROUTES_EXCEEDED,
    NAMESPACED_UDN_NOT_ADVERTISABLE,
    NETWORK_NOT_ADVERTISABLE,
    NETWORK_NOT_SELECTED,
    NETWORK_OR_BROADCAST_ADDRESS,
    NETWORK_OVERLAP,
    NO_NODE_ADDRESS,
    OUTSIDE_ALLOWED_PREFIXES,
    OUTSIDE_NETWORK_SUBNETS,
    OUTSIDE_SELECTED_NETWORKS,
    OVERLAPS_CLUSTER_NETWORK,
    OVERLAPS_NODE_NETWORK,
    OVERLAPS_OVN_INTERNAL,
    PERSISTENT_IPS_NOT_SUPPORTED,
    PREFIX_TOO_SHORT,
    SPECIAL_PREFIX,
    TOO_MANY_ADDRESSES,
    UNKNOWN_NETWORK,
    UNSPECIFIED_ADDRESS,
)

__all__ = [
    "ALL_REASONS",
    "CONTAINS_PEER_ADDRESS",
    "COVERS_INFRASTRUCTURE",
    "DEFAULT_GATEWAY_ADDRESS",
    "DEFAULT_ROUTE",
    "DUPLICATE_ADDRESS",
    "DUPLICATE_NODE_ADDRESS",
    "DUPLICATE_PREFIX",
    "EXTENDED_NEXT_HOP_NOT_NEGOTIATED",
    "FAMILY_NOT_CARRIED",
    "HOST_SUBNET_CONFLICT",
    "INFRASTRUCTURE_ADDRESS",
    "INVALID_NETWORK_DEFINITION",
    "INVALID_NEXT_HOP",
    "INVALID_NODE_ADDRESS",
    "LINK_LOCAL",
    "LOOPBACK_OR_MULTICAST",
    "MALFORMED_ADDRESS",
    "MALFORMED_OBJECT",
    "MALFORMED_SELECTOR",
    "MAX_ROUTES_EXCEEDED",
    "NAMESPACED_UDN_NOT_ADVERTISABLE",
    "NETWORK_NOT_ADVERTISABLE",
    "NETWORK_NOT_SELECTED",
    "NETWORK_OR_BROADCAST_ADDRESS",
    "NETWORK_OVERLAP",
    "NO_NODE_ADDRESS",
    "OUTSIDE_ALLOWED_PREFIXES",
    "OUTSIDE_NETWORK_SUBNETS",
    "OUTSIDE_SELECTED_NETWORKS",
    "OVERLAPS_CLUSTER_NETWORK",
    "OVERLAPS_NODE_NETWORK",
    "OVERLAPS_OVN_INTERNAL",
    "PERSISTENT_IPS_NOT_SUPPORTED",
    "PREFIX_TOO_SHORT",
    "SPECIAL_PREFIX",
    "TOO_MANY_ADDRESSES",
    "UNKNOWN_NETWORK",
    "UNSPECIFIED_ADDRESS",
    "Address",
    "SubnetRange",
    "address_checker",
    "address_class_reason",
    "containing",
    "describe",
    "explain",
    "host_address_reason",
    "network_or_broadcast",
    "parse_address",
    "parse_cidr",
]

_EXPLANATIONS = {
    OUTSIDE_NETWORK_SUBNETS: "lies in no subnet of",
    DEFAULT_GATEWAY_ADDRESS: "is the default gateway of",
    INFRASTRUCTURE_ADDRESS: "is an infrastructure (gateway/management) address of",
    NETWORK_OR_BROADCAST_ADDRESS: "is a network or broadcast address of",
    LINK_LOCAL: "is link-local, never announced on",
    LOOPBACK_OR_MULTICAST: "is not a unicast host address, never announced on",
    UNSPECIFIED_ADDRESS: "is the unspecified address, never announced on",
    OUTSIDE_ALLOWED_PREFIXES: "lies outside the prefixes bgpadv's configuration allows on",
}


def explain(reason: str, network: str) -> str:
    """A sentence for people about an address refusal on a network (the reason code stays the machine's key)."""
    return f"the address {_EXPLANATIONS.get(reason, 'is refused on')} CUDN {network}"


Address = tuple[int, int]
"""(version, integer value) of one IP address."""


def parse_cidr(value: object) -> Prefix | None:
    """Parse a subnet string (`"192.168.100.0/24"`) strictly; host bits are cleared. None when malformed."""
    parsed = addressing.parse_cidr(value)
    return None if parsed is None else parsed[0]


@dataclass(frozen=True, slots=True)
class SubnetRange:
    """One subnet as integers, for cheap containment checks, plus the prefix it came from."""

    network: Prefix
    version: int
    first: int
    last: int
    prefixlen: int

    @staticmethod
    def of(network: Prefix) -> SubnetRange:
        return SubnetRange(network, network.version, network.first, network.last, network.length)

    def contains(self, version: int, value: int) -> bool:
        return version == self.version and self.first <= value <= self.last


_V4_LINK_LOCAL = (0xA9FE0000, 0xA9FEFFFF)
_V4_LOOPBACK = (0x7F000000, 0x7FFFFFFF)
_V4_MULTICAST = (0xE0000000, 0xEFFFFFFF)
_V6_LINK_LOCAL = (0xFE80 << 112, (0xFEBF << 112) | ((1 << 112) - 1))
_V6_MULTICAST_FIRST = 0xFF << 120


def address_class_reason(version: int, value: int) -> str | None:
    """Refusal reason for addresses that are never a VM's unicast address, whatever the network; else None."""
    if value == 0:
        return UNSPECIFIED_ADDRESS
    if version == 4:
        if _V4_LINK_LOCAL[0] <= value <= _V4_LINK_LOCAL[1]:
            return LINK_LOCAL
        if _V4_LOOPBACK[0] <= value <= _V4_LOOPBACK[1] or _V4_MULTICAST[0] <= value <= _V4_MULTICAST[1]:
            return LOOPBACK_OR_MULTICAST
        return None
    if _V6_LINK_LOCAL[0] <= value <= _V6_LINK_LOCAL[1]:
        return LINK_LOCAL
    if value == 1 or value >= _V6_MULTICAST_FIRST:
        return LOOPBACK_OR_MULTICAST
    return None


def containing(subnets: Iterable[SubnetRange], version: int, value: int) -> SubnetRange | None:
    """The first subnet that contains the address, or None."""
    for s in subnets:
        if s.version == version and s.first <= value <= s.last:
            return s
    return None


def network_or_broadcast(subnet: SubnetRange, value: int) -> bool:
    """IPv4: network or broadcast address (subnets of /30 and wider); IPv6: the subnet-router anycast address."""
    if subnet.version == 4:
        return subnet.prefixlen <= 30 and value in (subnet.first, subnet.last)
    return subnet.prefixlen <= 126 and value == subnet.first


def host_address_reason(
    version: int,
    value: int,
    subnets: tuple[SubnetRange, ...],
    gateways: frozenset[Address],
    infrastructure: tuple[SubnetRange, ...],
    infrastructure_addresses: frozenset[Address],
) -> str | None:
    """Why a VM address must not be announced on a network, or None when it may be.

    Checks run from the most intrinsic to the most network-specific, and the first failing one gives the reason:
    address class (unspecified, link-local, loopback/multicast), inside one of the network's subnets, network or
    broadcast address of that subnet, default gateway, infrastructure range. `reservedSubnets` are not checked:
    imported VMs live there by design.
    """
    reason = address_class_reason(version, value)
    if reason is not None:
        return reason
    subnet = containing(subnets, version, value)
    if subnet is None:
        return OUTSIDE_NETWORK_SUBNETS
    if network_or_broadcast(subnet, value):
        return NETWORK_OR_BROADCAST_ADDRESS
    if (version, value) in gateways:
        return DEFAULT_GATEWAY_ADDRESS
    if (version, value) in infrastructure_addresses or containing(infrastructure, version, value) is not None:
        return INFRASTRUCTURE_ADDRESS
    return None


_SPECIAL_RANGES = {
    4: ((0, 0), _V4_LINK_LOCAL, _V4_LOOPBACK, _V4_MULTICAST),
    6: ((0, 1), _V6_LINK_LOCAL, (_V6_MULTICAST_FIRST, (1 << 128) - 1)),
}


def address_checker(
    subnets: tuple[SubnetRange, ...],
    gateways: frozenset[Address],
    infrastructure: tuple[SubnetRange, ...],
    infrastructure_addresses: frozenset[Address],
) -> Callable[[int, int], str | None]:
    """A function equivalent to `host_address_reason` for one network, with its ranges precompiled.

    The address-class check is skipped for subnets that overlap no special range (a value inside such a subnet
    cannot be link-local, loopback, multicast or unspecified), which is the common case.
    """
    by_version: dict[int, list[tuple[int, int, bool, bool]]] = {4: [], 6: []}
    for s in subnets:
        clean = not any(lo <= s.last and s.first <= hi for lo, hi in _SPECIAL_RANGES[s.version])
        edges = s.prefixlen <= 30 if s.version == 4 else s.prefixlen <= 126
        by_version[s.version].append((s.first, s.last, clean, edges))
    points: dict[int, dict[int, str]] = {4: {}, 6: {}}
    for version, value in infrastructure_addresses:
        points[version][value] = INFRASTRUCTURE_ADDRESS
    for version, value in gateways:
        points[version][value] = DEFAULT_GATEWAY_ADDRESS
    infra: dict[int, list[tuple[int, int]]] = {4: [], 6: []}
    for s in infrastructure:
        infra[s.version].append((s.first, s.last))

    def check(version: int, value: int) -> str | None:
        for first, last, clean, edges in by_version[version]:
            if first <= value <= last:
                if not clean:
                    reason = address_class_reason(version, value)
                    if reason is not None:
                        return reason
                if edges and (value == first or (version == 4 and value == last)):
                    return NETWORK_OR_BROADCAST_ADDRESS
                reason = points[version].get(value)
                if reason is not None:
                    return reason
                for lo, hi in infra[version]:
                    if lo <= value <= hi:
                        return INFRASTRUCTURE_ADDRESS
                return None
        return address_class_reason(version, value) or OUTSIDE_NETWORK_SUBNETS

    return check
