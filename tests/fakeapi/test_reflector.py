"""Reflectors and the store against the fake apiserver, through the official client.

Scope: the initial paged list and SYNCED; incremental ADDED/MODIFIED/DELETED; resuming a cut or timed-out watch
from the last resourceVersion without a new LIST; bookmarks keeping that resourceVersion fresh; 410 after a
compaction → relist with the missed deletions; an absent CRD counted as synced and retried until installed;
backoff through 500s; stop() interrupting a blocked watch. Also the store's apply rules and object_wall_time.

Needs the fake: faults on demand and at once (drop_watches, compact to an exact resourceVersion, set_installed,
fail_next 500s). What these rules assume of a real apiserver is pinned against both by tests/kube/test_contract.py;
the same faults on the real one are tests/kube/test_faults.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from kubernetes import client

from bgpadv.core import resources
from bgpadv.sources.reflector import ReflectorSettings, WatchEvent, deleted_object, object_wall_time
from bgpadv.sources.store import Store
from bgpadv.sources.watches import Sources
from bgpadv_lab import objects
from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.objects import VM_NAMESPACE as NS

CLAIM_API = "k8s.cni.cncf.io/v1alpha1"
FAST = ReflectorSettings(page_size=2, watch_timeout=30, inactivity_timeout=10, backoff_min=0.02, backoff_max=0.1)
WATCHED = (resources.CUDN, resources.IPAM_CLAIM, resources.VMI, resources.LAUNCHER_POD, resources.NODE)


# -- realistic objects (shapes from kubernetes-apis.md) -----------------------------------------------------------
def cudn() -> dict:
    return {
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "ClusterUserDefinedNetwork",
        "metadata": {"name": "vmnet-a", "labels": {"advertise": "true"}},
        "spec": {
            "namespaceSelector": {
                "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [NS]}]
            },
            "network": {
                "topology": "Layer2",
                "layer2": {
                    "role": "Primary",
                    "subnets": ["192.168.100.0/24"],
                    "infrastructureSubnets": ["192.168.100.0/30"],
                    "defaultGatewayIPs": ["192.168.100.1"],
                    "ipam": {"mode": "Enabled", "lifecycle": "Persistent"},
                },
            },
        },
        "status": {
            "conditions": [{"type": "NetworkCreated", "status": "True", "reason": "NetworkAttachmentDefinitionCreated"}]
        },
    }


def claim(vm: str, ip: str) -> dict:
    return {
        "apiVersion": CLAIM_API,
        "kind": "IPAMClaim",
        "metadata": {
            "name": f"{vm}.default",
            "namespace": NS,
            "labels": {"kubevirt.io/vm": vm},
            "finalizers": ["kubevirt.io/persistent-ipam"],
            "ownerReferences": [
                {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": vm, "controller": True}
            ],
        },
        "spec": {"network": "cluster_udn_vmnet-a", "interface": ""},
        "status": {
            "ips": [f"{ip}/24"],
            "ownerPod": {"name": f"virt-launcher-{vm}-x7k2p"},
            "conditions": [{"type": "IPsAllocated", "status": "True", "reason": "SuccessfulAllocation"}],
        },
    }


def vmi(vm: str, node: str, ip: str) -> dict:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": vm, "namespace": NS, "labels": {"kubevirt.io/nodeName": node, "kubevirt.io/vm": vm}},
        "spec": {"networks": [{"name": "default", "pod": {}}]},
        "status": {
            "phase": "Running",
            "nodeName": node,
            "interfaces": [{"name": "default", "ipAddress": ip, "ipAddresses": [ip], "podInterfaceName": "ovn-udn1"}],
        },
    }


def pod(name: str, node: str, launcher_of: str | None = None) -> dict:
    labels = {"kubevirt.io": "virt-launcher", "kubevirt.io/vm": launcher_of} if launcher_of else {"app": name}
    annotations = {"kubevirt.io/domain": launcher_of} if launcher_of else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": annotations},
        "spec": {"nodeName": node, "containers": [{"name": "compute", "image": "quay.io/kubevirt/virt-launcher"}]},
        "status": {"phase": "Running"},
    }


def node(name: str, ip: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"k8s.ovn.org/node-primary-ifaddr": json.dumps({"ipv4": f"{ip}/24"})},
        },
        "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
    }


def cluster() -> list[dict]:
    return [
        cudn(),
        claim("vm-a", "192.168.100.10"),
        claim("vm-b", "192.168.100.11"),
        claim("vm-c", "192.168.100.12"),
        vmi("vm-a", "worker-1", "192.168.100.10"),
        vmi("vm-b", "worker-2", "192.168.100.11"),
        pod("virt-launcher-vm-a-x7k2p", "worker-1", "vm-a"),
        pod("virt-launcher-vm-b-x7k2p", "worker-2", "vm-b"),
        pod("prometheus-0", "worker-1"),
        node("worker-1", "192.168.126.31"),
        node("worker-2", "192.168.126.32"),
    ]


# -- harness ------------------------------------------------------------------------------------------------------
class RecordingObserver:
    def __init__(self) -> None:
        self.restarts: list[tuple[str, str]] = []
        self.unqueued: list[tuple[str, str]] = []  # watch events observed on the reflector's thread, never emitted

    def watch_event(self, resource: str, event_type: str, at: float, object_wall_time: float | None) -> None:
        self.unqueued.append((resource, event_type))

    def watch_restart(self, resource: str, reason: str) -> None:
        self.restarts.append((resource, reason))

    def reasons(self, resource: str) -> list[str]:
        return [reason for r, reason in self.restarts if r == resource]


class Harness:
    """Sources feeding a Store (under a lock: reflectors emit from their own threads), every event recorded."""

    def __init__(self, server: FakeApiServer, watched=WATCHED, settings: ReflectorSettings = FAST) -> None:
        self.server = server
        self.store = Store(watched)
        self.events: list[WatchEvent] = []
        self.observer = RecordingObserver()
        self.lock = threading.RLock()
        self.api = client.ApiClient(client.Configuration(host=server.url))
        self.sources = Sources(self.api, watched, self.emit, settings, self.observer)

    def emit(self, event: WatchEvent) -> None:
        with self.lock:
            self.events.append(event)
            self.store.apply(event)

    def seen(self, plural: str, kind: str) -> list[str]:
        """The names of the `kind` events of `plural`, watched or found by a (re)LIST."""
        with self.lock:
            keys = [e.object_key() for e in self.events if e.resource.plural == plural and e.type == kind]
            return [key[1] if isinstance(key, tuple) else key for key in keys if key is not None]

    def wait(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if predicate():
                    return
            time.sleep(0.01)
        raise AssertionError(f"condition not met within {timeout}s")

    def lists(self, plural: str) -> int:
        return self.server.requests[("list", plural)]

    def watches(self, plural: str) -> int:
        return self.server.requests[("watch", plural)]


@pytest.fixture
def server():
    with FakeApiServer(bookmark_interval=0.05) as s:
        yield s


@pytest.fixture
def harness(server: FakeApiServer):
    h = Harness(server)
    yield h
    h.sources.stop()
    h.api.close()


def started(h: Harness) -> Harness:
    h.sources.start()
    h.wait(lambda: h.store.synced)
    return h


# -- tests ----------------------------------------------------------------------------------------------------------
def test_the_initial_list_fills_the_store_page_by_page_then_syncs(server: FakeApiServer, harness: Harness) -> None:
    server.load(cluster())
    started(harness)
    assert harness.sources.synced
    assert harness.store.counts() == {
        "cudns": 1,
        "route_advertisements": 0,
        "ipam_claims": 3,
        "vmis": 2,
        "pods": 2,
        "nodes": 2,
        "namespaces": 0,
    }
    assert set(harness.store.state.pods) == {(NS, "virt-launcher-vm-a-x7k2p"), (NS, "virt-launcher-vm-b-x7k2p")}
    launcher = next(
        e
        for e in harness.events
        if e.resource is resources.LAUNCHER_POD and e.object_key() == (NS, "virt-launcher-vm-a-x7k2p")
    )
    assert launcher.obj is None and launcher.from_list  # a listed object travels as its key and view, no document
    assert launcher.view == harness.store.state.pods[(NS, "virt-launcher-vm-a-x7k2p")]
    assert harness.lists("ipamclaims") == 2  # 3 claims in pages of 2
    synced = [e for e in harness.events if e.type == "SYNCED"]
    assert {e.resource for e in synced} == set(WATCHED)
    claims = [e for e in harness.events if e.resource is resources.IPAM_CLAIM]
    assert [e.type for e in claims] == ["ADDED", "ADDED", "ADDED", "SYNCED"]


def test_changes_arrive_as_incremental_events(server: FakeApiServer, harness: Harness) -> None:
    server.load(cluster())
    started(harness)
    server.create(claim("vm-d", "192.168.100.13"))
    server.patch_status("kubevirt.io/v1", "VirtualMachineInstance", "vm-a", NS, {"status": {"nodeName": "worker-2"}})
    server.delete("v1", "Pod", "virt-launcher-vm-b-x7k2p", NS)
    harness.wait(lambda: harness.store.counts()["pods"] == 1)
    harness.wait(lambda: harness.store.state.vmis[(NS, "vm-a")].node_name == "worker-2")
    harness.wait(lambda: harness.store.counts()["ipam_claims"] == 4)
    assert harness.seen("ipamclaims", "ADDED")[-1] == "vm-d.default"
    assert harness.seen("virtualmachineinstances", "MODIFIED") == ["vm-a"]
    assert harness.seen("pods", "DELETED") == ["virt-launcher-vm-b-x7k2p"]
    modified = next(e for e in harness.events if e.type == "MODIFIED")
    assert modified.object_wall_time is not None and abs(modified.object_wall_time - time.time()) < 5


def test_a_cut_watch_resumes_from_the_last_resource_version_without_a_new_list(
    server: FakeApiServer, harness: Harness
) -> None:
    server.load(cluster())
    started(harness)
    harness.wait(lambda: harness.watches("ipamclaims") >= 1)  # synced after the list: the watch may not be open yet
    lists_before = {r.plural: harness.lists(r.plural) for r in WATCHED}
    watches_before = harness.watches("ipamclaims")
    server.drop_watches()
    server.create(claim("vm-d", "192.168.100.13"))  # happens while no stream is open
    harness.wait(lambda: "vm-d.default" in harness.seen("ipamclaims", "ADDED"))
    assert {r.plural: harness.lists(r.plural) for r in WATCHED} == lists_before
    assert harness.watches("ipamclaims") > watches_before
    assert "error" in harness.observer.reasons("ipamclaims")  # the cut is an error (no clean end of stream)
    assert "gone-410" not in harness.observer.reasons("ipamclaims")


def test_a_watch_that_times_out_is_reopened_without_a_new_list(server: FakeApiServer) -> None:
    server.load(cluster())
    h = Harness(server, watched=(resources.NODE,), settings=ReflectorSettings(watch_timeout=1, backoff_min=0.02))
    try:
        started(h)
        h.wait(lambda: h.watches("nodes") >= 2, timeout=5)
        server.create(node("worker-3", "192.168.126.33"))
        h.wait(lambda: "worker-3" in h.seen("nodes", "ADDED"))
        assert h.lists("nodes") == 1
        assert "stream-ended" in h.observer.reasons("nodes")
        assert [e.type for e in h.events].count("SYNCED") == 1
    finally:
        h.sources.stop()


def test_bookmarks_keep_the_resource_version_fresh_so_a_compaction_needs_no_relist(
    server: FakeApiServer, harness: Harness
) -> None:
    server.load(cluster())
    started(harness)
    claims = next(r for r in harness.sources.reflectors if r.resource is resources.IPAM_CLAIM)
    server.create(node("worker-3", "192.168.126.33"))  # moves the global resourceVersion, not the claims
    newest = str(server.resource_version)
    harness.wait(lambda: claims.resource_version == newest)  # carried by a BOOKMARK
    server.compact()
    server.drop_watches()
    server.create(claim("vm-d", "192.168.100.13"))
    harness.wait(lambda: "vm-d.default" in harness.seen("ipamclaims", "ADDED"))
    assert harness.lists("ipamclaims") == 2  # only the initial pages
    assert "gone-410" not in harness.observer.reasons("ipamclaims")


def test_a_rewrite_that_changes_nothing_the_planner_reads_is_observed_but_never_queued(
    server: FakeApiServer, harness: Harness
) -> None:
    """virt-handler and the kubelet rewrite launcher pods and VMIs for status bgpadv never reads (conditions,
    heartbeats): the reflector decodes each on its own thread and drops one whose view equals the last, so a flood
    of them never stands between the loop and a change that matters. What the view holds always goes through."""
    server.load(cluster())
    started(harness)
    launcher = "virt-launcher-vm-a-x7k2p"
    for beat in range(5):
        conditions = [{"type": "Ready", "status": "True", "lastProbeTime": f"2026-12-03T08:00:0{beat}Z"}]
        server.patch("v1", "Pod", launcher, NS, {"status": {"conditions": conditions}})
    server.patch("kubevirt.io/v1", "VirtualMachineInstance", "vm-a", NS, {"metadata": {"labels": {"tier": "db"}}})
    harness.wait(lambda: "vm-a" in harness.seen("virtualmachineinstances", "MODIFIED"))
    harness.wait(lambda: harness.observer.unqueued.count(("pods", "MODIFIED")) == 5)
    assert launcher not in harness.seen("pods", "MODIFIED")
    assert harness.store.state.vmis[(NS, "vm-a")].labels["tier"] == "db"
    server.patch("v1", "Pod", launcher, NS, {"spec": {"nodeName": "worker-2"}})  # the view changes: emitted
    harness.wait(lambda: launcher in harness.seen("pods", "MODIFIED"))
    assert harness.store.state.pods[(NS, launcher)].node == "worker-2"


def test_views_compare_without_their_resource_version_and_a_deletion_always_goes_through() -> None:
    from bgpadv.sources.decode.dispatch import decode
    from bgpadv.sources.reflector import unchanged

    before = vmi("vm-a", "worker-1", "192.168.100.10")
    before["metadata"]["resourceVersion"] = "41"
    after = json.loads(json.dumps(before))
    after["metadata"]["resourceVersion"] = "42"
    after["status"]["conditions"] = [{"type": "Ready", "status": "True"}]  # not read
    key = resources.VMI.key(before)
    old, new = decode(resources.VMI, before, key), decode(resources.VMI, after, key)
    assert (old.resource_version, new.resource_version) == ("41", "42")
    assert unchanged(old, new, after)
    assert not unchanged(None, new, after)  # nothing to compare with: a first sight is news
    after["metadata"]["deletionTimestamp"] = "2026-12-03T08:00:00Z"
    assert not unchanged(old, decode(resources.VMI, after, key), after)
    moved = json.loads(json.dumps(before))
    moved["status"]["nodeName"] = "worker-2"
    assert not unchanged(old, decode(resources.VMI, moved, key), moved)


def test_410_after_a_compaction_relists_and_emits_the_missed_deletions(server: FakeApiServer) -> None:
    server.load(cluster())
    h = Harness(server, settings=ReflectorSettings(page_size=2, bookmarks=False, backoff_min=0.02, backoff_max=0.05))
    try:
        started(h)
        server.fail_next(10_000, 500, verb="watch", plural="ipamclaims")  # keep the claims reflector away
        server.drop_watches()
        server.patch(CLAIM_API, "IPAMClaim", "vm-a.default", NS, {"metadata": {"finalizers": None}})
        server.delete(CLAIM_API, "IPAMClaim", "vm-a.default", NS)
        server.patch(CLAIM_API, "IPAMClaim", "vm-b.default", NS, {"status": {"ips": ["192.168.100.21/24"]}})
        server.create(claim("vm-d", "192.168.100.13"))
        server.compact()
        lists_before = h.lists("ipamclaims")
        server.fail_next(0)
        h.wait(lambda: "vm-a.default" in h.seen("ipamclaims", "DELETED"))
        h.wait(lambda: h.store.counts()["ipam_claims"] == 3)
        assert "gone-410" in h.observer.reasons("ipamclaims")
        assert h.lists("ipamclaims") > lists_before
        assert "vm-b.default" in h.seen("ipamclaims", "MODIFIED")
        assert "vm-d.default" in h.seen("ipamclaims", "ADDED")
        assert "vm-c.default" not in h.seen("ipamclaims", "MODIFIED")  # unchanged objects are not re-emitted
        assert set(h.store.state.ipam_claims) == {(NS, "vm-b.default"), (NS, "vm-c.default"), (NS, "vm-d.default")}
        assert [str(a.address) for a in h.store.state.ipam_claims[(NS, "vm-b.default")].ips] == ["192.168.100.21"]
    finally:
        h.sources.stop()


def test_a_deletion_the_reflector_finds_carries_the_objects_identity_made_from_its_key() -> None:
    """The reflector keeps each object as its view only (shared with the store), not the document (memory at
    100,000 VMs): a deletion found by a relist carries the type, name, namespace and resourceVersion, enough for
    the key downstream reads."""
    vmi = objects.vmi(NS, "vm-a", "worker-1", interfaces=[objects.interface(["192.168.100.10"])])
    gone = deleted_object(resources.VMI, resources.VMI.key(vmi), "42")
    assert gone == {
        "kind": "VirtualMachineInstance",
        "apiVersion": "kubevirt.io/v1",
        "metadata": {"name": "vm-a", "namespace": NS, "resourceVersion": "42"},
    }
    assert resources.VMI.key(gone) == resources.VMI.key(vmi)
    node = deleted_object(resources.NODE, "worker-1", "7")
    assert resources.NODE.key(node) == "worker-1" and "namespace" not in node["metadata"]


def test_an_absent_crd_counts_as_synced_and_is_retried_until_installed() -> None:
    with FakeApiServer(installed={"k8s.ovn.org", "k8s.cni.cncf.io"}, bookmark_interval=0.05) as server:
        server.load(cluster())  # VMIs are stored but kubevirt.io is not served yet
        h = Harness(server)
        try:
            started(h)
            assert h.store.counts()["vmis"] == 0
            h.wait(lambda: h.observer.reasons("virtualmachineinstances").count("not-installed") >= 2)
            server.set_installed("kubevirt.io", True)
            h.wait(lambda: h.store.counts()["vmis"] == 2)
            vmi_events = [e.type for e in h.events if e.resource is resources.VMI]
            assert vmi_events == ["SYNCED", "ADDED", "ADDED", "SYNCED"]
        finally:
            h.sources.stop()


def test_server_errors_back_off_and_recover(server: FakeApiServer, harness: Harness) -> None:
    server.load(cluster())
    server.fail_next(3, 500, verb="list", plural="nodes")
    started(harness)
    assert harness.store.counts()["nodes"] == 2
    assert harness.observer.reasons("nodes").count("error") == 3
    assert harness.lists("nodes") == 4


def test_stop_interrupts_a_blocked_watch_promptly(server: FakeApiServer) -> None:
    h = Harness(server, settings=ReflectorSettings(watch_timeout=300, inactivity_timeout=300, bookmarks=False))
    started(h)
    begin = time.monotonic()
    h.sources.stop()
    assert time.monotonic() - begin < 2
    assert not any(r._thread.is_alive() for r in h.sources.reflectors)


# -- the store ----------------------------------------------------------------------------------------------------
def _event(kind: str, obj: dict | None, res=resources.IPAM_CLAIM) -> WatchEvent:
    return WatchEvent(res, kind, obj, time.monotonic())


def _with_rv(obj: dict, rv: str) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}


A1 = _with_rv(claim("vm-a", "192.168.100.10"), "10")
A2 = _with_rv(claim("vm-a", "192.168.100.10"), "11")


@pytest.mark.parametrize(
    ("before", "event", "changed", "after"),
    [
        pytest.param([], _event("ADDED", A1), True, {(NS, "vm-a.default"): "10"}, id="added"),
        pytest.param([A1], _event("MODIFIED", A1), False, {(NS, "vm-a.default"): "10"}, id="same-version-ignored"),
        pytest.param([A1], _event("MODIFIED", A2), True, {(NS, "vm-a.default"): "11"}, id="newer-version"),
        pytest.param([A1], _event("DELETED", A2), True, {}, id="deleted"),
        pytest.param([], _event("DELETED", A1), False, {}, id="unknown-delete"),
    ],
)
def test_store_apply(before: list[dict], event: WatchEvent, changed: bool, after: dict) -> None:
    store = Store()
    for obj in before:
        store.apply(_event("ADDED", obj))
    assert store.apply(event) is changed
    assert {k: v.resource_version for k, v in store.state.ipam_claims.items()} == after


def test_the_store_is_synced_once_every_expected_resource_synced() -> None:
    store = Store((resources.IPAM_CLAIM, resources.NODE))
    assert store.apply(_event("SYNCED", None)) is True
    assert store.apply(_event("SYNCED", None)) is False  # a relist's SYNCED changes nothing
    assert not store.synced
    store.apply(_event("SYNCED", None, resources.NODE))
    assert store.synced


def test_the_store_state_is_a_live_view_not_a_copy() -> None:
    store = Store()
    state = store.state
    store.apply(_event("ADDED", A1))
    assert state.ipam_claims[(NS, "vm-a.default")].resource_version == "10"  # seen through the state handed out before


# -- timestamps ---------------------------------------------------------------------------------------------------
def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


NOW = _epoch("2026-11-30T12:00:00")


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param({"metadata": {"creationTimestamp": "2026-11-30T09:00:00Z"}}, "2026-11-30T09:00:00", id="created"),
        pytest.param(
            {
                "metadata": {
                    "creationTimestamp": "2026-11-30T09:00:00Z",
                    "managedFields": [{"time": "2026-11-30T10:00:00Z"}, {"time": "2026-11-30T11:00:00Z"}],
                }
            },
            "2026-11-30T11:00:00",
            id="newest-managed-field",
        ),
        pytest.param(
            {
                "metadata": {"creationTimestamp": "2026-11-30T09:00:00Z"},
                "status": {"migrationState": {"targetNodeDomainReadyTimestamp": "2026-11-30T11:30:00Z"}},
            },
            "2026-11-30T11:30:00",
            id="migration-target-ready",
        ),
        pytest.param(
            {"metadata": {"creationTimestamp": "2026-11-30T09:00:00Z", "deletionTimestamp": "2026-11-30T12:10:00Z"}},
            "2026-11-30T09:00:00",
            id="future-deletion-ignored",
        ),
        pytest.param({"metadata": {"creationTimestamp": "yesterday"}}, None, id="unparsable"),
        pytest.param({"metadata": {}}, None, id="none"),
    ],
)
def test_object_wall_time_is_the_newest_usable_timestamp(obj: dict, expected: str | None) -> None:
    assert object_wall_time(obj, now=NOW) == (None if expected is None else _epoch(expected))


# -- odd streams ----------------------------------------------------------------------------------------------------
class CannedResponse:
    """Stands in for the client's raw urllib3 response."""

    def __init__(self, data: bytes = b"", chunks: tuple[bytes, ...] = ()) -> None:
        self.data, self.chunks = data, chunks

    def stream(self, amt=None, decode_content=False):
        yield from self.chunks

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


def test_unknown_and_undecodable_watch_lines_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from bgpadv.sources.reflector import Reflector

    added = {"type": "ADDED", "object": _with_rv(claim("vm-d", "192.168.100.13"), "7")}
    listing = {"kind": "IPAMClaimList", "metadata": {"resourceVersion": "5"}, "items": []}
    events: list[WatchEvent] = []
    reflector = Reflector(client.ApiClient(), resources.IPAM_CLAIM, events.append, FAST)
    calls: list[dict] = []

    def call(**kwargs):
        calls.append(kwargs)
        if not kwargs.get("watch"):
            return CannedResponse(json.dumps(listing).encode())
        if len(calls) == 2:  # the lines may arrive split across chunks
            body = b'{"type":"WEIRD","object":{}}\nnot json\n' + json.dumps(added).encode()
            return CannedResponse(chunks=(body[:50], body[50:] + b"\n"))
        reflector._stop.set()
        return CannedResponse()

    reflector._call = call
    with caplog.at_level("WARNING", logger="bgpadv.sources.reflector"):
        reflector._run()
    assert [(e.type, e.object_key()) for e in events] == [("SYNCED", None), ("ADDED", (NS, "vm-d.default"))]
    assert calls[2]["resource_version"] == "7"  # resumed after the newest object seen
    warnings = " ".join(r.getMessage() for r in caplog.records)
    assert "unknown type 'WEIRD'" in warnings
    assert "undecodable" in warnings


def test_after_an_apiserver_restart_instances_spread_their_relists_over_relist_spread(server: FakeApiServer) -> None:
    """Eight per-node instances lose their watches and their history at once (an apiserver restart: streams cut,
    the watch cache starts at the current revision): each relists after its own random delay, none at once, all
    within the window."""
    server.load([objects.node("worker-1", "10.0.0.11")])
    settings = ReflectorSettings(bookmarks=False, backoff_min=0.02, backoff_max=0.05, relist_spread=1.0)
    fleet = [Harness(server, watched=(resources.NODE,), settings=settings) for _ in range(8)]
    try:
        for h in fleet:
            h.sources.start()
        for h in fleet:
            h.wait(lambda h=h: h.sources.synced)
        server.create(claim("vm-a", "192.168.100.10"))  # the revision moves on while they watch nodes
        server.compact()
        server.drop_watches()
        restarted = time.monotonic()
        for h in fleet:
            h.wait(lambda h=h: sum(1 for e in h.events if e.type == "SYNCED") == 2, timeout=5.0)
        relisted = sorted([e for e in h.events if e.type == "SYNCED"][-1].listed_at - restarted for h in fleet)
        assert all("gone-410" in h.observer.reasons("nodes") for h in fleet)
        assert relisted[0] >= 0.0 and relisted[-1] < 1.0 + 0.5  # the window, plus a reconnect's backoff
        assert relisted[-1] - relisted[0] > 0.2, relisted  # not in lockstep (all within 0.2 s: p < 1e-4)
    finally:
        for h in fleet:
            h.sources.stop()
            h.api.close()
