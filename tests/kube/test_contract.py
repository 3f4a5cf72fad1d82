"""One contract, two servers: the list/watch behaviour bgpadv's reflectors rely on, run against the fake apiserver
(bgpadv_lab/fakeapi.py) and against the real kube-apiserver, so the fake cannot drift from what it stands for.

Scope, through the official `kubernetes` client exactly as the reflectors call it (`_preload_content=False`, raw
JSON): LIST pages chained by `continue` are one snapshot at one resourceVersion; a WATCH from the list's
resourceVersion delivers exactly the later changes, in order (ADDED, MODIFIED, DELETED); a watch that asked for
bookmarks gets a BOOKMARK carrying a resourceVersion no older than the last change (kube-apiserver: measured one
60 s into a 90 s watch and one just before its end, none in watches of 8 to 70 s; the fake every
`bookmark_interval` seconds: how long each is watched is the server's `bookmark_after`); a watch
from a resourceVersion older than the server's history is 410 Expired, as an ERROR event in the stream; a deleted
object with finalizers stays, with a deletionTimestamp, until they are removed.

Where the two differ on purpose, the difference is listed in fakeapi.py's docstring; nothing in this file may need a
`if fake:`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from bgpadv.config import KubernetesConfig
from bgpadv.sources.client import make_api_client
from bgpadv_lab import objects as k8s
from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.kubeapi import applicable
from bgpadv_lab.netns import in_netns

pytestmark = [pytest.mark.kube, pytest.mark.lab]

GROUP, VERSION, PLURAL = "k8s.cni.cncf.io", "v1alpha1", "ipamclaims"
NS = "kube-contract"
CLAIM = ("k8s.cni.cncf.io/v1alpha1", "IPAMClaim")


class Server:
    """What the contract needs of a server: a client, writes as a controller makes them, and compaction."""

    def __init__(
        self,
        name: str,
        client: ApiClient,
        netns: str | None,
        write: Any,
        compact: Callable[[], Any],
        bookmark_after: int,
    ):
        self.name, self.client, self.netns, self.write, self.compact = name, client, netns, write, compact
        self.bookmark_after = bookmark_after  # seconds of watching that bring a BOOKMARK
        self.custom = CustomObjectsApi(client)

    @contextlib.contextmanager
    def reach(self) -> Iterator[None]:
        """Sockets opened inside are opened in the server's namespace (the real one is in the lab's ToR)."""
        if self.netns:
            with in_netns(self.netns):
                yield
        else:
            yield

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.reach():
            return fn(*args, **kwargs)

    def list_page(self, limit: int, token: str | None = None, **extra: Any) -> dict:
        kwargs: dict[str, Any] = {"limit": limit, "_preload_content": False, **extra}
        if token:
            kwargs["_continue"] = token
        response = self.call(self.custom.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, **kwargs)
        return json.loads(response.data)

    def watch(self, resource_version: str, timeout: int, **extra: Any) -> list[dict]:
        """Every event of one watch stream (it ends by `timeout` seconds), decoded."""
        response = self.call(
            self.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            NS,
            PLURAL,
            watch=True,
            resource_version=resource_version,
            timeout_seconds=timeout,
            _preload_content=False,
            _request_timeout=(10, timeout + 30),
            **extra,
        )
        try:
            return [json.loads(line) for line in response.read().splitlines() if line.strip()]
        finally:
            response.release_conn()


@pytest.fixture(scope="module", params=["fake", "real"])
def server(request, tmp_path_factory) -> Iterator[Server]:
    if request.param == "fake":
        fake = FakeApiServer(bookmark_interval=1.0).start()
        kubeconfig = fake.write_kubeconfig(tmp_path_factory.mktemp("fake") / "kubeconfig")
        client = make_api_client(KubernetesConfig(kubeconfig=str(kubeconfig)))

        class FakeWrites:
            """The writes RealApiServer makes (a create, then the status through its subresource), Python-side."""

            @staticmethod
            def apply(objs: list[dict]) -> None:
                for obj in objs:
                    fake.create(applicable(obj))
                    meta = obj["metadata"]
                    fake.patch_status(*CLAIM, meta["name"], meta["namespace"], {"status": obj["status"]})

            patch = staticmethod(fake.patch)
            delete = staticmethod(fake.delete)

        yield Server("fake", client, None, FakeWrites, fake.compact, bookmark_after=3)
        client.close()
        fake.stop()
    else:
        lab, api = request.getfixturevalue("kube")
        api.ensure_namespaces(NS)
        client = make_api_client(KubernetesConfig(kubeconfig=str(api.kubeconfig)))
        yield Server("real", client, lab.ns("tor"), api, api.compact, bookmark_after=90)
        client.close()


def claims(prefix: str, count: int) -> list[dict]:
    return [
        k8s.ipam_claim(
            NS, f"{prefix}-{i}.default", f"{prefix}-{i}", "cluster_udn_vmnet-c", [f"192.168.140.{10 + i}/24"]
        )
        for i in range(count)
    ]


def names(items: list[dict]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


def test_list_pages_chained_by_continue_are_one_snapshot(server: Server) -> None:
    server.write.apply(claims("page", 7))
    first = server.list_page(3)
    rv = first["metadata"]["resourceVersion"]
    server.write.apply(claims("late", 1))  # written between pages: not in this snapshot
    seen = list(first["items"])
    token = first["metadata"].get("continue")
    pages = 1
    while token:
        page = server.list_page(3, token)
        assert page["metadata"]["resourceVersion"] == rv
        seen += page["items"]
        token = page["metadata"].get("continue")
        pages += 1
    page_names = [n for n in names(seen) if n.startswith("page-")]
    assert page_names == sorted(f"page-{i}.default" for i in range(7))
    assert "late-0.default" not in names(seen)
    assert pages >= 3


def test_a_watch_from_the_list_version_delivers_exactly_the_later_changes_in_order(server: Server) -> None:
    server.write.apply(claims("w", 2))
    rv = server.list_page(500)["metadata"]["resourceVersion"]
    server.write.apply(claims("w-new", 1))
    server.write.patch(*CLAIM, "w-0.default", NS, {"metadata": {"labels": {"bgpadv.test/touched": "yes"}}})
    server.write.delete(*CLAIM, "w-1.default", NS)  # finalizer: a MODIFIED with a deletionTimestamp
    events = [e for e in server.watch(rv, timeout=3) if e["type"] != "BOOKMARK"]
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert seen == [
        ("ADDED", "w-new-0.default"),  # created without its status (the status subresource drops it) ...
        ("MODIFIED", "w-new-0.default"),  # ... which OVN-K then writes through /status
        ("MODIFIED", "w-0.default"),
        ("MODIFIED", "w-1.default"),
    ]
    assert "status" not in events[0]["object"] and events[1]["object"]["status"]["ips"]
    assert events[-1]["object"]["metadata"].get("deletionTimestamp")
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)


def test_a_label_selected_watch_sees_an_object_leave_as_deleted_and_one_arrive_as_added(server: Server) -> None:
    """What a per-node instance's scoped VMI watches rely on (a VMI's node label moves when it migrates): the LIST
    holds only the matching objects; an object whose labels stop matching arrives as DELETED, carrying the object as
    it last matched at the resourceVersion of the change that moved it; one that starts matching arrives as ADDED."""
    server.write.apply(claims("sel", 3))
    on = {"bgpadv.test/node": "worker-1"}
    server.write.patch(*CLAIM, "sel-0.default", NS, {"metadata": {"labels": on}})
    selector = "bgpadv.test/node=worker-1"
    listed = server.list_page(500, label_selector=selector)
    assert names(listed["items"]) == ["sel-0.default"]
    rv = listed["metadata"]["resourceVersion"]
    server.write.patch(*CLAIM, "sel-0.default", NS, {"metadata": {"labels": {"bgpadv.test/node": "worker-2"}}})
    server.write.patch(*CLAIM, "sel-1.default", NS, {"metadata": {"labels": on}})
    server.write.patch(*CLAIM, "sel-2.default", NS, {"metadata": {"labels": {"bgpadv.test/other": "yes"}}})
    events = [e for e in server.watch(rv, timeout=3, label_selector=selector) if e["type"] != "BOOKMARK"]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "sel-0.default"),
        ("ADDED", "sel-1.default"),
    ]
    left, arrived = (e["object"]["metadata"] for e in events)
    assert left["labels"]["bgpadv.test/node"] == "worker-1"  # the content that matched, not the moved object
    moved = server.list_page(500, field_selector="metadata.name=sel-0.default")["items"][0]["metadata"]
    assert left["resourceVersion"] == moved["resourceVersion"]  # ... at the version of the move
    assert int(rv) < int(left["resourceVersion"]) < int(arrived["resourceVersion"])


def test_a_list_of_one_gives_the_current_version_and_a_set_selector_reads_some_vms_claims(server: Server) -> None:
    """What a per-node instance's IPAMClaim reads rely on (`bgpadv.sources.claims`): a LIST with `limit=1` carries
    the collection's current resourceVersion (a watch from it delivers exactly the later changes); a LIST selected by
    `kubevirt.io/vm in (...)` holds exactly the claims of those VMs, across pages."""
    server.write.apply(claims("one", 4))
    first = server.list_page(1)
    assert len(first["items"]) == 1 and first["metadata"].get("continue")
    rv = first["metadata"]["resourceVersion"]
    server.write.patch(*CLAIM, "one-3.default", NS, {"metadata": {"labels": {"bgpadv.test/touched": "yes"}}})
    events = [e for e in server.watch(rv, timeout=3) if e["type"] != "BOOKMARK"]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("MODIFIED", "one-3.default")]
    selector = "kubevirt.io/vm in (one-0,one-2,one-9)"
    page = server.list_page(1, label_selector=selector)
    seen = list(page["items"])
    while token := page["metadata"].get("continue"):
        page = server.list_page(1, token, label_selector=selector)
        seen += page["items"]
    assert names(seen) == ["one-0.default", "one-2.default"]
    # as the claim reads ask: not older than the watch's resourceVersion (the real one serves it from its cache)
    page = server.list_page(500, label_selector=selector, resource_version=rv, resource_version_match="NotOlderThan")
    assert names(page["items"]) == ["one-0.default", "one-2.default"]
    assert int(page["metadata"]["resourceVersion"]) >= int(rv)


def test_a_deleting_object_goes_away_when_its_finalizers_are_removed(server: Server) -> None:
    server.write.apply(claims("fin", 1))
    rv = server.list_page(500)["metadata"]["resourceVersion"]
    server.write.delete(*CLAIM, "fin-0.default", NS)
    server.write.patch(*CLAIM, "fin-0.default", NS, {"metadata": {"finalizers": None}})
    events = [e for e in server.watch(rv, timeout=3) if e["type"] != "BOOKMARK"]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "fin-0.default"),
        ("DELETED", "fin-0.default"),
    ]


def test_a_watch_that_asked_for_bookmarks_gets_one_no_older_than_the_last_change(server: Server) -> None:
    server.write.apply(claims("bm", 1))
    rv = server.list_page(500)["metadata"]["resourceVersion"]
    server.write.patch(*CLAIM, "bm-0.default", NS, {"metadata": {"labels": {"bgpadv.test/touched": "yes"}}})
    started = time.monotonic()
    events = server.watch(rv, timeout=server.bookmark_after, allow_watch_bookmarks=True)
    changes = [e for e in events if e["type"] != "BOOKMARK"]
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert [e["type"] for e in changes] == ["MODIFIED"]
    assert bookmarks, f"no BOOKMARK in {time.monotonic() - started:.1f}s of watching"
    last = int(changes[-1]["object"]["metadata"]["resourceVersion"])
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= last
    assert bookmarks[-1]["object"]["kind"] == "IPAMClaim"


def test_a_watch_from_a_version_older_than_the_history_is_410_expired(server: Server) -> None:
    server.write.apply(claims("old", 3))
    server.compact()
    try:
        events = server.watch("1", timeout=3)
    except ApiException as e:  # the HTTP form; the reflector handles both, the contract pins one
        pytest.fail(f"{server.name}: 410 came as HTTP {e.status}, not as an ERROR event")
    assert len(events) == 1, events
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"


def test_a_vmi_has_no_status_subresource_its_status_is_written_with_the_object(server: Server) -> None:
    vmi = k8s.vmi(NS, "vm-status", "worker-1", interfaces=[k8s.interface(["192.168.140.90"])])
    body = applicable(vmi) | {"status": vmi["status"]}
    created = server.call(
        server.custom.create_namespaced_custom_object, "kubevirt.io", "v1", NS, "virtualmachineinstances", body
    )
    assert created["status"]["nodeName"] == "worker-1"  # a create keeps the status: no subresource to strip it for
    moved = {"status": {"nodeName": "worker-2"}}
    patched = server.call(
        server.custom.patch_namespaced_custom_object,
        "kubevirt.io",
        "v1",
        NS,
        "virtualmachineinstances",
        "vm-status",
        moved,
    )
    assert patched["status"]["nodeName"] == "worker-2"
    with pytest.raises(ApiException) as refused:
        server.call(
            server.custom.patch_namespaced_custom_object_status,
            "kubevirt.io",
            "v1",
            NS,
            "virtualmachineinstances",
            "vm-status",
            moved,
        )
    assert refused.value.status == 404
