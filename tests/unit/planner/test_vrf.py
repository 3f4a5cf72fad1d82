"""Planner, VRF-bound networks and RouteAdvertisements honoured whole.

Scope: a CUDN with `spec.network.transport: EVPN`, or (with `followRouteAdvertisements`) selected only by
RouteAdvertisements whose `targetVRF` is not the default VRF, stays off bgpadv's default-VRF sessions: refused
`vrf-not-served` on the CUDN and on every claim (no subnet, no /32); `targetVRF` absent or `default` serves it, and
one default-VRF RouteAdvertisements among several is enough. `nodeSelector` bounds the nodes: a VM (or a Layer3 host
subnet) on a node outside it is refused `node-not-selected`. `advertisements` bgpadv does not implement (EgressIP)
are refused on the RouteAdvertisements, `advertisement-not-implemented`. plan() and the incremental planner agree.

Fixture shapes: the EVPN CUDNs of ovn-kubernetes test/e2e/testscenario/cudn (EVPNCUDNValid: `transport: EVPN`,
`evpn: {vtep: evpn-vtep, macVRF: {vni: 100, routeTarget: "65000:100"}}`) and docs/features/bgp-integration/evpn.md
(macVRF + ipVRF); the RouteAdvertisements of docs/features/bgp-integration/route-advertisements.md (`targetVRF: auto`
for VRF-Lite, `advertisements: [PodNetwork, EgressIP]`, `nodeSelector: {}`, `frrConfigurationSelector`) and the
evpn-ra of OVN-K's EVPN e2e setup (`targetVRF: auto`).
"""

from __future__ import annotations

import pytest

from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import planned_both_ways, refused

ADV = k8s.ADVERTISED
NET = "cluster_udn_vmnet-a"
NODES = [
    k8s.node("worker-1", "10.0.0.11", "fd00::11", labels={"bgp": "enabled"}),
    k8s.node("worker-2", "10.0.0.12", "fd00::12"),
]
FOLLOW = {"networks": {"followRouteAdvertisements": True}}  # the configuration that follows RouteAdvertisements
MAC_VRF = {"vtep": "evpn-vtep", "macVRF": {"vni": 100, "routeTarget": "65000:100"}}
BOTH_VRFS = {"vtep": "evpn-vtep", "macVRF": {"vni": 10100}, "ipVRF": {"vni": 20100}}


def vmnet(**kw) -> dict:
    return k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, **kw)


def ra(name: str = "default-vrf", **kw) -> dict:
    return k8s.route_advertisements(name, {"matchLabels": dict(ADV)}, **kw)


def vm(name: str = "vm-a", ip: str = "192.168.100.10", node: str = "worker-1") -> list[dict]:
    return [k8s.ipam_claim(NS, f"{name}.vmnet-a", name, NET, [f"{ip}/24"]), k8s.vmi(NS, name, node)]


def routes(p) -> set[tuple[str, str]]:
    return {(str(r.prefix), r.kind.value) for r in p.routes}


CUDN = "ClusterUserDefinedNetwork vmnet-a"
CLAIM = f"IPAMClaim {NS}/vm-a.vmnet-a"
SERVED = {("192.168.100.0/24", "subnet"), ("192.168.100.10/32", "host")}


@pytest.mark.parametrize(
    ("cudn", "ras", "settings", "value"),
    [
        pytest.param(vmnet(evpn=MAC_VRF), [], {}, "EVPN", id="evpn-macvrf-selector-only"),
        pytest.param(vmnet(evpn=BOTH_VRFS), [ra()], FOLLOW, "EVPN", id="evpn-macvrf-ipvrf-with-default-ra"),
        pytest.param(vmnet(), [ra(target_vrf="auto")], FOLLOW, "auto", id="ra-target-vrf-auto"),
        pytest.param(vmnet(), [ra(target_vrf="tenant-blue")], FOLLOW, "tenant-blue", id="ra-target-vrf-named"),
        pytest.param(
            vmnet(),
            [ra("b", target_vrf="blue"), ra("a", target_vrf="auto")],
            FOLLOW,
            "auto",
            id="two-vrf-ras-first-by-name-named",
        ),
    ],
)
def test_vrf_bound_networks_are_refused_whole(cudn, ras, settings, value):
    p = planned_both_ways(k8s.state(NODES, cudn, ras, vm()), k8s.config(**settings))
    assert p.routes == ()
    assert refused(p) == {(CUDN, value, "vrf-not-served"), (CLAIM, NET, "vrf-not-served")}
    assert all(r.network == "vmnet-a" for r in p.rejected)


def test_the_evpn_refusal_names_its_vrfs():
    p = plan(k8s.state(NODES, vmnet(evpn=BOTH_VRFS), vm()), k8s.config())
    assert "macVRF vni 10100, ipVRF vni 20100" in next(r.message for r in p.rejected if r.source.kind != "IPAMClaim")


@pytest.mark.parametrize(
    "ras",
    [
        pytest.param([ra(target_vrf="default")], id="target-vrf-default"),
        pytest.param([ra(target_vrf=None)], id="target-vrf-absent"),
        pytest.param([ra(target_vrf="")], id="target-vrf-empty"),
        pytest.param([ra("vrf-lite", target_vrf="auto"), ra("default-vrf")], id="one-default-ra-among-vrf-ones"),
    ],
)
def test_default_vrf_route_advertisements_serve_the_network(ras):
    p = planned_both_ways(k8s.state(NODES, vmnet(), ras, vm()), k8s.config(**FOLLOW))
    assert routes(p) == SERVED
    assert p.rejected == ()


def test_without_follow_the_ra_target_vrf_is_not_read():
    # followRouteAdvertisements off: bgpadv's own selector decides, RouteAdvertisements are not read at all
    p = planned_both_ways(k8s.state(NODES, vmnet(), ra(target_vrf="auto"), vm()), k8s.config())
    assert routes(p) == SERVED


# --- nodeSelector --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_selector", "node", "announced"),
    [
        pytest.param({}, "worker-2", True, id="empty-selector-every-node"),
        pytest.param({"matchLabels": {"bgp": "enabled"}}, "worker-1", True, id="selected-node"),
        pytest.param({"matchLabels": {"bgp": "enabled"}}, "worker-2", False, id="unselected-node-refused"),
        pytest.param({"matchLabels": {"bgp": "enabled"}}, "worker-9", False, id="unknown-node-refused"),
        pytest.param({"matchLabels": {"bgp": 1}}, "worker-1", False, id="malformed-selector-selects-no-node"),
    ],
)
def test_a_vm_on_a_node_outside_the_node_selector_is_refused(node_selector, node, announced):
    p = planned_both_ways(
        k8s.state(NODES, vmnet(), ra(node_selector=node_selector), vm(node=node)), k8s.config(**FOLLOW)
    )
    hosts = {r for r in routes(p) if r[1] == "host"}
    if announced:
        assert hosts == {("192.168.100.10/32", "host")}
        assert p.rejected == ()
    else:
        assert hosts == set()
        malformed = {("RouteAdvertisements default-vrf", "spec.nodeSelector.matchLabels.bgp", "malformed-selector")}
        expected = malformed if node_selector == {"matchLabels": {"bgp": 1}} else set()
        assert refused(p) == {(CLAIM, "192.168.100.10/24", "node-not-selected"), *expected}


def test_layer3_host_subnets_of_unselected_nodes_are_refused():
    nodes = [
        k8s.node("worker-1", "10.0.0.11", labels={"bgp": "enabled"}, node_subnets={"cluster_udn_l3": "10.132.1.0/24"}),
        k8s.node("worker-2", "10.0.0.12", node_subnets={"cluster_udn_l3": "10.132.2.0/24"}),
    ]
    l3 = k8s.cudn_layer3("l3", [("10.132.0.0/16", 24)], labels=ADV)
    p = planned_both_ways(
        k8s.state(nodes, l3, ra(node_selector={"matchLabels": {"bgp": "enabled"}})), k8s.config(**FOLLOW)
    )
    assert {(str(r.prefix), r.node) for r in p.routes} == {("10.132.1.0/24", "worker-1")}
    assert refused(p) == {("Node worker-2", "10.132.2.0/24", "node-not-selected")}


@pytest.mark.parametrize(
    ("host_subnet", "address", "reason"),
    [
        pytest.param("10.132.2.0/24", "10.132.2.5/24", "node-not-selected", id="own-host-subnet-the-node-refused"),
        pytest.param("10.132.0.0/20", "10.132.0.5/24", "outside-node-subnet", id="misplaced-host-subnet-nobodys"),
    ],
)
def test_a_layer3_pod_address_on_an_unselected_node_meets_the_host_subnet_rules_first(host_subnet, address, reason):
    """A launcher pod's Layer3 address on a node the RouteAdvertisements leave out: a host subnet of that node that
    passes the network's rules holds it (the VM is then refused because the node is not selected), one that breaks
    them (not the hostSubnet length) is nobody's, as for its route, so the address lies in no node's host subnet."""
    nodes = [
        k8s.node("worker-1", "10.0.0.11", labels={"bgp": "enabled"}, node_subnets={"cluster_udn_l3": "10.132.1.0/24"}),
        k8s.node("worker-2", "10.0.0.12", node_subnets={"cluster_udn_l3": host_subnet}),
    ]
    l3 = k8s.cudn_layer3("l3", [("10.132.0.0/16", 24)], labels=ADV, namespaces=[NS])
    vm_a = [k8s.vmi(NS, "vm-a", "worker-2"), k8s.launcher_pod(NS, "vm-a", "worker-2", ips=[address], nad="l3")]
    p = planned_both_ways(
        k8s.state(nodes, l3, ra(node_selector={"matchLabels": {"bgp": "enabled"}}), *vm_a), k8s.config(**FOLLOW)
    )
    assert {(str(r.prefix), r.node) for r in p.routes} == {("10.132.1.0/24", "worker-1")}
    assert refused(p) == {
        ("Node worker-2", host_subnet, "node-not-selected"),
        (f"VirtualMachineInstance {NS}/vm-a", address, reason),
    }


def test_relabelling_a_node_into_the_selector_announces_its_vm():
    state = k8s.state(NODES, vmnet(), ra(node_selector={"matchLabels": {"bgp": "enabled"}}), vm(node="worker-2"))
    inc = IncrementalPlanner(k8s.config(**FOLLOW))
    assert inc.plan(state, None) == plan(state, k8s.config(**FOLLOW))
    relabelled = k8s.state(k8s.node("worker-2", "10.0.0.12", "fd00::12", labels={"bgp": "enabled"})).nodes
    state.nodes["worker-2"] = relabelled["worker-2"]
    p = inc.plan(state, {("nodes", "worker-2")})
    assert p == plan(state, k8s.config(**FOLLOW))
    assert ("192.168.100.10/32", "host") in routes(p)


# --- advertisement types -------------------------------------------------------------------------------------------


def test_egress_ip_advertisements_are_refused_on_the_route_advertisements_visibly():
    p = planned_both_ways(
        k8s.state(NODES, vmnet(), ra(advertisements=["PodNetwork", "EgressIP"]), vm()), k8s.config(**FOLLOW)
    )
    assert routes(p) == SERVED  # the PodNetwork part is honoured
    assert refused(p) == {("RouteAdvertisements default-vrf", "EgressIP", "advertisement-not-implemented")}


def test_an_egress_ip_only_ra_selects_nothing_and_says_why():
    p = planned_both_ways(k8s.state(NODES, vmnet(), ra(advertisements=["EgressIP"]), vm()), k8s.config(**FOLLOW))
    assert p.routes == ()
    assert ("RouteAdvertisements default-vrf", "EgressIP", "advertisement-not-implemented") in refused(p)
    assert (CLAIM, NET, "network-not-selected") in refused(p)


def test_an_egress_ip_ra_selecting_no_served_network_is_none_of_bgpadvs_business():
    other = k8s.route_advertisements("egress", {"matchLabels": {"team": "web"}}, advertisements=["EgressIP"])
    p = planned_both_ways(k8s.state(NODES, vmnet(), ra(), other, vm()), k8s.config(**FOLLOW))
    assert routes(p) == SERVED
    assert p.rejected == ()


def test_render_shows_the_vrf_refusal_on_the_cudn_and_its_claims():
    from bgpadv.commands.render import render_plan

    text = render_plan(plan(k8s.state(NODES, vmnet(evpn=MAC_VRF), vm()), k8s.config()), "table")
    assert "no routes" in text
    assert text.count("vrf-not-served") == 2
    assert "macVRF vni 100" in text


@pytest.mark.parametrize(
    ("speaker", "announced"),
    [pytest.param("worker-1", True, id="selected-speaker"), pytest.param("worker-2", False, id="unselected-speaker")],
)
def test_per_node_a_speaker_outside_the_node_selector_does_not_announce_the_layer2_subnet(speaker, announced):
    config = k8s.config(networks={"followRouteAdvertisements": True}, nodeName=speaker)
    p = planned_both_ways(k8s.state(NODES, vmnet(), ra(node_selector={"matchLabels": {"bgp": "enabled"}})), config)
    if announced:
        assert routes(p) == {("192.168.100.0/24", "subnet")}
        assert p.rejected == ()
    else:
        assert p.routes == ()
        assert refused(p) == {(CUDN, "192.168.100.0/24", "node-not-selected")}
