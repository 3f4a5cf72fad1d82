"""Planner, networks: which CUDNs are advertised and the subnet routes they give.

Scope: selection by label selector and by RouteAdvertisements, withdrawn CUDNs (deleting, NetworkCreated=False),
topologies that cannot be advertised, Layer2 subnets (next hop self), Layer3 per-node host subnets from the node
annotation `k8s.ovn.org/node-subnets` (string or list), and the `networks.subnets` switch.
Host routes of VMs are in test_planner_vms.py; address checks in test_planner_checks.py.
"""

from __future__ import annotations

import objects as k8s
import pytest

from bgpadv.planner import plan

ADV = k8s.ADVERTISED
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), k8s.node("worker-2", "10.0.0.12", "fd00::12")]


def routes(p) -> set[tuple[str, str, str, str]]:
    """(prefix, next hop or "self", kind, network) of every route."""
    return {(str(r.prefix), str(r.next_hop) if r.next_hop else "self", str(r.kind), r.network) for r in p.routes}


def refused(p) -> set[tuple[str, str, str]]:
    return {(str(x.source), x.value, x.reason) for x in p.rejected}


def vmnet_a(**kw):
    return k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=kw.pop("labels", ADV), **kw)


def ra(**kw):
    return k8s.route_advertisements("vm-networks", kw.pop("selector", {"matchLabels": ADV}), **kw)


def test_layer2_cudn_announces_each_subnet_with_next_hop_self():
    p = plan(k8s.state(NODES, vmnet_a()), k8s.config())
    assert routes(p) == {
        ("192.168.100.0/24", "self", "subnet", "vmnet-a"),
        ("fd10:100::/64", "self", "subnet", "vmnet-a"),
    }
    assert all(r.node is None and str(r.source) == "ClusterUserDefinedNetwork vmnet-a" for r in p.routes)
    assert p.rejected == ()


@pytest.mark.parametrize(
    ("cudn_labels", "selector", "selected"),
    [
        pytest.param(ADV, {"matchLabels": ADV}, True, id="labels-match"),
        pytest.param({"team": "lab"}, {"matchLabels": ADV}, False, id="labels-differ"),
        pytest.param(None, {"matchLabels": ADV}, False, id="no-labels"),
        pytest.param({"team": "lab"}, None, True, id="no-selector-selects-all"),
        pytest.param(
            {"tier": "gold"},
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]},
            True,
            id="match-expressions-in",
        ),
        pytest.param(
            {"tier": "gold"},
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]},
            False,
            id="match-expressions-notin",
        ),
    ],
)
def test_label_selector_chooses_the_cudns(cudn_labels, selector, selected):
    cudn = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=cudn_labels)
    cfg = k8s.config(networks={"selector": selector})
    p = plan(k8s.state(NODES, cudn), cfg)
    assert bool(p.routes) is selected


@pytest.mark.parametrize(
    ("objects", "selected"),
    [
        pytest.param([ra()], True, id="accepted-podnetwork"),
        pytest.param([], False, id="no-route-advertisements"),
        pytest.param([ra(advertisements=["EgressIP"])], False, id="egressip-only"),
        pytest.param([ra(accepted=False)], False, id="not-accepted"),
        pytest.param([ra(generation=3, observed_generation=2)], False, id="accepted-for-an-older-generation"),
        pytest.param([ra(generation=3, observed_generation=None)], True, id="no-observed-generation"),
        pytest.param([ra(selector={"matchLabels": {"other": "x"}})], False, id="selects-other-cudns"),
        pytest.param([ra(selector={})], True, id="empty-selector-selects-all"),
        pytest.param([ra(selector=None)], False, id="default-network-only"),
        pytest.param([ra(accepted=False), ra(selector={})], True, id="any-accepted-ra-is-enough"),
    ],
)
def test_follow_route_advertisements_requires_an_accepted_podnetwork_ra(objects, selected):
    # two RAs with the same name would collapse into one in the state: name them apart
    for i, obj in enumerate(objects):
        obj["metadata"]["name"] = f"ra-{i}"
    cfg = k8s.config(networks={"followRouteAdvertisements": True})
    p = plan(k8s.state(NODES, vmnet_a(), objects), cfg)
    assert bool(p.routes) is selected


def test_follow_route_advertisements_and_selector_both_apply():
    cudn = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels={"ra": "yes"})
    cfg = k8s.config(networks={"followRouteAdvertisements": True})  # selector still wants bgpadv.io/advertise
    p = plan(k8s.state(NODES, cudn, ra(selector={"matchLabels": {"ra": "yes"}})), cfg)
    assert p.routes == ()
    cfg = k8s.config(networks={"followRouteAdvertisements": True, "selector": None})
    assert routes(plan(k8s.state(NODES, cudn, ra(selector={"matchLabels": {"ra": "yes"}})), cfg))


@pytest.mark.parametrize(
    "cudn",
    [
        pytest.param(vmnet_a(deleting=True), id="being-deleted"),
        pytest.param(vmnet_a(created=False), id="network-created-false"),
    ],
)
def test_withdrawn_cudn_contributes_nothing_and_its_claims_are_not_refused(cudn):
    claim = k8s.ipam_claim("imported-vms", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24"])
    vmi = k8s.vmi("imported-vms", "vm-a", "worker-1")
    p = plan(k8s.state(NODES, cudn, claim, vmi), k8s.config())
    assert p.routes == ()
    assert p.rejected == ()


def test_cudn_without_conditions_counts_as_created():
    cudn = vmnet_a()
    del cudn["status"]
    assert len(plan(k8s.state(NODES, cudn), k8s.config()).routes) == 2


@pytest.mark.parametrize(
    ("cudn", "value"),
    [
        pytest.param(
            k8s.cudn_localnet("physnet", "physnet-vlan120", ["172.16.120.0/24"], labels=ADV), "Localnet/Secondary"
        ),
        pytest.param(
            k8s.cudn_layer2("vmnet-sec", ["10.50.0.0/24"], labels=ADV, role="Secondary"),
            "Layer2/Secondary",
            id="layer2-secondary",
        ),
        pytest.param(
            k8s.cudn_layer3("l3-sec", [("10.60.0.0/16", 24)], labels=ADV, role="Secondary"),
            "Layer3/Secondary",
            id="layer3-secondary",
        ),
    ],
)
def test_selected_cudn_that_is_not_primary_layer2_or_layer3_is_refused(cudn, value):
    p = plan(k8s.state(NODES, cudn), k8s.config())
    assert p.routes == ()
    name = cudn["metadata"]["name"]
    assert refused(p) == {(f"ClusterUserDefinedNetwork {name}", value, "network-not-advertisable")}


def test_unselected_localnet_is_none_of_our_business():
    cudn = k8s.cudn_localnet("physnet", "physnet-vlan120", ["172.16.120.0/24"], labels={"team": "legacy"})
    assert plan(k8s.state(NODES, cudn), k8s.config()) == plan(k8s.state(NODES), k8s.config())


def test_layer3_announces_each_nodes_host_subnet_with_that_node_as_next_hop():
    nodes = [
        k8s.node(
            "worker-1",
            "10.0.0.11",
            "fd00::11",
            node_subnets={
                "default": ["10.244.1.0/24", "fd01:0:0:1::/64"],
                "cluster_udn_vmnet-l3": ["10.132.1.0/24", "fd10:132:0:1::/64"],
            },
        ),
        # a single-stack node writes a string, not a list
        k8s.node(
            "worker-3", "10.0.0.13", node_subnets={"default": "10.244.3.0/24", "cluster_udn_vmnet-l3": "10.132.3.0/24"}
        ),
    ]
    cudn = k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24), ("fd10:132::/48", 64)], labels=ADV)
    p = plan(k8s.state(nodes, cudn), k8s.config())
    assert routes(p) == {
        ("10.132.1.0/24", "10.0.0.11", "subnet", "vmnet-l3"),
        ("fd10:132:0:1::/64", "fd00::11", "subnet", "vmnet-l3"),
        ("10.132.3.0/24", "10.0.0.13", "subnet", "vmnet-l3"),
    }
    assert {(str(r.prefix), r.node, str(r.source)) for r in p.routes} == {
        ("10.132.1.0/24", "worker-1", "Node worker-1"),
        ("fd10:132:0:1::/64", "worker-1", "Node worker-1"),
        ("10.132.3.0/24", "worker-3", "Node worker-3"),
    }
    assert p.rejected == ()


@pytest.mark.parametrize(
    ("node_subnets", "expected_refusal"),
    [
        pytest.param(
            {"cluster_udn_vmnet-l3": "10.99.1.0/24"}, ("10.99.1.0/24", "outside-network-subnets"), id="outside"
        ),
        pytest.param(
            {"cluster_udn_vmnet-l3": "10.132.1.0/24 x"}, ("10.132.1.0/24 x", "malformed-address"), id="garbage"
        ),
        pytest.param(
            {"cluster_udn_vmnet-l3": ["fd10:132:0:1::/64"]}, ("fd10:132:0:1::/64", "no-node-address"), id="no-v6"
        ),
        # the whole cluster cidr (or any size but hostSubnet) towards one node would pull every node's pods to it
        pytest.param(
            {"cluster_udn_vmnet-l3": "10.132.0.0/16"}, ("10.132.0.0/16", "malformed-address"), id="whole-cidr"
        ),
        pytest.param(
            {"cluster_udn_vmnet-l3": "10.132.4.0/23"}, ("10.132.4.0/23", "malformed-address"), id="not-host-subnet-size"
        ),
    ],
)
def test_layer3_host_subnet_refusals(node_subnets, expected_refusal):
    node = k8s.node("worker-3", "10.0.0.13", node_subnets=node_subnets)
    cudn = k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24), ("fd10:132::/48", 64)], labels=ADV)
    p = plan(k8s.state(node, cudn), k8s.config())
    assert p.routes == ()
    assert refused(p) == {("Node worker-3", *expected_refusal)}


def test_node_subnets_annotation_that_is_not_json_is_a_malformed_object():
    node = k8s.node("worker-1", "10.0.0.11")
    node["metadata"]["annotations"]["k8s.ovn.org/node-subnets"] = "{not json"
    cudn = k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=ADV)
    p = plan(k8s.state(node, cudn), k8s.config())
    assert refused(p) == {("Node worker-1", "{not json", "malformed-object")}


def test_subnets_switch_off_keeps_only_host_routes():
    claim = k8s.ipam_claim("imported-vms", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24"])
    vmi = k8s.vmi("imported-vms", "vm-a", "worker-1")
    p = plan(k8s.state(NODES, vmnet_a(), claim, vmi), k8s.config(networks={"subnets": False}))
    assert routes(p) == {("192.168.100.5/32", "10.0.0.11", "host", "vmnet-a")}


def test_malformed_cudn_is_refused_not_raised():
    cudn = vmnet_a()
    cudn["spec"]["network"] = {"topology": "Layer2"}  # no layer2 block
    bad_subnet = k8s.cudn_layer2("vmnet-b", ["192.168.200.0/24", "not-a-cidr"], labels=ADV)
    p = plan(k8s.state(NODES, cudn, bad_subnet), k8s.config())
    assert refused(p) == {
        ("ClusterUserDefinedNetwork vmnet-a", "Layer2", "malformed-object"),
        # OVN-K's CRD rejects a CUDN with one unparseable subnet: so does bgpadv, whole (no half network)
        ("ClusterUserDefinedNetwork vmnet-b", "not-a-cidr", "malformed-address"),
    }
    assert p.routes == ()
