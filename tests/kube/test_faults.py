"""Real faults of the real API under a running bgpadv, seen from the fabric.

Scope: kube-apiserver stopped for a while and started again (every watch cut, the watch cache rebuilt) loses no
route and the watches resume; etcd compacted while the apiserver was down: a 410 and a relist or a resumed watch,
nothing withdrawn; the IPAMClaim CRD deleted: the real API marks every claim deleting first and answers 404 only
once they are gone, with ordinary watch events: bgpadv holds it as a mass deletion, and withdraws the claims'
routes only when a LIST after the hold still agrees (the hold is `HOLD` seconds here, below the configuration's 60 s
minimum, through the lab's own entry point `bgpadv_lab.short_hold`).
FRR's table is sampled all through each fault.
"""

from __future__ import annotations

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, wait_for_routes
from bgpadv_lab.kubeapi import AsServiceAccount, wait_until
from bgpadv_lab.topology import WORKERS

pytestmark = [pytest.mark.kube, pytest.mark.lab]
W1, W2 = WORKERS["w1"][0], WORKERS["w2"][0]
W1_6 = WORKERS["w1"][1]

NS = "kube-faults"
SELECTED = {"bgpadv.test/tier": "faults"}
NETWORK = "cluster_udn_vmnet-f"
HOLD = 20


def vm(name: str, node: str, ip: str) -> list[dict]:
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, NETWORK, [f"{ip}/24"]),
        k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip])]),
    ]


def cluster() -> list[dict]:
    return [
        k8s.cudn_layer2("vmnet-f", ["192.168.130.0/24"], labels=SELECTED, namespaces=[NS]),
        *vm("vm-1", "worker-1", "192.168.130.10"),
        *vm("vm-2", "worker-2", "192.168.130.11"),
        *vm("vm-3", "worker-1", "192.168.130.12"),
    ]


EXPECTED = {
    "192.168.130.0/24": [W1],
    "192.168.130.10/32": [W1],
    "192.168.130.11/32": [W2],
    "192.168.130.12/32": [W1],
}


def counter(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


@pytest.fixture(scope="module")
def faults(kube):
    lab, api = kube
    api.ensure_namespaces(NS)
    api.apply(cluster())
    config = lab_config(
        lab.workdir / "bgpadv-w1" / "kubeconfig",
        networks={"selector": {"matchLabels": dict(SELECTED)}},
    )
    who = AsServiceAccount(api, "bgpadv", "bgpadv")
    with BgpadvInLab(lab, api=who, config=config, hold=HOLD) as running:
        wait_for_routes(running.frr, EXPECTED, "ipv4", timeout=60)
        yield running, api


class Sampler:
    """FRR's IPv4 table, read again and again: every sample that is not `expected`."""

    def __init__(self, running, expected: dict) -> None:
        self.running, self.expected, self.wrong = running, expected, []

    def sample(self) -> None:
        now = self.running.frr.bgp_routes("ipv4")
        if now != self.expected:
            self.wrong.append(now)

    def for_seconds(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.sample()
            time.sleep(0.2)


def test_an_apiserver_down_for_a_while_loses_no_route_and_the_watches_resume(faults):
    running, api = faults
    sampler = Sampler(running, EXPECTED)
    api.stop_apiserver()
    sampler.for_seconds(10)
    api.up()
    sampler.for_seconds(3)
    assert sampler.wrong == [], "no route may move while the apiserver is away"
    api.apply(vm("vm-4", "worker-2", "192.168.130.13"))
    wait_for_routes(running.frr, {**EXPECTED, "192.168.130.13/32": [W2]}, "ipv4", timeout=60)
    api.delete("kubevirt.io/v1", "VirtualMachineInstance", "vm-4", NS)
    api.finalize("kubevirt.io/v1", "VirtualMachineInstance", "vm-4", NS)
    wait_for_routes(running.frr, EXPECTED, "ipv4", timeout=30)


def test_etcd_compacted_while_the_apiserver_was_down_withdraws_nothing_and_the_watches_resume(faults):
    """Whether a resumed watch gets 410 Gone here depends on how far etcd moved past bgpadv's last resourceVersion
    before the rebuilt watch cache started (seen both ways): either way no route moves, and a change made after
    it reaches the ToR (a relist or a resumed watch)."""
    running, api = faults
    sampler = Sampler(running, EXPECTED)
    api.stop_apiserver()
    api.compact()
    api.up()
    sampler.for_seconds(8)
    assert sampler.wrong == [], "a relist of the same objects withdraws nothing"
    api.apply(vm("vm-5", "worker-1", "192.168.130.14"))
    wait_for_routes(running.frr, {**EXPECTED, "192.168.130.14/32": [W1]}, "ipv4", timeout=60)
    api.delete("kubevirt.io/v1", "VirtualMachineInstance", "vm-5", NS)
    api.finalize("kubevirt.io/v1", "VirtualMachineInstance", "vm-5", NS)
    wait_for_routes(running.frr, EXPECTED, "ipv4", timeout=30)


def finish_crd_deletion(api) -> None:
    """What the real controllers would do: every claim's finalizers go (in every namespace: the CRD stays
    Terminating while any claim is left), then the claims and the CRD."""
    crd = "ipamclaims.k8s.cni.cncf.io"
    if api.kubectl("get", "crd", crd, check=False).returncode != 0:
        return
    for claim in api.list("k8s.cni.cncf.io/v1alpha1", "IPAMClaim"):
        meta = claim["metadata"]
        api.finalize("k8s.cni.cncf.io/v1alpha1", "IPAMClaim", meta["name"], meta["namespace"])
    wait_until(lambda: api.kubectl("get", "crd", crd, check=False).returncode != 0, 60, "the CRD to go")


def test_the_ipamclaim_crd_deleted_holds_the_claims_routes_through_the_hold(faults):
    """Deleting the CRD marks every claim deleting by ordinary watch events (the bug the real API found: every route
    went at once): a mass deletion (`bgpadv.safety.failstatic`), held like a relist, so nothing is withdrawn during
    the hold; the first claims' withdrawals were still settling (`safety.deletionSettleSeconds`) when the rule
    tripped, so none of them reached the ToR either."""
    running, api = faults
    assert api.tree is not None
    crd = api.tree / "crds" / "k8s.cni.cncf.io_ipamclaims.yaml"
    api.kubectl("delete", "-f", str(crd), "--wait=false")
    try:
        sampler = Sampler(running, EXPECTED)
        sampler.for_seconds(HOLD - 3)
        assert sampler.wrong == [], "fail static: nothing is withdrawn during the hold"
    finally:
        finish_crd_deletion(api)
        api.up()  # every `up` applies the CRDs again
        api.apply([o for o in cluster() if o["kind"] == "IPAMClaim"])
        wait_for_routes(running.frr, EXPECTED, "ipv4", timeout=60)


def test_the_ipamclaim_crd_deleted_is_seen_by_the_watch_before_any_404(faults):
    """What the real API does when the CRD goes (the fake's `set_installed(False)` keeps the objects and answers
    404 at once): every claim gets a deletionTimestamp first, the CRD stays Terminating while they carry finalizers,
    and the kind answers 404 only once they are gone. bgpadv holds the claims' routes as a mass deletion and
    withdraws them once a LIST after the hold still shows every claim deleting (the subnet stays); with the CRD back
    and the claims recreated, the routes come back."""
    running, api = faults
    assert api.tree is not None
    crd = api.tree / "crds" / "k8s.cni.cncf.io_ipamclaims.yaml"
    api.kubectl("delete", "-f", str(crd), "--wait=false")
    try:
        claims = api.list("k8s.cni.cncf.io/v1alpha1", "IPAMClaim", NS)
        assert claims and all(c["metadata"].get("deletionTimestamp") for c in claims)
        assert api.kubectl("get", "ipamclaims", "-n", NS, check=False).returncode == 0, "still served, Terminating"
        wait_for_routes(running.frr, {"192.168.130.0/24": [W1]}, "ipv4", timeout=HOLD + 40)
        finish_crd_deletion(api)
        assert api.kubectl("get", "ipamclaims", "-n", NS, check=False).returncode != 0, "404 once the claims are gone"
    finally:
        finish_crd_deletion(api)
        api.up()
        api.apply([o for o in cluster() if o["kind"] == "IPAMClaim"])
    wait_for_routes(running.frr, EXPECTED, "ipv4", timeout=60)
