"""Per-node mode against a real router: one bgpadv per node, one cluster, one FRR ToR.

Scope: what the fabric sees when two per-node instances (worker-1 in w1, worker-2 in w2, as a DaemonSet runs them)
watch one shared fake Kubernetes API and peer with the same ToR: the Layer2 subnet via both nodes (two paths, ECMP),
each node's Layer3 host subnet and each VM's /32 via its own node only, and a live migration worker-1 → worker-2
during which FRR's table, sampled every ~25 ms over the vty socket, never lacks a path for the VM's /32 and ends
with worker-2 alone; a migration that fails after target-ready, and one cancelled before it, end with worker-1
alone and never lack its path. Each instance watches only its node's VMIs (by KubeVirt's node and migration-target
labels, which the migrations here move as KubeVirt does) and launcher pods. Every assertion reads FRR's BGP
table; none reads bgpadv's logs.

worker-1's instance takes its node name (and per-node mode) from BGPADV_NODE_NAME alone, as the DaemonSet's downward
API sets it; worker-2's from `nodeName` in its file: both sources are exercised.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, shared_api
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
READY = "2025-03-01T10:00:10Z"
MOVER = "192.168.100.30/32"


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, "fd00::11", node_subnets={"cluster_udn_vmnet-l3": "10.132.1.0/24"}),
        k8s.node("worker-2", W2, "fd00::12", node_subnets={"cluster_udn_vmnet-l3": "10.132.2.0/24"}),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=k8s.ADVERTISED),
        *vm("vm-a", "192.168.100.10", "worker-1"),
        *vm("vm-b", "192.168.100.20", "worker-2"),
        *vm("vm-m", "192.168.100.30", "worker-1"),
        *vm("vm-f", "192.168.100.40", "worker-1"),
        *vm("vm-c", "192.168.100.50", "worker-1"),
    ]


def vm(name: str, ip: str, node: str) -> list[dict]:
    """A running imported VM: its claim, its VMI and its launcher pod on `node`."""
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/24"]),
        k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip])]),
        k8s.launcher_pod(NS, name, node, suffix="src01"),
    ]


def paths(table: dict, prefix: str) -> tuple[list[str], list[str]]:
    """(next hops of every valid path, next hops of the usable ones: best and multipath) of `prefix` in FRR's
    `show bgp ipv4 unicast json`."""
    every, usable = [], []
    for path in (table.get("routes") or {}).get(prefix, []):
        hops = [nh.get("ip", "") for nh in path.get("nexthops", [])]
        if path.get("valid"):
            every += hops
        if path.get("bestpath") or path.get("multipath"):
            usable += hops
    return sorted(every), sorted(usable)


def wait_paths(frr: FrrRouter, prefix: str, usable: list[str], timeout: float = 30.0) -> None:
    def ok() -> bool:
        return paths(frr.vtysh_json("show bgp ipv4 unicast json"), prefix)[1] == usable

    frr.wait_for(ok, timeout, f"{prefix} via {usable}")


@pytest.fixture(scope="module")
def nodes():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgppn") as lab:
        api = shared_api(lab)
        with api:
            api.load(cluster())
            w1_config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", "w1")  # the DaemonSet's: no mode
            w2_config = lab_config(lab.workdir / "bgpadv-w2" / "kubeconfig", "w2", nodeName="worker-2")
            with (
                BgpadvInLab(lab, node="w1", config=w1_config, api=api, env={"BGPADV_NODE_NAME": "worker-1"}) as one,
                BgpadvInLab(lab, node="w2", config=w2_config, api=api) as two,
            ):
                wait_paths(lab.frr, "192.168.100.0/24", [W1, W2], timeout=60)
                yield lab, api, one, two


def test_the_layer2_subnet_reaches_the_tor_via_every_node_as_equal_paths(nodes):
    lab, *_ = nodes
    every, usable = paths(lab.frr.vtysh_json("show bgp ipv4 unicast json"), "192.168.100.0/24")
    assert every == [W1, W2]
    assert usable == [W1, W2]  # ECMP: both are best/multipath
    assert lab.frr.fib_routes(4)["192.168.100.0/24"] == [W1, W2]


def test_each_node_announces_its_own_layer3_host_subnet_and_its_own_vms_only(nodes):
    lab, *_ = nodes
    wait_paths(lab.frr, "192.168.100.20/32", [W2])
    table = lab.frr.vtysh_json("show bgp ipv4 unicast json")
    assert paths(table, "10.132.1.0/24") == ([W1], [W1])
    assert paths(table, "10.132.2.0/24") == ([W2], [W2])
    assert paths(table, "192.168.100.10/32") == ([W1], [W1])
    assert paths(table, "192.168.100.20/32") == ([W2], [W2])


class Sampler(threading.Thread):
    """FRR's usable next hops for one prefix, read over bgpd's vty socket every `every` seconds."""

    def __init__(self, frr: FrrRouter, prefix: str, every: float = 0.025) -> None:
        super().__init__(daemon=True)
        self.frr, self.prefix, self.every = frr, prefix, every
        self.samples: list[tuple[float, list[str]]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        with self.frr.vty() as vty:
            while not self.halt.is_set():
                table = vty.json(f"show bgp ipv4 unicast {self.prefix} longer-prefixes json")
                self.samples.append((time.monotonic(), paths(table, self.prefix)[1]))
                self.halt.wait(self.every)

    def first(self, hops: list[str], since: float) -> float:
        """Seconds from `since` to the first sample with exactly `hops`."""
        return next(t for t, h in self.samples if t >= since and h == hops) - since


TARGET_LABEL = "kubevirt.io/migrationTargetNodeName"


@contextlib.contextmanager
def sampling(frr: FrrRouter, prefix: str) -> Iterator[Sampler]:
    """A `Sampler` of `prefix` running for the block."""
    sampler = Sampler(frr, prefix)
    sampler.start()
    try:
        yield sampler
    finally:
        sampler.halt.set()
        sampler.join()


def start_migration(api, name: str) -> dict:
    """virt-controller hands the migration of `name` worker-1 → worker-2 to the target: the target pod is scheduled
    on worker-2, and one write puts the migration state and the target label on the VMI (the label brings the VMI
    into worker-2's instance's view). Returns the target pod."""
    vmi = api.get("kubevirt.io/v1", "VirtualMachineInstance", name, NS)
    target = k8s.launcher_pod(NS, name, "worker-2", suffix="tgt01", migration_job=f"migration-{name}")
    k8s.owned_by(target, vmi["metadata"]["uid"])  # the uid the API server gave the VMI: KubeVirt's own link
    api.create(target)
    state = k8s.migration_state("worker-1", "worker-2", vmi=name)
    patch = {"metadata": {"labels": {TARGET_LABEL: "worker-2"}}, "status": {"migrationState": state}}
    api.patch("kubevirt.io/v1", "VirtualMachineInstance", name, NS, patch)
    return target


def target_ready(api, target: dict) -> None:
    """The target domain is live: virt-handler annotates the target pod (seen by worker-2's instance only)."""
    annotation = {"kubevirt.io/migration-target-ready-timestamp": READY}
    api.patch("v1", "Pod", target["metadata"]["name"], NS, {"metadata": {"annotations": annotation}})


def end_migration(api, name: str, state: dict, *, completed: bool) -> None:
    """The end of a migration as virt-handler writes it: the target's ack (migration state; when it completed, the
    node label and status.nodeName move to the target in the same write), then, in a later write, the target label
    removed (`finalCleanup`), then the launcher pod that is no longer needed deleted."""
    patch: dict = {"status": {"migrationState": state}}
    if completed:
        patch = {"metadata": {"labels": {"kubevirt.io/nodeName": "worker-2"}}, "status": {**patch["status"]}}
        patch["status"]["nodeName"] = "worker-2"
    api.patch("kubevirt.io/v1", "VirtualMachineInstance", name, NS, patch)
    api.patch("kubevirt.io/v1", "VirtualMachineInstance", name, NS, {"metadata": {"labels": {TARGET_LABEL: None}}})
    api.delete("v1", "Pod", f"virt-launcher-{name}-{'src01' if completed else 'tgt01'}", NS)


def test_a_live_migration_hands_the_vm_address_from_source_to_target_without_a_gap_at_the_tor(nodes):
    lab, api, *_ = nodes
    frr = lab.frr
    wait_paths(frr, MOVER, [W1])
    with sampling(frr, MOVER) as sampler:
        time.sleep(0.3)
        target = start_migration(api, "vm-m")  # the target pod is scheduled on worker-2, not ready yet
        time.sleep(1.0)  # nothing may change at the ToR while the target is not live
        assert paths(frr.vtysh_json("show bgp ipv4 unicast json"), MOVER)[1] == [W1]
        ready_at = time.monotonic()
        target_ready(api, target)
        wait_paths(frr, MOVER, [W1, W2])
        done_at = time.monotonic()
        state = k8s.migration_state("worker-1", "worker-2", vmi="vm-m", target_ready=READY, completed=True)
        end_migration(api, "vm-m", state, completed=True)
        wait_paths(frr, MOVER, [W2])
        time.sleep(0.3)
    hops = [h for _, h in sampler.samples]
    assert len(hops) > 40
    assert all(hops), "the ToR had no path for the migrating VM at some sample"
    assert hops[0] == [W1] and hops[-1] == [W2]
    assert set(map(tuple, hops)) == {(W1,), (W1, W2), (W2,)}
    target_ready_to_both = sampler.first([W1, W2], ready_at)
    completion_to_target_only = sampler.first([W2], done_at)
    print(
        f"\nper-node hand-off: {len(hops)} samples; target-ready -> ECMP {target_ready_to_both * 1000:.0f} ms; "
        f"completion -> target only {completion_to_target_only * 1000:.0f} ms"
    )


def test_a_migration_that_fails_after_target_ready_leaves_the_vm_on_its_source_without_a_gap(nodes):
    """The target announced from target-ready; the migration then fails: the VM stays on worker-1 (its node label
    never moves), worker-2's instance loses it when the target label goes and withdraws it."""
    lab, api, *_ = nodes
    prefix = "192.168.100.40/32"
    wait_paths(lab.frr, prefix, [W1])
    with sampling(lab.frr, prefix) as sampler:
        target_ready(api, start_migration(api, "vm-f"))
        wait_paths(lab.frr, prefix, [W1, W2])
        state = k8s.migration_state("worker-1", "worker-2", vmi="vm-f", target_ready=READY, completed=True, failed=True)
        end_migration(api, "vm-f", state, completed=False)
        wait_paths(lab.frr, prefix, [W1])
        time.sleep(0.5)
    hops = [h for _, h in sampler.samples]
    assert all(W1 in h for h in hops), "the source's path was missing at some sample"
    assert hops[-1] == [W1]


def test_a_migration_cancelled_before_target_ready_never_reaches_the_target(nodes):
    """The migration is cancelled (its VirtualMachineInstanceMigration deleted) while the target domain is not live:
    the abort succeeds, the target label goes; the ToR only ever has worker-1's path."""
    lab, api, *_ = nodes
    prefix = "192.168.100.50/32"
    wait_paths(lab.frr, prefix, [W1])
    with sampling(lab.frr, prefix) as sampler:
        start_migration(api, "vm-c")
        time.sleep(0.5)
        state = k8s.migration_state(
            "worker-1", "worker-2", vmi="vm-c", failed=True, abort_requested=True, abort_status="Succeeded"
        )
        end_migration(api, "vm-c", state, completed=False)
        time.sleep(1.5)
    assert {tuple(h) for _, h in sampler.samples} == {(W1,)}
    assert (
        api.get("kubevirt.io/v1", "VirtualMachineInstance", "vm-c", NS)["metadata"]["labels"].get(TARGET_LABEL) is None
    )
