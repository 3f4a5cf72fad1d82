"""Planner, nodes: which node address is a next hop, and what happens when a node has none that may be.

Scope: the sources of a node's address (InternalIP, then the `k8s.ovn.org/node-primary-ifaddr` annotation), the
addresses that are never a next hop (loopback, link-local, multicast, broadcast, unspecified, IPv4-mapped IPv6,
every special-purpose range the table refuses for next hops (documentation, benchmarking, reserved, NAT64, 6to4,
Teredo, ORCHIDv2), a BGP peer's own address) and the fallback to the next valid source of the family, the refusal
`invalid-node-address` (rather than `no-node-address`) when every candidate of a family was invalid, for VM host
routes and Layer3 host subnets alike, and networks holding a node's own address (refused whole,
`overlaps-node-network`: the node's addresses stay next hops of every other network).
"""

from __future__ import annotations

import json

import pytest

from bgpadv.planner import plan
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import refused

ADV = k8s.ADVERTISED
VMNET_A = k8s.cudn_layer2(
    "vmnet-a",
    ["192.168.100.0/24", "fd10:100::/64"],
    labels=ADV,
    infrastructure_subnets=["192.168.100.0/30", "fd10:100::/126"],
    default_gateway_ips=["192.168.100.1", "fd10:100::1"],
)
CLAIM = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.205/24", "fd10:100::cd/64"])
VMI = k8s.vmi(NS, "vm-a", "worker-1")


def next_hops(p) -> set[tuple[str, str]]:
    """(host prefix, next hop) of every host route."""
    return {(str(r.prefix), str(r.next_hop)) for r in p.routes if str(r.kind) == "host"}


def worker_1(ipv4: str | None, ipv6: str | None, ifaddr: dict[str, str] | None = None) -> dict:
    """worker-1 with the given InternalIPs and, when given, that node-primary-ifaddr annotation (else none)."""
    node = k8s.node("worker-1", ipv4, ipv6, primary_ifaddr=False)
    if ifaddr is not None:
        node["metadata"]["annotations"]["k8s.ovn.org/node-primary-ifaddr"] = json.dumps(ifaddr)
    return node


@pytest.mark.parametrize(
    "ipv4",
    [
        pytest.param("127.0.0.1", id="loopback"),
        pytest.param("169.254.10.1", id="link-local"),
        pytest.param("224.0.0.5", id="multicast"),
        pytest.param("255.255.255.255", id="broadcast"),
        pytest.param("0.0.0.0", id="unspecified"),
        pytest.param("10.0.0.1", id="the-bgp-peers-address"),
        pytest.param("192.0.2.11", id="documentation"),
        pytest.param("198.18.0.11", id="benchmarking"),
        pytest.param("240.0.0.11", id="reserved"),
        pytest.param("192.0.0.11", id="ietf-protocol-assignments"),
    ],
)
def test_invalid_ipv4_internal_ip_is_skipped_for_the_primary_ifaddr_address(ipv4):
    node = worker_1(ipv4, "fd00::11", {"ipv4": "10.0.0.11/24"})
    p = plan(k8s.state(node, VMNET_A, CLAIM, VMI), k8s.config())
    assert next_hops(p) == {("192.168.100.205/32", "10.0.0.11"), ("fd10:100::cd/128", "fd00::11")}


@pytest.mark.parametrize(
    "ipv6",
    [
        pytest.param("::1", id="loopback"),
        pytest.param("fe80::1", id="link-local"),
        pytest.param("ff02::1", id="multicast"),
        pytest.param("::", id="unspecified"),
        pytest.param("::ffff:10.0.0.11", id="ipv4-mapped"),
        pytest.param("64:ff9b::a00:b", id="nat64"),
        pytest.param("2002:a00:b::1", id="6to4"),
        pytest.param("2001:0:a00:b::1", id="teredo"),
        pytest.param("2001:db8::11", id="documentation"),
        pytest.param("3fff::11", id="documentation-rfc9637"),
        pytest.param("2001:20::11", id="orchid-v2"),
    ],
)
def test_invalid_ipv6_internal_ip_is_skipped_for_the_primary_ifaddr_address(ipv6):
    node = worker_1("10.0.0.11", ipv6, {"ipv6": "fd00::11/64"})
    p = plan(k8s.state(node, VMNET_A, CLAIM, VMI), k8s.config())
    assert next_hops(p) == {("192.168.100.205/32", "10.0.0.11"), ("fd10:100::cd/128", "fd00::11")}


def test_a_second_internal_ip_of_the_family_is_the_next_valid_source():
    node = worker_1("169.254.0.2", "fd00::11")
    node["status"]["addresses"].append({"type": "InternalIP", "address": "10.0.0.11"})
    p = plan(k8s.state(node, VMNET_A, CLAIM, VMI), k8s.config())
    assert next_hops(p) == {("192.168.100.205/32", "10.0.0.11"), ("fd10:100::cd/128", "fd00::11")}


@pytest.mark.parametrize(
    ("node", "refusal_value", "message_part"),
    [
        pytest.param(
            worker_1("127.0.0.1", "fd00::11"), "192.168.100.205/24", "127.0.0.1 is loopback", id="only-loopback"
        ),
        pytest.param(
            worker_1("169.254.10.1", "fd00::11", {"ipv4": "224.0.0.5/24"}),
            "192.168.100.205/24",
            "169.254.10.1 is link-local",
            id="both-sources-invalid-the-first-is-named",
        ),
        pytest.param(
            worker_1("10.0.0.1", "fd00::11"),
            "192.168.100.205/24",
            "10.0.0.1 is BGP peer 10.0.0.1, never a next hop",
            id="the-tors-own-address",
        ),
        pytest.param(
            worker_1("198.51.100.11", "fd00::11"),
            "192.168.100.205/24",
            "documentation (TEST-NET-2, 198.51.100.0/24)",
            id="documentation",
        ),
        pytest.param(
            worker_1("10.0.0.11", "::ffff:10.0.0.11"), "fd10:100::cd/64", "IPv4-mapped IPv6", id="ipv4-mapped-only"
        ),
    ],
)
def test_route_to_a_node_whose_addresses_of_the_family_are_all_invalid_is_refused(node, refusal_value, message_part):
    p = plan(k8s.state(node, VMNET_A, CLAIM, VMI), k8s.config())
    refusals = [x for x in p.rejected if x.reason == "invalid-node-address"]
    assert refused(p) == {("IPAMClaim imported-vms/vm-a.default", refusal_value, "invalid-node-address")}
    assert message_part in refusals[0].message
    assert len(next_hops(p)) == 1  # the other family still goes


def test_a_node_without_any_address_of_the_family_is_still_no_node_address():
    node = worker_1("10.0.0.11", None)
    p = plan(k8s.state(node, VMNET_A, CLAIM, VMI), k8s.config())
    assert refused(p) == {("IPAMClaim imported-vms/vm-a.default", "fd10:100::cd/64", "no-node-address")}


def test_layer3_host_subnet_toward_a_node_with_only_invalid_addresses_is_refused():
    node = k8s.node("worker-1", "127.0.0.1", node_subnets={"cluster_udn_vmnet-l3": "10.132.1.0/24"})
    node["metadata"]["annotations"]["k8s.ovn.org/node-primary-ifaddr"] = json.dumps({"ipv4": "169.254.0.1/16"})
    cudn = k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=ADV)
    p = plan(k8s.state(node, cudn), k8s.config())
    assert p.routes == ()
    assert refused(p) == {("Node worker-1", "10.132.1.0/24", "invalid-node-address")}


def test_a_layer3_network_whose_cidr_holds_a_node_address_is_refused_whole():
    # worker-1's host subnet 10.132.1.0/24 contains its own InternalIP: the cidr (and so the host subnet) is node space
    node = k8s.node("worker-1", "10.132.1.1", node_subnets={"cluster_udn_vmnet-l3": "10.132.1.0/24"})
    cudn = k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=ADV)
    p = plan(k8s.state(node, cudn), k8s.config())
    assert p.routes == ()
    assert refused(p) == {("ClusterUserDefinedNetwork vmnet-l3", "10.132.0.0/16", "overlaps-node-network")}


# --- a VM address that is a node's address ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("internal-ip", id="another-nodes-internal-ip"),
        pytest.param("host-cidrs", id="an-address-in-host-cidrs"),
    ],
)
def test_a_network_holding_a_node_address_is_refused_whole_whatever_its_vms_claim(where):
    # a CUDN covering the node network: worker-2 has 192.168.100.12, and a VM claims it
    worker_2 = k8s.node("worker-2", "10.0.0.12", "fd00::12")
    if where == "internal-ip":
        worker_2["status"]["addresses"].insert(0, {"type": "InternalIP", "address": "192.168.100.12"})
    else:
        worker_2["metadata"]["annotations"]["k8s.ovn.org/host-cidrs"] = json.dumps(
            ["10.0.0.12/24", "192.168.100.12/32"]
        )
    claim = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.12/24", "fd10:100::cd/64"])
    nodes = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), worker_2]
    for next_hop in ("node", "self"):
        p = plan(k8s.state(nodes, VMNET_A, claim, VMI), k8s.config(nextHop=next_hop))
        assert p.routes == ()
        assert refused(p) == {
            ("ClusterUserDefinedNetwork vmnet-a", "192.168.100.0/24", "overlaps-node-network"),
            ("IPAMClaim imported-vms/vm-a.default", "cluster_udn_vmnet-a", "overlaps-node-network"),
        }
        assert "the address 192.168.100.12 of node worker-2" in p.rejected[0].message


def test_a_network_holding_a_node_address_is_refused_even_while_no_vm_runs_on_it():
    claim = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.12/24"])
    node = k8s.node("worker-1", "10.0.0.11")
    node["status"]["addresses"].append({"type": "InternalIP", "address": "192.168.100.12"})
    stopped = k8s.vmi(NS, "vm-a", "worker-1", phase="Succeeded")
    p = plan(k8s.state(node, VMNET_A, claim, stopped), k8s.config())
    assert p.routes == ()
    assert {x.reason for x in p.rejected} == {"overlaps-node-network"}
