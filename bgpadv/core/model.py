"""The values that flow from the planner to the speaker: routes, refusals and the plan.

Every prefix and address here is a `bgpadv.core.prefix` value (`Prefix`, `Address`). Strings from the cluster never
travel past the planner: the speaker renders its command lines from these values only, so a hostile string cannot
reach ExaBGP.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.space import EMPTY_SPACE, InfrastructureSpace

COMMUNITY = re.compile(r"([0-9]{1,5}):([0-9]{1,5})")  # use fullmatch
LARGE_COMMUNITY = re.compile(r"([0-9]{1,10}):([0-9]{1,10}):([0-9]{1,10})")  # use fullmatch
_COMMUNITY_LIMITS = {False: (COMMUNITY, 65535), True: (LARGE_COMMUNITY, 4294967295)}


def normalize_community(value: object, large: bool = False) -> str | None:
    """A BGP community `asn:value` (large: `global:local1:local2`) in its canonical form (no leading zeros), or None
    when it is not one (not a string, ASCII digits only, each part at most 65535, large: 4294967295)."""
    pattern, limit = _COMMUNITY_LIMITS[large]
    m = pattern.fullmatch(value) if isinstance(value, str) else None
    if m is None or any(int(g) > limit for g in m.groups()):
        return None
    return ":".join(str(int(g)) for g in m.groups())


class RouteKind(StrEnum):
    """What a route stands for."""

    SUBNET = "subnet"  # a UDN subnet (Layer2) or one node's host subnet (Layer3)
    HOST = "host"  # one VM address, /32 or /128


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The Kubernetes object a route or a refusal comes from (for logs, `render` and Events)."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    created: str = field(default="", compare=False)
    """The object's `metadata.creationTimestamp` as written ("" when unknown): the age that settles which of two
    origins of one prefix keeps it (`bgpadv.safety.guard`). Not part of equality: it identifies nothing."""

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(frozen=True, slots=True)
class Attributes:
    """Path attributes a route carries. Defaults give a plain IGP-origin route."""

    local_preference: int | None = None
    med: int | None = None
    communities: tuple[str, ...] = ()  # canonical "65000:100" strings, validated by config
    large_communities: tuple[str, ...] = ()  # canonical "65000:1:2"
    as_path_prepend: int = 0
    """Extra copies of the local AS on an eBGP session: the AS path carries it `1 + as_path_prepend` times (FRR's
    `path` shows it three times for 2). Nothing on an iBGP session (our own AS would make the peer drop the route)."""

    def on_session(self, ibgp: bool) -> Attributes:
        """What goes on the wire to one kind of peer: iBGP without prepend, eBGP without local preference
        (RFC 4271 5.1.5: LOCAL_PREF is not sent to external peers; ExaBGP drops it there too)."""
        if ibgp:
            return self if not self.as_path_prepend else replace(self, as_path_prepend=0)
        return self if self.local_preference is None else replace(self, local_preference=None)

    def as_path(self, local_asn: int, ibgp: bool) -> tuple[int, ...]:
        """The AS_PATH the peer receives from us."""
        return () if ibgp else (local_asn,) * (1 + self.as_path_prepend)


DEFAULT_ATTRIBUTES = Attributes()


@dataclass(frozen=True, slots=True)
class Route:
    """One desired advertisement.

    `next_hop` None means "the speaker's own address" (ExaBGP `next-hop self`).
    `node` is the node the route points at (host routes and Layer3 host subnets); None for network-wide routes.
    Equality covers what goes on the wire (prefix, next hop, attributes) plus provenance; the speaker diffs on
    `wire_key()` only, so a change of provenance alone never causes an UPDATE.
    """

    prefix: Prefix
    next_hop: Address | None
    network: str  # CUDN name
    kind: RouteKind
    source: ObjectRef
    node: str | None = None
    attributes: Attributes = DEFAULT_ATTRIBUTES

    @property
    def family(self) -> int:
        """4 or 6."""
        return self.prefix.version


@dataclass(frozen=True, slots=True)
class RouteDelta:
    """What changed from one plan to the next, as the incremental planner knows it: the routes no longer planned and
    the routes newly planned. A route whose next hop, attributes or provenance changed is in both (the old object
    removed, the new one added). Applied to the previous plan's routes, it gives the new plan's routes as a multiset
    (the order is the plan's business)."""

    removed: tuple[Route, ...] = ()
    added: tuple[Route, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.removed or self.added)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A value the planner will not announce, with a stable machine-readable reason code.

    `reason` is one of the codes in `bgpadv.planner.checks` (kebab-case, e.g. "outside-network-subnets"); it becomes
    a metric label, a log field and a Kubernetes Event reason, so it never changes once published.
    """

    source: ObjectRef
    value: str  # the offending value as the cluster wrote it (for people; never rendered into a command)
    reason: str
    message: str = ""
    network: str = ""


def route_order(route: Route) -> tuple[int, int, int]:
    """(family, address, length): the prefix's precomputed `key` (a plan sorts 200,000 routes at 100,000 dual-stack
    VMs)."""
    return route.prefix.key


@dataclass(frozen=True, slots=True)
class PlannedNetwork:
    """One advertised network as the plan's consumers need it: its subnets (a Layer2 subnet, a Layer3 cidr, or
    the allowed prefixes of an IPAM-less secondary network) and OVN-K's network ID (`k8s.ovn.org/network-id`)."""

    name: str
    subnets: tuple[Prefix, ...] = ()
    network_id: int | None = None


@dataclass(frozen=True, slots=True)
class Handover:
    """A host route that moved to another node since the planner's previous plan (a live migration, mostly): the
    VM it belongs to (namespace, VMI name), where it points now, and when the VM's migration target became ready
    (`migrationState.targetNodeDomainReadyTimestamp`, wall seconds) when it says so."""

    prefix: Prefix
    vmi: tuple[str, str]
    node: str
    target_ready_at: float | None = None
    from_node: str | None = None  # where the route pointed in the previous plan (None: placed on no node)


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What the planner derived on the way that the plan's consumers need, so none of them derives it again.

    `networks`: the advertised networks by name (the guard's rule 4, the importer's selection). `next_hops`: the
    node index, each node's next hop per family. `node_addresses`: every address of every node
    (`bgpadv.core.views.Node.addresses`: no host route may cover one, the guard's rule 5). `handovers`: see
    `Handover` (the incremental planner's; a cold plan has none). `space`: node and infrastructure space
    (`bgpadv.core.space`), the rule by which the planner refused networks and the guard refuses routes. `node_ages`:
    each node's age, (creationTimestamp, name), by which the oldest of two nodes reporting one address keeps it (the
    guard's rule 6). The planner hands over the same `networks`, `next_hops`, `node_addresses` and `node_ages`
    objects as long as no CUDN, RouteAdvertisements, Namespace or Node changed, so consumers may cache by identity.
    """

    networks: Mapping[str, PlannedNetwork] = field(default_factory=dict)
    next_hops: Mapping[str, Mapping[int, Address]] = field(default_factory=dict)
    node_addresses: Mapping[str, tuple[Address, ...]] = field(default_factory=dict)
    handovers: tuple[Handover, ...] = ()
    space: InfrastructureSpace = EMPTY_SPACE
    node_ages: Mapping[str, tuple[str, str]] = field(default_factory=dict)


EMPTY_CONTEXT = PlanContext()


@dataclass(frozen=True, slots=True)
class Plan:
    """What the fabric must see: routes sorted by (family, prefix), and what was refused; `context` is what the
    planner derived for the plan's consumers (not part of equality: two plans are equal when they announce and refuse
    the same)."""

    routes: Sequence[Route] = ()  # a tuple, or the incremental planner's RouteSnapshot (equal to the tuple)
    rejected: tuple[Refusal, ...] = ()
    context: PlanContext = field(default=EMPTY_CONTEXT, compare=False)

    @staticmethod
    def build(routes: Iterable[Route], rejected: Iterable[Refusal], context: PlanContext = EMPTY_CONTEXT) -> Plan:
        return Plan(
            routes=tuple(sorted(routes, key=route_order)),
            rejected=tuple(sorted(rejected, key=lambda x: (str(x.source), x.value, x.reason))),
            context=context,
        )

    def for_node(self, node: str) -> Plan:
        """One node's view (per-node mode): the routes that point at that node (its Layer3 host subnets and the
        host routes of the VMs placed on it) and every network-wide subnet route (Layer2 subnets: each node announces
        them, so the ToR has one path per node). A host route placed on no node is nobody's. Refusals and the context
        are kept whole.
        """
        return Plan(
            routes=tuple(r for r in self.routes if r.node == node or (r.node is None and r.kind is RouteKind.SUBNET)),
            rejected=self.rejected,
            context=self.context,
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """A plan as observers count it, after the guard: how many of its routes some peer gets, and every refusal (the
    planner's, then the guard's). Cheap to make on the delta path: no pass over the plan's routes."""

    announced: int = 0
    rejected: tuple[Refusal, ...] = ()

    @staticmethod
    def of(plan: Plan) -> Outcome:
        """A plan every route of which some peer gets."""
        return Outcome(len(plan.routes), plan.rejected)


@dataclass(frozen=True, slots=True)
class Cause:
    """When the cluster change that led to a plan was seen, for convergence metrics (monotonic seconds)."""

    received_at: float  # first watch event of the coalesced batch reached bgpadv
    planned_at: float  # the planner returned
    kinds: tuple[str, ...] = field(default_factory=tuple)  # resource kinds in the batch, for logs
