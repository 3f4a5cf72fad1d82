"""What is announced: `networks` (which ClusterUserDefinedNetworks, subnets and host routes, the IPAM-less secondary
networks) and `ovnKubernetes` (the internal ranges no selected network may overlap)."""

from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
)

from bgpadv.config.schema.fields import Between, Cidr, Selector, _Section, _unique, problem
from bgpadv.core.bounded import brief
from bgpadv.core.prefix import Prefix

SpecialRangeGroup = Literal["documentation", "benchmarking"]
"""`networks.allowSpecialRanges` entries: `bgpadv.core.addressing.OPT_IN_GROUPS`."""


DEFAULT_MAX_ADDRESSES_PER_INTERFACE = 4
"""Guest-reported addresses taken per VMI interface of an IPAM-less secondary network, unless configured."""


@dataclass(frozen=True, slots=True)
class SecondaryNetworkConfig(_Section):
    """What bgpadv may announce for one IPAM-less secondary Layer2 CUDN (`networks.secondary[]`).

    `allowed_prefixes`: the only ranges a guest-reported address may lie in (with a CUDN subnet, both bound it; without
    one, nothing of the network is announced unless they are given). `max_addresses_per_interface`: the most
    addresses taken from one VMI interface (a guest reports anything; the rest is refused).
    """

    name: Annotated[StrictStr, Field(description="The name of a ClusterUserDefinedNetwork (role Secondary, no IPAM).")]
    allowed_prefixes: Annotated[
        tuple[Cidr, ...],
        Field(alias="allowedPrefixes", description="The only ranges a guest-reported address may lie in."),
    ] = ()
    max_addresses_per_interface: Annotated[
        Annotated[int, Between(1, 64)],
        Field(
            alias="maxAddressesPerInterface",
            description="The most addresses taken per VMI interface; the rest is refused (too-many-addresses).",
        ),
    ] = DEFAULT_MAX_ADDRESSES_PER_INTERFACE

    @field_validator("name", mode="after")
    @classmethod
    def _name(cls, name: str) -> str:
        if not name:
            raise problem(f"is required: the name of a ClusterUserDefinedNetwork, got {brief(name)}")
        return name


@dataclass(frozen=True, slots=True)
class NetworksConfig(_Section):
    """Which ClusterUserDefinedNetworks to advertise, and what (`networks`)."""

    selector: Annotated[
        Selector | None,
        Field(description="Label selector on the CUDNs' metadata.labels; omitted: every CUDN."),
    ] = None
    follow_route_advertisements: Annotated[
        StrictBool,
        Field(
            alias="followRouteAdvertisements",
            description="A CUDN must also be selected by an Accepted OVN-K RouteAdvertisements advertising PodNetwork.",
        ),
    ] = False
    allow_special_ranges: Annotated[
        tuple[SpecialRangeGroup, ...],
        AfterValidator(_unique(lambda g: g, lambda i: (i,), lambda g: f"{g!r} is listed twice")),
        Field(
            alias="allowSpecialRanges",
            description="Special-purpose ranges allowed as network space (CUDN subnets, announced prefixes): "
            "documentation (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20) and/or "
            "benchmarking (198.18.0.0/15, 2001:2::/48), for labs and examples that use them. Omitted: refused, "
            "as every other special-purpose range always is. Never next hops: node and nextHopSelf addresses in "
            "them stay refused.",
        ),
    ] = ()
    subnets: Annotated[StrictBool, Field(description="Announce the UDN subnets.")] = True
    host_routes: Annotated[
        StrictBool, Field(alias="hostRoutes", description="Announce one /32 or /128 per address of every running VM.")
    ] = True
    pod_network_addresses: Annotated[
        StrictBool,
        Field(
            alias="podNetworkAddresses",
            description="VMs without an IPAMClaim on a primary CUDN: their addresses from OVN-K's "
            "k8s.ovn.org/pod-networks annotation of the launcher pod (a claim, when present, wins).",
        ),
    ] = True
    secondary: Annotated[
        tuple[SecondaryNetworkConfig, ...],
        AfterValidator(_unique(lambda s: s.name, lambda i: (i, "name"), lambda name: f"{name} is listed twice")),
        Field(description="IPAM-less secondary Layer2 CUDNs: the guests configure their own addresses."),
    ] = ()


# OVN-Kubernetes' internal ranges, as its defaults set them: join `Gateway.V4JoinSubnet`/`V6JoinSubnet` and transit
# `ClusterManager.V4TransitSubnet`/`V6TransitSubnet` in go-controller/pkg/config/config.go; masquerade as deployed
# with UDNs (`--v4-masquerade-subnet=169.254.0.0/17`, `--v6-masquerade-subnet=fd69::/112` in OVN-K's daemonset and
# Helm values, and `defaultV4MasqueradeSubnet`/`defaultV6MasqueradeSubnet` of the cluster-network-operator; the
# /29 and /125 of config.go's own defaults leave no room for UDN masquerade addresses and lie inside these).
OVN_JOIN_SUBNETS = (Prefix.parse("100.64.0.0/16"), Prefix.parse("fd98::/64"))
OVN_TRANSIT_SUBNETS = (Prefix.parse("100.88.0.0/16"), Prefix.parse("fd97::/64"))
OVN_MASQUERADE_SUBNETS = (Prefix.parse("169.254.0.0/17"), Prefix.parse("fd69::/112"))


@dataclass(frozen=True, slots=True)
class OvnKubernetesConfig(_Section):
    """OVN-Kubernetes' internal ranges (`ovnKubernetes`): no selected network may overlap one
    (`overlaps-ovn-internal`). The defaults are OVN-K's; set them as the cluster sets `--v4-join-subnet`,
    `--v4-transit-subnet`, `--v4-masquerade-subnet` and their IPv6 twins (an empty list checks nothing)."""

    join_subnets: Annotated[
        tuple[Cidr, ...],
        Field(
            alias="joinSubnets",
            description="OVN-K's join subnets (--v4/v6-join-subnet).",
            json_schema_extra={"default": [str(p) for p in OVN_JOIN_SUBNETS]},
        ),
    ] = field(default_factory=lambda: OVN_JOIN_SUBNETS)
    transit_subnets: Annotated[
        tuple[Cidr, ...],
        Field(
            alias="transitSubnets",
            description="OVN-K's transit subnets (--v4/v6-transit-subnet).",
            json_schema_extra={"default": [str(p) for p in OVN_TRANSIT_SUBNETS]},
        ),
    ] = field(default_factory=lambda: OVN_TRANSIT_SUBNETS)
    masquerade_subnets: Annotated[
        tuple[Cidr, ...],
        Field(
            alias="masqueradeSubnets",
            description="OVN-K's masquerade subnets (--v4/v6-masquerade-subnet).",
            json_schema_extra={"default": [str(p) for p in OVN_MASQUERADE_SUBNETS]},
        ),
    ] = field(default_factory=lambda: OVN_MASQUERADE_SUBNETS)

    def internal(self) -> tuple[tuple[Prefix, str], ...]:
        """Every internal range with what it is, for refusals."""
        return (
            *((n, "OVN-K's join subnet") for n in self.join_subnets),
            *((n, "OVN-K's transit subnet") for n in self.transit_subnets),
            *((n, "OVN-K's masquerade subnet") for n in self.masquerade_subnets),
        )
