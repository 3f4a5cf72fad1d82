"""BFD over unnumbered sessions against a real router: FRR's bfdd on both sides, over each link's IPv6 link-local
addresses.

Scope: one per-node instance (worker-1 in w1) with two uplinks to the FRR ToR, `eth1` to `swp1` and `eth2` to `swp2`,
point-to-point veths with no IPv4 address, each an interface peer with `bfd.enabled` (100 ms x 3) and the ToR's
address discovered; the ToR runs zebra, bgpd and bfdd with `neighbor swpN interface peer-group CLUSTER` and
`neighbor CLUSTER bfd`. w1 also has its management interface (br0), whose `fe80::/64` route is there before the
uplinks': without a host route, a BFD packet to a ToR's link-local address leaves by whichever `fe80::/64` comes first
(checked before bgpadv starts: at least one uplink is not it). What the fabric must see, on FRR's own tables (`show
bfd peers json`, `show bgp neighbors json`, `show bgp ipv4 unicast json`):
- both BFD sessions up at the ToR, on swp1 and swp2, with the node's link-local addresses and the configured timers,
  and bgpd's neighbours tied to them;
- bgpadv's bfdd frozen (SIGSTOP of bfdd alone, ExaBGP untouched): the ToR takes both sessions down on BFD's detection
  time, the VM's /32 leaves its RIB long before the BGP hold time (9 s); thawed, both come back;
- a link flap (w1's eth1 down, then up, which takes the host route with it): swp1's BFD session and BGP session come
  back up, swp2's stay up throughout;
- the controller killed (SIGKILL; the API shim starts another): both BFD sessions stay up at the ToR throughout, the
  host routes are the same ones (bfdd and the routes outlive a controller; the next one adopts them).
Detection and recovery times are printed (`pytest -s`). The Kubernetes API is a fake one on the management network.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, shared_api
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab, link_local

pytestmark = pytest.mark.lab

UPLINKS = {"eth1": "swp1", "eth2": "swp2"}  # worker-1's uplink → the ToR's port on that link
BFD_TIMERS = (100, 100, 3)  # receive, transmit (ms), multiplier
HOLD = 9
VM = "192.168.100.10"


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", [f"{VM}/24"]),
        k8s.vmi(NS, "vm-a", "worker-1", interfaces=[k8s.interface([VM])]),
        k8s.launcher_pod(NS, "vm-a", "worker-1", suffix="src01"),
    ]


def bfd_state(frr: FrrRouter, port: str) -> str:
    """The ToR's BFD session on `port`: its status ("up", "down", ...; "" when it has none)."""
    for peer in frr.vtysh_json("show bfd peers json") or []:
        if peer.get("interface") == port:
            return str(peer.get("status", ""))
    return ""


def bfd_peer(frr: FrrRouter, port: str) -> dict:
    return next(p for p in frr.vtysh_json("show bfd peers json") or [] if p.get("interface") == port)


def vm_paths(frr: FrrRouter) -> int:
    """Valid paths of the VM's /32 in the ToR's IPv4 table (one per uplink)."""
    paths = (frr.vtysh_json("show bgp ipv4 unicast json").get("routes") or {}).get(f"{VM}/32", [])
    return sum(1 for p in paths if p.get("valid"))


def route_device(lab: Lab, address: str) -> str:
    """The interface w1's kernel sends a packet to `address` (no zone) by."""
    out = sh(["ip", "-6", "-j", "route", "get", address], netns=lab.ns("w1"), check=False).stdout
    routes = json.loads(out or "[]")
    return str(routes[0].get("dev", "")) if routes else ""


def bfdd_pid(chain: BgpadvInLab) -> int:
    [pid] = chain.bfdd_pids()  # bgpadv's one bfdd in the node's namespace (the ToR's runs in its own)
    return pid


@pytest.fixture(scope="module")
def fabric() -> Iterator[tuple[Lab, BgpadvInLab]]:
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    settings = TorSettings(
        cluster_ranges=(), listen="::", interfaces=tuple(UPLINKS.values()), hold=HOLD, keepalive=3, bfd=BFD_TIMERS
    )
    with Lab("bgpubfd", tor=settings, start_frr=False) as lab:
        for uplink, port in UPLINKS.items():
            lab.net.veth(lab.ns("tor"), port, lab.ns("w1"), uplink)
        lab.frr = FrrRouter(lab.net, lab.ns("tor"), lab.workdir / "frr", settings)
        lab.frr.start()
        tors = {}
        for uplink, port in UPLINKS.items():
            FrrRouter.wait_for(lambda p=port: link_local(lab, "tor", p) != "", 10, f"{port}'s link-local address")
            tors[uplink] = link_local(lab, "tor", port)
        wrong = [uplink for uplink, tor in tors.items() if route_device(lab, tor) != uplink]
        assert wrong, "every ToR address already leaves by its own uplink: the host routes would prove nothing"
        rx, tx, multiplier = BFD_TIMERS
        api = shared_api(lab)
        with api:
            api.load(cluster())
            config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", "w1", nodeName="worker-1")
            config["peers"] = [
                {
                    "interface": uplink,
                    "asn": 64512,
                    "holdTime": HOLD,
                    "bfd": {"enabled": True, "minRx": rx, "minTx": tx, "multiplier": multiplier},
                }
                for uplink in UPLINKS
            ]
            del config["nextHopSelf"]
            chain = BgpadvInLab(lab, node="w1", config=config, api=api)
            try:
                chain.start(wait_established=False)
                for port in UPLINKS.values():
                    FrrRouter.wait_for(lambda p=port: lab.frr.neighbor_state(p) == "Established", 60, f"{port} up")
                    FrrRouter.wait_for(lambda p=port: bfd_state(lab.frr, p) == "up", 30, f"BFD on {port} up")
                FrrRouter.wait_for(lambda: vm_paths(lab.frr) == 2, 30, f"{VM}/32 over both uplinks")
                yield lab, chain
            finally:
                chain.stop()


def host_routes(lab: Lab) -> dict[str, str]:
    """w1's host routes that keep the BFD sessions on their links (protocol 211): address → interface."""
    out = sh(["ip", "-6", "-j", "route", "show", "table", "main", "proto", "211"], netns=lab.ns("w1")).stdout
    return {r["dst"]: r["dev"] for r in json.loads(out or "[]")}


def test_a_bfd_session_runs_over_each_uplinks_link_local_addresses(fabric):
    lab, _chain = fabric
    assert host_routes(lab) == {link_local(lab, "tor", port): uplink for uplink, port in UPLINKS.items()}
    for uplink, port in UPLINKS.items():
        peer = bfd_peer(lab.frr, port)
        assert peer["status"] == "up"
        assert peer["peer"] == link_local(lab, "w1", uplink), "the node's link-local address on that link"
        assert (peer["remote-receive-interval"], peer["remote-transmit-interval"]) == BFD_TIMERS[:2]
        assert peer["remote-detect-multiplier"] == BFD_TIMERS[2]
        assert lab.frr.neighbor(port).get("peerBfdInfo", {}).get("status") == "Up", "bgpd tied to it"


def test_a_frozen_bfdd_takes_both_sessions_and_the_vm_route_off_the_tor_on_bfd_time(fabric):
    lab, chain = fabric
    pid = bfdd_pid(chain)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        FrrRouter.wait_for(lambda: vm_paths(lab.frr) == 0, HOLD, f"{VM}/32 off the ToR", every=0.02)
        gone = time.monotonic() - t0
        assert all(bfd_state(lab.frr, port) != "up" for port in UPLINKS.values())
    finally:
        os.kill(pid, signal.SIGCONT)
    t1 = time.monotonic()
    for port in UPLINKS.values():
        FrrRouter.wait_for(lambda p=port: bfd_state(lab.frr, p) == "up", 30, f"BFD on {port} back", every=0.02)
    bfd_back = time.monotonic() - t1
    FrrRouter.wait_for(lambda: vm_paths(lab.frr) == 2, 60, f"{VM}/32 back over both uplinks", every=0.05)
    back = time.monotonic() - t1
    print(f"\nbfdd frozen: {VM}/32 off the ToR after {gone:.3f} s; thawed: BFD up {bfd_back:.3f} s, route {back:.3f} s")
    assert gone < HOLD / 3, f"the route left after {gone:.2f} s: the hold time, not BFD"


def test_a_link_flap_brings_that_links_bfd_session_back_and_leaves_the_other_up(fabric):
    lab, _chain = fabric
    flaps: list[str] = []
    sh(["ip", "link", "set", "eth1", "down"], netns=lab.ns("w1"))
    try:
        FrrRouter.wait_for(lambda: bfd_state(lab.frr, "swp1") != "up", 10, "swp1's BFD session down", every=0.02)
        flaps.append(bfd_state(lab.frr, "swp2"))
    finally:
        sh(["ip", "link", "set", "eth1", "up"], netns=lab.ns("w1"))
    t0 = time.monotonic()
    FrrRouter.wait_for(lambda: bfd_state(lab.frr, "swp1") == "up", 60, "swp1's BFD session back", every=0.02)
    bfd_back = time.monotonic() - t0
    FrrRouter.wait_for(lambda: lab.frr.neighbor_state("swp1") == "Established", 60, "swp1's BGP session back")
    FrrRouter.wait_for(lambda: vm_paths(lab.frr) == 2, 60, f"{VM}/32 back over both uplinks")
    back = time.monotonic() - t0
    print(f"\neth1 up: swp1's BFD up {bfd_back:.3f} s, BGP and the route over both uplinks {back:.3f} s")
    assert flaps == ["up"] and bfd_state(lab.frr, "swp2") == "up", "swp2's session stayed up"
    assert host_routes(lab)[link_local(lab, "tor", "swp1")] == "eth1", "the link took the route, bgpadv put it back"


def test_a_controller_crash_leaves_both_bfd_sessions_up_at_the_tor(fabric):
    lab, chain = fabric
    before = host_routes(lab)
    assert len(chain.controller_pids()) == 1
    controller = chain.kill_controller()
    seen: set[str] = set()
    deadline = time.monotonic() + 6.0  # past a new controller's start and its first repair of the routes
    while time.monotonic() < deadline:
        seen |= {bfd_state(lab.frr, port) for port in UPLINKS.values()}
        time.sleep(0.02)
    FrrRouter.wait_for(lambda: [p for p in chain.controller_pids() if p != controller], 30, "a new controller")
    assert seen == {"up"}, f"the ToR saw the BFD sessions {seen}"
    assert host_routes(lab) == before
