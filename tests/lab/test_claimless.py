"""A VM without an IPAMClaim, through the whole chain: fake API → `bgpadv run` → the real FRR ToR.

Scope (VMs without an IPAMClaim): on a primary Layer2 CUDN without persistent IPs, a VM has no claim; OVN-K writes its
address in the launcher pod's `k8s.ovn.org/pod-networks` annotation (`bgpadv_lab.objects.pod_networks`, the shape of
go-controller/pkg/util/pod_annotation.go). The ToR gets the /32 at the VM's node, and the route follows when the
pod's address or node changes. Every assertion reads FRR's BGP table JSON (`show bgp ipv4 unicast json`).
"""

from __future__ import annotations

import json
import sys

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
ADVERTISED = {"bgpadv.io/advertise": "true"}
POD_NETWORKS = "k8s.ovn.org/pod-networks"


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, "fd00::11"),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.namespace(NS),
        # a primary Layer2 CUDN without persistent IPs (ipam.lifecycle unset): OVN-K assigns, no IPAMClaim exists
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADVERTISED, namespaces=[NS]),
        k8s.vmi(NS, "vm-p", "worker-1"),
    ]


def launcher(api, vm: str, node: str, suffix: str, ips: list[str], *, runs_for: str | None = None) -> dict:
    """The launcher pod virt-controller creates for VMI `runs_for` (default `vm`), bound to the uid the API server
    gave that VMI (ownerReference and `kubevirt.io/created-by`), with OVN-K's annotation for `ips`."""
    pod = k8s.launcher_pod(NS, vm, node, suffix=suffix, ips=ips, nad="vmnet-a", runs_for=runs_for)
    vmi = api.get("kubevirt.io/v1", "VirtualMachineInstance", runs_for or vm, NS)
    return k8s.owned_by(pod, vmi["metadata"]["uid"] if vmi is not None else "")


@pytest.fixture(scope="module")
def chain():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpnoclaim") as lab, BgpadvInLab(lab, cluster()) as running:
        running.frr.wait_route("192.168.100.0/24", [W1], timeout=90)
        running.api.create(launcher(running.api, "vm-p", "worker-1", "a1b2c", ["192.168.100.30/24"]))
        running.frr.wait_route("192.168.100.30/32", [W1], timeout=30)
        yield running


def test_a_vm_without_a_claim_gets_its_host_route_at_its_node(chain):
    assert chain.frr.best_next_hops("192.168.100.30/32") == [W1]
    assert chain.frr.best_next_hops("192.168.100.0/24") == [W1]


def test_the_route_follows_the_pods_address(chain):
    frr = chain.frr
    annotation = json.dumps(k8s.pod_networks(NS, "vmnet-a", ["192.168.100.31/24"]), separators=(",", ":"))
    chain.api.patch(
        "v1", "Pod", "virt-launcher-vm-p-a1b2c", NS, {"metadata": {"annotations": {POD_NETWORKS: annotation}}}
    )
    frr.wait_route("192.168.100.31/32", [W1])
    frr.wait_route("192.168.100.30/32", None)


def test_the_route_follows_the_vm_to_another_node(chain):
    """The VM is restarted on worker-2: a new launcher pod there (OVN-K assigns it an address), the old pod gone."""
    frr = chain.frr
    chain.api.delete("v1", "Pod", "virt-launcher-vm-p-a1b2c", NS)
    chain.api.create(launcher(chain.api, "vm-p", "worker-2", "d3e4f", ["192.168.100.31/24"]))
    chain.api.patch_status("kubevirt.io/v1", "VirtualMachineInstance", "vm-p", NS, {"status": {"nodeName": "worker-2"}})
    frr.wait_route("192.168.100.31/32", [W2])


def test_a_pod_of_another_vm_carrying_this_vms_domain_announces_nothing(chain):
    frr = chain.frr
    chain.api.create(k8s.vmi(NS, "vm-intruder", "worker-1", phase="Scheduling"))
    chain.api.create(launcher(chain.api, "vm-p", "worker-1", "f0rg3", ["192.168.100.40/24"], runs_for="vm-intruder"))
    chain.api.create(k8s.vmi(NS, "vm-q", "worker-1"))
    chain.api.create(launcher(chain.api, "vm-q", "worker-1", "q1q1q", ["192.168.100.41/24"]))
    frr.wait_route("192.168.100.41/32", [W1])  # a later change is through: the forged pod was planned before it
    assert frr.best_next_hops("192.168.100.40/32") is None
    assert frr.best_next_hops("192.168.100.31/32") == [W2]
