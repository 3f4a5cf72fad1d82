"""Two active replicas, seen from the fabric: two `bgpadv run` speakers on worker-1 and worker-2,
both watching the same (fake) Kubernetes API and peering with the same FRR ToR; a continuous ping from the host
behind the ToR to a VM behind worker-1.

Rules:
- Both speakers announce the same VM routes with the same third-party next hop (the VM's node), so the ToR holds
  two paths for every VM prefix, one from each speaker, leading to the same place. The network's aggregate is
  announced by each speaker with itself as next hop: two ECMP paths.
- `kill -9` of one speaker, for good (no restart) and with no graceful restart (neither speaker offers it, so the
  ToR drops the dead speaker's paths the moment the session ends): the other speaker's paths carry every prefix,
  the ToR's FIB never loses a route and not one ping is lost.
"""

from __future__ import annotations

import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, shared_api
from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab
from bgpadv_lab.watch import ContinuousPing, Periodic

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
VM_IP = "192.168.100.10"
HOSTS = range(10, 14)  # VMs .10-.13, all on worker-1
NETWORK = "192.168.100.0/24"
VM_PREFIXES = {f"192.168.100.{i}/32" for i in HOSTS}
PREFIXES = {NETWORK} | VM_PREFIXES
BOTH = {NETWORK: {(W1, W1), (W2, W2)}} | {prefix: {(W1, W1), (W2, W1)} for prefix in VM_PREFIXES}
SECOND_ONLY = {NETWORK: {(W2, W2)}} | {prefix: {(W2, W1)} for prefix in VM_PREFIXES}


def cluster() -> list[dict]:
    objs = [
        k8s.node("worker-1", W1, "fd00::11"),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.cudn_layer2(
            "vmnet-a",
            ["192.168.100.0/24"],
            labels={"bgpadv.io/advertise": "true"},
            infrastructure_subnets=["192.168.100.0/30"],
            default_gateway_ips=["192.168.100.1"],
        ),
    ]
    for i in HOSTS:
        name, ip = f"vm-{i}", f"192.168.100.{i}"
        objs += [
            k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/24"]),
            k8s.vmi(NS, name, "worker-1", "Running", interfaces=[k8s.interface([ip])]),
        ]
    return objs


def paths(frr: FrrRouter) -> dict[str, set[tuple[str, str]]]:
    """prefix -> {(the speaker it came from, its next hop)} over every path in the ToR's IPv4 table."""
    routes = frr.vtysh_json("show bgp ipv4 unicast json").get("routes") or {}
    return {
        prefix: {(p.get("peerId", ""), nh.get("ip", "")) for p in ps for nh in p.get("nexthops", [])}
        for prefix, ps in routes.items()
    }


class FibWatch(Periodic):
    """Samples the ToR kernel's BGP routes every 50 ms in a thread; records the samples missing one of PREFIXES."""

    def __init__(self, frr: FrrRouter) -> None:
        super().__init__(0.05, "fib-watch")
        self.frr = frr
        self.gaps: list[set[str]] = []

    def sample(self) -> None:
        missing = PREFIXES - set(self.frr.fib_routes(4))
        if missing:
            self.gaps.append(missing)


def speaker(lab: Lab, api: FakeApiServer, node: str) -> BgpadvInLab:
    """A speaker on `node` without graceful restart: the ToR drops its paths the moment its session ends."""
    running = BgpadvInLab(lab, node=node, api=api)
    running.config = lab_config(running.dir / "kubeconfig", node)
    for peer in running.config["peers"]:
        peer["gracefulRestart"] = False
    return running


@pytest.fixture
def two_speakers():
    with Lab("bgp2r", tor=TorSettings(graceful_restart=False)) as lab:
        api = shared_api(lab)
        api.start()
        api.load(cluster())
        first, second = (speaker(lab, api, node) for node in ("w1", "w2"))
        try:
            with first, second:
                yield lab, first, second
        finally:
            api.stop()


def test_both_speakers_announce_every_route_with_the_vms_node_as_next_hop(two_speakers):
    _, first, _ = two_speakers
    first.frr.wait_for(lambda: paths(first.frr) == BOTH, 60, "two paths for every prefix, one from each speaker")
    expected = {NETWORK: [W1, W2]} | {prefix: [W1] for prefix in VM_PREFIXES}
    # bgpd selects best and multipath ~50 ms after the paths arrive, zebra installs them a little later: wait for
    # each, then compare exactly
    first.frr.wait_for(lambda: first.frr.bgp_routes("ipv4") == expected, 10, "the ToR's best paths")
    first.frr.wait_for(lambda: first.frr.fib_routes(4) == expected, 10, "the ToR's FIB to hold the best paths")
    assert first.frr.fib_routes(4) == expected


def test_killing_one_speaker_for_good_loses_no_packet(two_speakers):
    lab, first, second = two_speakers
    frr = first.frr
    frr.wait_for(lambda: paths(frr) == BOTH, 60, "two paths for every prefix, one from each speaker")
    lab.add_vm("w1", VM_IP, "192.168.100.1")
    ok = sh(["ping", "-c", "2", "-W", "2", VM_IP], netns=lab.ns("ext"), check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    with ContinuousPing(lab, VM_IP) as ping, FibWatch(frr) as fib:
        time.sleep(1.0)
        assert first.proc is not None
        first.proc.kill()
        first.proc.wait(5)
        frr.wait_for(lambda: not first.exabgp_pids(), 10, "worker-1's ExaBGP to die with `bgpadv run`")
        frr.wait_for(lambda: frr.neighbor_state(W1) != "Established", 10, "the ToR to see worker-1's session end")
        frr.wait_for(lambda: paths(frr) == SECOND_ONLY, 5, "worker-2's paths alone to carry every prefix")
        time.sleep(2.0)
    assert frr.neighbor_state(second.address) == "Established"
    assert fib.samples > 40
    assert fib.gaps == [], "the ToR's FIB never lost a route"
    assert len(ping.answered) > 40
    assert ping.lost == [], f"{len(ping.lost)} pings lost when one of two speakers died"
