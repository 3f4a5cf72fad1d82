"""The last guard before the speaker: every route passes it, whatever the planner did.

Pure: no I/O, no clock, no logging. `check_peer(routes, context, peer)` takes the routes the plan wants for one peer
and returns (accepted routes in the given order, refusals); `Guard` does the same for every configured peer at once
with a cache, for the controller. Rules, in the order they are applied (the first that fails gives the reason code,
see `bgpadv.planner.checks`):

1. `default-route`: 0.0.0.0/0 or ::/0.
2. `prefix-too-short`: shorter than `safety.minPrefixLength` of its family (defaults /16 and /48).
3. `special-prefix`: overlaps a range the special-purpose table refuses for subnets (`SPECIAL_RANGES`, the
   `subnet` column of `bgpadv.core.addressing.SPECIAL_PURPOSE`): unspecified/"this network", loopback,
   link-local, multicast, limited broadcast, IPv4-mapped, NAT64, 6to4, Teredo, documentation, benchmarking ...
4. `outside-selected-networks`: the prefix lies inside no subnet of a selected, advertised network (the networks the
   planner's own index advertises: `Plan.context.networks`).
5. `covers-infrastructure`: a host-length prefix (/32, /128) that is a node address (`Plan.context.node_addresses`:
   every InternalIP, ExternalIP, `k8s.ovn.org/node-primary-ifaddr` and `k8s.ovn.org/host-cidrs` address of every
   node, valid or not, the same set as the planner's rule 8, `bgpadv.core.views.Node`), a BGP peer's
   address, a configured local or `nextHopSelf` address, or the route's own next hop; a shorter prefix that
   contains a BGP peer's, a local or a `nextHopSelf` address (the fabric's own network).
5b. node and infrastructure space (`Plan.context.space`, the very rule by which the planner refuses networks,
   `bgpadv.planner.space`): a prefix inside an advertised subnet that meets it (the whole network, as the planner
   refuses it) is refused with the planner's code (`contains-peer-address`,
   `overlaps-node-network`, `overlaps-cluster-network`, `overlaps-ovn-internal`). Never fires in normal operation
   (the planner refused the network first); if it does, only that network's routes go.
6. `invalid-next-hop`: an explicit next hop of another family than the prefix, in a range the special-purpose table
   refuses for next hops (`NEXT_HOP_RANGES`), a BGP peer's address, an address two nodes report when the route's
   node is not the one that reported it first (the oldest, `Plan.context.node_ages`: one node's annotation never
   takes another node's next hops, the planner's `duplicate-node-address` rule), or inside an
   advertised network's subnet (subnets that meet rule 5b's space excepted: a bad network must not take the next
   hops of every other network with it).
7. `family-not-carried` (per peer): the peer's `families` include the route's family but its next hop is `self`
   and ExaBGP cannot express it on the session (an IPv6 `self` over an IPv4 session, without `nextHopSelf` and
   without a global IPv6 address of the node found for the session, `PeerConfig.self_addresses`); or no
   configured peer carries the route's family at all. A peer whose `families` lack a family that another peer
   carries simply does not get those routes (one session per family is a common design, not a refusal).
   `extended-next-hop-not-negotiated` (per peer, the same rule): an IPv4 route toward an interface peer whose
   session has not negotiated the Extended Next Hop capability for IPv4 unicast (`GuardContext.no_extended_next_hop`,
   what the speaker learnt from ExaBGP): its next hop would be IPv6, which RFC 8950 allows only then.
7b. the peer's `exportFilter` (per peer, after rule 7): a prefix list (first matching rule, else its
   `defaultAction`). What it keeps from a peer is the operator's choice, not a refusal: no reason code, no Event.
8. `duplicate-prefix` (per peer): two routes for one prefix (after rule 7); the oldest origin keeps it — the source
   object's `creationTimestamp` (none sorts last), then namespace, name and kind, then the plan's order.
9. `max-routes-exceeded` (per peer): beyond `safety.maxRoutes`, prefixes the peer already holds (`advertised`) are
   kept first, then the oldest origins; the newest are refused. The last good set stays.

Refusals carry the route's source (an Event lands on it) and the prefix as value. A per-peer refusal names the first
peer that refused it; a route refused for several peers is reported once. `Guarded.observed` gives observers the
routes some peer gets.

Cost: rules 1-6 depend on the route and the context only, so `Guard` caches their verdict per Route object (the
incremental planner hands over the very same objects for what did not change) and drops the cache when the context
changes. A call then costs one dictionary lookup per route plus the changed routes' evaluation; rules 7-9 cost
nothing unless a peer lacks a family present in the plan, the plan holds two routes for one prefix, or a peer goes
over its limit.

The delta path (`Guard.check_delta`): after a whole `check`, the guard keeps what its cross-route rules need — the
accepted routes grouped by prefix (rule 8), the routes each peer gets counted (rule 9), every refusal per route
(rules 1-7) and the cross-route refusals (rules 8-9) — and takes the planner's `RouteDelta` instead of the whole
plan: it costs the delta's routes, and gives each peer's changes (prefix key -> the route it gets now, or None) and
the complete refusals, the same answer as `check` on the whole plan. A peer's `exportFilter` (rule 7b) is a pure
function of the prefix, applied to the delta's routes alone. It declines (None: the caller runs `check`) when it
cannot give that answer cheaply: no whole check on this context yet, a delta touching a prefix that two accepted
routes share (rule 8's tie-break reads the plan's order), or a peer at or over `safety.maxRoutes` (rule 9 ranks every
route).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from bgpadv.config import Config, ExportFilter, PeerConfig
from bgpadv.core.addressing import NEXT_HOP_RANGES, SPECIAL_RANGES, special_range_reason
from bgpadv.core.model import Outcome, Plan, PlanContext, Refusal, Route, RouteDelta
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.space import EMPTY_SPACE, InfrastructureSpace
from bgpadv.core.state import ClusterState
from bgpadv.planner import checks
from bgpadv.planner import plan as make_plan
from bgpadv.planner.space import session_addresses

__all__ = ["SPECIAL_RANGES", "Guard", "GuardContext", "Guarded", "GuardedDelta", "check_peer"]

PrefixKey = tuple[int, int, int]
"""`Prefix.key`, (IP version, network value, prefix length): the speaker's key of a prefix."""

_WIDTH = {4: 32, 6: 128}

# SPECIAL_RANGES (from the planner's node rules, one table for both): per IP version, (first, last, description) of
# every range no announced prefix may overlap (rule 3) and no next hop may lie in (rule 6).

_NEWEST = "\uffff"  # sorts after every timestamp: an origin without creationTimestamp is the youngest


def _hop_special(version: int, value: int) -> str | None:
    for lo, hi, what in NEXT_HOP_RANGES[version]:
        if lo <= value <= hi:
            return what
    return None


@dataclass(frozen=True, slots=True)
class PeerRules:
    """What one peer's session carries: its name and the route classes it accepts (see `_route_class`)."""

    name: str
    carried: int  # bit mask of route classes the session carries
    configured: int  # bit mask of route classes of the families the peer is configured for
    session_version: int
    export: ExportRules | None = None  # the peer's exportFilter (rule 7b)
    ipv4_withheld: bool = False  # an interface peer whose session has not negotiated Extended Next Hop (rule 7)

    @staticmethod
    def of(peer: PeerConfig, self_versions: Collection[int], no_extended_next_hop: bool = False) -> PeerRules:
        session = (peer.local_address or peer.address).version
        carried = configured = 0
        for version, family in ((4, "ipv4 unicast"), (6, "ipv6 unicast")):
            if family in peer.families:
                configured |= _route_class(version, explicit=True) | _route_class(version, explicit=False)
                carried |= _route_class(version, explicit=True)
                # ExaBGP resolves `self` within the session's family (or IPv4); nextHopSelf gives an explicit address
                if version in self_versions or version == 4 or version == session:
                    carried |= _route_class(version, explicit=False)
        export = ExportRules.of(peer.export_filter) if peer.export_filter is not None else None
        # over an interface peer's session every next hop is IPv6 (the node's link-local address): IPv4 goes only
        # where the session negotiated Extended Next Hop for it (RFC 8950)
        withheld = no_extended_next_hop and peer.interface is not None
        if withheld:
            carried &= ~(_route_class(4, explicit=True) | _route_class(4, explicit=False))
        return PeerRules(peer.name, carried, configured, session, export, withheld)


@dataclass(frozen=True, slots=True)
class ExportRules:
    """A peer's `exportFilter`, compiled: (version, first, last, shortest, longest, allow) per rule, in order, and
    what a prefix no rule matches gets."""

    rules: tuple[tuple[int, int, int, int, int, bool], ...]
    default_allow: bool

    @staticmethod
    def of(f: ExportFilter) -> ExportRules:
        rows = []
        for rule in f.rules:
            lo, hi = rule.lengths
            net = rule.prefix
            rows.append((net.version, net.first, net.last, lo, hi, rule.action == "allow"))
        return ExportRules(tuple(rows), f.default_action == "allow")

    def allows(self, prefix: Prefix) -> bool:
        """The first rule whose range holds `prefix` with a length in its bounds decides (a prefix list)."""
        version, first, length = prefix.version, prefix.value, prefix.length
        last = first + (1 << ((32 if version == 4 else 128) - length)) - 1
        for v, lo_addr, hi_addr, lo, hi, allow in self.rules:
            if v == version and lo_addr <= first and last <= hi_addr and lo <= length <= hi:
                return allow
        return self.default_allow


def _route_class(version: int, explicit: bool) -> int:
    """One bit per (family, explicit next hop or `self`)."""
    return 1 << ((0 if version == 4 else 2) + (0 if explicit else 1))


@dataclass(frozen=True, slots=True)
class GuardContext:
    """Everything the guard's rules read besides the routes. Equal contexts give equal verdicts.

    `subnets`: (version, first, last) of every subnet of every selected, advertised network. `infrastructure`:
    (version, value) → what the address is (node, peer, local or self address), for rule 5.
    """

    subnets: tuple[tuple[int, int, int], ...]
    infrastructure: Mapping[tuple[int, int], str]
    peers: tuple[PeerRules, ...]
    min_prefix_length: tuple[int, int] = (16, 48)  # (IPv4, IPv6)
    max_routes: int = 200_000
    sessions: tuple[tuple[int, int, str], ...] = ()  # (version, value, what) of peer, local and nextHopSelf addresses
    space: InfrastructureSpace = EMPTY_SPACE  # node and infrastructure space (rule 5b)
    shared: Mapping[tuple[int, int], str] = field(default_factory=dict)  # address two nodes report -> the oldest
    peer_addresses: tuple[tuple[int, int, str], ...] = ()  # (version, value, what) of the peers: never a next hop
    allowed_special: frozenset[str] = frozenset()  # networks.allowSpecialRanges: special ranges that are VM networks
    no_extended_next_hop: frozenset[str] = frozenset()  # interface peers whose session has not negotiated it

    @staticmethod
    def of(
        subnets: Iterable[Prefix],
        node_addresses: Mapping[str, Iterable[Address]],
        config: Config,
        space: InfrastructureSpace = EMPTY_SPACE,
        node_ages: Mapping[str, tuple[str, str]] | None = None,
        no_extended_next_hop: frozenset[str] = frozenset(),
    ) -> GuardContext:
        """A context from the advertised networks' subnets, every node's addresses (by node name), the config,
        the node and infrastructure space the planner refused networks by (`PlanContext.space`), the nodes' ages
        (`PlanContext.node_ages`; a node without one is the youngest) and the interface peers (by name) whose
        session has not negotiated Extended Next Hop for IPv4 (the speaker's `no_extended_next_hop`)."""
        infra: dict[tuple[int, int], str] = {}
        first: dict[tuple[int, int], str] = {}
        shared: dict[tuple[int, int], str] = {}
        ages = node_ages or {}
        for name in sorted(node_addresses, key=lambda n: ages.get(n, (_NEWEST, n))):
            for a in node_addresses[name]:
                key = (a.version, a.value)
                owner = first.setdefault(key, name)
                if owner != name:
                    shared[key] = owner
                infra.setdefault(key, f"an address of node {name}")
        rows = session_addresses(config)  # the planner's own list (`bgpadv.planner.space`): one wording everywhere
        sessions = [(r.version, r.value, r.what) for r in rows]
        for version, value, what in sessions:
            infra.setdefault((version, value), what)
        self_versions = {a.version for a in config.next_hop_self}
        nets = sorted({(n.version, n.first, n.last) for n in subnets})
        return GuardContext(
            subnets=tuple(nets),
            infrastructure=infra,
            peers=tuple(
                PeerRules.of(p, self_versions | {a.version for a in p.self_addresses}, p.name in no_extended_next_hop)
                for p in config.peers
            ),
            min_prefix_length=(config.safety.min_prefix_length_v4, config.safety.min_prefix_length_v6),
            max_routes=config.safety.max_routes,
            sessions=tuple(sessions),
            space=space,
            shared=shared,
            peer_addresses=tuple((r.version, r.value, r.what) for r in rows if r.role == "peer"),
            allowed_special=frozenset(config.networks.allow_special_ranges),
            no_extended_next_hop=no_extended_next_hop,
        )

    def subnet_networks(self) -> list[Prefix]:
        """The advertised subnets this context holds, as prefixes."""
        return [
            Prefix(version, first, _WIDTH[version] - (last - first).bit_length())
            for version, first, last in self.subnets
        ]

    @staticmethod
    def from_plan(plan: Plan, config: Config) -> GuardContext:
        """The context of a plan: the networks the planner advertised and every node's addresses, as the plan
        carries them (`Plan.context`), and the configuration."""
        return GuardContext.from_plan_context(plan.context, config)

    @staticmethod
    def from_plan_context(
        context: PlanContext, config: Config, no_extended_next_hop: frozenset[str] = frozenset()
    ) -> GuardContext:
        subnets = [s for n in context.networks.values() for s in n.subnets]
        nodes = context.node_addresses
        return GuardContext.of(subnets, nodes, config, context.space, context.node_ages, no_extended_next_hop)

    @staticmethod
    def from_state(state: ClusterState, config: Config) -> GuardContext:
        """The context of a cluster state (tests, tools): its cold plan's context."""
        return GuardContext.from_plan(make_plan(state, config), config)


# -- rules 1-6: one route against the context -----------------------------------------------------------------------

_Verdict = tuple[Route, int, Refusal | None, int]
"""(the route, its prefix as one integer for ordering, its refusal or None, its route class bit)."""


def _refuse(route: Route, reason: str, message: str) -> Refusal:
    return Refusal(route.source, str(route.prefix), reason, message, route.network)


class _Evaluator:
    """Rules 1-6 for one context, with its ranges precompiled and next-hop verdicts memoised (a few node addresses
    are the next hops of every route)."""

    def __init__(self, ctx: GuardContext) -> None:
        self.ctx = ctx
        self.minimum = {4: ctx.min_prefix_length[0], 6: ctx.min_prefix_length[1]}
        # per version: (first, last, overlaps no special range, the node space it meets or None) of every
        # advertised subnet
        self.subnets: dict[int, list[tuple[int, int, bool, tuple[str, str] | None]]] = {4: [], 6: []}
        # the advertised subnets a next hop may not lie in: those over node space are refused (rule 5b), so node
        # addresses inside one stay next hops and one bad network never withdraws another network's routes
        self.inner: dict[int, list[tuple[int, int]]] = {4: [], 6: []}
        for version, lo, hi in ctx.subnets:
            spaced = ctx.space.conflict(version, lo, hi)
            self.subnets[version].append((lo, hi, self._special(version, lo, hi) is None, spaced))
            if spaced is None:
                self.inner[version].append((lo, hi))
        self.peers = {(v, value): what for v, value, what in ctx.peer_addresses}
        self.hops: dict[tuple[int, int, int], str | None] = {}

    def _special(self, version: int, first: int, last: int) -> str | None:
        return special_range_reason(version, first, last, self.ctx.allowed_special)

    def __call__(self, route: Route) -> _Verdict:
        version, first, length = route.prefix.key
        shift = _WIDTH[version] - length
        nh = route.next_hop
        order = ((version - 4) << 140) | (first << 8) | length
        cls = _route_class(version, explicit=nh is not None)
        return (route, order, self._refusal(route, version, length, first, first | ((1 << shift) - 1)), cls)

    def _refusal(self, route: Route, version: int, length: int, first: int, last: int) -> Refusal | None:
        if length == 0:
            return _refuse(route, checks.DEFAULT_ROUTE, "a default route is never announced")
        minimum = self.minimum[version]
        if length < minimum:
            message = f"/{length} is shorter than safety.minPrefixLength.ipv{version} (/{minimum})"
            return _refuse(route, checks.PREFIX_TOO_SHORT, message)
        inside = next((s for s in self.subnets[version] if s[0] <= first and last <= s[1]), None)
        if inside is None or not inside[2]:  # inside a subnet that overlaps no special range: cannot overlap one
            what = self._special(version, first, last)
            if what is not None:
                return _refuse(route, checks.SPECIAL_PREFIX, f"the prefix overlaps {what}")
        if inside is None:
            message = "the prefix lies in no subnet of an advertised network"
            return _refuse(route, checks.OUTSIDE_SELECTED_NETWORKS, message)
        nh = route.next_hop
        refusal = self._infrastructure(route, version, length, first, last, inside[3])
        if refusal is not None:
            return refusal
        if nh is not None:
            key = (nh.version, nh.value, version)
            problem = self.hops.get(key, _UNSEEN)
            if problem is _UNSEEN:
                problem = self.hops[key] = self._next_hop_problem(key[0], key[1], version)
            if problem is not None:
                return _refuse(route, checks.INVALID_NEXT_HOP, f"next hop {nh} {problem}")
            owner = self.ctx.shared.get((nh.version, nh.value))
            if owner is not None and owner != route.node:
                message = f"next hop {nh} is reported by node {owner} first (older), not node {route.node or '?'}'s"
                return _refuse(route, checks.INVALID_NEXT_HOP, message)
        return None

    def _infrastructure(
        self, route: Route, version: int, length: int, first: int, last: int, spaced: tuple[str, str] | None
    ) -> Refusal | None:
        """Rules 5 and 5b. `spaced`: (reason, what) of the node space the advertised subnet the prefix lies in
        meets, or None."""
        nh = route.next_hop
        if length < _WIDTH[version]:
            for sv, value, what in self.ctx.sessions:
                if sv == version and first <= value <= last:
                    return _refuse(route, checks.COVERS_INFRASTRUCTURE, f"the prefix covers {what}")
        else:
            infra = self.ctx.infrastructure.get((version, first))
            if infra is not None:
                return _refuse(route, checks.COVERS_INFRASTRUCTURE, f"the host route covers {infra}")
            if nh is not None and nh.version == version and nh.value == first:
                return _refuse(route, checks.COVERS_INFRASTRUCTURE, "the host route covers its own next hop")
        if spaced is not None:
            return _refuse(route, spaced[0], f"the prefix lies in a network subnet that meets {spaced[1]}")
        return None

    def _next_hop_problem(self, nv: int, value: int, version: int) -> str | None:
        if nv != version:
            return f"is IPv{nv}, the prefix IPv{version}"
        what = _hop_special(nv, value)
        if what is not None:
            return f"is not a unicast address ({what})"
        peer = self.peers.get((nv, value))
        if peer is not None:
            return f"is {peer}"
        if any(lo <= value <= hi for lo, hi in self.inner[nv]):
            return "lies inside an advertised network"
        return None


_UNSEEN = "\0unseen"
_RULE_7 = (checks.FAMILY_NOT_CARRIED, checks.EXTENDED_NEXT_HOP_NOT_NEGOTIATED)


# -- rules 7-9: one peer's set ----------------------------------------------------------------------------------------


def _age(route: Route) -> tuple[str, str, str, str]:
    src = route.source
    return (src.created or _NEWEST, src.namespace, src.name, src.kind)


def _not_carried(route: Route, peer: PeerRules) -> Refusal:
    """Rule 7's refusal of `route` by `peer`."""
    if peer.ipv4_withheld and route.prefix.version == 4:
        message = (
            f"the session with {peer.name} has not negotiated Extended Next Hop for IPv4 unicast (RFC 8950): an IPv4 "
            "route with an IPv6 next hop is not sent"
        )
        return _refuse(route, checks.EXTENDED_NEXT_HOP_NOT_NEGOTIATED, message)
    return _refuse(route, checks.FAMILY_NOT_CARRIED, _not_carried_message(route, peer))


def _not_carried_message(route: Route, peer: PeerRules) -> str:
    if route.next_hop is None and peer.configured & _route_class(route.prefix.version, explicit=False):
        return (
            f"next-hop self for an IPv{route.prefix.version} prefix cannot be expressed on the IPv"
            f"{peer.session_version} session with {peer.name} (set nextHopSelf)"
        )
    return f"no peer carries ipv{route.prefix.version} unicast"


def _carried(
    routes: Sequence[Route],
    verdicts: Callable[[Route], _Verdict],
    peer: PeerRules,
    ctx: GuardContext,
    refusals: list[Refusal],
) -> list[Route]:
    """Rule 7: the routes the peer's session carries; `family-not-carried` for those no session carries."""
    kept: list[Route] = []
    elsewhere = 0  # classes of the families some other peer is configured for
    for other in ctx.peers:
        if other is not peer:
            elsewhere |= other.configured
    for r in routes:
        cls = verdicts(r)[3]
        if cls & peer.carried:
            kept.append(r)
        elif cls & peer.configured or not cls & elsewhere:
            refusals.append(_not_carried(r, peer))
    return kept


def _deduplicated(
    routes: Sequence[Route], verdicts: Callable[[Route], _Verdict], peer: PeerRules, refusals: list[Refusal]
) -> Sequence[Route]:
    """Rule 8: one route per prefix, the oldest origin's; `duplicate-prefix` for the others."""
    winners: dict[int, Route] = {}
    for r in routes:
        key = verdicts(r)[1]
        first = winners.get(key)
        if first is None or _age(r) < _age(first):
            winners[key] = r
    if len(winners) == len(routes):
        return routes
    kept = []
    for r in routes:
        winner = winners[verdicts(r)[1]]
        if winner is r:
            kept.append(r)
        else:
            message = f"{r.prefix} is announced to {peer.name} from the older {winner.source}"
            refusals.append(_refuse(r, checks.DUPLICATE_PREFIX, message))
    return kept


def _limited(
    routes: Sequence[Route],
    verdicts: Callable[[Route], _Verdict],
    peer: PeerRules,
    limit: int,
    held: Callable[[str], Collection[PrefixKey]] | None,
    refusals: list[Refusal],
) -> Sequence[Route]:
    """Rule 9: at most `limit` routes; the prefixes the peer holds stay first, then the oldest origins. Only the
    smaller group is sorted: in a steady state over the limit, the peer holds `limit` routes and only the few newest
    are ranked."""
    advertised = held(peer.name) if held is not None else ()
    holding: list[Route] = []
    others: list[Route] = []
    for r in routes:
        (holding if r.prefix.key in advertised else others).append(r)

    def rank(r: Route) -> tuple[object, ...]:
        return (_age(r), verdicts(r)[1])

    if len(holding) >= limit:
        holding.sort(key=rank)
        keep, drop = holding[:limit], holding[limit:] + others
    else:
        others.sort(key=rank)
        room = limit - len(holding)
        keep, drop = holding + others[:room], others[room:]
    message = f"peer {peer.name} already gets safety.maxRoutes ({limit}) routes"
    refusals.extend(_refuse(r, checks.MAX_ROUTES_EXCEEDED, message) for r in drop)
    kept_ids = {id(r) for r in keep}
    return [r for r in routes if id(r) in kept_ids]


def _per_peer(
    candidates: Sequence[Route],
    verdicts: Callable[[Route], _Verdict],
    peer: PeerRules,
    ctx: GuardContext,
    filter_family: bool,
    deduplicate: bool,
    held: Callable[[str], Collection[PrefixKey]] | None,
    refusals: list[Refusal],
    limits: list[str],
) -> Sequence[Route]:
    """Rules 7-9 for one peer; `limits` gets the peer's name when it is at or over `max_routes`."""
    routes: Sequence[Route] = candidates
    if filter_family:
        routes = _carried(routes, verdicts, peer, ctx, refusals)
    if peer.export is not None:  # rule 7b: the operator's own filter, not a refusal
        allows = peer.export.allows
        routes = [r for r in routes if allows(r.prefix)]
    if deduplicate:
        routes = _deduplicated(routes, verdicts, peer, refusals)
    if len(routes) >= ctx.max_routes:
        limits.append(peer.name)  # at the limit: one more route and rule 9 ranks them all (no delta path)
    if len(routes) > ctx.max_routes:
        routes = _limited(routes, verdicts, peer, ctx.max_routes, held, refusals)
    return routes


# -- the guard ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Guarded:
    """The guard's outcome: what each peer gets (in the plan's order) and every refusal (each once)."""

    per_peer: dict[str, tuple[Route, ...]] = field(default_factory=dict)
    rejected: tuple[Refusal, ...] = ()

    def observed(self, plan: Plan) -> Plan:
        """The plan as observers must see it: the routes some peer gets, and the planner's refusals followed by the
        guard's (so they are counted and get Events exactly like the planner's)."""
        groups = list({id(v): v for v in self.per_peer.values()}.values())
        if len(groups) == 1 and len(groups[0]) == len(plan.routes):
            routes = plan.routes
        else:
            kept = {id(r) for g in groups for r in g}
            routes = tuple(r for r in plan.routes if id(r) in kept)
        if not self.rejected:
            return plan if routes is plan.routes else Plan(routes, plan.rejected, plan.context)
        return Plan(routes, (*plan.rejected, *self.rejected), plan.context)

    def outcome(self, plan: Plan) -> Outcome:
        """What observers count: `observed(plan)`'s route count and refusals."""
        observed = self.observed(plan)
        return Outcome(len(observed.routes), observed.rejected)


@dataclass(frozen=True, slots=True)
class GuardedDelta:
    """The guard's outcome for a delta: per peer, prefix key -> the route the peer gets now (None: none), for every
    prefix the delta touched; and every refusal of the whole plan now (each once), as `Guarded.rejected`."""

    changes: dict[str, dict[PrefixKey, Route | None]]
    rejected: tuple[Refusal, ...]
    unreached: int  # how many of the plan's routes no peer gets (refused, or carried by no peer)

    def outcome(self, plan: Plan) -> Outcome:
        """As `Guarded.outcome`, without a pass over the plan: the guard counts the routes no peer gets."""
        if not self.rejected and not self.unreached:
            return Outcome(len(plan.routes), plan.rejected)
        return Outcome(len(plan.routes) - self.unreached, _joined(plan.rejected, self.rejected))


_last_joined: tuple[tuple[Refusal, ...], tuple[Refusal, ...], tuple[Refusal, ...]] = ((), (), ())
"""`_joined`'s last (planner's, guard's, both): one tuple, replaced whole, so a reader never mixes two answers."""


def _joined(planner: tuple[Refusal, ...], guard: tuple[Refusal, ...]) -> tuple[Refusal, ...]:
    """The planner's refusals, then the guard's: the same tuple as last time while both parts are the same tuples
    (both keep theirs until a refusal changes), so observers can tell an unchanged set by identity."""
    global _last_joined
    last = _last_joined
    if last[0] is planner and last[1] is guard:
        return last[2]
    both = (*planner, *guard)
    _last_joined = (planner, guard, both)
    return both


class _Base:
    """What `Guard.check_delta` continues from: the last whole check's cross-route state, kept up to date."""

    def __init__(self, ctx: GuardContext) -> None:
        self.ctx = ctx
        self.groups: dict[int, list[Route]] = {}  # prefix order -> accepted routes (rules 1-6) of that prefix
        self.counts: dict[str, int] = {}  # routes each peer gets
        self.refused: dict[Route, list[Refusal]] = {}  # the rules 1-7 refusals of a planned route (by value)
        self.refused_n: dict[Route, int] = {}  # how many planned routes are equal to it
        self.cross: list[Refusal] = []  # rules 8-9 refusals (their prefixes' groups hold two routes: untouched)
        self._rejected: tuple[Refusal, ...] | None = None  # rejected(), until `refused` or `cross` changes
        self.unreached: dict[int, Route] = {}  # id -> planned route no peer gets
        self.elsewhere: dict[str, int] = {}  # per peer: the route classes some other peer is configured for
        for peer in ctx.peers:
            other = 0
            for p in ctx.peers:
                if p is not peer:
                    other |= p.configured
            self.elsewhere[peer.name] = other

    def family_refusals(self, route: Route, cls: int) -> list[Refusal]:
        """Rule 7 for one accepted route, peer by peer (the first refusing peer first, as `check` names it)."""
        out = []
        for peer in self.ctx.peers:
            if not cls & peer.carried and (cls & peer.configured or not cls & self.elsewhere[peer.name]):
                out.append(_not_carried(route, peer))
        return out

    def note_refused(self, route: Route, refusals: list[Refusal]) -> None:
        self._rejected = None
        if route in self.refused_n:
            self.refused_n[route] += 1
        else:
            self.refused_n[route] = 1
            self.refused[route] = refusals

    def drop_refused(self, route: Route) -> None:
        n = self.refused_n.get(route)
        if n is None:
            return
        self._rejected = None
        if n > 1:
            self.refused_n[route] = n - 1
        else:
            del self.refused_n[route], self.refused[route]

    def rejected(self) -> tuple[Refusal, ...]:
        """Every refusal now, each once (kept between changes that refuse nothing new: a change costs the change)."""
        if self._rejected is None:
            out: list[Refusal] = []
            for refusals in self.refused.values():
                out.extend(refusals)
            out.extend(self.cross)
            self._rejected = _unique(out)
        return self._rejected


class Guard:
    """Applies the guard to every peer of a context, caching rules 1-6 per Route object (see the module).

    Not thread-safe; one instance follows one controller. `context(state)` caches the context by the identity of
    the CUDN, RouteAdvertisements and Node objects it was built from (the store replaces a changed object's dict).
    """

    def __init__(self, config: Config | None = None) -> None:
        self.config = config  # needed by `context()` only
        self.evaluated = 0  # routes whose rules 1-6 were (re)evaluated, for tests and benchmarks
        self._context: GuardContext | None = None
        self._seen: tuple[object, object, object, object] | None = None
        self._verdicts: dict[int, _Verdict] = {}
        self._verdict_context: GuardContext | None = None
        self._evaluate: _Evaluator | None = None
        self._base: _Base | None = None  # what the delta path continues from (`check_delta`)
        # interface peers whose session has not negotiated Extended Next Hop (the speaker's `no_extended_next_hop`):
        # part of the context, so a change is a new context (the whole check runs)
        self.no_extended_next_hop: frozenset[str] = frozenset()

    def context(self, plan: Plan) -> GuardContext:
        """The context of `plan` (`GuardContext.from_plan`), cached by the identity of the network, node-address and
        node-age mappings the plan carries (the planner hands over the same ones while no CUDN,
        RouteAdvertisements, Namespace or Node changed)."""
        pc = plan.context
        seen = (pc.networks, pc.node_addresses, pc.node_ages, self.no_extended_next_hop)
        previous = self._seen
        if self._context is None or previous is None or any(a is not b for a, b in zip(seen, previous, strict=True)):
            if self.config is None:
                raise ValueError("Guard.context() needs the configuration")
            self._context = GuardContext.from_plan_context(pc, self.config, self.no_extended_next_hop)
        self._seen = seen
        return self._context

    def check(
        self,
        routes: Sequence[Route],
        ctx: GuardContext,
        advertised: Callable[[str], Collection[PrefixKey]] | None = None,
    ) -> Guarded:
        """Guard `routes` (every peer's wish) for each peer of `ctx`. `advertised(peer)`: the prefixes the peer
        already holds, asked only when a peer goes over `max_routes`."""
        if ctx is not self._verdict_context and ctx != self._verdict_context:
            self._verdicts = {}
            self._evaluate = _Evaluator(ctx)
        self._verdict_context = ctx
        evaluate = self._evaluate
        assert evaluate is not None
        cache = self._verdicts
        get = cache.get
        evaluated = 0
        refusals: list[Refusal] = []
        accepted: list[Route] = []
        present = 0
        ordered = True
        last = -1
        append = accepted.append
        for r in routes:
            v = get(id(r))
            if v is None or v[0] is not r:
                v = cache[id(r)] = evaluate(r)
                evaluated += 1
            _, order, refusal, cls = v
            if refusal is not None:
                refusals.append(refusal)
                continue
            if order <= last:
                ordered = False  # two routes for one prefix, or an order the adjacency test cannot trust
            last = order
            present |= cls
            append(r)
        self.evaluated += evaluated
        if len(cache) > 2 * len(routes) + 1024:  # forget routes no longer planned
            self._verdicts = {id(r): cache[id(r)] for r in routes}
        verdict = self._verdicts.__getitem__

        def lookup(r: Route) -> _Verdict:
            return verdict(id(r))

        shared = tuple(accepted)
        per_peer: dict[str, tuple[Route, ...]] = {}
        cross: list[Refusal] = []
        limits: list[str] = []
        for peer in ctx.peers:
            filter_family = bool(present & ~peer.carried)
            if not filter_family and ordered and len(shared) < ctx.max_routes and peer.export is None:
                per_peer[peer.name] = shared
                continue
            out = _per_peer(shared, lookup, peer, ctx, filter_family, not ordered, advertised, cross, limits)
            per_peer[peer.name] = out if isinstance(out, tuple) else tuple(out)
        self._rebase(ctx, routes, shared, per_peer, present, ordered, cross, limits)
        refusals.extend(cross)
        return Guarded(per_peer, _unique(refusals))

    def _rebase(
        self,
        ctx: GuardContext,
        routes: Sequence[Route],
        shared: tuple[Route, ...],
        per_peer: dict[str, tuple[Route, ...]],
        present: int,
        ordered: bool,
        cross: list[Refusal],
        limits: list[str],
    ) -> None:
        """Keep what the delta path continues from (whole checks only: this costs the plan's size)."""
        self._base = None
        if limits:
            return  # rule 9 ranks every route: whole checks until the peers are under their limit again
        base = _Base(ctx)
        verdict = self._verdicts.__getitem__
        if len(shared) != len(routes):
            for r in routes:
                refusal = verdict(id(r))[2]
                if refusal is not None:
                    base.note_refused(r, [refusal])
                    base.unreached[id(r)] = r
        if ordered:
            base.groups = {verdict(id(r))[1]: [r] for r in shared}
        else:
            groups = base.groups
            for r in shared:
                groups.setdefault(verdict(id(r))[1], []).append(r)
        if any(present & ~peer.carried for peer in ctx.peers):
            everyone = 0
            for peer in ctx.peers:
                everyone |= peer.carried
            for r in shared:
                cls = verdict(id(r))[3]
                refusals = base.family_refusals(r, cls)
                if refusals:
                    base.note_refused(r, refusals)
                if not cls & everyone:
                    base.unreached[id(r)] = r
        exported = any(peer.export is not None for peer in ctx.peers)
        reached = {id(r) for out in per_peer.values() for r in out} if not ordered or exported else None
        if reached is not None:  # a route that lost its prefix to an older one for every peer
            for r in shared:
                if id(r) not in reached:
                    base.unreached[id(r)] = r
        base.counts = {name: len(out) for name, out in per_peer.items()}
        base.cross = [r for r in cross if r.reason not in _RULE_7]
        self._base = base

    def check_delta(self, delta: RouteDelta, ctx: GuardContext) -> GuardedDelta | None:
        """The guard on the plan that `delta` leads to from the last plan guarded (see the module): each peer's
        changes and every refusal now. None when the delta path cannot give `check`'s answer: call `check` with the
        whole plan then (it also gives this path a new start)."""
        base = self._base
        if base is None or (ctx is not base.ctx and ctx != base.ctx):
            return None
        touched = self._touched(base, delta)
        if touched is None:
            self._base = None  # a route the guard never saw: start again from the whole plan
            return None
        counts = self._counted(base, touched)
        if counts is None:
            return None
        base.counts = counts
        self._note_refusals(base, delta)
        changes = self._apply(base, touched)
        cache = self._verdicts
        if len(cache) > 4 * (len(base.groups) + len(base.refused)) + 1024:  # forget routes no longer planned
            live = [r for g in base.groups.values() for r in g]
            live.extend(base.refused)
            live.extend(base.unreached.values())
            self._verdicts = {id(r): cache[id(r)] for r in live if id(r) in cache}
        return GuardedDelta(changes, base.rejected(), len(base.unreached))

    def _verdict(self, r: Route) -> _Verdict:
        """Rules 1-6 for one route (cached per object)."""
        v = self._verdicts.get(id(r))
        if v is None or v[0] is not r:
            evaluate = self._evaluate
            assert evaluate is not None
            v = self._verdicts[id(r)] = evaluate(r)
            self.evaluated += 1
        return v

    def _touched(self, base: _Base, delta: RouteDelta) -> dict[int, list[Route]] | None:
        """Prefix order -> the accepted routes of that prefix after the delta, for every prefix it touches; None
        when it removes an accepted route the guard does not hold."""
        groups = base.groups
        touched: dict[int, list[Route]] = {}
        for r in (*delta.removed, *delta.added):
            v = self._verdict(r)
            if v[2] is None and v[1] not in touched:
                touched[v[1]] = list(groups.get(v[1], ()))
        for r in delta.removed:
            v = self._verdict(r)
            if v[2] is not None:
                continue
            group = touched[v[1]]
            at = next((i for i, x in enumerate(group) if x is r), None)
            if at is None:
                if r not in group:
                    return None
                at = group.index(r)
            del group[at]
        for r in delta.added:
            v = self._verdict(r)
            if v[2] is None:
                touched[v[1]].append(r)
        return touched

    def _counted(self, base: _Base, touched: dict[int, list[Route]]) -> dict[str, int] | None:
        """The routes each peer gets after the delta; None when rule 8 or 9 must look at the whole plan (two
        accepted routes for a touched prefix, before or after; a peer reaching `safety.maxRoutes`)."""
        counts = dict(base.counts)
        limit = base.ctx.max_routes
        for order, after in touched.items():
            before = base.groups.get(order, ())
            if len(before) > 1 or len(after) > 1:
                return None
            was = before[0] if before else None
            now = after[0] if after else None
            for peer in base.ctx.peers:
                d = (1 if now is not None and self._gets(peer, now) else 0) - (
                    1 if was is not None and self._gets(peer, was) else 0
                )
                if d:
                    n = counts[peer.name] = counts[peer.name] + d
                    if n >= limit:
                        return None
        return counts

    def _note_refusals(self, base: _Base, delta: RouteDelta) -> None:
        """Rules 1-7's refusals and the routes no peer gets, for the delta's routes."""
        peers = base.ctx.peers
        everyone = 0
        for peer in peers:
            everyone |= peer.carried
        filtered = any(peer.export is not None for peer in peers)
        for r in delta.removed:
            base.drop_refused(r)
            base.unreached.pop(id(r), None)
        for r in delta.added:
            _, _, refusal, cls = self._verdict(r)
            if refusal is not None:
                base.note_refused(r, [refusal])
                base.unreached[id(r)] = r
                continue
            if any(cls & ~p.carried for p in peers):
                refusals = base.family_refusals(r, cls)
                if refusals:
                    base.note_refused(r, refusals)
            if not cls & everyone or (filtered and not any(self._gets(p, r) for p in peers)):
                base.unreached[id(r)] = r

    def _gets(self, peer: PeerRules, route: Route) -> bool:
        """The peer gets this accepted route (rules 7 and 7b), its prefix's only route."""
        if not self._verdict(route)[3] & peer.carried:
            return False
        return peer.export is None or peer.export.allows(route.prefix)

    def _apply(self, base: _Base, touched: dict[int, list[Route]]) -> dict[str, dict[PrefixKey, Route | None]]:
        """Take the touched groups; per peer, prefix key -> the route it gets now (None: none)."""
        peers = base.ctx.peers
        groups = base.groups
        changes: dict[str, dict[PrefixKey, Route | None]] = {peer.name: {} for peer in peers}
        for order, after in touched.items():
            if after:
                groups[order] = after
                route = after[0]
                for peer in peers:
                    changes[peer.name][route.prefix.key] = route if self._gets(peer, route) else None
            else:
                old = groups.pop(order, None)
                if old:
                    for peer in peers:
                        changes[peer.name][old[0].prefix.key] = None
        return changes


def check_peer(
    routes: Sequence[Route],
    ctx: GuardContext,
    peer: str | None = None,
    advertised: Collection[PrefixKey] = (),
) -> tuple[tuple[Route, ...], tuple[Refusal, ...]]:
    """The guard for one peer of `ctx` (by name; None: the first): (accepted routes in order, refusals)."""
    rules = next((p for p in ctx.peers if peer is None or p.name == peer), None)
    if rules is None:
        raise KeyError(f"no peer {peer!r} in the guard's context")
    one = replace(ctx, peers=(rules,))
    result = Guard().check(routes, one, lambda _name: advertised)
    return result.per_peer[rules.name], result.rejected


def _unique(refusals: list[Refusal]) -> tuple[Refusal, ...]:
    """Each (source, value, reason) once, the first kept (refusals for several peers name the first)."""
    if len(refusals) < 2:
        return tuple(refusals)
    seen: set[tuple[object, ...]] = set()
    out: list[Refusal] = []
    for r in refusals:
        k = (r.source, r.value, r.reason)
        if k not in seen:
            seen.add(k)
            out.append(r)
    return tuple(out)
