"""Live configuration reload, seen from the FRR ToR: `bgpadv run` in worker-1 whose configuration
file is updated the way kubelet updates a ConfigMap volume (a new timestamped directory, then an atomic swap of the
`..data` symlink; the path bgpadv was given never changes).

Rules:
- A change of attributes (a community) or of the network selector changes what the ToR holds, and the ToR's session
  with bgpadv is never reset (FRR's count of established connections for it stays 1, its uptime keeps growing) and
  ExaBGP is the same process.
- Adding a peer brings up exactly that session; removing it takes down exactly that session; the other session is
  never reset.
- An invalid file changes nothing at the ToR and counts as refused (`bgpadv_config_reloads_total`); the next valid
  file is applied.

The second peer is the same FRR on a second ToR address (10.0.0.2), reached from a second address of worker-1
(10.0.0.21): FRR names a dynamic neighbor by its address, so the two sessions are two neighbors.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import TOR_V4, Lab

pytestmark = pytest.mark.lab

W1 = "10.0.0.11"
TOR_2, W1_2 = "10.0.0.2", "10.0.0.21"  # the second session: ToR address and worker-1's source address
COMMUNITY = "64513:100"
PEER_1 = {"address": TOR_V4, "asn": 64512, "localAddress": W1, "holdTime": 9, "gracefulRestart": 60}
PEER_2 = {"address": TOR_2, "asn": 64512, "localAddress": W1_2, "holdTime": 9, "gracefulRestart": 60}
GOLD = {"selector": {"matchLabels": {"bgpadv.io/advertise": "true", "tier": "gold"}}}
NET_A = {"192.168.100.0/24", "192.168.100.10/32", "192.168.100.11/32"}  # tier gold
NET_B = {"192.168.200.0/24", "192.168.200.10/32"}


def cluster() -> list[dict]:
    objs = [k8s.node("worker-1", W1, "fd00::11")]
    for name, net, tier, hosts in (("vmnet-a", "192.168.100", "gold", (10, 11)), ("vmnet-b", "192.168.200", "", (10,))):
        labels = {"bgpadv.io/advertise": "true"} | ({"tier": tier} if tier else {})
        objs.append(
            k8s.cudn_layer2(
                name,
                [f"{net}.0/24"],
                labels=labels,
                infrastructure_subnets=[f"{net}.0/30"],
                default_gateway_ips=[f"{net}.1"],
            )
        )
        for i in hosts:
            vm = f"{name}-vm-{i}"
            objs += [
                k8s.ipam_claim(NS, f"{vm}.default", vm, f"cluster_udn_{name}", [f"{net}.{i}/24"]),
                k8s.vmi(NS, vm, "worker-1", "Running", interfaces=[k8s.interface([f"{net}.{i}"])]),
            ]
    return objs


class ConfigMapVolume:
    """A directory laid out as kubelet lays out a ConfigMap volume; `publish()` swaps in new content atomically."""

    def __init__(self, root: Path, key: str = "bgpadv.yaml") -> None:
        self.root = root
        self.key = key
        self.version = 0
        root.mkdir(parents=True, exist_ok=True)

    @property
    def path(self) -> Path:
        return self.root / self.key  # what bgpadv is given: key -> ..data/key -> ..<timestamp>/key

    def publish(self, text: str) -> None:
        self.version += 1
        data = self.root / f"..2026_12_01_00_00_00.{self.version}"
        data.mkdir()
        (data / self.key).write_text(text)
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(data.name)
        old = (self.root / "..data").resolve() if (self.root / "..data").is_symlink() else None
        os.replace(tmp, self.root / "..data")
        if not self.path.is_symlink():
            self.path.symlink_to(f"..data/{self.key}")
        if old is not None:
            for f in old.iterdir():
                f.unlink()
            old.rmdir()


def routes(frr: FrrRouter) -> set[str]:
    return set(frr.bgp_routes("ipv4"))


def with_community(frr: FrrRouter, community: str) -> set[str]:
    data = frr.vtysh_json(f"show bgp ipv4 unicast community {community} json")
    return set(data.get("routes") or {})


def sessions(frr: FrrRouter, address: str) -> tuple[str, int, int]:
    """(FSM state, connections established, connections dropped) of the ToR's neighbor `address`."""
    n = frr.neighbor(address)
    return str(n.get("bgpState", "")), int(n.get("connectionsEstablished", 0)), int(n.get("connectionsDropped", 0))


def received_from(frr: FrrRouter, address: str) -> set[str]:
    data = frr.vtysh_json(f"show bgp ipv4 unicast neighbors {address} routes json")
    return set(data.get("routes") or {})


def reloads(bgpadv: BgpadvInLab, result: str) -> float:
    """bgpadv_config_reloads_total{result} of the running controller (counters start at 0 in a new controller)."""
    code, body = bgpadv.get("/metrics")
    assert code == 200
    line = f'bgpadv_config_reloads_total{{result="{result}"}} '
    return next(float(x.removeprefix(line)) for x in body.splitlines() if x.startswith(line))


@pytest.fixture(scope="module")
def running():
    # bgpd listens on every address of the ToR's namespace, so that the second ToR address takes sessions too
    with Lab("bgprld", tor=TorSettings(listen="0.0.0.0")) as lab:
        lab.net.address(lab.ns("tor"), "br0", f"{TOR_2}/24")
        lab.net.address(lab.ns("w1"), "eth0", f"{W1_2}/24")
        bgpadv = BgpadvInLab(lab, cluster())
        volume = ConfigMapVolume(bgpadv.dir / "configmap")
        bgpadv.config_path = volume.path
        bgpadv.config = lab_config(bgpadv.dir / "kubeconfig", peers=[PEER_1])
        volume.publish(yaml.safe_dump(bgpadv.config, sort_keys=False))  # start() then writes the same, through it
        with bgpadv:
            bgpadv.frr.wait_for(lambda: routes(bgpadv.frr) == NET_A | NET_B, 60, "every route at the ToR")
            yield bgpadv, volume


def publish(bgpadv: BgpadvInLab, volume: ConfigMapVolume, **changes: Any) -> None:
    bgpadv.config = {**bgpadv.config, **changes}
    volume.publish(yaml.safe_dump(bgpadv.config, sort_keys=False))


def test_attributes_and_selector_change_live_without_resetting_the_session(running):
    bgpadv, volume = running
    frr = bgpadv.frr
    before, exabgp = sessions(frr, W1), bgpadv.exabgp_pids()
    assert before == ("Established", 1, 0)

    publish(bgpadv, volume, attributes={"communities": [COMMUNITY]})
    frr.wait_for(lambda: with_community(frr, COMMUNITY) == NET_A | NET_B, 20, "every route re-announced with 64513:100")
    assert routes(frr) == NET_A | NET_B

    publish(bgpadv, volume, networks=GOLD)
    frr.wait_for(lambda: routes(frr) == NET_A, 20, "vmnet-b's routes withdrawn")
    assert with_community(frr, COMMUNITY) == NET_A

    assert sessions(frr, W1) == before, "the session was never reset"
    assert bgpadv.exabgp_pids() == exabgp, "ExaBGP is the same process"


def test_adding_a_peer_brings_up_only_that_session_and_removing_it_takes_down_only_that_one(running):
    bgpadv, volume = running
    frr = bgpadv.frr
    before, exabgp = sessions(frr, W1), bgpadv.exabgp_pids()
    assert before[0] == "Established"

    publish(bgpadv, volume, peers=[PEER_1, PEER_2])
    frr.wait_for(lambda: frr.neighbor_state(W1_2) == "Established", 30, "the second session")
    frr.wait_for(lambda: received_from(frr, W1_2) == routes(frr), 20, "the second session to carry every route")
    assert sessions(frr, W1) == before, "the first session was never reset"

    publish(bgpadv, volume, peers=[PEER_1])
    frr.wait_for(lambda: frr.neighbor_state(W1_2) != "Established", 30, "the second session to end")
    assert sessions(frr, W1) == before, "the first session was never reset"
    assert received_from(frr, W1) == routes(frr) != set()
    assert bgpadv.exabgp_pids() == exabgp, "ExaBGP is the same process"


def test_an_invalid_file_changes_nothing_and_the_next_valid_one_applies(running):
    bgpadv, volume = running
    frr = bgpadv.frr
    before_routes, before_session = routes(frr), sessions(frr, W1)
    valid = bgpadv.config
    # the previous tests' peer changes were applied live by this same controller (no restart): counted already
    applied = reloads(bgpadv, "applied") if bgpadv.get_ok("/metrics") else 0.0

    publish(bgpadv, volume, localASN="not a number", networks={"selector": {}})
    deadline = time.monotonic() + 5.0  # several polls of the file (every second): the change was seen and refused
    while time.monotonic() < deadline:
        assert routes(frr) == before_routes
        time.sleep(0.2)
    assert sessions(frr, W1) == before_session
    # the controller the previous test's peer change restarted may still be starting (its imports alone take over
    # 10 s on a loaded machine); it counts the refusal live, or at its start-up when the file was already invalid
    frr.wait_for(lambda: bgpadv.get_ok("/metrics"), 60, "the controller's metrics listener")
    assert reloads(bgpadv, "refused") == 1.0

    bgpadv.config = valid
    publish(bgpadv, volume, networks={"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}})
    frr.wait_for(lambda: routes(frr) == NET_A | NET_B, 20, "the next valid file applied")
    assert sessions(frr, W1) == before_session
    assert (reloads(bgpadv, "refused"), reloads(bgpadv, "applied")) == (1.0, applied + 1.0)
