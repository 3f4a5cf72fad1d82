"""Planner, networks: which CUDNs are advertised and the subnet routes they give.

Scope: selection by label selector and by RouteAdvertisements, withdrawn CUDNs (deleting, NetworkCreated=False),
topologies that cannot be advertised, Layer2 subnets (next hop self), Layer3 per-node host subnets from the node
annotation `k8s.ovn.org/node-subnets` (string or list), and the `networks.subnets` switch. Definitions validated like
OVN-K's CRD (one table row per rule: the CUDN is refused whole, with every claim on it), Layer3 `hostSubnet` and
its defaults, a host subnet named by two nodes (the older node keeps it), overlapping selected networks (the older
network keeps the space).
Host routes of VMs are in test_vms.py; address checks in test_checks.py.
"""

from __future__ import annotations

import pytest

from bgpadv.planner import plan
from bgpadv_lab import objects as k8s
from tests.unit.planner.facts import refused

ADV = k8s.ADVERTISED
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), k8s.node("worker-2", "10.0.0.12", "fd00::12")]


def routes(p) -> set[tuple[str, str, str, str]]:
    """(prefix, next hop or "self", kind, network) of every route."""
    return {(str(r.prefix), str(r.next_hop) if r.next_hop else "self", str(r.kind), r.network) for r in p.routes}


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


# --- network definitions, validated like OVN-K's CRD (CEL rules of shared.go) ------------------------------------

CLAIM_A = k8s.ipam_claim("imported-vms", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24"])
VMI_A = k8s.vmi("imported-vms", "vm-a", "worker-1")
INVALID = "invalid-network-definition"


def vmnet_a_with(subnets=("192.168.100.0/24", "fd10:100::/64"), **kw):
    return k8s.cudn_layer2("vmnet-a", subnets, labels=ADV, **kw)


def test_the_okep_5233_example_is_a_valid_definition():
    cudn = vmnet_a_with(
        ["192.168.100.0/24"],
        infrastructure_subnets=["192.168.100.0/30"],
        reserved_subnets=["192.168.100.200/29"],
        default_gateway_ips=["192.168.100.2"],
    )
    p = plan(k8s.state(NODES, cudn, CLAIM_A, VMI_A), k8s.config())
    assert routes(p) == {
        ("192.168.100.0/24", "self", "subnet", "vmnet-a"),
        ("192.168.100.5/32", "10.0.0.11", "host", "vmnet-a"),
    }
    assert p.rejected == ()


@pytest.mark.parametrize(
    ("cudn", "cudn_refusals"),
    [
        # subnets: 1 or 2 CIDRs, of different families, never a default route, a special range or a host route
        pytest.param(
            vmnet_a_with(["0.0.0.0/0", "::/0"]), {("0.0.0.0/0", INVALID), ("::/0", INVALID)}, id="default-routes"
        ),
        pytest.param(vmnet_a_with(["127.0.0.0/8"]), {("127.0.0.0/8", INVALID)}, id="loopback"),
        pytest.param(vmnet_a_with(["169.254.0.0/16"]), {("169.254.0.0/16", INVALID)}, id="link-local"),
        pytest.param(vmnet_a_with(["224.0.0.0/24"]), {("224.0.0.0/24", INVALID)}, id="multicast"),
        pytest.param(vmnet_a_with(["0.0.0.0/8"]), {("0.0.0.0/8", INVALID)}, id="this-network"),
        pytest.param(vmnet_a_with(["128.0.0.0/1"]), {("128.0.0.0/1", INVALID)}, id="covers-link-local-and-multicast"),
        pytest.param(vmnet_a_with(["192.168.100.0/24", "fe80::/64"]), {("fe80::/64", INVALID)}, id="ipv6-link-local"),
        pytest.param(vmnet_a_with(["192.168.100.0/24", "ff02::/64"]), {("ff02::/64", INVALID)}, id="ipv6-multicast"),
        pytest.param(vmnet_a_with(["::ffff:0:0/96"]), {("::ffff:0:0/96", INVALID)}, id="ipv4-mapped-ipv6"),
        pytest.param(vmnet_a_with(["192.168.100.5/32"]), {("192.168.100.5/32", INVALID)}, id="host-sized-ipv4"),
        pytest.param(
            vmnet_a_with(["192.168.100.0/24", "fd10:100::5/128"]), {("fd10:100::5/128", INVALID)}, id="host-sized-v6"
        ),
        pytest.param(
            vmnet_a_with(["192.168.100.0/24", "192.168.101.0/24"]),
            {("['192.168.100.0/24', '192.168.101.0/24']", INVALID)},
            id="two-subnets-of-one-family",
        ),
        pytest.param(
            vmnet_a_with(["192.168.100.0/24", "fd10:100::/64", "192.168.101.0/24"]),
            {("3 entries", INVALID)},
            id="three-subnets",
        ),
        pytest.param(vmnet_a_with([]), {("0 entries", INVALID)}, id="empty-subnets"),
        pytest.param(vmnet_a_with(None), {("None", INVALID)}, id="no-subnets-with-ipam-enabled"),
        # defaultGatewayIPs: one per subnet (family), each inside a subnet, and inside infrastructureSubnets if set
        pytest.param(
            vmnet_a_with(default_gateway_ips=["192.168.200.1", "fd10:100::1"]),
            {("192.168.200.1", INVALID)},
            id="gateway-outside-the-subnets",
        ),
        pytest.param(
            vmnet_a_with(default_gateway_ips=["192.168.100.1"]),
            {("['192.168.100.1']", INVALID)},
            id="no-gateway-for-the-ipv6-subnet",
        ),
        pytest.param(
            vmnet_a_with(default_gateway_ips=["192.168.100.1", "192.168.100.2"]),
            {("['192.168.100.1', '192.168.100.2']", INVALID)},
            id="two-gateways-of-one-family",
        ),
        pytest.param(
            vmnet_a_with(["192.168.100.0/24"], default_gateway_ips=["192.168.100.1/24"]),
            {("192.168.100.1/24", "malformed-address")},
            id="gateway-with-a-prefix-length",
        ),
        pytest.param(
            vmnet_a_with(
                ["192.168.100.0/24"], infrastructure_subnets=["192.168.100.0/30"], default_gateway_ips=["192.168.100.9"]
            ),
            {("192.168.100.9", INVALID)},
            id="gateway-outside-the-infrastructure-subnets",
        ),
        # infrastructureSubnets / reservedSubnets: masked, inside the subnets, not overlapping each other
        pytest.param(
            vmnet_a_with(infrastructure_subnets=["192.168.200.0/30"]),
            {("192.168.200.0/30", INVALID)},
            id="infrastructure-outside-the-subnets",
        ),
        pytest.param(
            vmnet_a_with(infrastructure_subnets=["192.168.100.1/30"]),
            {("192.168.100.1/30", INVALID)},
            id="infrastructure-with-host-bits",
        ),
        pytest.param(
            vmnet_a_with(reserved_subnets=["10.0.0.0/29"]), {("10.0.0.0/29", INVALID)}, id="reserved-outside-subnets"
        ),
        pytest.param(
            vmnet_a_with(reserved_subnets=["192.168.100.200/28"]),
            {("192.168.100.200/28", INVALID)},
            id="reserved-with-host-bits",
        ),
        pytest.param(
            vmnet_a_with(infrastructure_subnets=["192.168.100.0/29"], reserved_subnets=["192.168.100.0/30"]),
            {("192.168.100.0/30", INVALID)},
            id="reserved-overlaps-infrastructure",
        ),
        pytest.param(
            vmnet_a_with(infrastructure_subnets=[f"192.168.100.{4 * i}/30" for i in range(5)]),
            {("5 entries", INVALID)},
            id="five-infrastructure-subnets",
        ),
    ],
)
def test_invalid_layer2_definition_refuses_the_cudn_whole_with_every_claim_on_it(cudn, cudn_refusals):
    p = plan(k8s.state(NODES, cudn, CLAIM_A, VMI_A), k8s.config())
    assert p.routes == ()
    assert refused(p) == {
        *(("ClusterUserDefinedNetwork vmnet-a", value, reason) for value, reason in cudn_refusals),
        ("IPAMClaim imported-vms/vm-a.default", "cluster_udn_vmnet-a", INVALID),
    }


def test_ipam_less_secondary_layer2_network_needs_no_subnets_and_announces_none():
    cudn = vmnet_a_with(None, ipam_mode="Disabled", role="Secondary")
    p = plan(k8s.state(NODES, cudn), k8s.config())
    assert p.routes == ()
    assert p.rejected == ()


def test_primary_network_with_ipam_disabled_is_an_invalid_definition():
    # the CRD allows ipam.mode Disabled only on Secondary networks: no address is read from the primary interface
    cudn = vmnet_a_with(["192.168.100.0/24"], ipam_mode="Disabled")
    p = plan(k8s.state(NODES, cudn), k8s.config())
    assert p.routes == ()
    assert {(str(r.source), r.value, r.reason) for r in p.rejected} == {
        ("ClusterUserDefinedNetwork vmnet-a", "Disabled", INVALID)
    }


def l3(subnets, **kw):
    return k8s.cudn_layer3("vmnet-l3", subnets, labels=ADV, **kw)


def l3_node(name: str, ipv4: str, *host_subnets: str, created: str = k8s.DEFAULT_CREATED):
    return k8s.node(name, ipv4, node_subnets={"cluster_udn_vmnet-l3": list(host_subnets)}, created=created)


@pytest.mark.parametrize(
    ("subnets", "cudn_refusals"),
    [
        pytest.param([("10.132.0.0/16", "24")], {("24", INVALID)}, id="host-subnet-is-a-string"),
        pytest.param([("10.132.0.0/16", True)], {("True", INVALID)}, id="host-subnet-is-a-bool"),
        pytest.param([("10.132.0.0/16", 16)], {("16", INVALID)}, id="host-subnet-not-longer-than-the-cidr"),
        pytest.param([("10.132.0.0/16", 8)], {("8", INVALID)}, id="host-subnet-shorter-than-the-cidr"),
        pytest.param([("10.132.0.0/16", 32)], {("32", INVALID)}, id="ipv4-host-subnet-of-32"),
        pytest.param([("fd10:132::/48", 128)], {("128", INVALID)}, id="ipv6-host-subnet-of-128"),
        # the CRD accepts it, OVN-K's subnet parser does not: the network never gets host subnets
        pytest.param([("fd10:132::/48", 80)], {("80", INVALID)}, id="ipv6-host-subnet-other-than-64"),
        pytest.param([("fd10:132::/64", None)], {("fd10:132::/64", INVALID)}, id="default-64-not-longer-than-a-64"),
        pytest.param([("10.132.0.0/16", 0)], {("0", INVALID)}, id="host-subnet-zero"),
        pytest.param([("10.132.0.0/24", None)], {("10.132.0.0/24", INVALID)}, id="default-24-not-longer-than-a-24"),
        pytest.param(
            [("10.132.0.0/16", 24), ("10.132.128.0/17", 24)], {("10.132.128.0/17", INVALID)}, id="overlapping-cidrs"
        ),
        pytest.param([("10.132.0.0/16", 24), ("10.132.0.0/16", 24)], {("10.132.0.0/16", INVALID)}, id="same-cidr"),
        pytest.param(
            [("10.132.0.0/16", 24), ("10.133.0.0/16", 25)], {("10.133.0.0/16", INVALID)}, id="one-family-two-lengths"
        ),
        pytest.param([("0.0.0.0/0", 24)], {("0.0.0.0/0", INVALID)}, id="default-route"),
        pytest.param([("169.254.0.0/16", 24)], {("169.254.0.0/16", INVALID)}, id="link-local"),
        pytest.param([], {("0 entries", INVALID)}, id="no-subnets"),
    ],
)
def test_invalid_layer3_definition_refuses_the_cudn_whole(subnets, cudn_refusals):
    node = l3_node("worker-1", "10.0.0.11", "10.132.1.0/24")
    p = plan(k8s.state(node, l3(subnets)), k8s.config())
    assert p.routes == ()
    assert refused(p) == {("ClusterUserDefinedNetwork vmnet-l3", value, reason) for value, reason in cudn_refusals}


@pytest.mark.parametrize(
    ("cidr", "host_subnet", "accepted", "refused_length"),
    [
        pytest.param("10.132.0.0/16", "10.132.1.0/24", True, None, id="ipv4-defaults-to-24"),
        pytest.param("10.132.0.0/16", "10.132.1.0/25", False, 24, id="ipv4-not-a-24"),
        pytest.param("fd10:132::/48", "fd10:132:0:1::/64", True, None, id="ipv6-defaults-to-64"),
        pytest.param("fd10:132::/48", "fd10:132:0:1::/80", False, 64, id="ipv6-not-a-64"),
    ],
)
def test_layer3_subnet_without_host_subnet_takes_ovn_k_defaults(cidr, host_subnet, accepted, refused_length):
    node = k8s.node("worker-1", "10.0.0.11", "fd00::11", node_subnets={"cluster_udn_vmnet-l3": [host_subnet]})
    p = plan(k8s.state(node, l3([(cidr, None)])), k8s.config())
    if accepted:
        assert routes(p) == {(host_subnet, "10.0.0.11" if "." in cidr else "fd00::11", "subnet", "vmnet-l3")}
        assert p.rejected == ()
    else:
        assert p.routes == ()
        assert {(x.value, x.reason) for x in p.rejected} == {(host_subnet, "malformed-address")}
        assert f"is not a /{refused_length}" in p.rejected[0].message


# --- host subnets named by two nodes: the older node keeps it -----------------------------------------------------


@pytest.mark.parametrize(
    ("created_1", "created_2", "keeper"),
    [
        pytest.param("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z", "worker-1", id="worker-1-older"),
        pytest.param("2025-03-01T00:00:00Z", "2025-02-01T00:00:00Z", "worker-2", id="worker-2-older"),
        pytest.param(k8s.DEFAULT_CREATED, k8s.DEFAULT_CREATED, "worker-1", id="same-age-name-decides"),
    ],
)
def test_host_subnet_named_by_two_nodes_goes_to_the_older_node(created_1, created_2, keeper):
    nodes = [
        l3_node("worker-1", "10.0.0.11", "10.132.1.0/24", created=created_1),
        l3_node("worker-2", "10.0.0.12", "10.132.1.0/24", "10.132.2.0/24", created=created_2),
    ]
    p = plan(k8s.state(nodes, l3([("10.132.0.0/16", 24)])), k8s.config())
    loser = "worker-2" if keeper == "worker-1" else "worker-1"
    assert routes(p) == {
        ("10.132.1.0/24", {"worker-1": "10.0.0.11", "worker-2": "10.0.0.12"}[keeper], "subnet", "vmnet-l3"),
        ("10.132.2.0/24", "10.0.0.12", "subnet", "vmnet-l3"),
    }
    assert refused(p) == {(f"Node {loser}", "10.132.1.0/24", "host-subnet-conflict")}
    assert f"node {keeper}, which is older" in p.rejected[0].message


def test_node_naming_its_host_subnet_twice_gets_one_route_and_no_refusal():
    node = l3_node("worker-1", "10.0.0.11", "10.132.1.0/24", "10.132.1.0/24")
    p = plan(k8s.state(node, l3([("10.132.0.0/16", 24)])), k8s.config())
    assert routes(p) == {("10.132.1.0/24", "10.0.0.11", "subnet", "vmnet-l3")}
    assert p.rejected == ()


# --- overlapping selected networks: the older network keeps the space --------------------------------------------


def test_overlapping_networks_the_older_keeps_the_space_the_younger_is_refused_with_its_claims():
    older = k8s.cudn_layer2("vmnet-old", ["192.168.100.0/24"], labels=ADV, created_at="2025-01-01T00:00:00Z")
    younger = k8s.cudn_layer2(
        "vmnet-a", ["192.168.100.128/25", "fd10:100::/64"], labels=ADV, created_at="2025-02-01T00:00:00Z"
    )
    p = plan(k8s.state(NODES, older, younger, CLAIM_A, VMI_A), k8s.config())
    assert routes(p) == {("192.168.100.0/24", "self", "subnet", "vmnet-old")}
    assert refused(p) == {
        ("ClusterUserDefinedNetwork vmnet-a", "192.168.100.128/25", "network-overlap"),
        ("IPAMClaim imported-vms/vm-a.default", "cluster_udn_vmnet-a", "network-overlap"),
    }
    assert "CUDN vmnet-old, which is older" in p.rejected[0].message


def test_identical_subnets_of_two_networks_are_announced_once():
    a = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, created_at="2025-02-01T00:00:00Z")
    b = k8s.cudn_layer2("vmnet-b", ["192.168.100.0/24"], labels=ADV, created_at="2025-01-01T00:00:00Z")
    p = plan(k8s.state(NODES, a, b), k8s.config())
    assert routes(p) == {("192.168.100.0/24", "self", "subnet", "vmnet-b")}
    assert refused(p) == {("ClusterUserDefinedNetwork vmnet-a", "192.168.100.0/24", "network-overlap")}


def test_layer3_cidr_overlapping_a_layer2_subnet_is_an_overlap_too():
    layer2 = k8s.cudn_layer2("vmnet-a", ["10.132.5.0/24"], labels=ADV, created_at="2025-03-01T00:00:00Z")
    layer3 = l3([("10.132.0.0/16", 24)], created_at="2025-01-01T00:00:00Z")
    node = l3_node("worker-1", "10.0.0.11", "10.132.1.0/24")
    p = plan(k8s.state(node, layer2, layer3), k8s.config())
    assert routes(p) == {("10.132.1.0/24", "10.0.0.11", "subnet", "vmnet-l3")}
    assert refused(p) == {("ClusterUserDefinedNetwork vmnet-a", "10.132.5.0/24", "network-overlap")}


def test_a_network_without_creation_timestamp_is_the_younger():
    a = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV)
    del a["metadata"]["creationTimestamp"]
    z = k8s.cudn_layer2("vmnet-z", ["192.168.100.0/24"], labels=ADV)
    p = plan(k8s.state(NODES, a, z), k8s.config())
    assert routes(p) == {("192.168.100.0/24", "self", "subnet", "vmnet-z")}
    assert refused(p) == {("ClusterUserDefinedNetwork vmnet-a", "192.168.100.0/24", "network-overlap")}


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(k8s.cudn_layer2("vmnet-z", ["192.168.100.0/24"], labels={"team": "lab"}), id="not-selected"),
        pytest.param(
            k8s.cudn_layer2(
                "vmnet-z", ["192.168.100.0/24"], labels=ADV, deleting=True, created_at="2024-01-01T00:00:00Z"
            ),
            id="being-deleted",
        ),
        pytest.param(
            k8s.cudn_layer2(
                "vmnet-z", ["192.168.100.0/24", "10.0.0.0/8"], labels=ADV, created_at="2024-01-01T00:00:00Z"
            ),
            id="invalid-older",
        ),
    ],
)
def test_only_selected_valid_networks_hold_address_space(other):
    p = plan(k8s.state(NODES, vmnet_a(created_at="2025-02-01T00:00:00Z"), other), k8s.config())
    assert ("192.168.100.0/24", "self", "subnet", "vmnet-a") in routes(p)
    assert all(x.reason != "network-overlap" for x in p.rejected)


@pytest.mark.parametrize(
    ("subnets", "config_overrides", "covered"),
    [
        pytest.param(["10.0.0.0/24"], {}, "BGP peer 10.0.0.1", id="the-tor-address"),
        pytest.param(
            ["10.1.0.0/24"],
            {"peers": [{"address": "10.0.0.1", "asn": 64512, "localAddress": "10.1.0.11"}]},
            "the local address 10.1.0.11",
            id="the-session-local-address",
        ),
        pytest.param(["10.2.0.0/24"], {"nextHopSelf": {"ipv4": "10.2.0.11"}}, "the nextHopSelf address", id="self"),
    ],
)
def test_a_network_covering_a_bgp_session_address_is_refused_whole_and_the_nodes_keep_their_next_hops(
    subnets, config_overrides, covered
):
    # a CUDN laid over the fabric's own network (the ToR's link) would pull the ToR's connected network into the
    # cluster; the older valid network keeps being announced, with the nodes as next hops
    fabric = k8s.cudn_layer2("fabric", subnets, labels=ADV, created_at="2024-01-01T00:00:00Z")
    p = plan(
        k8s.state(NODES, fabric, k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV), CLAIM_A, VMI_A),
        k8s.config(**config_overrides),
    )
    assert ("ClusterUserDefinedNetwork fabric", subnets[0], "contains-peer-address") in refused(p)
    assert not any(r.network == "fabric" for r in p.routes)
    assert {(str(r.prefix), str(r.next_hop)) for r in p.routes if r.kind == "host"} == {
        ("192.168.100.5/32", "10.0.0.11")
    }
    assert covered in next(r.message for r in p.rejected if r.source.name == "fabric")
