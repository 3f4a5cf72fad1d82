"""Unnumbered session with BIRD 2 as the ToR: BGP over the link's IPv6 link-local addresses, IPv4 routes with the
node's link-local address as IPv6 next hop (RFC 8950).

Scope: one per-node instance (worker-1 in w1) peers with BIRD (Debian's bird2) in the ToR namespace over a
point-to-point veth that holds no IPv4 address (the ToR's `swp1` to w1's `eth1`). BIRD sends no Router Advertisements
and learns no neighbour from them, so each side is given the other's link-local address: BIRD `neighbor
fe80::NODE%swp1 as 64513` with `ipv4 { extended next hop on; }` and an `ipv6` channel, bgpadv `peers: [{interface:
eth1, address: fe80::TOR}]` (no discovery). What the fabric must see: the session Established with Extended Next Hop
in both directions; the VM's /32 in BIRD's IPv4 table, best, with the node's link-local address as its BGP next hop
and gateway on swp1, and in the ToR kernel's FIB `via inet6 fe80::… dev swp1` (BIRD exports to it); the VM stopped:
the /32 gone from both. BFD on both sides (BIRD's `protocol bfd` and `bfd on`, bgpadv's `bfd.enabled`, 100 ms x 3):
the session Up at BIRD on swp1 with the node's link-local address; bgpadv's bfdd frozen, BIRD takes the BGP session
and the /32 down on BFD's detection time, long before the hold time (9 s), and both come back when it is thawed.
bgpadv still sends its Router Advertisements on eth1, which BIRD ignores. The Kubernetes API is a fake one on the
management network (br0), which carries no BGP here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.bird import BIRD, BirdNeighbor, BirdRouter
from bgpadv_lab.chain import BgpadvInLab, lab_config, metric, shared_api
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab, link_local
from tests.lab.test_unnumbered_bfd import bfdd_pid

pytestmark = pytest.mark.lab

VM_A, VM_B = "192.168.100.10", "192.168.100.11"
BFD_TIMERS = (100, 100, 3)  # receive, transmit (ms), multiplier
HOLD = 9


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        *vm("vm-a", VM_A),
        *vm("vm-b", VM_B),
    ]


def vm(name: str, ip: str) -> list[dict]:
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/24"]),
        k8s.vmi(NS, name, "worker-1", interfaces=[k8s.interface([ip])]),
        k8s.launcher_pod(NS, name, "worker-1", suffix="src01"),
    ]


def fib(bird: BirdRouter, prefix: str) -> list[tuple[str, str, str, str]]:
    """(family, gateway, device, protocol) of each route of `prefix` in the ToR kernel's IPv4 main table."""
    routes = json.loads(sh(["ip", "-4", "-j", "route", "show", prefix], netns=bird.ns).stdout or "[]")
    out = []
    for r in routes:
        via = r.get("via") or {"family": "inet", "host": r.get("gateway", "")}
        out.append((via.get("family", ""), via.get("host", ""), r.get("dev", ""), r.get("protocol", "")))
    return out


@pytest.fixture(scope="module")
def fabric():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    if not shutil.which(BIRD):
        pytest.skip("needs BIRD 2 (Debian's bird2)")
    with Lab("bgpbu", start_frr=False) as lab:
        lab.net.veth(lab.ns("tor"), "swp1", lab.ns("w1"), "eth1")  # point-to-point, link-local addresses only
        node = FrrRouter.wait_for(lambda: link_local(lab, "w1", "eth1"), 15, "the node's link-local address")
        tor = FrrRouter.wait_for(lambda: link_local(lab, "tor", "swp1"), 15, "the ToR's link-local address")
        neighbors = (BirdNeighbor("worker1", "swp1", node),)
        bird = BirdRouter(lab.net, lab.ns("tor"), lab.workdir / "bird", neighbors, bfd=BFD_TIMERS)
        bird.start()
        api = shared_api(lab)  # on the management network (br0)
        with api:
            api.load(cluster())
            config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", "w1", nodeName="worker-1")
            rx, tx, multiplier = BFD_TIMERS
            bfd = {"enabled": True, "minRx": rx, "minTx": tx, "multiplier": multiplier}
            config["peers"] = [{"interface": "eth1", "address": tor, "asn": 64512, "holdTime": HOLD, "bfd": bfd}]
            del config["nextHopSelf"]
            running = BgpadvInLab(lab, node="w1", config=config, api=api)
            try:
                running.start(wait_established=False)
                try:
                    established = lambda: bird.protocol("worker1").get("state") == "Established"  # noqa: E731
                    FrrRouter.wait_for(established, 60, "BIRD's session with the node")
                except TimeoutError as e:
                    raise TimeoutError(f"{e}\n{bird.protocol('worker1').get('text')}\n{running.log_tail()}") from None
                yield lab, api, bird, running, node
            finally:
                running.stop()
                bird.stop()


def test_the_session_runs_over_the_link_local_addresses_with_extended_next_hop(fabric):
    _lab, _api, bird, running, node = fabric
    session = bird.protocol("worker1")
    assert session["state"] == "Established"
    assert session["Neighbor address"] == f"{node}%swp1"
    for side in ("Local capabilities", "Neighbor capabilities"):  # each: `Extended next hop` / `IPv6 nexthop: ipv4`
        capabilities = session["text"].split(side, 1)[1].split("Session:", 1)[0]
        assert re.search(r"Extended next hop\n\s+IPv6 nexthop: ipv4\n", capabilities), side
    sent = lambda: running.answers("/metrics") and metric(running, "bgpadv_router_adverts_sent_total") >= 1  # noqa: E731
    FrrRouter.wait_for(sent, 15, "bgpadv's Router Advertisements on eth1 (sent, and harmless: BIRD ignores them)")


def test_the_vm_host_route_is_best_at_bird_via_the_nodes_link_local_address(fabric):
    _lab, _api, bird, _running, node = fabric
    # BIRD shows a next hop as its global and link-local parts: a lone link-local one is `:: fe80::…`
    hop = f":: {node}"
    want = [{"protocol": "worker1", "best": "True", "gateway": node, "interface": "swp1", "next_hop": hop}]
    FrrRouter.wait_for(lambda: bird.route(f"{VM_A}/32") == want, 30, f"{VM_A}/32 via {node} at BIRD")
    FrrRouter.wait_for(lambda: fib(bird, VM_A) == [("inet6", node, "swp1", "bird")], 15, f"{VM_A} in the FIB")


def test_a_stopped_vm_is_withdrawn_from_bird_and_the_tors_fib(fabric):
    _lab, api, bird, _running, node = fabric
    FrrRouter.wait_for(lambda: fib(bird, VM_B) == [("inet6", node, "swp1", "bird")], 30, f"{VM_B} in the FIB")
    api.delete("kubevirt.io/v1", "VirtualMachineInstance", "vm-b", NS)  # VM stopped: the claim stays
    FrrRouter.wait_for(lambda: bird.route(f"{VM_B}/32") == [], 30, f"{VM_B}/32 out of BIRD's table")
    FrrRouter.wait_for(lambda: fib(bird, VM_B) == [], 15, f"{VM_B} out of the ToR's FIB")
    assert [p["gateway"] for p in bird.route(f"{VM_A}/32")] == [node], "the other VM's route stays"


def test_bfd_runs_over_the_link_local_addresses_and_a_frozen_bfdd_takes_the_route_off_bird_on_its_time(fabric):
    _lab, _api, bird, running, node = fabric
    FrrRouter.wait_for(lambda: bird.bfd_sessions().get((node, "swp1")) == "Up", 30, "BIRD's BFD session Up")
    FrrRouter.wait_for(lambda: bird.route(f"{VM_A}/32") != [], 30, f"{VM_A}/32 at BIRD")
    pid = bfdd_pid(running)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        FrrRouter.wait_for(lambda: bird.route(f"{VM_A}/32") == [], HOLD, f"{VM_A}/32 off BIRD", every=0.02)
        gone = time.monotonic() - t0
        assert bird.bfd_sessions().get((node, "swp1")) != "Up"
    finally:
        os.kill(pid, signal.SIGCONT)
    t1 = time.monotonic()
    FrrRouter.wait_for(lambda: bird.bfd_sessions().get((node, "swp1")) == "Up", 30, "BFD Up again", every=0.02)
    FrrRouter.wait_for(lambda: bird.route(f"{VM_A}/32") != [], 60, f"{VM_A}/32 back at BIRD", every=0.05)
    back = time.monotonic() - t1
    print(f"\nBIRD, bfdd frozen: {VM_A}/32 withdrawn after {gone:.3f} s; thawed: back after {back:.3f} s")
    assert gone < HOLD / 3, f"the route left after {gone:.2f} s: the hold time, not BFD"
