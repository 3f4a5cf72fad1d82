"""The import guard against a real FRR fabric: a default route with a bad next hop beside a good one.

Scope (a bad path from one ToR never becomes the VM's egress): two ToRs (FRR in two namespaces on the same node subnet,
10.0.0.1 and 10.0.0.2, both AS 64512) send worker-1 the default route. ToR 1's path is good (next hop itself). ToR 2's
outbound route map sets a bad next hop: worker-2's address (a node: the egress of worker-1's VMs would be sent to
another node) or a VM's address (192.168.100.10, inside the selected network vmnet-a: without the guard the whole
multipath replace would fail, the bad path poisoning the good one). Only ToR 1's path is in the kernel table of the
import network (asserted with `ip route show table 1001` in worker-1's namespace), the refusal is visible in `bgpadv
status` with its reason; when ToR 2 sends a good next hop again (itself), both paths are one multipath route, so the
single path before was the guard's doing.

This kernel has no VRF devices (shared reference lab-kernel.md): table 1001, named in `importRoutes.networks[].
table`, stands in for the VRF's (as in test_egress.py).
"""

from __future__ import annotations

import sys

import pytest

from bgpadv.core import reasons
from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import TOR_V4, Lab
from tests.lab.test_egress_nodes import imported as imported_in

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
TOR2 = "10.0.0.2"
VM_IP = "192.168.100.10"
ADVERTISED = {"bgpadv.io/advertise": "true"}
DEFAULT = "0.0.0.0/0"
TABLE = 1001


def imported(ns: str) -> dict[str, list[str]]:
    """The protocol-186 routes of the import network's table in `ns` (`ip -j route show table 1001`)."""
    return imported_in(ns, TABLE)


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, "fd00::11"),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADVERTISED),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", [f"{VM_IP}/24"]),
        k8s.vmi(NS, "vm-a", "worker-1", "Running", interfaces=[k8s.interface([VM_IP])]),
    ]


@pytest.fixture(scope="module")
def two_tors():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpeh") as lab:
        tor, tor2 = lab.ns("tor"), lab.net.create("tor2")
        lab.net.veth(tor, "tor2", tor2, "eth0")
        sh(["ip", "link", "set", "tor2", "master", "br0"], netns=tor)
        lab.net.address(tor2, "eth0", f"{TOR2}/24")
        frr2 = FrrRouter(lab.net, tor2, lab.workdir / "frr2", TorSettings(router_id=TOR2, listen=TOR2))
        frr2.start()
        try:
            peer = {"asn": 64512, "localAddress": W1, "holdTime": 9, "gracefulRestart": 60}
            config = lab_config(
                lab.workdir / "bgpadv-w1" / "kubeconfig",
                peers=[{"address": TOR_V4, **peer}, {"address": TOR2, **peer}],
                importRoutes={"enabled": True, "networks": [{"name": "vmnet-a", "table": TABLE}]},
            )
            with BgpadvInLab(lab, cluster(), config=config) as running:
                frr2.wait_for(lambda: frr2.neighbor_state(W1) == "Established", 30, "ToR 2's session")
                running.frr.announce_to_cluster(DEFAULT)
                running.frr.wait_for(lambda: imported(lab.ns("w1")) == {DEFAULT: [TOR_V4]}, 15, "ToR 1's default")
                yield running, frr2, lab.ns("w1")
        finally:
            frr2.stop()


def learned_from_tor2(running: BgpadvInLab) -> str | None:
    return ((running.status().get("import") or {}).get("learned") or {}).get(TOR2, {}).get(DEFAULT)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        pytest.param(W2, reasons.IMPORT_NEXT_HOP_NODE, id="another-nodes-address"),
        pytest.param(VM_IP, reasons.IMPORT_NEXT_HOP_VM_NETWORK, id="a-vms-address"),
    ],
)
def test_only_the_good_path_of_the_default_route_reaches_the_kernel_table(two_tors, bad, reason):
    running, frr2, w1 = two_tors
    frr2.announce_to_cluster(DEFAULT)
    frr2.configure("route-map TO-CLUSTER permit 5", f"set ip next-hop {bad}")
    frr2.vtysh("clear bgp ipv4 unicast * soft out")
    try:
        frr2.wait_for(lambda: learned_from_tor2(running) == bad, 20, f"bgpadv learning {DEFAULT} via {bad} from ToR 2")
        # the kernel table, read in worker-1's namespace: ToR 1's path alone
        assert imported(w1) == {DEFAULT: [TOR_V4]}
        network = running.status()["import"]["networks"]["vmnet-a"]
        assert network["installed"] == {DEFAULT: [TOR_V4]}
        assert [(r["peer"], r["nextHop"], r["reason"]) for r in network["refusals"]] == [(TOR2, bad, reason)]
        assert network["refused"].get(reason) == 1
        # ToR 2's next hop good again (itself): one multipath route, so the single path was the guard's doing
        frr2.configure("route-map TO-CLUSTER permit 5", f"no set ip next-hop {bad}")
        frr2.vtysh("clear bgp ipv4 unicast * soft out")
        frr2.wait_for(lambda: imported(w1) == {DEFAULT: sorted([TOR_V4, TOR2])}, 20, "the multipath default route")
    finally:
        frr2.withdraw_from_cluster(DEFAULT)
        frr2.wait_for(lambda: imported(w1) == {DEFAULT: [TOR_V4]}, 20, "ToR 2's path gone")
