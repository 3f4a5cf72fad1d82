"""Egress import end to end: the real FRR ToR's routes land in a CUDN's routing table on the node, protocol 186.

Scope (route import and the VM's egress): bgpadv in worker-1 imports what the ToR sends into the table of the CUDN
`vmnet-a`; the VM behind worker-1 reaches a host behind the ToR with its own address as the source, the reply comes back
along the VM's announced /32 (no NAT either way); a withdrawal at the ToR empties the kernel route within 1 s; a `kill
-9` of the whole bgpadv pod and a restart never empty the table; other protocols' routes and the main table stay as they
were.

This kernel has no VRF devices (shared reference lab-kernel.md): a plain routing table (1001, named explicitly in
`importRoutes.networks[].table`) stands in for the VRF's, and an `ip rule` for the VM subnet's sources (lookup
1001, then `unreachable`) for the VRF's l3mdev rule, so the VM's egress has only the imported routes. The lookup
of a VRF's table by name (`mp<id>-udn-vrf` included) is unit-tested in tests/unit/importer/test_netlink.py. Assertions
read the kernel table and FRR's RIB/FIB, never bgpadv's logs.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import EXT_HOST, TOR_V4, Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
VM_IP, VM_GW = "192.168.100.10", "192.168.100.1"
TABLE = 1001
FABRIC = "198.51.100.0/24"
OTHER_PROTOCOL = "203.0.113.0/24"  # proto static in the same table: never touched
ADVERTISED = {"bgpadv.io/advertise": "true"}


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, "fd00::11"),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADVERTISED),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", [f"{VM_IP}/24"]),
        k8s.vmi(NS, "vm-a", "worker-1", "Running", interfaces=[k8s.interface([VM_IP])]),
    ]


def table(ns: str, number: int | str = TABLE) -> dict[str, tuple[str, list[str]]]:
    """The kernel table: destination -> (protocol, gateways)."""
    out = {}
    for route in json.loads(sh(["ip", "-4", "-j", "route", "show", "table", str(number)], netns=ns).stdout or "[]"):
        dst = "0.0.0.0/0" if route["dst"] == "default" else route["dst"]
        hops = [route["gateway"]] if "gateway" in route else [h["gateway"] for h in route.get("nexthops", [])]
        out[dst] = (str(route.get("protocol", "")), sorted(hops))
    return out


def imported(ns: str) -> dict[str, list[str]]:
    return {dst: hops for dst, (proto, hops) in table(ns).items() if proto == "bgp"}


def advertised_to(running: BgpadvInLab, neighbor: str) -> set[str]:
    data = running.frr.vtysh_json(f"show bgp ipv4 unicast neighbors {neighbor} advertised-routes json")
    return set((data.get("advertisedRoutes") or {}).keys())


def ping(ns: str, source: str, target: str) -> bool:
    return sh(["ping", "-c", "1", "-W", "1", "-I", source, target], netns=ns, check=False).returncode == 0


@pytest.fixture(scope="module")
def egress():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpeg") as lab:
        w1 = lab.ns("w1")
        vm = lab.add_vm("w1", VM_IP, VM_GW)
        sh(["ip", "rule", "add", "pref", "100", "from", "192.168.100.0/24", "lookup", str(TABLE)], netns=w1)
        sh(["ip", "rule", "add", "pref", "101", "from", "192.168.100.0/24", "unreachable"], netns=w1)
        sh(["ip", "route", "add", OTHER_PROTOCOL, "via", TOR_V4, "table", str(TABLE), "proto", "static"], netns=w1)
        main_before = table(w1, "main")
        kubeconfig = lab.workdir / "bgpadv-w1" / "kubeconfig"
        config = lab_config(
            kubeconfig,
            importRoutes={
                "enabled": True,
                "networks": [
                    {
                        "name": "vmnet-a",
                        "table": TABLE,
                        "accept": [{"prefix": "0.0.0.0/0"}, {"prefix": FABRIC}],
                    }
                ],
            },
        )
        with BgpadvInLab(lab, cluster(), config=config) as running:
            running.frr.wait_for(
                lambda: running.frr.fib_routes().get(f"{VM_IP}/32") == [W1], 60, "the VM's /32 at the ToR"
            )
            yield running, w1, vm
            assert table(w1, "main") == main_before, "the main table changed"


def announce_and_wait(running: BgpadvInLab, w1: str) -> None:
    running.frr.announce_to_cluster("0.0.0.0/0", FABRIC)
    running.frr.wait_for(
        lambda: imported(w1) == {"0.0.0.0/0": [TOR_V4], FABRIC: [TOR_V4]}, 15, f"both routes in table {TABLE}"
    )


def test_the_tors_routes_land_in_the_network_table_with_protocol_bgp_and_carry_unnated_traffic(egress):
    running, w1, vm = egress
    assert not ping(vm, VM_IP, EXT_HOST), "egress must have no path before the import"
    announce_and_wait(running, w1)
    assert table(w1)[OTHER_PROTOCOL] == ("static", [TOR_V4])
    # egress from the VM's own address along the imported route; the reply returns along the VM's /32 at the ToR
    assert ping(vm, VM_IP, EXT_HOST)
    assert running.frr.fib_routes()[f"{VM_IP}/32"] == [W1]
    # `bgpadv status` shows the same (its /status document)
    assert running.status()["import"]["networks"]["vmnet-a"]["installed"] == {"0.0.0.0/0": [TOR_V4], FABRIC: [TOR_V4]}


def test_a_withdrawal_at_the_tor_leaves_the_kernel_table_within_one_second(egress):
    running, w1, vm = egress
    announce_and_wait(running, w1)
    started = time.monotonic()
    running.frr.withdraw_from_cluster(FABRIC)
    running.frr.wait_for(lambda: FABRIC not in imported(w1), 5, f"{FABRIC} gone", every=0.01)
    elapsed = time.monotonic() - started
    print(f"withdraw -> kernel: {elapsed * 1000:.0f} ms")
    assert elapsed < 1.0
    assert imported(w1) == {"0.0.0.0/0": [TOR_V4]}
    running.frr.withdraw_from_cluster("0.0.0.0/0")
    running.frr.wait_for(lambda: imported(w1) == {}, 5, "the default route gone", every=0.01)
    assert not ping(vm, VM_IP, EXT_HOST)
    assert table(w1)[OTHER_PROTOCOL] == ("static", [TOR_V4])


def test_bgpadv_killed_and_restarted_never_empties_the_table(egress):
    running, w1, vm = egress
    announce_and_wait(running, w1)
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.monotonic(), len(imported(w1))))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        assert running.proc is not None and len(running.exabgp_pids()) == 1
        running.proc.kill()  # SIGKILL: the supervisor's tree (ExaBGP, shim, controller) dies with it
        running.proc.wait(5)
        running.frr.wait_for(lambda: not running.exabgp_pids() and not running.controller_pids(), 10, "the tree to die")
        running.frr.wait_for(lambda: running.frr.neighbor_state(W1) != "Established", 10, "the session to end")
        # ExaBGP refuses to start while the PID in its stale PID file exists (a killed one not yet reaped)
        stale = int((running.dir / "run" / "exabgp.pid").read_text().strip() or 0)
        running.frr.wait_for(lambda: not os.path.exists(f"/proc/{stale}"), 10, "the killed ExaBGP reaped")
        killed = time.monotonic()
        running.spawn()
        running.wait_established(30)
        assert ping(vm, VM_IP, EXT_HOST)
        running.frr.wait_for(lambda: advertised_to(running, W1) >= {"0.0.0.0/0", FABRIC}, 10, "the ToR re-advertising")
        # the new instance owns the table: a withdrawal still reaches the kernel
        withdrawn_at = time.monotonic()
        running.frr.withdraw_from_cluster(FABRIC)
        try:
            running.frr.wait_for(lambda: FABRIC not in imported(w1), 5, f"{FABRIC} gone after the restart")
        except TimeoutError:
            print(running.log_tail(80))
            raise
        restarted = time.monotonic()
    finally:
        stop.set()
        sampler.join()
    during = [n for at, n in samples if killed <= at <= withdrawn_at]
    after = [n for at, n in samples if withdrawn_at <= at <= restarted]
    print(f"restart: {len(during)} samples over {withdrawn_at - killed:.1f} s, minimum {min(during)} routes")
    assert during and min(during) == 2, "both imported routes stayed through the kill and the restart"
    assert after and min(after) >= 1
    assert imported(w1) == {"0.0.0.0/0": [TOR_V4]}
    assert table(w1)[OTHER_PROTOCOL] == ("static", [TOR_V4])
