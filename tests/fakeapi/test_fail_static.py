"""Fail static in the reflectors, against the fake apiserver through the official client.

The rules under test (bgpadv/sources/reflector.py):
- a resource that answers 404 (CRD uninstalled) or 403 (RBAC withdrawn) after it was listed emits nothing: its
  cache and the store keep every object, it is marked held (`resource_held`, `held-404`/`held-403` restarts) and
  retried; a successful LIST ends the hold and diffs as any relist does;
- a resource that was never readable keeps the old behaviour: synced and empty;
- only a LIST begun `hold_seconds` after the first refusal that still refuses deletes the objects (DELETED events,
  not marked `from_list`, then SYNCED);
- `relist()` lists again at once and ends in SYNCED carrying when that LIST began, even for a held resource;
- events found by diffing a LIST are marked `from_list`; watched ones are not.

Needs the fake: a CRD uninstalled while its objects stay (`set_installed`), a 403 on demand, a hold of seconds.
On the real apiserver (tests/kube/test_faults.py, test_rbac.py) a deleted CRD takes its objects with it and a
withdrawn verb reaches a watch only when it is reopened.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from kubernetes import client

from bgpadv.core import resources
from bgpadv.sources.reflector import ReflectorSettings, WatchEvent
from bgpadv.sources.store import Store
from bgpadv.sources.watches import Sources
from bgpadv_lab import objects as k8s
from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.objects import VM_NAMESPACE as NS

CLAIM_API = "k8s.cni.cncf.io/v1alpha1"
WATCHED = (resources.CUDN, resources.IPAM_CLAIM, resources.VMI, resources.LAUNCHER_POD, resources.NODE)
VMIS, CLAIMS = "virtualmachineinstances", "ipamclaims"


def settings(hold_seconds: float = 120.0) -> ReflectorSettings:
    return ReflectorSettings(
        page_size=2,
        watch_timeout=30,
        inactivity_timeout=10,
        backoff_min=0.02,
        backoff_max=0.1,
        hold_seconds=hold_seconds,
    )


def cluster() -> list[dict]:
    net = "cluster_udn_vmnet-a"
    return [
        k8s.node("worker-1", "10.0.0.11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels={"bgpadv.io/advertise": "true"}),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", net, ["192.168.100.10/24"]),
        k8s.ipam_claim(NS, "vm-b.default", "vm-b", net, ["192.168.100.11/24"]),
        k8s.vmi(NS, "vm-a", "worker-1"),
        k8s.vmi(NS, "vm-b", "worker-1"),
    ]


class Observer:
    def __init__(self) -> None:
        self.restarts: list[tuple[str, str]] = []
        self.held: list[tuple[str, bool]] = []

    def watch_restart(self, resource: str, reason: str) -> None:
        self.restarts.append((resource, reason))

    def resource_held(self, resource: str, held: bool) -> None:
        self.held.append((resource, held))

    def reasons(self, resource: str) -> list[str]:
        return [reason for r, reason in self.restarts if r == resource]


class Harness:
    """Sources feeding a Store (reflectors emit from their own threads), every event recorded."""

    def __init__(self, server: FakeApiServer, s: ReflectorSettings) -> None:
        self.server = server
        self.store = Store(WATCHED)
        self.events: list[WatchEvent] = []
        self.observer = Observer()
        self.lock = threading.Lock()
        self.api = client.ApiClient(client.Configuration(host=server.url))
        self.sources = Sources(self.api, WATCHED, self.emit, s, self.observer)

    def emit(self, event: WatchEvent) -> None:
        with self.lock:
            self.events.append(event)
            self.store.apply(event)

    def of(self, plural: str, kind: str | None = None) -> list[WatchEvent]:
        with self.lock:
            return [e for e in self.events if e.resource.plural == plural and kind in (None, e.type)]

    def reflector(self, plural: str):
        return next(r for r in self.sources.reflectors if r.resource.plural == plural)

    def wait(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return
            time.sleep(0.01)
        raise AssertionError(f"condition not met within {timeout}s")


@pytest.fixture
def server():
    with FakeApiServer(bookmark_interval=0.05) as s:
        s.load(cluster())
        yield s


def run(server: FakeApiServer, hold_seconds: float = 120.0):
    h = Harness(server, settings(hold_seconds))
    h.sources.start()
    h.wait(lambda: h.store.synced)
    return h


@pytest.fixture
def harness(server: FakeApiServer):
    h = run(server)
    yield h
    h.sources.stop()
    h.api.close()


def test_a_crd_uninstalled_after_it_was_listed_keeps_its_objects_and_is_retried(server, harness) -> None:
    before = len(harness.of(VMIS))
    server.set_installed("kubevirt.io", False)
    harness.wait(lambda: harness.observer.reasons(VMIS).count("held-404") >= 3)  # retried, still refused
    assert harness.of(VMIS)[before:] == []  # no event at all: nothing deleted, nothing re-synced
    assert set(harness.store.state.vmis) == {(NS, "vm-a"), (NS, "vm-b")}
    assert harness.reflector(VMIS).held
    assert harness.observer.held == [(VMIS, True)]

    server.set_installed("kubevirt.io", True)
    harness.wait(lambda: not harness.reflector(VMIS).held)
    assert [e.type for e in harness.of(VMIS)[before:]] == ["SYNCED"]  # the relist found the same objects
    assert set(harness.store.state.vmis) == {(NS, "vm-a"), (NS, "vm-b")}
    assert harness.observer.held == [(VMIS, True), (VMIS, False)]


def test_rbac_withdrawn_after_the_resource_was_listed_keeps_its_objects(server, harness) -> None:
    before = len(harness.of(CLAIMS))
    server.fail_next(10_000, 403, plural=CLAIMS)  # every list and watch of claims: 403 Forbidden
    server.drop_watches()
    harness.wait(lambda: harness.observer.reasons(CLAIMS).count("held-403") >= 3)
    assert harness.of(CLAIMS)[before:] == []
    assert len(harness.store.state.ipam_claims) == 2
    server.fail_next(0)
    harness.wait(lambda: not harness.reflector(CLAIMS).held)
    assert len(harness.store.state.ipam_claims) == 2


def test_a_crd_absent_from_the_start_is_synced_and_empty_as_before() -> None:
    with FakeApiServer(installed={"k8s.ovn.org", "k8s.cni.cncf.io"}, bookmark_interval=0.05) as server:
        server.load(cluster())
        h = run(server)
        try:
            h.wait(lambda: h.observer.reasons(VMIS).count("not-installed") >= 2)
            assert [e.type for e in h.of(VMIS)] == ["SYNCED"]
            assert not h.reflector(VMIS).held
            assert h.observer.held == []
        finally:
            h.sources.stop()


def test_objects_are_deleted_only_when_a_list_hold_seconds_after_the_first_refusal_still_refuses(server) -> None:
    h = run(server, hold_seconds=0.5)
    try:
        before = len(h.of(VMIS))
        refused_at = time.monotonic()
        server.set_installed("kubevirt.io", False)
        h.wait(lambda: len(h.store.state.vmis) == 0)
        events = h.of(VMIS)[before:]
        assert [(e.type, e.from_list) for e in events] == [("DELETED", False), ("DELETED", False), ("SYNCED", False)]
        assert events[0].received_at - refused_at >= 0.5
        assert events[-1].listed_at is not None and events[-1].listed_at - refused_at >= 0.5
        assert "confirmed-404" in h.observer.reasons(VMIS)
        assert h.observer.held == [(VMIS, True), (VMIS, False)]

        server.set_installed("kubevirt.io", True)  # back: listed again like a CRD installed late
        h.wait(lambda: len(h.store.state.vmis) == 2)
    finally:
        h.sources.stop()


def test_relist_lists_every_resource_again_and_ends_in_synced_with_when_it_began(server, harness) -> None:
    lists = server.requests[("list", CLAIMS)]
    asked = time.monotonic()
    harness.sources.relist()
    harness.wait(lambda: all(any((e.listed_at or 0) >= asked for e in harness.of(r.plural, "SYNCED")) for r in WATCHED))
    assert server.requests[("list", CLAIMS)] == lists + 1  # two claims: one page of two
    assert [e.type for e in harness.of(CLAIMS)].count("ADDED") == 2  # the unchanged objects are not re-emitted
    assert "relist" in harness.observer.reasons(CLAIMS)


def test_relist_of_a_held_resource_answers_synced_and_keeps_its_objects(server, harness) -> None:
    server.set_installed("kubevirt.io", False)
    harness.wait(lambda: harness.reflector(VMIS).held)
    asked = time.monotonic()
    harness.sources.relist()
    harness.wait(lambda: any((e.listed_at or 0) >= asked for e in harness.of(VMIS, "SYNCED")))
    assert harness.reflector(VMIS).held
    assert len(harness.store.state.vmis) == 2
    assert harness.of(VMIS, "DELETED") == []


def test_an_empty_relist_marks_its_deletions_as_found_by_a_list(server, harness) -> None:
    server.fail_next(10_000, 500, verb="watch", plural=CLAIMS)  # the claims' watch is away...
    server.drop_watches()
    for name in ("vm-a.default", "vm-b.default"):  # ...while every claim goes
        server.patch(CLAIM_API, "IPAMClaim", name, NS, {"metadata": {"finalizers": None}})
        server.delete(CLAIM_API, "IPAMClaim", name, NS)
    server.compact()
    server.fail_next(0)
    harness.wait(lambda: len(harness.store.state.ipam_claims) == 0)
    deleted = sorted((e.object_key(), e.from_list) for e in harness.of(CLAIMS, "DELETED"))
    assert deleted == [((NS, "vm-a.default"), True), ((NS, "vm-b.default"), True)]
    assert "gone-410" in harness.observer.reasons(CLAIMS)


def test_watched_deletions_are_not_marked_as_found_by_a_list(server, harness) -> None:
    server.patch(CLAIM_API, "IPAMClaim", "vm-a.default", NS, {"metadata": {"finalizers": None}})
    server.delete(CLAIM_API, "IPAMClaim", "vm-a.default", NS)
    harness.wait(lambda: len(harness.store.state.ipam_claims) == 1)
    assert [(e.object_key(), e.from_list) for e in harness.of(CLAIMS, "DELETED")] == [((NS, "vm-a.default"), False)]


class Canned:
    """Stands in for the client's raw urllib3 response; a watch stream stays open until it is cut, like a real one
    (after `patience` seconds it gives up and stops the reflector: the watch would have run its whole timeout)."""

    def __init__(self, data: bytes = b"", reflector=None, patience: float = 2.0) -> None:
        self.data, self.reflector, self.patience = data, reflector, patience
        self.cut = threading.Event()

    def stream(self, amt=None, decode_content=False):
        if not self.cut.wait(self.patience) and self.reflector is not None:
            self.reflector._stop.set()
        yield from ()

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass

    def shutdown(self) -> None:
        self.cut.set()


def test_a_relist_asked_while_a_list_is_running_lists_again_before_watching() -> None:
    import json

    from bgpadv.sources.reflector import Reflector

    events: list[WatchEvent] = []
    reflector = Reflector(client.ApiClient(), resources.IPAM_CLAIM, events.append, settings())
    listing = json.dumps({"kind": "IPAMClaimList", "metadata": {"resourceVersion": "5"}, "items": []}).encode()
    calls: list[str] = []
    asked: list[float] = []

    def call(**kwargs):
        calls.append("watch" if kwargs.get("watch") else "list")
        if calls == ["list"]:
            asked.append(time.monotonic())
            reflector.relist()  # arrives mid-list: no watch is open yet, there is nothing to cut
        if calls.count("list") == 2 and kwargs.get("watch"):
            reflector._stop.set()
        return Canned(listing, reflector)

    reflector._call = call
    reflector._run()
    assert calls[:3] == ["list", "watch", "list"]  # the watch opened after the first list is closed at once
    synced = [e for e in events if e.type == "SYNCED"]
    assert len(synced) == 2
    assert synced[0].listed_at is not None and synced[0].listed_at < asked[0]
    assert synced[1].listed_at is not None and synced[1].listed_at >= asked[0]
