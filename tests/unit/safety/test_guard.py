"""The last guard before the speaker (bgpadv.safety.guard): one table row per rule, with the exact reason code.

Scope: `check_peer` on a realistic context built from a cluster (`GuardContext.from_state`): two selected Layer2
CUDNs (one of them, wrongly, covering a node's and a peer's address), a Layer3 CUDN, three nodes, IPv4 and IPv6
peers (sessions carrying both families or one). Then the per-peer set rules (duplicate prefix by age, max-routes
keeping the last good set), the `Guard` cache (a changed context drops it, unchanged routes are not evaluated
again) and `Guarded.observed`. No planner involved: the routes are what any planner might hand over.
"""

from __future__ import annotations

import pytest

from bgpadv.config import Config
from bgpadv.core.model import ObjectRef, Plan, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.planner import checks, plan
from bgpadv.safety.guard import Guard, GuardContext, check_peer
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

ADV = k8s.ADVERTISED
W1, W1_6 = Address.parse("10.0.0.11"), Address.parse("fd00::11")
PEERS = [
    {"address": "10.0.0.1", "asn": 64512},  # IPv4 session, both families
    {"address": "10.0.0.2", "asn": 64512, "families": ["ipv4 unicast"]},
    {"address": "fd00::1", "asn": 64512, "families": ["ipv6 unicast"]},
    {"address": "fd00::2", "asn": 64512},  # IPv6 session, both families
    {"address": "172.16.0.1", "asn": 64512},  # a ToR inside vmnet-b (a wrong network, not a wrong peer)
]


def config() -> Config:
    """Five peers of both families, one inside vmnet-b; parsed afresh for each caller."""
    return k8s.config(peers=PEERS)


OBJECTS = [
    k8s.node("worker-1", "10.0.0.11", "fd00::11"),
    k8s.node("worker-2", "10.0.0.12"),
    k8s.node("worker-3", "172.16.0.13"),  # its address lies inside vmnet-b
    k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=ADV),
    k8s.cudn_layer2("vmnet-b", ["172.16.0.0/16"], labels=ADV),
    k8s.cudn_layer3("l3", [("10.132.0.0/16", 24)], labels=ADV),
    k8s.cudn_layer2("not-selected", ["192.168.200.0/24"]),
]


@pytest.fixture
def cluster_plan() -> Plan:
    """The planner's plan of OBJECTS."""
    return plan(k8s.state(OBJECTS), config())


@pytest.fixture
def ctx(cluster_plan: Plan) -> GuardContext:
    """The guard's own view, as if the planner had let vmnet-b through: the planner refuses a network that covers a
    BGP peer (covers-infrastructure), and the guard must hold the line whatever the planner did."""
    return GuardContext.of(
        [*GuardContext.from_state(k8s.state(OBJECTS), config()).subnet_networks(), Prefix.parse("172.16.0.0/16")],
        cluster_plan.context.node_addresses,
        config(),
    )


CLAIM = ObjectRef("IPAMClaim", "vm-a.default", NS, "uid-a", "2025-03-01T09:00:00Z")


def route(prefix: str, next_hop: Address | str | None = W1, source: ObjectRef = CLAIM) -> Route:
    hop = Address.parse(next_hop) if isinstance(next_hop, str) else next_hop
    prefix_net = Prefix.parse(prefix, strict=False)
    full = prefix_net.is_host
    kind = RouteKind.HOST if full else RouteKind.SUBNET
    return Route(prefix_net, hop, "vmnet-a", kind, source, "worker-1" if hop is not None else None)


ONE_ROUTE = [
    # accepted
    pytest.param(route("192.168.100.10/32"), "10.0.0.1", None, id="host-route-inside-a-selected-network-accepted"),
    pytest.param(route("fd10:100::10/128", W1_6), "fd00::1", None, id="ipv6-host-route-accepted"),
    pytest.param(route("192.168.100.0/24", None), "10.0.0.1", None, id="layer2-subnet-next-hop-self-accepted"),
    pytest.param(route("10.132.1.0/24"), "10.0.0.1", None, id="layer3-host-subnet-accepted"),
    pytest.param(route("fd10:100::/64", None), "fd00::1", None, id="ipv6-self-on-ipv6-session-accepted"),
    pytest.param(route("192.168.100.0/24", None), "fd00::2", None, id="ipv4-self-on-an-ipv6-session-accepted"),
    # 1. default route
    pytest.param(route("0.0.0.0/0", None), "10.0.0.1", checks.DEFAULT_ROUTE, id="default-route-ipv4"),
    pytest.param(route("::/0", None), "fd00::1", checks.DEFAULT_ROUTE, id="default-route-ipv6"),
    # 2. minimum prefix length (defaults /16 and /48)
    pytest.param(route("10.0.0.0/8", None), "10.0.0.1", checks.PREFIX_TOO_SHORT, id="prefix-too-short-ipv4-slash8"),
    pytest.param(route("172.16.0.0/15", None), "10.0.0.1", checks.PREFIX_TOO_SHORT, id="prefix-too-short-ipv4-15"),
    pytest.param(route("fd10::/32", None), "fd00::1", checks.PREFIX_TOO_SHORT, id="prefix-too-short-ipv6-slash32"),
    # 3. special ranges, overlapping ones included
    pytest.param(route("127.0.0.1/32"), "10.0.0.1", checks.SPECIAL_PREFIX, id="special-loopback-ipv4"),
    pytest.param(route("169.254.1.0/24", None), "10.0.0.1", checks.SPECIAL_PREFIX, id="special-link-local-ipv4"),
    pytest.param(route("224.0.0.0/24", None), "10.0.0.1", checks.SPECIAL_PREFIX, id="special-multicast-ipv4"),
    pytest.param(route("239.255.0.0/16", None), "10.0.0.1", checks.SPECIAL_PREFIX, id="special-multicast-ipv4-top"),
    pytest.param(route("0.0.0.0/32"), "10.0.0.1", checks.SPECIAL_PREFIX, id="special-unspecified-ipv4"),
    pytest.param(route("255.255.255.255/32"), "10.0.0.1", checks.SPECIAL_PREFIX, id="special-limited-broadcast"),
    pytest.param(route("::1/128", W1_6), "fd00::1", checks.SPECIAL_PREFIX, id="special-loopback-ipv6"),
    pytest.param(route("::/128", W1_6), "fd00::1", checks.SPECIAL_PREFIX, id="special-unspecified-ipv6"),
    pytest.param(route("fe80::/64", None), "fd00::1", checks.SPECIAL_PREFIX, id="special-link-local-ipv6"),
    pytest.param(route("ff02::1/128", W1_6), "fd00::1", checks.SPECIAL_PREFIX, id="special-multicast-ipv6"),
    pytest.param(
        route("::ffff:192.168.100.5/128", W1_6), "fd00::1", checks.SPECIAL_PREFIX, id="special-ipv4-mapped-ipv6"
    ),
    # 4. inside a selected, advertised network
    pytest.param(route("192.168.101.10/32"), "10.0.0.1", checks.OUTSIDE_SELECTED_NETWORKS, id="outside-every-network"),
    pytest.param(
        route("192.168.200.10/32"), "10.0.0.1", checks.OUTSIDE_SELECTED_NETWORKS, id="inside-an-unselected-network"
    ),
    pytest.param(
        route("192.168.0.0/16", None), "10.0.0.1", checks.OUTSIDE_SELECTED_NETWORKS, id="wider-than-the-network"
    ),
    pytest.param(route("fd10:101::5/128", W1_6), "fd00::1", checks.OUTSIDE_SELECTED_NETWORKS, id="outside-ipv6"),
    # 5. a host route never covers infrastructure
    pytest.param(route("172.16.0.13/32"), "10.0.0.1", checks.COVERS_INFRASTRUCTURE, id="covers-a-node-address"),
    pytest.param(route("172.16.0.1/32"), "10.0.0.1", checks.COVERS_INFRASTRUCTURE, id="covers-a-peer-address"),
    pytest.param(
        route("172.16.0.0/16", None), "10.0.0.1", checks.COVERS_INFRASTRUCTURE, id="a-subnet-covering-a-peer-address"
    ),
    pytest.param(
        route("192.168.100.10/32", "192.168.100.10"),
        "10.0.0.1",
        checks.COVERS_INFRASTRUCTURE,
        id="covers-its-own-next-hop",
    ),
    # 6. next hops: unicast, not link-local, the prefix's family, outside every advertised network
    pytest.param(route("192.168.100.10/32", "169.254.0.1"), "10.0.0.1", checks.INVALID_NEXT_HOP, id="nh-link-local"),
    pytest.param(route("192.168.100.10/32", "127.0.0.1"), "10.0.0.1", checks.INVALID_NEXT_HOP, id="nh-loopback"),
    pytest.param(route("192.168.100.10/32", "224.0.0.5"), "10.0.0.1", checks.INVALID_NEXT_HOP, id="nh-multicast"),
    pytest.param(route("192.168.100.10/32", "0.0.0.0"), "10.0.0.1", checks.INVALID_NEXT_HOP, id="nh-unspecified"),
    pytest.param(route("192.168.100.10/32", "255.255.255.255"), "10.0.0.1", checks.INVALID_NEXT_HOP, id="nh-broadcast"),
    pytest.param(route("192.168.100.10/32", W1_6), "10.0.0.1", checks.INVALID_NEXT_HOP, id="nh-of-another-family"),
    pytest.param(route("fd10:100::10/128", "fe80::1"), "fd00::1", checks.INVALID_NEXT_HOP, id="nh-link-local-ipv6"),
    pytest.param(
        route("fd10:100::10/128", "::ffff:10.0.0.11"), "fd00::1", checks.INVALID_NEXT_HOP, id="nh-ipv4-mapped-ipv6"
    ),
    pytest.param(
        route("192.168.100.10/32", "192.168.100.20"), "10.0.0.1", checks.INVALID_NEXT_HOP, id="nh-inside-the-network"
    ),
    pytest.param(
        route("192.168.100.11/32", "172.16.0.13"),
        "10.0.0.1",
        checks.INVALID_NEXT_HOP,
        id="nh-a-node-inside-another-advertised-network",
    ),
    # 7. what the session carries
    pytest.param(
        route("fd10:100::10/128", W1_6), "10.0.0.2", checks.FAMILY_NOT_CARRIED, id="family-not-configured-for-peer"
    ),
    pytest.param(route("192.168.100.10/32"), "fd00::1", checks.FAMILY_NOT_CARRIED, id="ipv4-on-an-ipv6-only-peer"),
    pytest.param(
        route("fd10:100::/64", None), "10.0.0.1", checks.FAMILY_NOT_CARRIED, id="ipv6-self-on-an-ipv4-session"
    ),
]


@pytest.mark.parametrize(("candidate", "peer", "reason"), ONE_ROUTE)
def test_one_route_is_accepted_or_refused_with_the_rules_reason(candidate: Route, peer: str, reason: str | None, ctx):
    accepted, refused = check_peer([candidate], ctx, peer)
    if reason is None:
        assert accepted == (candidate,) and refused == ()
    else:
        assert accepted == ()
        assert [(r.source, r.value, r.reason, r.network) for r in refused] == [
            (CLAIM, str(candidate.prefix), reason, "vmnet-a")
        ]
        assert refused[0].message


def test_every_guard_reason_is_a_published_reason_code():
    guard_reasons = {p.values[2] for p in ONE_ROUTE} - {None}
    assert guard_reasons <= set(checks.ALL_REASONS)


def test_a_configured_next_hop_self_makes_an_ipv6_self_route_expressible_on_an_ipv4_session():
    config = k8s.config(nextHopSelf={"ipv6": "fd00::11"})
    ctx = GuardContext.from_state(k8s.state(OBJECTS), config)
    subnet6 = route("fd10:100::/64", None)
    assert check_peer([subnet6], ctx, "10.0.0.1") == ((subnet6,), ())


def test_the_minimum_prefix_length_is_configurable():
    config = k8s.config(safety={"minPrefixLength": {"ipv4": 28}})
    ctx = GuardContext.from_state(k8s.state(OBJECTS), config)
    subnet = route("192.168.100.0/24", None)
    _, refused = check_peer([subnet], ctx, "10.0.0.1")
    assert [r.reason for r in refused] == [checks.PREFIX_TOO_SHORT]


# --- the set rules ---------------------------------------------------------------------------------------------------

OLDER = ObjectRef("IPAMClaim", "vm-old.default", NS, "uid-o", "2025-01-01T00:00:00Z")
YOUNGER = ObjectRef("IPAMClaim", "vm-new.default", NS, "uid-n", "2025-06-01T00:00:00Z")
NO_AGE = ObjectRef("IPAMClaim", "vm-aaa.default", NS, "uid-x")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(YOUNGER, OLDER, id="younger-listed-first"),
        pytest.param(OLDER, YOUNGER, id="older-listed-first"),
        pytest.param(NO_AGE, OLDER, id="no-timestamp-is-youngest"),
    ],
)
def test_duplicate_prefix_the_oldest_origin_keeps_it_whatever_the_order(first: ObjectRef, second: ObjectRef, ctx):
    a = route("192.168.100.10/32", W1, first)
    b = route("192.168.100.10/32", Address.parse("10.0.0.12"), second)
    accepted, refused = check_peer([a, b], ctx, "10.0.0.1")
    winner = a if second is NO_AGE or (first is OLDER) else b
    loser = b if winner is a else a
    assert accepted == (winner,)
    assert [(r.source, r.reason) for r in refused] == [(loser.source, checks.DUPLICATE_PREFIX)]


def test_duplicate_prefix_ties_in_age_go_to_namespace_then_name(ctx):
    a = route("192.168.100.10/32", W1, ObjectRef("IPAMClaim", "vm-b.default", NS, "", "2025-01-01T00:00:00Z"))
    b = route("192.168.100.10/32", W1, ObjectRef("IPAMClaim", "vm-a.default", NS, "", "2025-01-01T00:00:00Z"))
    assert check_peer([a, b], ctx, "10.0.0.1")[0] == (b,)


def test_a_non_canonical_prefix_is_the_same_prefix_for_duplicates(ctx):
    canonical = route("192.168.100.0/24", None, OLDER)
    sloppy = route("192.168.100.7/24", None, YOUNGER)  # host bits set: the same /24 on the wire
    between = route("192.168.100.3/32", W1, CLAIM)
    accepted, refused = check_peer([canonical, between, sloppy], ctx, "10.0.0.1")
    assert accepted == (canonical, between)
    assert [(r.source, r.reason) for r in refused] == [(YOUNGER, checks.DUPLICATE_PREFIX)]


def _limited(n: int) -> GuardContext:
    return GuardContext.from_state(k8s.state(OBJECTS), k8s.config(safety={"maxRoutes": n}))


def test_max_routes_refuses_the_newest_routes():
    old = route("192.168.100.10/32", W1, OLDER)
    new = route("192.168.100.11/32", W1, YOUNGER)
    mid = route("192.168.100.12/32", W1, CLAIM)
    accepted, refused = check_peer([old, new, mid], _limited(2), "10.0.0.1")
    assert accepted == (old, mid)
    assert [(r.source, r.value, r.reason) for r in refused] == [
        (YOUNGER, "192.168.100.11/32", checks.MAX_ROUTES_EXCEEDED)
    ]


def test_max_routes_keeps_what_the_peer_already_holds_the_last_good_set_stays():
    old = route("192.168.100.10/32", W1, OLDER)
    new = route("192.168.100.11/32", W1, YOUNGER)
    held = {new.prefix.key}  # announced before the older one came
    accepted, refused = check_peer([old, new], _limited(1), "10.0.0.1", advertised=held)
    assert accepted == (new,)
    assert [(r.source, r.reason) for r in refused] == [(OLDER, checks.MAX_ROUTES_EXCEEDED)]


def test_max_routes_lowered_below_what_the_peer_holds_keeps_the_oldest_held_routes():
    old = route("192.168.100.10/32", W1, OLDER)
    mid = route("192.168.100.12/32", W1, CLAIM)
    new = route("192.168.100.11/32", W1, YOUNGER)
    fresh = route("192.168.100.13/32", W1, OLDER)  # old origin, but not yet announced to the peer
    held = {r.prefix.key for r in (old, mid, new)}
    accepted, refused = check_peer([old, new, mid, fresh], _limited(2), "10.0.0.1", advertised=held)
    assert accepted == (old, mid)
    assert sorted((r.value, r.reason) for r in refused) == [
        ("192.168.100.11/32", checks.MAX_ROUTES_EXCEEDED),
        ("192.168.100.13/32", checks.MAX_ROUTES_EXCEEDED),
    ]


def test_duplicates_are_settled_before_max_routes_counts():
    """Two origins of one prefix and a limit: the younger duplicate is refused as such, then the limit applies."""
    old = route("192.168.100.10/32", W1, OLDER)
    twin = route("192.168.100.10/32", Address.parse("10.0.0.12"), YOUNGER)
    other = route("192.168.100.11/32", W1, YOUNGER)
    accepted, refused = check_peer([old, twin, other], _limited(1), "10.0.0.1")
    assert accepted == (old,)
    assert [(r.value, r.reason) for r in refused] == [
        ("192.168.100.10/32", checks.DUPLICATE_PREFIX),
        ("192.168.100.11/32", checks.MAX_ROUTES_EXCEEDED),
    ]


# --- the Guard: every peer, cache, observation ----------------------------------------------------------------------


def test_a_peer_without_a_family_another_peer_carries_just_does_not_get_it(ctx):
    """One session per family is a design, not a fault: no refusal, each peer gets its family."""
    v6 = route("fd10:100::10/128", W1_6)
    v4 = route("192.168.100.10/32")
    guarded = Guard(config()).check([v4, v6], ctx)
    assert guarded.per_peer == {
        "10.0.0.1": (v4, v6),
        "10.0.0.2": (v4,),
        "fd00::1": (v6,),
        "fd00::2": (v4, v6),
        "172.16.0.1": (v4, v6),
    }
    assert guarded.rejected == ()


def test_a_route_refused_for_several_peers_is_reported_once_naming_the_first(ctx):
    """The IPv6 `self` subnet cannot be expressed on either IPv4 session that carries IPv6: one refusal."""
    subnet6 = route("fd10:100::/64", None)
    guarded = Guard(config()).check([subnet6], ctx)
    assert [(r.value, r.reason) for r in guarded.rejected] == [("fd10:100::/64", checks.FAMILY_NOT_CARRIED)]
    assert "10.0.0.1" in guarded.rejected[0].message
    assert guarded.per_peer["fd00::1"] == guarded.per_peer["fd00::2"] == (subnet6,)
    assert guarded.per_peer["10.0.0.1"] == guarded.per_peer["172.16.0.1"] == ()


def test_a_family_no_peer_carries_is_refused():
    config = k8s.config(peers=[{"address": "10.0.0.1", "asn": 64512, "families": ["ipv4 unicast"]}])
    ctx = GuardContext.from_state(k8s.state(OBJECTS), config)
    v6 = route("fd10:100::10/128", W1_6)
    guarded = Guard(config).check([v6], ctx)
    assert guarded.per_peer == {"10.0.0.1": ()}
    assert [(r.value, r.reason, r.message) for r in guarded.rejected] == [
        ("fd10:100::10/128", checks.FAMILY_NOT_CARRIED, "no peer carries ipv6 unicast")
    ]


def test_unchanged_route_objects_are_not_evaluated_again_and_a_new_context_drops_the_verdicts(ctx, cluster_plan):
    guard = Guard(config())
    routes = [route(f"192.168.100.{i}/32") for i in range(10, 20)]
    guard.check(routes, guard.context(cluster_plan))
    assert guard.evaluated == 10
    changed = [*routes[:9], route("192.168.100.30/32")]
    guard.check(changed, guard.context(cluster_plan))
    assert guard.evaluated == 11
    moved = k8s.state(OBJECTS, k8s.node("worker-4", "10.0.0.14"))
    moved_ctx = guard.context(plan(moved, config()))
    assert moved_ctx != ctx
    guard.check(changed, moved_ctx)
    assert guard.evaluated == 21


def test_the_context_is_rebuilt_only_when_a_network_or_node_object_changes(cluster_plan):
    guard = Guard(config())
    assert guard.context(cluster_plan) is guard.context(cluster_plan)


def test_observers_see_the_routes_some_peer_gets_and_the_guard_refusals_after_the_planners():
    good = route("192.168.100.10/32")
    bad = route("0.0.0.0/0", None)
    plan = Plan.build([bad, good], [])
    ctx = GuardContext.from_state(k8s.state(OBJECTS), k8s.config())  # one peer, 10.0.0.1
    guarded = Guard().check(plan.routes, ctx)
    observed = guarded.observed(plan)
    assert observed.routes == (good,)
    assert [(r.value, r.reason) for r in observed.rejected] == [("0.0.0.0/0", checks.DEFAULT_ROUTE)]
    clean = Plan.build([good], [])
    assert Guard().check(clean.routes, ctx).observed(clean) is clean
