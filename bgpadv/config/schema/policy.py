"""Path attributes and export filters: `attributes` (on every route), `policies[]` (per network and per VM, with
the well-known communities they are meant to set) and `peers[].exportFilter` (prefix lists)."""

import dataclasses
from dataclasses import dataclass, field
from typing import Annotated, Literal, Self

from pydantic import (
    Field,
    StrictStr,
    model_validator,
)

from bgpadv.config import communities as well_known
from bgpadv.config.schema.fields import Between, Community, LargeCommunity, Loc, RoutePrefix, Selector, _Section, refuse
from bgpadv.core.model import Attributes
from bgpadv.core.selectors import LabelSelector

# --- policies and export filters ----------------------------------------------------------------------------------
# Kept in one block: `policies[]` (per network / per VM attributes) and `peers[].exportFilter` (prefix lists).

WellKnownName = Literal["GRACEFUL_SHUTDOWN", "BLACKHOLE", "NO_EXPORT", "NO_ADVERTISE", "NO_EXPORT_SUBCONFED"]
"""`intendedWellKnownCommunities` entries: `bgpadv.config.communities.NAMES`."""

_INTENDED_DESCRIPTION = (
    "The well-known communities among those set here that are meant to reach every route this block reaches: "
    "GRACEFUL_SHUTDOWN (65535:0, RFC 8326), BLACKHOLE (65535:666, RFC 7999), NO_EXPORT, NO_ADVERTISE, "
    "NO_EXPORT_SUBCONFED (65535:65281-65283, RFC 1997). Set by attributes or by a policy that matches every route, "
    "such a community is refused unless listed here; listed, check-config does not warn of it either."
)


IntendedWellKnown = Annotated[
    tuple[WellKnownName, ...], Field(alias="intendedWellKnownCommunities", description=_INTENDED_DESCRIPTION)
]


def _intended_problems(communities: tuple[str, ...], intended: tuple[str, ...]) -> list[tuple[Loc, str]]:
    """An `intendedWellKnownCommunities` entry must name a community the block sets."""
    set_here = {w.name for _, w in well_known.named(communities)}
    return [
        (("intendedWellKnownCommunities", i), f"lists {name}, which communities does not set")
        for i, name in enumerate(intended)
        if name not in set_here
    ]


RouteKindName = Literal["subnet", "host"]
ROUTE_KIND_NAMES: tuple[RouteKindName, ...] = ("subnet", "host")
FilterAction = Literal["allow", "deny"]


@dataclass(frozen=True, slots=True)
class PolicyMatch(_Section):
    """`policies[].match`: which routes a policy sets attributes on. Every key given must match (AND); an omitted key
    matches everything. `vmSelector` and `namespaceSelector` describe a VM, so they match host routes only."""

    kinds: Annotated[
        tuple[RouteKindName, ...],
        Field(description="Route kinds: subnet (a network's subnets) and/or host (a VM's /32 or /128); omitted: both."),
    ] = ()
    networks: Annotated[
        tuple[StrictStr, ...], Field(description="ClusterUserDefinedNetwork names; omitted: every network.")
    ] = ()
    network_selector: Annotated[
        Selector | None, Field(alias="networkSelector", description="A label selector on the CUDN's labels.")
    ] = None
    vm_selector: Annotated[
        Selector | None,
        Field(
            alias="vmSelector",
            description="A label selector on the VirtualMachineInstance's labels (a VM's spec.template.metadata."
            'labels, e.g. bgpadv.io/wave: "3"); host routes only.',
        ),
    ] = None
    namespace_selector: Annotated[
        Selector | None,
        Field(alias="namespaceSelector", description="A label selector on the VM's Namespace labels (host routes)."),
    ] = None

    @property
    def describes_vm(self) -> bool:
        return self.vm_selector is not None or self.namespace_selector is not None

    @property
    def reachable(self) -> tuple[str, ...]:
        """The route kinds this match can take."""
        kinds = self.kinds or ROUTE_KIND_NAMES
        return tuple(k for k in kinds if k == "host" or not self.describes_vm)

    @property
    def every_route_of_a_kind(self) -> bool:
        """Whether it takes every route of the kinds it can take (no network named, every selector empty)."""
        everything = LabelSelector()
        selectors_ = (self.network_selector, self.vm_selector, self.namespace_selector)
        return not self.networks and all(s is None or s == everything for s in selectors_)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        problems: list[tuple[Loc, str]] = []
        if len(set(self.kinds)) != len(self.kinds):
            problems.append((("kinds",), "lists a kind more than once"))
        if self.describes_vm and "subnet" in self.kinds:
            which = "vmSelector" if self.vm_selector is not None else "namespaceSelector"
            problems.append((("kinds",), f"a subnet belongs to no VM: {which} matches host routes only"))
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class PolicySet(_Section):
    """`policies[].set`: the attributes a matching policy sets (each omitted key leaves the attribute as it was)."""

    local_preference: Annotated[
        Annotated[int, Between(0, 4294967295)] | None,
        Field(alias="localPreference", description="LOCAL_PREF, sent to iBGP peers only."),
    ] = None
    med: Annotated[Annotated[int, Between(0, 4294967295)] | None, Field(description="MULTI_EXIT_DISC.")] = None
    communities: Annotated[tuple[Community, ...], Field(description="ASN:VALUE, added.")] = ()
    large_communities: Annotated[
        tuple[LargeCommunity, ...], Field(alias="largeCommunities", description="GLOBAL:LOCAL1:LOCAL2, added.")
    ] = ()
    as_path_prepend: Annotated[
        Annotated[int, Between(0, 10)] | None,
        Field(alias="asPathPrepend", description="Extra copies of the local AS (eBGP only)."),
    ] = None
    intended_well_known: IntendedWellKnown = ()

    @model_validator(mode="after")
    def _intended(self) -> Self:
        problems = _intended_problems(self.communities, self.intended_well_known)
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class Policy(_Section):
    """`policies[]`: path attributes for the routes a policy matches. Precedence: every matching policy applies, in
    the order of the list, over `attributes`: a later policy's localPreference, med or asPathPrepend replaces an
    earlier one's; communities and large communities add up (each once, in first-seen order)."""

    name: Annotated[StrictStr, Field(min_length=1, description="The policy's name (logs, render).")]
    actions: Annotated[PolicySet, Field(alias="set", description="The attributes it sets.")]
    match: Annotated[PolicyMatch, Field(description="The routes it applies to; omitted: every route.")] = field(
        default_factory=PolicyMatch
    )

    @model_validator(mode="after")
    def _every_route(self) -> Self:
        """A well-known community (`bgpadv.config.communities`) on every route of some kind needs saying so."""
        if not self.match.every_route_of_a_kind:
            return self
        routes = f"every {' and '.join(self.match.reachable)} route"
        where = f"policy {self.name!r}, whose match takes {routes},"
        problems: list[tuple[Loc, str]] = [
            (("set", "communities", i), well_known.every_route_problem(w, where, routes))
            for i, w in well_known.unintended(self.actions.communities, self.actions.intended_well_known)
        ]
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class PrefixRule(_Section):
    """One entry of a prefix list (`peers[].exportFilter.rules[]`), as FRR's `ip prefix-list`: without `ge`/`le` the
    prefix itself only; with them, the prefixes inside `prefix` whose length is within [ge (default: prefix's
    length), le (default: 32 or 128)]."""

    prefix: Annotated[RoutePrefix, Field(description="The range (a CIDR with no host bits).")]
    action: Annotated[FilterAction, Field(description="allow or deny what matches.")] = "allow"
    ge: Annotated[Annotated[int, Between(0, 128)] | None, Field(description="The shortest length matched.")] = None
    le: Annotated[Annotated[int, Between(0, 128)] | None, Field(description="The longest length matched.")] = None

    @property
    def lengths(self) -> tuple[int, int]:
        """(shortest, longest) prefix length matched."""
        if self.ge is None and self.le is None:
            return self.prefix.length, self.prefix.length
        lo = self.ge if self.ge is not None else self.prefix.length
        return lo, self.le if self.le is not None else self.prefix.bits

    @model_validator(mode="after")
    def _rules(self) -> Self:
        width, length = self.prefix.bits, self.prefix.length
        problems: list[tuple[Loc, str]] = []
        for key, value in (("ge", self.ge), ("le", self.le)):
            if value is not None and not length <= value <= width:
                problems.append(((key,), f"must be between the prefix length {length} and {width}, got {value}"))
        if not problems and self.ge is not None and self.le is not None and self.ge > self.le:
            problems.append((("le",), f"must be at least ge ({self.ge}), got {self.le}"))
        if problems:
            refuse(self, problems)
        return self


@dataclass(frozen=True, slots=True)
class ExportFilter(_Section):
    """`peers[].exportFilter`: which routes the peer gets, as a prefix list: the first rule that matches decides;
    when none does, `defaultAction` (deny, as FRR's implicit deny at the end of a prefix list)."""

    rules: Annotated[tuple[PrefixRule, ...], Field(min_length=1, description="Tried in order; the first match wins.")]
    default_action: Annotated[
        FilterAction, Field(alias="defaultAction", description="What happens to a route no rule matches.")
    ] = "deny"


_ATTRIBUTES = Attributes()


@dataclass(frozen=True, slots=True)
class PathAttributes(_Section):
    """`attributes`: path attributes added to every route (held as `bgpadv.core.model.Attributes`)."""

    local_preference: Annotated[Annotated[int, Between(0, 4294967295)] | None, Field(alias="localPreference")] = (
        _ATTRIBUTES.local_preference
    )
    med: Annotated[Annotated[int, Between(0, 4294967295)] | None, Field(description="MULTI_EXIT_DISC.")] = (
        _ATTRIBUTES.med
    )
    communities: Annotated[tuple[Community, ...], Field(description="ASN:VALUE")] = _ATTRIBUTES.communities
    large_communities: Annotated[
        tuple[LargeCommunity, ...], Field(alias="largeCommunities", description="GLOBAL:LOCAL1:LOCAL2")
    ] = _ATTRIBUTES.large_communities
    as_path_prepend: Annotated[
        Annotated[int, Between(0, 10)],
        Field(alias="asPathPrepend", description="How many times the local AS is prepended."),
    ] = _ATTRIBUTES.as_path_prepend
    intended_well_known: IntendedWellKnown = ()

    @model_validator(mode="after")
    def _well_known(self) -> Self:
        """Every route of every peer carries these: a well-known community here needs saying so."""
        problems = _intended_problems(self.communities, self.intended_well_known)
        problems += [
            (("communities", i), well_known.every_route_problem(w, "attributes"))
            for i, w in well_known.unintended(self.communities, self.intended_well_known)
        ]
        if problems:
            refuse(self, problems)
        return self

    def held(self) -> Attributes:
        return Attributes(
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "intended_well_known"}
        )
