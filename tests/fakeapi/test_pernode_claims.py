"""Per-node IPAMClaims against the fake apiserver: only the claims of the node's VMs, read as they arrive.

Scope (`bgpadv.sources.claims`): a per-node instance never lists the claim collection whole (one LIST of one object
gives its resourceVersion); it reads the claims of the VMs its VMI watches deliver, by their `kubevirt.io/vm` label,
and holds each VM back until its claims are read (the claim always arrives before its VM, and the VMI watch's
SYNCED after both); one cluster-wide claim watch keeps the local VMs' claims current and drops every other claim's
change; a read that fails is retried while the VM waits; 410 on the claim watch re-reads the held claims (a claim
deleted meanwhile is found); a VM that leaves the node gives its claims up after a grace, as objects that moved.
"""

from __future__ import annotations

import time

import pytest

from bgpadv.core import resources
from bgpadv.sources import claims as claim_source
from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.fakeapi.test_reflector import CLAIM_API, FAST, Harness, claim, cudn, node, pod, vmi

NODE = "worker-1"
WATCHED = tuple(
    scoped
    for r in (resources.CUDN, resources.IPAM_CLAIM, resources.VMI, resources.LAUNCHER_POD, resources.NODE)
    for scoped in resources.for_node(r, NODE)
)

WATCHED_ON_NODE = next(r for r in WATCHED if r.label_selector.startswith(resources.NODE_NAME_LABEL))


def cluster(vms: int = 6) -> list[dict]:
    """`vms` VMs, each with its claim, alternating between worker-1 and worker-2."""
    out = [cudn(), node("worker-1", "192.168.126.31"), node("worker-2", "192.168.126.32")]
    for i in range(vms):
        name, where, ip = f"vm-{i}", ("worker-1", "worker-2")[i % 2], f"192.168.100.{10 + i}"
        out += [claim(name, ip), vmi(name, where, ip), pod(f"virt-launcher-{name}-x7k2p", where, name)]
    return out


@pytest.fixture
def server():
    with FakeApiServer(bookmark_interval=0.05) as s:
        s.load(cluster())
        yield s


@pytest.fixture
def harness(server: FakeApiServer):
    h = Harness(server, WATCHED, FAST)
    yield h
    h.sources.stop()
    h.api.close()


def claim_names(h: Harness) -> set[str]:
    return {name for _, name in h.store.state.ipam_claims}


def order(h: Harness) -> list[tuple[str, str, str]]:
    """(plural, type, name) of every event, in the order the store received them."""
    out = []
    for e in h.events:
        key = e.object_key()
        out.append((e.resource.plural, e.type, key[1] if isinstance(key, tuple) else str(key)))
    return out


def test_an_instance_holds_only_its_vms_claims_and_never_lists_the_collection_whole(
    server: FakeApiServer, harness: Harness
) -> None:
    harness.sources.start()
    harness.wait(lambda: harness.store.synced)
    assert claim_names(harness) == {"vm-0.default", "vm-2.default", "vm-4.default"}
    assert {name for _, name in harness.store.state.vmis} == {"vm-0", "vm-2", "vm-4"}
    seq = order(harness)
    for vm in ("vm-0", "vm-2", "vm-4"):  # a VM is delivered after its claim, and its watch's SYNCED after both
        assert seq.index(("ipamclaims", "ADDED", f"{vm}.default")) < seq.index(("virtualmachineinstances", "ADDED", vm))
    on_node = next(i for i, e in enumerate(harness.events) if e.type == "SYNCED" and e.resource is WATCHED_ON_NODE)
    assert on_node > seq.index(("virtualmachineinstances", "ADDED", "vm-4"))
    # one LIST of one object for the resourceVersion, one read by label for the three VMs (page size 2: two pages)
    assert server.requests[("list", "ipamclaims")] <= 1 + 2 * 3


def test_claim_changes_elsewhere_are_dropped_and_a_local_vms_are_kept(server: FakeApiServer, harness: Harness) -> None:
    harness.sources.start()
    harness.wait(lambda: harness.store.synced)
    elsewhere = claim("vm-1", "192.168.100.11")
    elsewhere["status"]["ips"] = ["192.168.100.99/24"]
    server.update(elsewhere)
    server.create(claim("vm-new", "192.168.100.77"))  # a VM not (yet) on the node
    local = claim("vm-0", "192.168.100.10")
    local["status"]["ips"] = ["192.168.100.50/24"]
    server.update(local)
    harness.wait(lambda: harness.store.state.ipam_claims[(NS, "vm-0.default")].ips[0].text == "192.168.100.50/24")
    assert claim_names(harness) == {"vm-0.default", "vm-2.default", "vm-4.default"}


def label_vm(server: FakeApiServer, vm: str, label: str, node: str | None = NODE) -> None:
    """Set (or, `node` None, remove) one of a VMI's node labels, as KubeVirt writes it."""
    server.patch("kubevirt.io/v1", "VirtualMachineInstance", vm, NS, {"metadata": {"labels": {label: node}}})


def arrives_with_its_claim_first(h: Harness, vm: str) -> None:
    """`vm` reaches the store, its claim before it."""
    h.wait(lambda: (NS, vm) in h.store.state.vmis)
    assert (NS, f"{vm}.default") in h.store.state.ipam_claims
    seq = order(h)
    assert seq.index(("ipamclaims", "ADDED", f"{vm}.default")) < seq.index(("virtualmachineinstances", "ADDED", vm))


def test_a_vm_migrating_in_is_delivered_once_its_claim_is_read(server: FakeApiServer, harness: Harness) -> None:
    harness.sources.start()
    harness.wait(lambda: harness.store.synced)
    label_vm(server, "vm-1", resources.MIGRATION_TARGET_LABEL)
    arrives_with_its_claim_first(harness, "vm-1")


def test_a_failed_read_keeps_the_vm_back_and_is_retried(server: FakeApiServer, harness: Harness) -> None:
    harness.sources.start()
    harness.wait(lambda: harness.store.synced)
    server.fail_next(2, 500, verb="list", plural="ipamclaims")
    label_vm(server, "vm-3", resources.NODE_NAME_LABEL)
    arrives_with_its_claim_first(harness, "vm-3")


@pytest.mark.parametrize(
    "refused",
    [
        pytest.param(lambda q: "resourceVersionMatch" in q, id="no-resource-version-match"),
        pytest.param(lambda q: " in (" in q.get("labelSelector", ""), id="no-set-based-selector"),
    ],
)
def test_a_read_the_apiserver_refuses_as_malformed_is_made_a_plainer_way(server: FakeApiServer, refused) -> None:
    """An apiserver (or a proxy before it) that answers 400 to a form of the claim read keeps refusing it: the
    instance reads the claims a plainer way from then on (`claims.READS`) instead of holding its VMs back for ever."""
    server.fail_next(1000, 400, verb="list", plural="ipamclaims", when=refused)
    h = Harness(server, WATCHED, FAST)
    try:
        h.sources.start()
        h.wait(lambda: h.store.synced)
        assert claim_names(h) == {"vm-0.default", "vm-2.default", "vm-4.default"}
        assert {name for _, name in h.store.state.vmis} == {"vm-0", "vm-2", "vm-4"}
        label_vm(server, "vm-3", resources.NODE_NAME_LABEL)
        arrives_with_its_claim_first(h, "vm-3")
    finally:
        h.sources.stop()
        h.api.close()
    server.fail_next(0)


def test_410_on_the_claim_watch_re_reads_the_held_claims(server: FakeApiServer, harness: Harness) -> None:
    harness.sources.start()
    harness.wait(lambda: harness.store.synced)
    reads = server.requests[("list", "ipamclaims")]
    server.delete(CLAIM_API, "IPAMClaim", "vm-2.default", NS)  # its finalizer keeps it until it is removed
    server.patch(CLAIM_API, "IPAMClaim", "vm-2.default", NS, {"metadata": {"finalizers": None}})
    server.compact()
    server.drop_watches()  # the deletion is missed: the watch resumes from a compacted resourceVersion
    harness.wait(lambda: (NS, "vm-2.default") not in harness.store.state.ipam_claims)
    assert claim_names(harness) == {"vm-0.default", "vm-4.default"}
    assert server.requests[("list", "ipamclaims")] > reads


def test_a_vm_that_left_gives_its_claims_up_after_the_grace_as_moved(
    server: FakeApiServer, harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claim_source, "DEPARTED_GRACE", 0.2)
    harness.sources.start()
    harness.wait(lambda: harness.store.synced)
    label_vm(server, "vm-0", resources.NODE_NAME_LABEL, "worker-2")
    harness.wait(lambda: (NS, "vm-0") not in harness.store.state.vmis)
    harness.wait(lambda: (NS, "vm-0.default") not in harness.store.state.ipam_claims)
    gone = [e for e in harness.events if e.resource.plural == "ipamclaims" and e.type == "DELETED"]
    assert gone and gone[-1].resource.moves
    assert not (gone[-1].obj or {}).get("metadata", {}).get("deletionTimestamp")


def test_a_claim_deleted_while_its_vm_s_read_is_answered_late_is_not_brought_back() -> None:
    """The read of an arriving VM's claims began before the watch delivered the claim's deletion, and answers
    after it with the claim as it was: the claim stays gone; the VM goes on, without it."""
    import json
    import threading

    from kubernetes import client

    from bgpadv.sources.claims import ClaimReflector
    from bgpadv.sources.reflector import WatchEvent
    from tests.fakeapi.test_reflector import CannedResponse

    claims = next(r for r in WATCHED if r.field == "ipam_claims")
    on_node = WATCHED_ON_NODE
    old = claim("vm-0", "192.168.100.10")
    old["metadata"]["resourceVersion"] = "5"
    gone = json.loads(json.dumps(old))
    gone["metadata"]["resourceVersion"] = "12"
    events: list[WatchEvent] = []
    reflector = ClaimReflector(client.ApiClient(), claims, events.append, FAST)
    deleted, answered = threading.Event(), threading.Event()

    def call(**kwargs):
        if kwargs.get("watch"):
            if deleted.is_set():
                reflector._wake.wait(5)  # nothing more to say
                return CannedResponse()
            deleted.set()
            return CannedResponse(chunks=(json.dumps({"type": "DELETED", "object": gone}).encode() + b"\n",))
        if kwargs.get("limit") == 1:
            return CannedResponse(json.dumps({"metadata": {"resourceVersion": "10"}, "items": []}).encode())
        deleted.wait(5)  # the read answers after the deletion was delivered, with the claim as it was before
        answered.set()
        return CannedResponse(json.dumps({"metadata": {"resourceVersion": "9"}, "items": [old]}).encode())

    reflector._call = call
    vm = vmi("vm-0", NODE, "192.168.100.10")
    vm["metadata"]["resourceVersion"] = "3"
    reflector.offer(WatchEvent(on_node, "ADDED", vm, 0.0, key=(NS, "vm-0")))
    reflector.start()
    try:
        assert answered.wait(5)
        end = time.monotonic() + 5
        while not any(e.resource is on_node for e in events) and time.monotonic() < end:
            time.sleep(0.01)
    finally:
        reflector.stop()
    seen = [(e.resource.plural, e.type) for e in events if e.type != "SYNCED"]
    assert ("virtualmachineinstances", "ADDED") in seen
    assert ("ipamclaims", "ADDED") not in seen
