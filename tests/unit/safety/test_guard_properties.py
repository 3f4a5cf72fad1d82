"""The last guard's properties (hypothesis): whatever the cluster says, what is announced satisfies the guard.

Scope: generated clusters with hostile definitions — Layer2 CUDNs whose subnets include default routes, loopback,
link-local, multicast, IPv4-mapped and node-covering ranges, overlapping each other; a Layer3 CUDN with hostile
cidrs and node host subnets; nodes whose InternalIPs and `node-primary-ifaddr` are link-local, loopback, broadcast,
multicast, IPv4-mapped or inside a VM network; claims with the planner property tests' address strategy plus
addresses inside the hostile networks (node and peer addresses included); VMIs on random nodes; several peer and
`safety` configurations. For each: plan → guard per peer, then every route a peer gets is checked by an independent
predicate written here with netaddr (never by calling the guard), and the guard is idempotent (its output passes it
unchanged) and gives the same answer from its cache.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netaddr import IPAddress, IPNetwork, IPSet

from bgpadv.planner import plan
from bgpadv.safety.guard import Guard, check_peer
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.test_properties import addresses

ADV = k8s.ADVERTISED
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SPECIAL = IPSet(
    [
        "0.0.0.0/8",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "224.0.0.0/4",
        "255.255.255.255/32",
        "::/128",
        "::1/128",
        "::ffff:0:0/96",
        "fe80::/10",
        "ff00::/8",
    ]
)

LAYER2_SUBNETS = [
    "192.168.100.0/24",
    "192.168.100.0/25",  # overlaps the /24
    "fd10:100::/64",
    "0.0.0.0/0",
    "::/0",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "224.0.0.0/4",
    "fe80::/64",
    "::ffff:0:0/96",
    "10.0.0.0/16",  # the node network
    "10.0.0.0/8",
    "192.168.100.7/32",
    "255.255.255.255/32",
]
LAYER2_SUBNETS += ["192.168.100.0/24", "10.0.0.0/16", "fd10:100::/64"]  # weights: usable networks come up often
LAYER3_CIDRS = ["10.132.0.0/16", "0.0.0.0/0", "10.0.0.0/8", "169.254.0.0/16"]
HOST_SUBNETS = ["10.132.1.0/24", "10.132.0.0/16", "10.0.0.0/24", "0.0.0.0/0", "169.254.1.0/24", "10.132.2.0/24"]
NODE_V4 = ["10.0.0.11", "10.0.0.12", "169.254.1.1", "127.0.0.1", "255.255.255.255", "0.0.0.0", "224.0.0.1"]
NODE_V4 += ["192.168.100.5", "10.0.0.11", "10.0.0.12", "10.0.0.13"]
NODE_V6 = [None, "fd00::11", "fe80::1", "ff02::1", "::ffff:10.0.0.11", "fd10:100::5", "::1", "fd00::12"]
PEER_SETS = [
    [{"address": "10.0.0.1", "asn": 64512}],
    [{"address": "10.0.0.1", "asn": 64512}, {"address": "fd00::1", "asn": 64512, "families": ["ipv6 unicast"]}],
    [{"address": "10.0.0.1", "asn": 64512, "families": ["ipv4 unicast"]}, {"address": "10.0.0.12", "asn": 64512}],
    [{"address": "192.168.100.9", "asn": 64512}],  # a peer inside a VM network
]
IN_NETWORKS = ["192.168.100.7", "192.168.100.9", "10.0.0.11", "10.0.0.12", "10.0.0.1", "127.0.0.1", "10.132.1.5"]
IN_NETWORKS += [
    "fd00::11",
    "fd10:100::5",
    "169.254.1.1",
    "224.0.0.1",
    "::ffff:10.0.0.11",
    "255.255.255.255",
    "10.0.0.200",
]
in_networks = st.sampled_from(IN_NETWORKS).map(lambda a: a + "/" + ("128" if ":" in a else "32"))


def _inside(subnet: str) -> st.SearchStrategy[str]:
    """An address of the subnet, with its mask, as OVN-K writes it in a claim (the first few hundred addresses)."""
    net = IPNetwork(subnet)
    return st.integers(0, min(net.size - 1, 300)).map(
        lambda i: f"{IPAddress(net.first + i, net.version)}/{net.prefixlen}"
    )


@st.composite
def hostile_clusters(draw):
    objects: list[dict] = []
    l2 = []
    for i in range(draw(st.integers(1, 3))):
        subnets = draw(st.lists(st.sampled_from(LAYER2_SUBNETS), min_size=1, max_size=3, unique=True))
        selected = draw(st.booleans()) or i == 0
        created = f"2025-01-{10 + i:02d}T00:00:00Z"
        cudn = k8s.cudn_layer2(f"net-{i}", subnets, labels=ADV if selected else None)
        cudn["metadata"]["creationTimestamp"] = created
        objects.append(cudn)
        l2.append((f"net-{i}", subnets, selected))
    l3 = None
    if draw(st.booleans()):
        cidr = draw(st.sampled_from(LAYER3_CIDRS))
        objects.append(k8s.cudn_layer3("l3", [(cidr, 24)], labels=ADV))
        l3 = cidr
    nodes: dict[str, list[str]] = {}
    for i in range(draw(st.integers(1, 3))):
        v4, v6 = draw(st.sampled_from(NODE_V4)), draw(st.sampled_from(NODE_V6))
        host_subnets = draw(st.lists(st.sampled_from(HOST_SUBNETS), max_size=2))
        name = f"worker-{i + 1}"
        objects.append(
            k8s.node(
                name,
                v4,
                v6,
                node_subnets={"cluster_udn_l3": host_subnets} if host_subnets else None,
                internal_ip=draw(st.booleans()),
            )
        )
        nodes[name] = [a for a in (v4, v6) if a]
    for i in range(draw(st.integers(0, 8))):
        network, subnets, _ = draw(st.sampled_from(l2))
        inside = st.sampled_from(subnets).flatmap(_inside)
        ips = draw(st.lists(st.one_of(inside, inside, in_networks, addresses), max_size=3))
        created = f"2025-02-{draw(st.integers(10, 12))}T08:00:00Z"
        objects.append(k8s.ipam_claim(NS, f"vm-{i}.default", f"vm-{i}", f"cluster_udn_{network}", ips, created=created))
        if draw(st.integers(0, 3)):
            node = draw(st.sampled_from([*nodes, "worker-9"]))
            objects.append(k8s.vmi(NS, f"vm-{i}", node))
    peers = draw(st.sampled_from(PEER_SETS))
    overrides: dict = {"peers": peers, "nextHop": draw(st.sampled_from(["node", "self"]))}
    if draw(st.booleans()):
        overrides["safety"] = {"maxRoutes": draw(st.integers(1, 4)), "minPrefixLength": {"ipv4": 24, "ipv6": 64}}
    if draw(st.booleans()):
        overrides["nextHopSelf"] = {"ipv6": "fd00::11"}
    return objects, l2, l3, nodes, k8s.config(**overrides)


def _independent_violations(peer, routes, l2, l3, nodes, config, refused_networks) -> list[str]:
    """Every way a peer's routes break the guard's invariants, computed from the generated inputs with netaddr."""
    out: list[str] = []
    selected = [IPNetwork(s) for _, subnets, sel in l2 if sel for s in subnets]
    if l3 is not None:
        selected.append(IPNetwork(l3))
    surely_advertised = [
        IPNetwork(s) for name, subnets, sel in l2 if sel and name not in refused_networks for s in subnets
    ]
    if l3 is not None and "l3" not in refused_networks:
        surely_advertised.append(IPNetwork(l3))
    infrastructure = {IPAddress(a) for addrs in nodes.values() for a in addrs}
    infrastructure |= {p.address for p in config.peers} | set(config.next_hop_self)
    minimum = {4: config.safety.min_prefix_length_v4, 6: config.safety.min_prefix_length_v6}
    families = {4: "ipv4 unicast" in peer.families, 6: "ipv6 unicast" in peer.families}
    self_ok = {v: v == 4 or v == peer.address.version or config.self_address(v) is not None for v in (4, 6)}
    for r in routes:
        # the oracle's own types: netaddr's, converted from the route's text
        p, v = IPNetwork(str(r.prefix)), r.prefix.version
        nh = IPAddress(str(r.next_hop)) if r.next_hop is not None else None
        bad = []
        if p.prefixlen == 0 or p.prefixlen < minimum[v]:
            bad.append("too short")
        if IPSet([p]) & SPECIAL:
            bad.append("special")
        if not any(p in s for s in selected):
            bad.append("outside the selected networks")
        if p.prefixlen == (32 if v == 4 else 128) and (p.ip in infrastructure or (nh is not None and p.ip == nh)):
            bad.append("covers infrastructure")
        if nh is not None and (nh.version != v or nh in SPECIAL or any(nh in s for s in surely_advertised)):
            bad.append(f"next hop {nh}")
        if not families[v] or (nh is None and not self_ok[v]):
            bad.append("family not carried")
        out.extend(f"{peer.name}: {r.prefix} via {nh}: {b}" for b in bad)
    keys = [IPNetwork(str(r.prefix)) for r in routes]
    if len(set(keys)) != len(keys):
        out.append(f"{peer.name}: a prefix twice")
    if len(routes) > config.safety.max_routes:
        out.append(f"{peer.name}: {len(routes)} routes over maxRoutes {config.safety.max_routes}")
    return out


@SETTINGS
@given(hostile_clusters())
def test_every_route_a_peer_gets_satisfies_the_guard_checked_independently(cluster):
    objects, l2, l3, nodes, config = cluster
    state = k8s.state(objects)
    planned = plan(state, config)
    guard = Guard(config)
    ctx = guard.context(planned)
    guarded = guard.check(planned.routes, ctx)
    refused_networks = {x.source.name for x in planned.rejected if x.source.kind == "ClusterUserDefinedNetwork"}
    violations = []
    for peer in config.peers:
        routes = guarded.per_peer[peer.name]
        violations += _independent_violations(peer, routes, l2, l3, nodes, config, refused_networks)
    assert violations == []
    # a planned route a peer does not get is a refusal with a reason, or of a family the peer is not configured for
    refused = {(x.source, x.value) for x in guarded.rejected}
    for peer in config.peers:
        got = {id(r) for r in guarded.per_peer[peer.name]}
        for r in planned.routes:
            if id(r) not in got and f"ipv{r.prefix.version} unicast" in peer.families:
                assert (r.source, str(r.prefix)) in refused
    delivered = {id(r) for routes in guarded.per_peer.values() for r in routes}
    assert all((r.source, str(r.prefix)) in refused for r in planned.routes if id(r) not in delivered)


@SETTINGS
@given(hostile_clusters())
def test_the_guard_is_idempotent_and_its_cache_changes_nothing(cluster):
    objects, _, _, _, config = cluster
    state = k8s.state(objects)
    planned = plan(state, config)
    guard = Guard(config)
    ctx = guard.context(planned)
    first = guard.check(planned.routes, ctx)
    assert guard.check(planned.routes, ctx) == first  # from the verdict cache
    assert Guard(config).check(planned.routes, ctx) == first  # a fresh guard
    for peer in config.peers:
        routes = first.per_peer[peer.name]
        assert check_peer(routes, ctx, peer.name) == (routes, ())
