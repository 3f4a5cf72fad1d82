"""Graceful shutdown and hitless restart of `bgpadv run`, seen from the fabric: the FRR ToR's RIB and FIB, and a
continuous ping from the host behind the ToR to a VM behind worker-1.

Rules (restarts and shutdowns without a traffic loss):
- SIGTERM re-announces every route with GRACEFUL_SHUTDOWN (65535:0) for `safety.drainSeconds`, then bgpadv exits
  without a NOTIFICATION: the ToR keeps every route (stale, under graceful restart) until the next instance has
  re-announced them and sent End-of-RIB. Not one ping is lost, the FIB never misses a route.
- A second SIGTERM/SIGINT during the drain stops at once, with the same outcome.
- `kill -9` of `bgpadv run` and a restart: the same (the whole process tree dies with it, as in a pod).
- Ten controller crashes in a minute: ExaBGP (the same process) stays up, the ToR sees no change, and the last
  controller still announces a new VM. The first one killed is the controller `bgpadv run` started before ExaBGP
  (`bgpadv.runtime.handover`), the others the shim's own.

One bgpadv instance runs in worker-1 (drain 3 s, graceful restart 60 s); each test leaves it running and in sync.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import yaml

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, parent_of
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab
from bgpadv_lab.watch import ContinuousPing, Periodic

pytestmark = pytest.mark.lab

W1, W1_6 = "10.0.0.11", "fd00::11"
VM_IP = "192.168.100.10"
HOSTS = range(10, 18)  # VMs .10-.17 (and fd10:100::10-17), all on worker-1
DRAIN = 3.0
EXPECTED = {
    "ipv4": {"192.168.100.0/24": [W1]} | {f"192.168.100.{i}/32": [W1] for i in HOSTS},
    "ipv6": {"fd10:100::/64": [W1_6]} | {f"fd10:100::{i}/128": [W1_6] for i in HOSTS},
}
ALL_PREFIXES = {afi: set(routes) for afi, routes in EXPECTED.items()}


def cluster() -> list[dict]:
    objs = [
        k8s.node("worker-1", W1, W1_6),
        k8s.cudn_layer2(
            "vmnet-a",
            ["192.168.100.0/24", "fd10:100::/64"],
            labels={"bgpadv.io/advertise": "true"},
            infrastructure_subnets=["192.168.100.0/30", "fd10:100::/125"],
            default_gateway_ips=["192.168.100.1", "fd10:100::1"],
        ),
    ]
    for i in HOSTS:
        objs += vm(f"vm-{i}", [f"192.168.100.{i}/24", f"fd10:100::{i}/64"])
    return objs


def vm(name: str, ips: list[str]) -> list[dict]:
    bare = [ip.split("/")[0] for ip in ips]
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", ips),
        k8s.vmi(NS, name, "worker-1", "Running", interfaces=[k8s.interface(bare)]),
    ]


# -- observing the ToR -------------------------------------------------------------------------------------------


def rib(frr: FrrRouter) -> dict[str, dict[str, list[str]]]:
    return {afi: frr.bgp_routes(afi) for afi in EXPECTED}


def rib_details(frr: FrrRouter, afi: str) -> dict[str, list[dict]]:
    return frr.vtysh_json(f"show bgp {afi} unicast json").get("routes") or {}


def graceful_shutdown_prefixes(frr: FrrRouter, afi: str) -> set[str]:
    """Prefixes whose best path carries the GRACEFUL_SHUTDOWN community (FRR's own community filter)."""
    data = frr.vtysh_json(f"show bgp {afi} unicast community graceful-shutdown json")
    return {p for p, paths in (data.get("routes") or {}).items() if any(x.get("bestpath") for x in paths)}


def stale_prefixes(frr: FrrRouter, afi: str) -> set[str]:
    return {p for p, paths in rib_details(frr, afi).items() if any(x.get("stale") for x in paths)}


def fresh_and_complete(frr: FrrRouter) -> bool:
    """Every expected route, none stale, none carrying GRACEFUL_SHUTDOWN: a fully re-announced set."""
    return rib(frr) == EXPECTED and not any(
        stale_prefixes(frr, afi) or graceful_shutdown_prefixes(frr, afi) for afi in EXPECTED
    )


class TorWatch(Periodic):
    """Samples the ToR's BGP table and kernel FIB every 50 ms in a thread; records what was missing when."""

    def __init__(self, frr: FrrRouter) -> None:
        super().__init__(0.05, "tor-watch")
        self.frr = frr
        self.rib_gaps: list[tuple[float, str, set[str]]] = []
        self.fib_gaps: list[tuple[float, int, set[str]]] = []
        self._t0 = time.monotonic()

    def sample(self) -> None:
        at = round(time.monotonic() - self._t0, 2)
        for afi, routes in rib(self.frr).items():
            missing = ALL_PREFIXES[afi] - set(routes)
            if missing:
                self.rib_gaps.append((at, afi, missing))
        for family, afi in ((4, "ipv4"), (6, "ipv6")):
            missing = ALL_PREFIXES[afi] - set(self.frr.fib_routes(family))
            if missing:
                self.fib_gaps.append((at, family, missing))


# -- the running instance ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bgpadv():
    with Lab("bgprst") as lab:
        running = BgpadvInLab(lab, cluster())
        running.config = lab_config(running.dir / "kubeconfig", safety={"drainSeconds": DRAIN})
        with running:
            running.frr.wait_for(lambda: rib(running.frr) == EXPECTED, 60, "every route at the ToR")
            lab.add_vm("w1", VM_IP, "192.168.100.1")
            ok = sh(["ping", "-c", "2", "-W", "2", VM_IP], netns=lab.ns("ext"), check=False)
            assert ok.returncode == 0, ok.stdout + ok.stderr
            yield running


def restart(bgpadv: BgpadvInLab) -> None:
    """Start `bgpadv run` again and wait until the ToR holds the fresh set (no stale path, no 65535:0)."""
    bgpadv.spawn()
    bgpadv.wait_established(60)
    bgpadv.frr.wait_for(lambda: fresh_and_complete(bgpadv.frr), 60, "the whole set re-announced, none stale")


def wait_exit(proc: subprocess.Popen, timeout: float) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"bgpadv run still running {timeout}s after it was asked to stop") from None


# -- the rules -------------------------------------------------------------------------------------------------


def test_sigterm_drains_with_graceful_shutdown_then_the_tor_keeps_every_route_across_the_restart(bgpadv):
    frr = bgpadv.frr
    assert fresh_and_complete(frr)
    with ContinuousPing(bgpadv.lab, VM_IP) as ping, TorWatch(frr) as watch:
        time.sleep(0.5)
        proc = bgpadv.proc
        assert proc is not None
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)

        frr.wait_for(
            lambda: all(graceful_shutdown_prefixes(frr, afi) == ALL_PREFIXES[afi] for afi in EXPECTED),
            DRAIN,
            "GRACEFUL_SHUTDOWN on every route during the drain",
        )
        assert frr.neighbor_state(W1) == "Established", "the session stays up while draining"
        assert wait_exit(proc, DRAIN + 10) == 0
        assert time.monotonic() - signalled >= DRAIN, "bgpadv waits the whole drain"

        frr.wait_for(lambda: frr.neighbor_state(W1) != "Established", 10, "the ToR to see the session end")
        assert rib(frr) == EXPECTED, "graceful restart: the ToR keeps every route"
        assert all(stale_prefixes(frr, afi) == ALL_PREFIXES[afi] for afi in EXPECTED), "kept as stale"
        time.sleep(1.0)
        restart(bgpadv)
        time.sleep(0.5)
    assert watch.samples > 20
    assert watch.rib_gaps == [], "the ToR's BGP table never lost a route"
    assert watch.fib_gaps == [], "the ToR's FIB never lost a route"
    assert len(ping.answered) > 100
    assert ping.lost == [], f"{len(ping.lost)} pings lost across SIGTERM + restart"


def test_a_second_signal_during_the_drain_stops_at_once_keeping_every_route(bgpadv):
    frr = bgpadv.frr
    long_drain = lab_config(bgpadv.dir / "kubeconfig", safety={"drainSeconds": 120})
    bgpadv.config_path.write_text(yaml.safe_dump(long_drain, sort_keys=False))
    try:
        bgpadv.proc.send_signal(signal.SIGTERM)  # the module's instance drains 3 s and exits
        wait_exit(bgpadv.proc, DRAIN + 10)
        restart(bgpadv)  # now with a 120 s drain
        with TorWatch(frr) as watch:
            proc = bgpadv.proc
            proc.send_signal(signal.SIGTERM)
            frr.wait_for(
                lambda: graceful_shutdown_prefixes(frr, "ipv4") == ALL_PREFIXES["ipv4"], 10, "the drain to start"
            )
            proc.send_signal(signal.SIGINT)
            assert wait_exit(proc, 10) == 0, "a second signal ends the 120 s drain at once"
            frr.wait_for(lambda: frr.neighbor_state(W1) != "Established", 10, "the ToR to see the session end")
            assert rib(frr) == EXPECTED
    finally:
        bgpadv.config_path.write_text(yaml.safe_dump(bgpadv.config, sort_keys=False))
    restart(bgpadv)
    assert watch.rib_gaps == [] and watch.fib_gaps == []


def test_kill_9_and_restart_keep_every_route_and_lose_no_packet(bgpadv):
    frr = bgpadv.frr
    with ContinuousPing(bgpadv.lab, VM_IP) as ping, TorWatch(frr) as watch:
        time.sleep(0.5)
        proc = bgpadv.proc
        exabgp = bgpadv.exabgp_pids()
        assert len(exabgp) == 1
        proc.kill()
        proc.wait(5)
        frr.wait_for(lambda: not bgpadv.exabgp_pids() and not bgpadv.controller_pids(), 10, "the tree to die")
        frr.wait_for(lambda: frr.neighbor_state(W1) != "Established", 10, "the ToR to see the session end")
        assert rib(frr) == EXPECTED
        time.sleep(1.0)
        restart(bgpadv)
        # the fresh set came from the controller `bgpadv run` started before ExaBGP, which the shim took over
        assert [parent_of(p) for p in bgpadv.controller_pids()] == [bgpadv.proc.pid]
        # watched a while after the fresh set too: the restart now takes ~2 s, and on a loaded machine one sample
        # (three vty queries) can take 200 ms, so 0.5 s left the watch at 19-25 samples
        time.sleep(2.5)
    assert watch.samples > 20
    assert watch.rib_gaps == [], "the ToR's BGP table never lost a route"
    assert watch.fib_gaps == [], "the ToR's FIB never lost a route"
    assert len(ping.answered) > 50
    assert ping.lost == [], f"{len(ping.lost)} pings lost across kill -9 + restart"


def test_ten_controller_crashes_in_a_minute_never_make_exabgp_give_up(bgpadv):
    frr = bgpadv.frr
    exabgp = bgpadv.exabgp_pids()
    shim = bgpadv.shim_pids()
    assert len(exabgp) == 1 and len(shim) == 1
    killed: list[int] = []
    started = time.monotonic()
    with TorWatch(frr) as watch:
        while len(killed) < 10:
            pids = frr.wait_for(
                lambda: [p for p in bgpadv.controller_pids() if p not in killed], 20, "a new controller"
            )
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
        elapsed = time.monotonic() - started
        assert elapsed < 60, f"10 crashes took {elapsed:.1f}s"
        time.sleep(6.0)  # longer than the shim's longest restart delay
        assert bgpadv.exabgp_pids() == exabgp, "ExaBGP is the same process"
        assert bgpadv.shim_pids() == shim, "ExaBGP never had to respawn its API process"
        assert frr.neighbor_state(W1) == "Established"
        for obj in vm("vm-late", ["192.168.100.40/24"]):
            bgpadv.api.create(obj)
        frr.wait_for(lambda: frr.bgp_routes("ipv4").get("192.168.100.40/32") == [W1], 60, "the new VM's route")
    assert watch.rib_gaps == [] and watch.fib_gaps == []
    bgpadv.api.delete("kubevirt.io/v1", "VirtualMachineInstance", "vm-late", NS)
    frr.wait_for(lambda: rib(frr) == EXPECTED, 20, "the new VM withdrawn")
