"""The whole chain against a real router: fake Kubernetes API → `bgpadv run` (controller + ExaBGP) → FRR ToR.

Scope: what the fabric sees. Every assertion reads FRR's BGP table (`show bgp … json`) or the ToR kernel's FIB;
none reads bgpadv's logs. One bgpadv instance runs in worker-1 for the whole module; each test uses its own VMs
and addresses, so the tests do not depend on each other's order.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import METRICS_PORT, BgpadvInLab
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import EXT_HOST, Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
W1_6, W2_6 = "fd00::11", "fd00::12"
ADVERTISED = {"bgpadv.io/advertise": "true"}


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, W1_6),
        k8s.node("worker-2", W2, W2_6),
        k8s.cudn_layer2(
            "vmnet-a",
            ["192.168.100.0/24", "fd10:100::/64"],
            labels=ADVERTISED,
            infrastructure_subnets=["192.168.100.0/30", "fd10:100::/125"],
            default_gateway_ips=["192.168.100.1", "fd10:100::1"],
        ),
        k8s.cudn_layer2("quiet", ["192.168.200.0/24"], labels={}, namespaces=["other"]),
        *vm("vm-a", "worker-1", ["192.168.100.10/24", "fd10:100::10/64"]),
        *vm("vm-hostile", "worker-1", ["10.66.0.1/24"]),
    ]


def vm(name: str, node: str | None, ips: list[str], phase: str = "Running") -> list[dict]:
    """An imported VM as the cluster shows it: its claim (with allocated IPs) and, if it runs, its VMI."""
    objs = [k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", ips)]
    if node is not None:
        bare = [ip.split("/")[0] for ip in ips]
        objs.append(k8s.vmi(NS, name, node, phase, interfaces=[k8s.interface(bare)]))
    return objs


@pytest.fixture(scope="module")
def chain():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpe2e") as lab, BgpadvInLab(lab, cluster()) as running:
        running.frr.wait_route("192.168.100.10/32", [W1], timeout=60)
        yield running


def test_selected_network_subnets_and_running_vm_addresses_reach_the_tor(chain):
    frr = chain.frr
    assert frr.best_next_hops("192.168.100.0/24") == [W1]
    assert frr.best_next_hops("192.168.100.10/32") == [W1]
    frr.wait_route("fd10:100::10/128", [W1_6])
    frr.wait_route("fd10:100::/64", [W1_6])  # `self` over the IPv4 session: the configured nextHopSelf
    assert "192.168.100.10/32" in frr.fib_routes(4), "the ToR kernel must carry the host route"


def test_what_is_refused_or_unselected_never_reaches_the_tor(chain):
    frr = chain.frr
    v4 = frr.bgp_routes("ipv4")
    assert "10.66.0.1/32" not in v4  # outside every subnet of the claim's network
    assert "192.168.200.0/24" not in v4  # CUDN not selected
    assert set(v4) <= {"192.168.100.0/24"} | {p for p in v4 if p.startswith("192.168.100.")}


def test_a_new_vm_is_announced_and_a_stopped_vm_withdrawn_leaving_others_untouched(chain):
    frr = chain.frr
    for obj in vm("vm-b", "worker-2", ["192.168.100.11/24"]):
        chain.api.create(obj)
    frr.wait_route("192.168.100.11/32", [W2])
    chain.api.delete("kubevirt.io/v1", "VirtualMachineInstance", "vm-b", NS)  # VM stopped: the claim stays
    frr.wait_route("192.168.100.11/32", None)
    assert frr.best_next_hops("192.168.100.10/32") == [W1]
    assert frr.best_next_hops("192.168.100.0/24") == [W1]


def test_a_deleted_claim_is_withdrawn(chain):
    frr = chain.frr
    for obj in vm("vm-c", "worker-1", ["192.168.100.12/24"]):
        chain.api.create(obj)
    frr.wait_route("192.168.100.12/32", [W1])
    chain.api.delete("k8s.cni.cncf.io/v1alpha1", "IPAMClaim", "vm-c.default", NS)
    frr.wait_route("192.168.100.12/32", None)


def test_live_migration_moves_the_next_hop_when_the_target_is_ready_without_a_withdrawal(chain):
    frr = chain.frr
    for obj in vm("vm-m", "worker-1", ["192.168.100.13/24"]):
        chain.api.create(obj)
    frr.wait_route("192.168.100.13/32", [W1])
    pending = k8s.migration_state("worker-1", "worker-2", vmi="vm-m")
    chain.api.patch_status(
        "kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS, {"status": {"migrationState": pending}}
    )
    time.sleep(0.5)
    assert frr.best_next_hops("192.168.100.13/32") == [W1], "the target is not live yet: stay on the source"

    seen: list[list[str] | None] = []
    ready = k8s.migration_state("worker-1", "worker-2", target_ready="2026-11-30T12:00:00Z", vmi="vm-m")
    chain.api.patch_status(
        "kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS, {"status": {"migrationState": ready}}
    )
    frr.wait_for(lambda: seen.append(frr.best_next_hops("192.168.100.13/32")) or seen[-1] == [W2], 15, "next hop W2")
    assert None not in seen, "the route must move, not disappear and come back"
    frr.wait_for(lambda: frr.fib_routes(4).get("192.168.100.13/32") == [W2], 5, "FIB via W2")


def test_a_failed_migration_keeps_the_vm_on_its_source(chain):
    frr = chain.frr
    for obj in vm("vm-f", "worker-1", ["192.168.100.14/24"]):
        chain.api.create(obj)
    frr.wait_route("192.168.100.14/32", [W1])
    failed = k8s.migration_state("worker-1", "worker-2", failed=True, vmi="vm-f")
    chain.api.patch_status(
        "kubevirt.io/v1", "VirtualMachineInstance", "vm-f", NS, {"status": {"migrationState": failed}}
    )
    time.sleep(0.5)
    assert frr.best_next_hops("192.168.100.14/32") == [W1]


def test_external_traffic_reaches_the_vm_with_its_source_address_intact(chain):
    """A host behind the ToR pings the VM; the VM sees the host's own address: no NAT anywhere."""
    lab = chain.lab
    vm_ns = lab.add_vm("w1", "192.168.100.10", "192.168.100.1")
    ping, out = lab.ping_from_outside(vm_ns, "192.168.100.10")
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert f"IP {EXT_HOST} > 192.168.100.10" in out


def test_a_controller_crash_keeps_the_routes_on_the_fabric(chain):
    frr = chain.frr
    before = frr.bgp_routes("ipv4")
    killed = chain.kill_controller()
    gaps = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = frr.bgp_routes("ipv4")
        if now != before:
            gaps.append(now)
        pids = chain.controller_pids()
        if pids and killed not in pids and chain.get_ok("/readyz"):
            break
        time.sleep(0.1)
    assert gaps == [], "the ToR must see no change while ExaBGP respawns the controller"
    for obj in vm("vm-r", "worker-2", ["192.168.100.15/24"]):
        chain.api.create(obj)
    frr.wait_route("192.168.100.15/32", [W2])


def test_changes_missed_while_the_watch_history_expired_are_caught_up_by_a_relist(chain):
    frr = chain.frr
    for obj in vm("vm-g", "worker-2", ["192.168.100.16/24"]):
        chain.api.create(obj)
    frr.wait_route("192.168.100.16/32", [W2])
    chain.api.drop_watches()
    chain.api.delete("kubevirt.io/v1", "VirtualMachineInstance", "vm-g", NS)
    chain.api.compact()  # the watch resumes from a resourceVersion the server has forgotten: 410, relist
    frr.wait_route("192.168.100.16/32", None)


def _samples(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels` (Prometheus text format)."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def test_a_running_instance_exports_metrics_that_move_with_the_routes(chain):
    assert chain.get("/healthz")[0] == 200
    assert chain.get("/readyz")[0] == 200
    before = chain.get("/metrics")[1]
    assert _samples(before, "bgpadv_peer_up", peer="10.0.0.1") == 1
    for obj in vm("vm-metrics", "worker-2", ["192.168.100.17/24"]):
        chain.api.create(obj)
    chain.frr.wait_route("192.168.100.17/32", [W2])

    def moved() -> bool:
        after = chain.get("/metrics")[1]
        sent = "bgpadv_convergence_seconds_count"
        return _samples(after, sent, stage="sent", op="announce", kind="host") > _samples(
            before, sent, stage="sent", op="announce", kind="host"
        ) and _samples(after, "bgpadv_routes_advertised", network="vmnet-a", family="ipv4", kind="host") > _samples(
            before, "bgpadv_routes_advertised", network="vmnet-a", family="ipv4", kind="host"
        )

    chain.frr.wait_for(moved, 10, "convergence and route gauges to move")
    after = chain.get("/metrics")[1]
    assert _samples(after, "bgpadv_routes_rejected_total", reason="outside-network-subnets") >= 1
    assert _samples(after, "bgpadv_last_sync_timestamp_seconds") > 0


def test_a_refused_address_gets_a_warning_event_on_its_claim(chain):
    def event() -> dict | None:
        for e in chain.api.events():
            involved = e.get("involvedObject") or {}
            if involved.get("kind") == "IPAMClaim" and involved.get("name") == "vm-hostile.default":
                return e
        return None

    found = chain.frr.wait_for(event, 10, "an Event on the hostile claim")
    assert found["type"] == "Warning"
    assert "10.66.0.1" in found["message"]


def explain_live(chain, target: str) -> tuple[int, dict, str]:
    """`bgpadv explain TARGET` run in worker-1 against the running chain: the live cluster through the instance's
    own kubeconfig (list only), and the instance's /status."""
    argv = [sys.executable, "-m", "bgpadv", "explain", target, "--config", str(chain.config_path)]
    argv += ["--kubeconfig", str(chain.dir / "kubeconfig"), "--status-url", f"http://127.0.0.1:{METRICS_PORT}"]
    proc = chain.lab.net.spawn(chain.ns, [*argv, "--output", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, json.loads(out or b"{}"), err.decode()


def test_explain_live_says_announced_with_the_next_hop_frr_holds(chain):
    chain.frr.wait_route("192.168.100.10/32", [W1])
    code, doc, err = explain_live(chain, "192.168.100.10")
    assert code == 0, err
    assert doc["verdict"] == "announced"
    assert [(r["prefix"], r["nextHop"], r["node"], r["peers"]) for r in doc["routes"]] == [
        ("192.168.100.10/32", W1, "worker-1", ["10.0.0.1"])
    ]
    assert chain.frr.best_next_hops("192.168.100.10/32") == [W1], "the ToR holds what explain says"
    assert {o["object"] for o in doc["objects"]} >= {
        f"IPAMClaim {NS}/vm-a.default",
        f"VirtualMachineInstance {NS}/vm-a",
    }
    (instance,) = doc["instances"]
    assert instance["ready"] is True
    assert instance["peers"]["10.0.0.1"]["state"] == "up"
    assert any(r["network"] == "vmnet-a" and r["kind"] == "host" and r["count"] >= 1 for r in instance["routes"])


def test_explain_live_says_refused_for_a_refused_address_the_tor_never_sees(chain):
    code, doc, err = explain_live(chain, "10.66.0.1")
    assert code == 1, err
    assert doc["verdict"] == "refused"
    assert [r["reason"] for r in doc["rules"] if r["verdict"] == "refused"] == ["outside-network-subnets"]
    assert chain.frr.best_next_hops("10.66.0.1/32") is None
