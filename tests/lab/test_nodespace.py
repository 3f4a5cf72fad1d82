"""A CUDN over node and infrastructure space, against a real FRR ToR: refused whole, and no other network notices.

Scope: fake Kubernetes API → `bgpadv run` (in worker-1) → FRR ToR. Two good networks (Layer2 vmnet-a with VMs on
both workers, Layer2 vmnet-b with one VM) are at the ToR; then CUDNs laid over the node network (a /29 of the ToR's
10.0.0.0/24, older than every other network, with a VM of its own), over OVN-K's join subnet and over the NAT64
prefix are created. Every assertion reads FRR's BGP table (`show bgp ipv4|ipv6 unicast json`): the bad networks'
prefixes never reach it, and every other network's routes stay with their next hops, before and after.
"""

from __future__ import annotations

import sys

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
ADV = k8s.ADVERTISED
OLD = "2024-01-01T00:00:00Z"

GOOD_V4 = {
    "192.168.100.0/24": [W1],  # vmnet-a's subnet, next hop self (the session's address)
    "192.168.100.10/32": [W1],
    "192.168.100.11/32": [W2],
    "10.100.0.0/24": [W1],
    "10.100.0.10/32": [W2],
}


def _vm(name: str, network: str, ips: list[str], node: str, created: str = k8s.DEFAULT_CREATED) -> list[dict]:
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, f"cluster_udn_{network}", ips, created=created),
        k8s.vmi(NS, name, node, created=created),
    ]


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, "fd00::11", pod_subnets=["10.128.0.0/23"], ovn_internal=True),
        k8s.node("worker-2", W2, "fd00::12", pod_subnets=["10.128.2.0/23"], ovn_internal=True),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV),
        k8s.cudn_layer2("vmnet-b", ["10.100.0.0/24"], labels=ADV),
        *_vm("vm-a", "vmnet-a", ["192.168.100.10/24"], "worker-1"),
        *_vm("vm-b", "vmnet-a", ["192.168.100.11/24"], "worker-2"),
        *_vm("vm-c", "vmnet-b", ["10.100.0.10/24"], "worker-2"),
    ]


def ipv4(frr: FrrRouter) -> dict[str, list[str]]:
    return frr.bgp_routes("ipv4")


@pytest.fixture(scope="module")
def chain():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpnsp") as lab:
        config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig")
        with BgpadvInLab(lab, cluster(), config=config) as running:
            running.frr.wait_for(lambda: ipv4(running.frr) == GOOD_V4, 60, f"the good networks at the ToR: {GOOD_V4}")
            yield running


def test_a_cudn_over_the_node_network_is_refused_and_every_other_networks_vms_stay(chain):
    frr = chain.frr
    # older than every other network, with a VM of its own on worker-2: it takes nothing from anyone
    chain.api.create(k8s.cudn_layer2("infra", ["10.0.0.8/29"], labels=ADV, created_at=OLD))
    for obj in _vm("vm-infra", "infra", ["10.0.0.9/29"], "worker-2", created=OLD):
        chain.api.create(obj)
    # a marker VM created afterwards: once it is at the ToR, bgpadv has planned with the bad network
    for obj in _vm("vm-marker", "vmnet-a", ["192.168.100.20/24"], "worker-1"):
        chain.api.create(obj)
    expected = {**GOOD_V4, "192.168.100.20/32": [W1]}
    frr.wait_for(lambda: ipv4(frr) == expected, 30, f"the good networks and the marker only: {expected}")
    assert "10.0.0.8/29" not in ipv4(frr) and "10.0.0.9/32" not in ipv4(frr)


def test_cudns_over_ovn_k_join_space_and_nat64_never_reach_the_tor(chain):
    frr = chain.frr
    chain.api.create(k8s.cudn_layer2("joinnet", ["100.64.0.0/24"], labels=ADV, created_at=OLD))
    chain.api.create(k8s.cudn_layer2("nat64", ["64:ff9b::/96"], labels=ADV, created_at=OLD))
    for obj in _vm("vm-join", "joinnet", ["100.64.0.10/24"], "worker-1", created=OLD):
        chain.api.create(obj)
    for obj in _vm("vm-marker2", "vmnet-b", ["10.100.0.20/24"], "worker-1"):
        chain.api.create(obj)
    frr.wait_for(lambda: "10.100.0.20/32" in ipv4(frr), 30, "the second marker at the ToR")
    routes = ipv4(frr)
    assert not [p for p in routes if p.startswith("100.64.")]
    assert frr.bgp_routes("ipv6") == {}
    assert {p: routes[p] for p in GOOD_V4} == GOOD_V4
