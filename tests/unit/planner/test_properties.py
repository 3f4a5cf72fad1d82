"""Planner properties (hypothesis): no input makes plan() raise, and nothing it announces breaks the rules.

Scope: (1) arbitrary JSON-shaped garbage in every field of every watched kind never raises; (2) on realistic
clusters with random addresses (node InternalIPs that are never next hops, a second network that may overlap the
first, valid and invalid gateway definitions), every announced prefix lies inside a subnet of a selected network,
of two overlapping networks one only is announced, no announced host address is one the rules refuse (checked
against an independent netaddr implementation) or a node's address, every next hop is a unicast address outside
the advertised networks, every address of a running VM is either announced or refused, and the plan does not
depend on the order objects were listed in;
(3) the precompiled address checker equals the reference `checks.host_address_reason`.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from netaddr import IPAddress, IPNetwork, IPSet

from bgpadv.core import resources
from bgpadv.core.state import ClusterState
from bgpadv.planner import checks, plan
from bgpadv.planner.networks import index_networks
from bgpadv.sources.decode.dispatch import decode_state
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

ADV = k8s.ADVERTISED
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def raw_state(objects: list[dict]) -> ClusterState:
    """A state holding the objects, decoded as the store decodes them, under synthetic keys (from_objects needs
    usable metadata)."""
    buckets: dict[str, dict] = {r.field: {} for r in resources.ALL}
    by_kind = {r.kind: r for r in resources.ALL}
    for i, obj in enumerate(objects):
        res = by_kind[obj["kind"]]
        buckets[res.field][("ns", f"o{i}") if res.namespaced else f"o{i}"] = obj
    return decode_state(buckets)


def _mutate(obj: dict, paths: list[tuple[str, ...]], values: list) -> dict:
    """Overwrite some paths of a realistic object with garbage (creating intermediate dicts as needed)."""
    for path, value in zip(paths, values, strict=False):
        target = obj
        for key in path[:-1]:
            nxt = target.get(key) if isinstance(target, dict) else None
            if not isinstance(nxt, dict):
                nxt = {}
                if isinstance(target, dict):
                    target[key] = nxt
            target = nxt
        if isinstance(target, dict):
            target[path[-1]] = value
    return obj


PATHS = [
    ("metadata",),
    ("metadata", "name"),
    ("metadata", "namespace"),
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("metadata", "ownerReferences"),
    ("metadata", "creationTimestamp"),
    ("metadata", "deletionTimestamp"),
    ("spec",),
    ("spec", "network"),
    ("spec", "network", "topology"),
    ("spec", "network", "layer2"),
    ("spec", "network", "layer2", "subnets"),
    ("spec", "network", "layer2", "defaultGatewayIPs"),
    ("spec", "network", "layer2", "infrastructureSubnets"),
    ("spec", "network", "layer3", "subnets"),
    ("spec", "nodeName"),
    ("spec", "advertisements"),
    ("spec", "networkSelectors"),
    ("status",),
    ("status", "ips"),
    ("status", "phase"),
    ("status", "nodeName"),
    ("status", "interfaces"),
    ("status", "migrationState"),
    ("status", "migrationState", "targetNode"),
    ("status", "migrationState", "targetPod"),
    ("status", "addresses"),
    ("status", "conditions"),
    ("metadata", "annotations", "k8s.ovn.org/node-subnets"),
    ("metadata", "annotations", "k8s.ovn.org/node-primary-ifaddr"),
    ("metadata", "annotations", "kubevirt.io/migration-target-ready-timestamp"),
    ("metadata", "annotations", "kubevirt.io/domain"),
    ("metadata", "annotations", "k8s.ovn.org/pod-networks"),
    ("metadata", "ownerReferences"),
    ("status", "migrationState", "sourceState"),
    ("status", "migrationState", "targetState"),
    ("metadata", "labels", "kubevirt.io/created-by"),
    ("metadata", "labels", "kubevirt.io/vm"),
    ("status", "migrationState", "targetNodeDomainReadyTimestamp"),
    ("status", "migrationState", "failed"),
]


def _realistic() -> list[dict]:
    ms = k8s.migration_state("worker-1", "worker-2", vmi="vm-a")
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11", node_subnets={"cluster_udn_l3": ["10.132.1.0/24"]}),
        k8s.node("worker-2", "10.0.0.12", node_subnets={"cluster_udn_l3": "10.132.2.0/24"}),
        k8s.cudn_layer2(
            "vmnet-a",
            ["192.168.100.0/24", "fd10:100::/64"],
            labels=ADV,
            infrastructure_subnets=["192.168.100.0/30"],
            default_gateway_ips=["192.168.100.1"],
        ),
        k8s.cudn_layer2("vmnet-d", ["10.70.0.0/24"], labels=ADV, namespaces=[NS], ipam_mode="Disabled"),
        k8s.cudn_layer3("l3", [("10.132.0.0/16", 24)], labels=ADV),
        k8s.route_advertisements("ra", {"matchLabels": ADV}),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24", "fd10:100::5/64"]),
        k8s.vmi(NS, "vm-a", "worker-1", interfaces=[k8s.interface(["10.70.0.9"])], migration_state=ms),
        k8s.launcher_pod(NS, "vm-a", "worker-2", suffix="tgt01", target_ready="2025-03-01T10:00:00Z"),
    ]


@SETTINGS
@given(
    which=st.lists(st.integers(0, 8), min_size=1, max_size=6),
    paths=st.lists(st.sampled_from(PATHS), min_size=1, max_size=6),
    values=st.lists(json_values, min_size=1, max_size=6),
    follow=st.booleans(),
    next_hop=st.sampled_from(["node", "self"]),
)
def test_no_input_makes_plan_raise(which, paths, values, follow, next_hop):
    objects = _realistic()
    for i in which:
        _mutate(objects[i], paths, values)
    cfg = k8s.config(networks={"followRouteAdvertisements": follow}, nextHop=next_hop)
    result = plan(raw_state(objects), cfg)
    for refusal in result.rejected:
        assert refusal.reason in checks.ALL_REASONS
        assert isinstance(refusal.value, str)


@SETTINGS
@given(garbage=st.lists(json_values, max_size=8), kinds=st.lists(st.sampled_from(list(range(6))), max_size=8))
def test_whole_objects_of_garbage_never_raise(garbage, kinds):
    objects = []
    for value, k in zip(garbage, kinds, strict=False):
        res = resources.ALL[k]
        obj = {"apiVersion": res.api_version, "kind": res.kind}
        if res.kind == "Pod":
            obj["metadata"] = {"labels": {"kubevirt.io": "virt-launcher"}, "name": "p", "namespace": NS}
        if isinstance(value, dict):
            obj.update(value)
        else:
            obj["spec"] = value
        objects.append(obj)
    plan(raw_state([*_realistic(), *objects]), k8s.config())


# --- realistic clusters with random addresses ------------------------------------------------------------------

SUBNET_A = "192.168.100.0/24"
SUBNET_A6 = "fd10:100::/64"

ipv4_near = st.integers(0xC0A863F0, 0xC0A86510).map(lambda v: str(IPAddress(v, 4)))  # .99.240 .. .101.16
ipv6_near = st.integers(0, 20).map(lambda v: f"fd10:100::{v:x}") | st.sampled_from(["fd10:101::1", "fe80::1", "::1"])
specials = st.sampled_from(["169.254.1.1", "127.0.0.1", "224.0.0.1", "0.0.0.0", "10.0.0.1", "ff02::1", "::"])
masks = st.sampled_from(["", "/24", "/64", "/32", "/128", "/0", "/ 24", "/24 next-hop 203.0.113.9"])
node_owned = st.sampled_from(["192.168.100.5/24", "fd10:100::5/64"])  # a node's InternalIP in some clusters
addresses = (
    st.tuples(ipv4_near | ipv6_near | specials, masks).map(lambda t: t[0] + t[1]) | node_owned | st.text(max_size=20)
)


# (infrastructureSubnets, defaultGatewayIPs) that OVN-K's CRD accepts for the dual-stack vmnet-a: a gateway per
# family, each inside the infrastructure subnets when those are set
VALID_INFRA_GATEWAYS = [
    ([], []),
    ([], ["192.168.100.254", "fd10:100::fe"]),
    (["192.168.100.0/30"], []),
    (["192.168.100.0/29", "fd10:100::/126"], []),
    (["192.168.100.0/29", "fd10:100::/126"], ["192.168.100.2", "fd10:100::1"]),
]
# and some it refuses: the whole CUDN is then refused, with every claim on it
INVALID_INFRA_GATEWAYS = [
    ([], ["192.168.100.1"]),  # no gateway for the IPv6 subnet
    (["192.168.100.0/30"], ["192.168.100.254", "fd10:100::fe"]),  # gateways outside the infrastructure subnets
]


NODE_IPV4_NEVER_NEXT_HOPS = ["127.0.0.1", "169.254.0.1", "224.0.0.1", "255.255.255.255", "0.0.0.0", "192.168.100.5"]
NODE_IPV6_NEVER_NEXT_HOPS = ["::1", "fe80::1", "ff02::1", "::ffff:10.0.0.11", "fd10:100::5"]


@st.composite
def clusters(draw):
    infra, gateways = draw(st.sampled_from(VALID_INFRA_GATEWAYS * 3 + INVALID_INFRA_GATEWAYS))
    cudn = k8s.cudn_layer2(
        "vmnet-a",
        [SUBNET_A, SUBNET_A6],
        labels=ADV,
        infrastructure_subnets=infra,
        reserved_subnets=["192.168.100.200/29"],
        default_gateway_ips=gateways,
    )
    # worker-1's InternalIPs may be addresses that are never next hops (its annotation keeps valid ones, or not)
    ipv4 = draw(st.sampled_from(["10.0.0.11"] * 3 + NODE_IPV4_NEVER_NEXT_HOPS))
    ipv6 = draw(st.sampled_from(["fd00::11"] * 3 + NODE_IPV6_NEVER_NEXT_HOPS))
    worker_1 = k8s.node("worker-1", ipv4, ipv6, primary_ifaddr=draw(st.booleans()))
    if worker_1["metadata"]["annotations"].get("k8s.ovn.org/node-primary-ifaddr"):
        worker_1["metadata"]["annotations"]["k8s.ovn.org/node-primary-ifaddr"] = (
            '{"ipv4": "10.0.0.11/24", "ipv6": "fd00::11/64"}'
        )
    objects = [cudn, worker_1, k8s.node("worker-2", "10.0.0.12")]
    # sometimes a second network, overlapping vmnet-a or not, older or younger
    other = draw(st.sampled_from([None, "192.168.100.128/25", "192.168.0.0/16", "10.1.0.0/24"]))
    if other is not None:
        created_at = draw(st.sampled_from(["2024-01-01T00:00:00Z", "2026-01-01T00:00:00Z"]))
        objects.append(k8s.cudn_layer2("vmnet-z", [other], labels=ADV, namespaces=["tenant-z"], created_at=created_at))
    n = draw(st.integers(1, 6))
    for i in range(n):
        ips = draw(st.lists(addresses, max_size=3))
        created = f"2025-02-{draw(st.integers(10, 12))}T08:00:00Z"
        claimless = draw(st.sampled_from([False, False, True]))  # OVN-K's assignment in the launcher pod instead
        if not claimless:
            objects.append(
                k8s.ipam_claim(NS, f"vm-{i}.default", f"vm-{i}", "cluster_udn_vmnet-a", ips, created=created)
            )
        if draw(st.booleans()):
            node = draw(st.sampled_from(["worker-1", "worker-2", "worker-9"]))
            objects.append(
                k8s.vmi(NS, f"vm-{i}", node, phase=draw(st.sampled_from(["Running", "Running", "Succeeded"])))
            )
            if claimless:
                objects.append(k8s.launcher_pod(NS, f"vm-{i}", node, ips=ips, nad="vmnet-a"))
    return objects, infra, gateways


def _forbidden(infra: list[str], gateways: list[str]) -> IPSet:
    """What the rules refuse inside vmnet-a, computed independently with netaddr."""
    bad = IPSet(infra)
    for net in (IPNetwork(SUBNET_A), IPNetwork(SUBNET_A6)):
        bad.add(net.network)
        if net.version == 4:
            bad.add(net.broadcast)
    explicit = {IPAddress(g).version: IPAddress(g) for g in gateways}
    for net in (IPNetwork(SUBNET_A), IPNetwork(SUBNET_A6)):
        family_infra = [IPNetwork(i) for i in infra if IPNetwork(i).version == net.version]
        if net.version in explicit:
            bad.add(explicit[net.version])
        else:
            bad.add((family_infra[0] if family_infra else net)[1])
        if not family_infra:
            mgmt = net[2] if net[2] not in {explicit.get(net.version)} else net[1]
            bad.add(mgmt)
    return bad


@SETTINGS
@given(clusters())
def test_announced_prefixes_lie_in_a_selected_network_and_are_never_refusal_worthy(cluster):
    objects, infra, gateways = cluster
    result = plan(k8s.state(objects), k8s.config())
    allowed = IPSet([SUBNET_A, SUBNET_A6])
    forbidden = _forbidden(infra, gateways)
    special = IPSet(["169.254.0.0/16", "fe80::/10", "127.0.0.0/8", "::1/128", "224.0.0.0/4", "ff00::/8"])
    never_next_hops = IPSet(
        [*special.iter_cidrs(), "0.0.0.0/8", "255.255.255.255/32", "::/128", "::ffff:0:0/96", SUBNET_A, SUBNET_A6]
    )
    node_addresses = {
        IPAddress(a["address"])
        for o in objects
        if o["kind"] == "Node"
        for a in o["status"]["addresses"]
        if a["type"] == "InternalIP"
    }
    z = next((o for o in objects if o["metadata"]["name"] == "vmnet-z"), None)
    if z is not None:
        z_subnets = IPSet(z["spec"]["network"]["layer2"]["subnets"])
        if z_subnets & allowed:
            announced = {r.network for r in result.routes}
            assert len(announced) <= 1, "of two overlapping networks, one only is announced"
        allowed |= z_subnets
    for route in result.routes:
        # checked independently with netaddr: the route's values converted through their text
        prefix = IPNetwork(str(route.prefix))
        next_hop = IPAddress(str(route.next_hop)) if route.next_hop is not None else None
        assert prefix in allowed
        if next_hop is not None:
            assert next_hop not in never_next_hops
            assert next_hop not in allowed
        if str(route.kind) == "host":
            assert prefix.ip not in node_addresses
        if str(route.kind) == "host":
            assert prefix.prefixlen == (32 if prefix.version == 4 else 128)
            address = prefix.ip
            assert address not in forbidden
            assert address not in special
            assert next_hop is not None and next_hop.version == prefix.version
    hosts = [r for r in result.routes if str(r.kind) == "host"]
    assert len({r.prefix for r in hosts}) == len(hosts), "one address is announced once"


@SETTINGS
@given(clusters(), st.randoms(use_true_random=False))
def test_plan_does_not_depend_on_listing_order(cluster, rnd):
    objects, _, _ = cluster
    shuffled = list(objects)
    rnd.shuffle(shuffled)
    assert plan(k8s.state(objects), k8s.config()) == plan(k8s.state(shuffled), k8s.config())


@SETTINGS
@given(clusters())
def test_every_address_of_a_running_vm_on_a_known_node_is_announced_or_refused(cluster):
    objects, _, _ = cluster
    result = plan(k8s.state(objects), k8s.config())
    running = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "VirtualMachineInstance" and o["status"]["phase"] == "Running"
    }
    announced_by = {(r.source.name, r.prefix.value) for r in result.routes if str(r.kind) == "host"}
    refused_values = {(x.source.name, x.value) for x in result.rejected}
    refused_addresses = {(x.source.name, (checks.parse_address(x.value) or (0, -1))[1]) for x in result.rejected}
    network_refused = {x.source.name for x in result.rejected if x.value == "cluster_udn_vmnet-a"}
    refused_whole = {x.source.name for x in result.rejected if x.reason == checks.MALFORMED_OBJECT}
    for o in objects:
        if o["kind"] not in ("IPAMClaim", "Pod") or o["metadata"]["labels"]["kubevirt.io/vm"] not in running:
            continue
        if o["kind"] == "Pod":  # a VM without a claim: its source is the VMI, its addresses OVN-K's annotation
            annotation = o["metadata"]["annotations"].get("k8s.ovn.org/pod-networks")
            if annotation is None or "vmnet-a" not in result.context.networks:
                continue  # no assignment, or the network is not advertised (its CUDN carries the refusal)
            name = o["metadata"]["labels"]["kubevirt.io/vm"]
            ips = json.loads(annotation)[f"{NS}/vmnet-a"]["ip_addresses"]
        else:
            name = o["metadata"]["name"]
            ips = o["status"]["ips"]
        if name in network_refused:  # the network itself is refused: so is every address on it
            continue
        parsed_ips = {p[:2] for p in map(checks.parse_address, ips) if p is not None}
        if len(parsed_ips) > len({version for version, _ in parsed_ips}):  # two addresses of one family
            assert name in refused_whole
            assert not any(source == name for source, _ in announced_by)
            continue
        for ip in ips:
            parsed = checks.parse_address(ip)
            if parsed is None:
                assert (name, checks.describe(ip)) in refused_values, ip
            else:
                assert (name, parsed[1]) in announced_by | refused_addresses, ip


@SETTINGS
@given(
    definition=st.sampled_from(VALID_INFRA_GATEWAYS),
    values=st.lists(
        st.tuples(st.just(4), st.integers(0, 2**32 - 1)) | st.tuples(st.just(6), st.integers(0, 2**128 - 1)),
        max_size=40,
    ),
)
def test_compiled_checker_equals_the_reference(definition, values):
    infra, gateways = definition
    cudn = k8s.cudn_layer2(
        "vmnet-a", [SUBNET_A, SUBNET_A6], labels=ADV, infrastructure_subnets=infra, default_gateway_ips=gateways
    )
    network = index_networks(k8s.state(cudn), k8s.config()).advertised["vmnet-a"]
    base = [(4, 0xC0A86400 + i) for i in range(-1, 258)] + [(6, (0xFD100100 << 96) + i) for i in range(-1, 9)]
    for version, value in [*base, *values]:
        reference = checks.host_address_reason(
            version, value, network.subnets, network.gateways, network.infrastructure, network.infrastructure_addresses
        )
        assert network.check(version, value) == reference


# --- overlapping networks ---------------------------------------------------------------------------------------

small_subnets = st.tuples(st.integers(0, 63), st.integers(26, 30)).map(
    lambda t: str(IPNetwork(f"10.20.0.{t[0] * 4}/{t[1]}").cidr)
)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.lists(small_subnets, min_size=1, max_size=4), st.integers(1, 9)),
        min_size=1,
        max_size=8,
    )
)
def test_advertised_networks_never_overlap_and_each_overlap_refusal_names_an_older_advertised_network(defs):
    """Layer3 CUDNs with random cidrs (brute force, with netaddr, against the planner's bisected address space)."""
    cudns = [
        k8s.cudn_layer3(f"net-{i}", [(c, 31) for c in cidrs], labels=ADV, created_at=f"2025-0{month}-01T00:00:00Z")
        for i, (cidrs, month) in enumerate(defs)
    ]
    networks = index_networks(k8s.state(cudns), k8s.config())
    ages = {c["metadata"]["name"]: (c["metadata"]["creationTimestamp"], c["metadata"]["name"]) for c in cudns}
    spaces = {name: IPSet(str(s.network) for s in n.subnets) for name, n in networks.advertised.items()}
    names = sorted(spaces)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not (spaces[a] & spaces[b]), (a, b)
    overlapped = {r.source.name: r for r in networks.refusals if r.reason == "network-overlap"}
    for name, refusal in overlapped.items():
        older = refusal.message.split("of CUDN ")[1].split(",")[0]
        assert older in spaces and ages[older] < ages[name]
        assert spaces[older] & IPSet([refusal.value])
    # a valid network is either advertised or overlapped
    invalid = {r.source.name for r in networks.refusals if r.reason != "network-overlap"}
    assert set(ages) == set(spaces) | set(overlapped) | invalid
    # and an overlapped one does overlap some older advertised one: nothing is refused for nothing
    for name in overlapped:
        own = next(c for c in cudns if c["metadata"]["name"] == name)
        own_space = IPSet(e["cidr"] for e in own["spec"]["network"]["layer3"]["subnets"])
        assert any(own_space & spaces[o] for o in spaces if ages[o] < ages[name])
