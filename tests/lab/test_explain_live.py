"""`bgpadv explain --kubeconfig --status-url` against the running chain: fake API → `bgpadv run` → the real FRR ToR.

Scope (`bgpadv explain`'s live form against the running chain): the operator's question "why
is (isn't) this IP announced?" asked of the live cluster (the fake API server, read-only, as the service reads it)
and of the running instance (its `/status` and `/sent`), from inside the instance's node namespace as a person on
the node would. For an announced address it reports the route, its next hop, its peer, what the instance holds and
when the peer was sent it; that send time is checked against the ToR's own view: it lies between the test's write
to the API and the moment FRR's table had the route (and within the second FRR stamps on its path). For a refused
address and for a VM the test stops, the live form says why with the reason, and the stopped VM's withdrawal time
is checked the same way. What the fabric has is read from FRR (`show bgp ... json`), never from bgpadv's logs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from bgpadv.core import reasons
from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import METRICS_PORT, BgpadvInLab
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import TOR_V4, Lab

pytestmark = pytest.mark.lab

W1, W2 = "10.0.0.11", "10.0.0.12"
NET = "cluster_udn_vmnet-a"
STATUS_URL = f"http://127.0.0.1:{METRICS_PORT}"


def vm(name: str, node: str | None, ips: list[str]) -> list[dict]:
    """A VM as the cluster shows it: its IPAMClaim (allocated) and, when it runs, its VMI with the guest's report."""
    objs = [k8s.ipam_claim(NS, f"{name}.default", name, NET, ips)]
    if node is not None:
        objs.append(k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip.split("/")[0] for ip in ips])]))
    return objs


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, "fd00::11"),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.namespace(NS),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED, namespaces=[NS]),
        *vm("web-1", "worker-1", ["192.168.100.10/24"]),
        *vm("web-2", "worker-2", ["192.168.100.11/24"]),
        *vm("gw", "worker-1", ["192.168.100.1/24"]),  # the network's default gateway: refused
        *vm("off", None, ["192.168.100.40/24"]),  # a VM that was never started: a claim, no VMI
    ]


@pytest.fixture(scope="module")
def chain():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("operate") as lab, BgpadvInLab(lab, cluster()) as running:
        running.frr.wait_route("192.168.100.11/32", [W2], timeout=60)
        yield running


def explain(chain: BgpadvInLab, target: str) -> tuple[int, dict[str, Any]]:
    """`bgpadv explain TARGET --kubeconfig ... --status-url ...` run inside the instance's node namespace (where
    both the API server's and the instance's listeners are), as the operator runs it: exit code and JSON document."""
    argv = [sys.executable, "-m", "bgpadv", "explain", target, "--config", str(chain.config_path)]
    argv += ["--kubeconfig", str(chain.dir / "kubeconfig"), "--status-url", STATUS_URL, "--output", "json"]
    done = subprocess.run(["ip", "netns", "exec", chain.ns, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def explain_table(chain: BgpadvInLab, target: str) -> str:
    argv = [sys.executable, "-m", "bgpadv", "explain", target, "--config", str(chain.config_path)]
    argv += ["--kubeconfig", str(chain.dir / "kubeconfig"), "--status-url", STATUS_URL]
    done = subprocess.run(["ip", "netns", "exec", chain.ns, *argv], capture_output=True, text=True, timeout=60)
    return done.stdout


def seconds(stamp: str) -> float:
    """`2026-12-02T11:24:08.123Z` (bgpadv.speaker.sent.utc) as wall-clock seconds."""
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


def frr_last_update(chain: BgpadvInLab, prefix: str) -> int:
    """The epoch second FRR stamped on its best path for `prefix` (`lastUpdate.epoch`)."""
    data = chain.frr.vtysh_json(f"show bgp ipv4 unicast {prefix} json")
    best = next(p for p in data["paths"] if p.get("bestpath", {}).get("overall") or p.get("bestpath"))
    return int(best["lastUpdate"]["epoch"])


def the_instance(doc: dict[str, Any]) -> dict[str, Any]:
    [instance] = doc["instances"]
    assert "error" not in instance, instance
    return instance


def sends_of(doc: dict[str, Any], prefix: str) -> dict[str, Any]:
    instance = the_instance(doc)
    assert "sent_error" not in instance, instance
    return instance["sent"][prefix]


MS = 0.001  # the send time is printed to the millisecond, truncated


def test_a_new_vm_is_explained_with_its_route_its_peer_and_when_the_peer_was_sent_it(chain):
    written = time.time()
    chain.api.load(vm("web-3", "worker-2", ["192.168.100.12/24"]))
    chain.frr.wait_for(lambda: chain.frr.best_next_hops("192.168.100.12/32") == [W2], 30, "web-3's route", every=0.02)
    seen_by_frr = time.time()
    frr_second = frr_last_update(chain, "192.168.100.12/32")

    code, doc = explain(chain, "192.168.100.12")

    assert (code, doc["verdict"]) == (0, "announced"), doc["summary"]
    [route] = doc["routes"]
    assert (route["prefix"], route["nextHop"], route["node"], route["peers"]) == (
        "192.168.100.12/32",
        W2,
        "worker-2",
        [TOR_V4],
    )
    objects = {o["object"] for o in doc["objects"]}
    assert {f"IPAMClaim {NS}/web-3.default", f"VirtualMachineInstance {NS}/web-3"} <= objects
    instance = the_instance(doc)
    assert instance["ready"] is True
    assert instance["peers"][TOR_V4]["state"] == "up"
    assert chain.frr.neighbor_state(chain.address) == "Established"
    held = {(r["network"], r["peer"], r["kind"]): r["count"] for r in instance["routes"]}
    assert held[("vmnet-a", TOR_V4, "host")] == len(chain.frr.bgp_routes("ipv4")) - 1  # all but the subnet
    sent = sends_of(doc, "192.168.100.12/32")[TOR_V4]
    assert sent["action"] == "announce"
    at = seconds(sent["at"])
    # between the test's write and the moment the test saw the route in FRR's table; FRR's own stamp agrees
    assert written - MS <= at <= seen_by_frr, (written, sent, seen_by_frr)
    # FRR's stamp is wall clock minus the path's age, both in whole seconds (as `bgpTimerUpEstablishedEpoch`): it
    # can read up to one second early, so the second it names ends at most 2 s after it (seen in CI: 1 s early)
    assert at < frr_second + 2, (sent, frr_second)
    assert written - MS <= seconds(sent["causeReceivedAt"]) <= at


def test_the_table_form_says_the_same_for_a_person(chain):
    text = explain_table(chain, "192.168.100.10")
    assert text.splitlines()[0] == "192.168.100.10: announced"
    assert f"192.168.100.10/32  {W1}" in text
    assert f"  {STATUS_URL}: ready" in text
    assert f"peer {TOR_V4}: up, " in text
    assert f"192.168.100.10/32: sent to {TOR_V4} at " in text


def test_a_refused_address_is_explained_with_its_reason_and_was_never_sent(chain):
    assert chain.frr.best_next_hops("192.168.100.1/32") is None
    code, doc = explain(chain, "192.168.100.1")
    assert (code, doc["verdict"]) == (1, "refused"), doc["summary"]
    refused = [r for r in doc["rules"] if r["verdict"] == "refused"]
    assert {(r["source"], r["reason"]) for r in refused} == {
        (f"IPAMClaim {NS}/gw.default", reasons.DEFAULT_GATEWAY_ADDRESS)
    }
    assert all(r["meaning"] for r in refused)
    assert doc["routes"] == []
    assert sends_of(doc, "192.168.100.1/32") == {}  # this instance never sent it to any peer
    assert "never sent to any peer by this instance" in explain_table(chain, "192.168.100.1")


def test_a_vm_that_never_ran_is_explained_as_stopped(chain):
    assert chain.frr.best_next_hops("192.168.100.40/32") is None
    code, doc = explain(chain, "192.168.100.40")
    assert (code, doc["verdict"]) == (1, "not announced"), doc["summary"]
    assert [(r["verdict"], r["message"]) for r in doc["rules"]] == [
        ("skipped", "VM stopped: no VirtualMachineInstance")
    ]
    assert sends_of(doc, "192.168.100.40/32") == {}


def test_a_vm_stopped_now_is_explained_as_stopped_with_the_time_its_route_was_withdrawn(chain):
    frr = chain.frr
    assert frr.best_next_hops("192.168.100.11/32") == [W2]
    stopped = time.time()
    chain.api.delete("kubevirt.io/v1", "VirtualMachineInstance", "web-2", NS)
    frr.wait_for(lambda: frr.best_next_hops("192.168.100.11/32") is None, 30, "web-2's withdrawal", every=0.02)
    gone_from_frr = time.time()

    code, doc = explain(chain, "192.168.100.11")

    # KubeVirt's finalizers hold the VMI a while: the route is withdrawn at once, the VM is "stopping"
    assert (code, doc["verdict"]) == (1, "not announced"), doc["summary"]
    assert [(r["verdict"], r["message"]) for r in doc["rules"]] == [
        ("skipped", "VM stopping: its VirtualMachineInstance is being deleted")
    ]
    assert doc["routes"] == []
    sent = sends_of(doc, "192.168.100.11/32")[TOR_V4]
    assert sent["action"] == "withdraw"
    assert stopped - MS <= seconds(sent["at"]) <= gone_from_frr, (stopped, sent, gone_from_frr)

    # virt-controller drops its finalizers: the VMI is gone, the VM stopped; the withdrawal stays the last send
    chain.api.patch("kubevirt.io/v1", "VirtualMachineInstance", "web-2", NS, {"metadata": {"finalizers": None}})
    chain.frr.wait_for(
        lambda: chain.api.get("kubevirt.io/v1", "VirtualMachineInstance", "web-2", NS) is None, 10, "the VMI's removal"
    )
    code, doc = explain(chain, "192.168.100.11")
    assert (code, doc["verdict"]) == (1, "not announced"), doc["summary"]
    stopped_rule = ("skipped", "VM stopped: no VirtualMachineInstance")
    assert [(r["verdict"], r["message"]) for r in doc["rules"]] == [stopped_rule]
    assert sends_of(doc, "192.168.100.11/32")[TOR_V4] == sent
    assert frr.best_next_hops("192.168.100.11/32") is None
