"""The fake kube-apiserver, driven by the real `kubernetes` client over HTTP.

Scope: LIST paging as a consistent snapshot and expired continue tokens; label selectors; WATCH from a
resourceVersion, synthetic ADDED without one, bookmarks, 410 Expired on a compacted history, selector transitions,
streams cut by drop_watches(); the status subresource; 409 conflicts; merge, JSON and strategic merge patches;
finalizers; 404 for an uninstalled API group; Events created by clients; discovery; error injection; serving on a
handed-in socket; the Python-side store API and seeding.

The fake itself is under test here; tests/kube/test_contract.py runs the behaviours it shares with kube-apiserver
against both, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from bgpadv.config import KubernetesConfig
from bgpadv.sources.client import make_api_client
from bgpadv_lab.fakeapi import FakeApiServer, read_seed
from bgpadv_lab.objects import VM_NAMESPACE as NS

GROUP, VERSION, CLAIMS = "k8s.cni.cncf.io", "v1alpha1", "ipamclaims"


# -- realistic objects (shapes from kubernetes-apis.md) -----------------------------------------------------------
def ipam_claim(vm: str, ips: list[str] | None = None, *, finalizer: bool = True) -> dict:
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "IPAMClaim",
        "metadata": {
            "name": f"{vm}.default",
            "namespace": NS,
            "labels": {"kubevirt.io/vm": vm},
            "ownerReferences": [
                {
                    "apiVersion": "kubevirt.io/v1",
                    "kind": "VirtualMachine",
                    "name": vm,
                    "uid": f"00000000-0000-4000-8000-{abs(hash(vm)) % 10**12:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"network": "cluster_udn_vmnet-a", "interface": ""},
    }
    if finalizer:
        claim["metadata"]["finalizers"] = ["kubevirt.io/persistent-ipam"]
    if ips is not None:
        claim["status"] = {
            "ips": ips,
            "ownerPod": {"name": f"virt-launcher-{vm}-x7k2p"},
            "conditions": [
                {
                    "type": "IPsAllocated",
                    "status": "True",
                    "reason": "SuccessfulAllocation",
                    "message": "IP addresses successfully allocated",
                    "lastTransitionTime": "2026-11-30T09:00:00Z",
                }
            ],
        }
    return claim


def pod(name: str, node: str, *, launcher_of: str | None = None) -> dict:
    labels = {"app": name}
    annotations = {}
    if launcher_of:
        labels = {"kubevirt.io": "virt-launcher", "kubevirt.io/vm": launcher_of, "vm.kubevirt.io/name": launcher_of}
        annotations = {"kubevirt.io/domain": launcher_of, "k8s.ovn.org/primary-udn-ipamclaim": f"{launcher_of}.default"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": annotations},
        "spec": {"nodeName": node, "containers": [{"name": "compute", "image": "quay.io/kubevirt/virt-launcher"}]},
        "status": {"phase": "Running", "podIP": "10.128.2.17"},
    }


def node(name: str, ip: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name},
            "annotations": {"k8s.ovn.org/node-primary-ifaddr": json.dumps({"ipv4": f"{ip}/24"})},
        },
        "spec": {"podCIDR": "10.244.1.0/24"},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]},
    }


# -- fixtures -----------------------------------------------------------------------------------------------------
@pytest.fixture
def server():
    with FakeApiServer(bookmark_interval=0.1) as s:
        yield s


@pytest.fixture
def api(server: FakeApiServer, tmp_path: Path):
    api_client = make_api_client(KubernetesConfig(kubeconfig=str(server.write_kubeconfig(tmp_path / "kubeconfig"))))
    yield api_client
    api_client.close()


@pytest.fixture
def custom(api) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def core(api) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def raw_watch(call, count: int, **kwargs) -> list[dict]:
    """Read `count` events (or until the stream ends) from a watch opened with the client's raw response."""
    kwargs.setdefault("timeout_seconds", 3)
    response = call(watch=True, _preload_content=False, **kwargs)
    events: list[dict] = []
    pending = b""
    try:
        for chunk in response.stream(amt=None, decode_content=False):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            events.extend(json.loads(line) for line in lines if line.strip())
            if len(events) >= count:
                break
    finally:
        response.close()
        response.release_conn()
    return events


def claims_call(custom: client.CustomObjectsApi):
    return lambda **kw: custom.list_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, **kw)


def names(items: list[dict]) -> list[str]:
    return [i["metadata"]["name"] for i in items]


# -- LIST ---------------------------------------------------------------------------------------------------------
def test_list_pages_are_one_consistent_snapshot(server: FakeApiServer, custom) -> None:
    for vm in ("vm-a", "vm-b", "vm-c", "vm-d", "vm-e", "vm-f", "vm-g"):
        server.create(ipam_claim(vm, ["192.168.100.10/24"]))
    first = custom.list_cluster_custom_object(GROUP, VERSION, CLAIMS, limit=3)
    assert names(first["items"]) == ["vm-a.default", "vm-b.default", "vm-c.default"]
    assert first["kind"] == "IPAMClaimList"
    assert first["metadata"]["remainingItemCount"] == 4
    snapshot_rv = first["metadata"]["resourceVersion"]

    server.create(ipam_claim("vm-ca", []))  # sorts into the next page
    server.patch(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-d.default", NS, {"metadata": {"labels": {"moved": "yes"}}})
    server.patch(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-g.default", NS, {"metadata": {"finalizers": None}})
    server.delete(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-g.default", NS)

    pages = [first]
    while pages[-1]["metadata"].get("continue"):
        pages.append(
            custom.list_cluster_custom_object(
                GROUP, VERSION, CLAIMS, limit=3, _continue=pages[-1]["metadata"]["continue"]
            )
        )
    items = [i for p in pages for i in p["items"]]
    assert names(items) == [f"vm-{c}.default" for c in "abcdefg"]
    assert {p["metadata"]["resourceVersion"] for p in pages} == {snapshot_rv}
    assert "moved" not in items[3]["metadata"].get("labels", {})


def test_a_continue_token_older_than_the_history_is_410_expired(server: FakeApiServer, custom) -> None:
    for vm in ("vm-a", "vm-b", "vm-c"):
        server.create(ipam_claim(vm))
    first = custom.list_cluster_custom_object(GROUP, VERSION, CLAIMS, limit=2)
    server.create(ipam_claim("vm-d"))
    server.compact()
    with pytest.raises(ApiException) as err:
        custom.list_cluster_custom_object(GROUP, VERSION, CLAIMS, limit=2, _continue=first["metadata"]["continue"])
    assert err.value.status == 410
    assert json.loads(err.value.body)["reason"] == "Expired"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(
            "kubevirt.io=virt-launcher", ["virt-launcher-vm-a-x7k2p", "virt-launcher-vm-b-x7k2p"], id="equals"
        ),
        pytest.param("kubevirt.io==virt-launcher", ["virt-launcher-vm-a-x7k2p", "virt-launcher-vm-b-x7k2p"], id="eqeq"),
        pytest.param("kubevirt.io!=virt-launcher", ["prometheus-0"], id="not-equals"),
        pytest.param("kubevirt.io/vm in (vm-b, vm-z)", ["virt-launcher-vm-b-x7k2p"], id="in"),
        pytest.param("kubevirt.io,kubevirt.io/vm notin (vm-b)", ["virt-launcher-vm-a-x7k2p"], id="exists-notin"),
        pytest.param("!kubevirt.io", ["prometheus-0"], id="does-not-exist"),
    ],
)
def test_label_selectors_filter_lists(server: FakeApiServer, core, selector: str, expected: list[str]) -> None:
    server.load(
        [
            pod("virt-launcher-vm-a-x7k2p", "worker-1", launcher_of="vm-a"),
            pod("virt-launcher-vm-b-x7k2p", "worker-2", launcher_of="vm-b"),
            pod("prometheus-0", "worker-1"),
        ]
    )
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector=selector).items] == expected


def test_typed_list_items_carry_no_kind_like_a_real_apiserver(server: FakeApiServer, core) -> None:
    server.create(node("worker-1", "192.168.126.31"))
    raw = json.loads(core.list_node(_preload_content=False).data)
    assert raw["kind"] == "NodeList"
    assert raw["apiVersion"] == "v1"
    assert "kind" not in raw["items"][0]
    assert raw["items"][0]["status"]["addresses"][0] == {"type": "InternalIP", "address": "192.168.126.31"}


def test_a_malformed_label_selector_is_400(server: FakeApiServer, core) -> None:
    with pytest.raises(ApiException) as err:
        core.list_pod_for_all_namespaces(label_selector="a in b")
    assert err.value.status == 400


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("spec.nodeName=worker-1", ["prometheus-0", "virt-launcher-vm-a-x7k2p"], id="node"),
        pytest.param("spec.nodeName!=worker-1", ["virt-launcher-vm-b-x7k2p"], id="not-node"),
        pytest.param("spec.nodeName=worker-1,metadata.name=prometheus-0", ["prometheus-0"], id="and"),
    ],
)
def test_pods_select_on_spec_node_name_like_a_real_apiserver(server: FakeApiServer, core, selector, expected) -> None:
    """What a per-node agent asks for (bgpadv's per-node mode: launcher pods of its node only)."""
    server.load(
        [
            pod("virt-launcher-vm-a-x7k2p", "worker-1", launcher_of="vm-a"),
            pod("virt-launcher-vm-b-x7k2p", "worker-2", launcher_of="vm-b"),
            pod("prometheus-0", "worker-1"),
        ]
    )
    got = core.list_pod_for_all_namespaces(field_selector=selector).items
    assert sorted(p.metadata.name for p in got) == expected


def test_custom_resources_select_on_metadata_fields_only(server: FakeApiServer, custom) -> None:
    """A VMI cannot be narrowed by node with a field selector: custom resources know metadata.name/namespace."""
    with pytest.raises(ApiException) as err:
        custom.list_cluster_custom_object(
            "kubevirt.io", "v1", "virtualmachineinstances", field_selector="status.nodeName=w"
        )
    assert err.value.status == 400
    assert 'field label not supported: "status.nodeName"' in json.loads(err.value.body)["message"]


def test_a_pod_bound_to_the_node_after_the_watch_began_arrives_as_added(server: FakeApiServer, core) -> None:
    unscheduled = pod("virt-launcher-vm-a-x7k2p", "worker-1", launcher_of="vm-a")
    del unscheduled["spec"]["nodeName"]
    server.create(unscheduled)
    rv = str(server.resource_version)
    server.patch("v1", "Pod", "virt-launcher-vm-a-x7k2p", NS, {"spec": {"nodeName": "worker-2"}})
    server.patch("v1", "Pod", "virt-launcher-vm-a-x7k2p", NS, {"spec": {"nodeName": "worker-1"}})
    events = raw_watch(
        core.list_pod_for_all_namespaces, 2, resource_version=rv, field_selector="spec.nodeName=worker-2"
    )
    assert [(e["type"], e["object"]["spec"].get("nodeName")) for e in events] == [
        ("ADDED", "worker-2"),
        ("DELETED", "worker-2"),  # the watch cache sends the object as it last matched ...
    ]
    assert events[1]["object"]["metadata"]["resourceVersion"] == str(server.resource_version)  # ... as of the move


# -- WATCH --------------------------------------------------------------------------------------------------------
def test_a_watch_from_a_resource_version_sends_only_later_changes(server: FakeApiServer, custom) -> None:
    server.create(ipam_claim("vm-a"))
    rv = server.resource_version
    server.create(ipam_claim("vm-b"))
    server.patch_status(
        f"{GROUP}/{VERSION}", "IPAMClaim", "vm-b.default", NS, {"status": {"ips": ["192.168.100.11/24"]}}
    )
    server.patch(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-a.default", NS, {"metadata": {"finalizers": None}})
    server.delete(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-a.default", NS)
    events = raw_watch(claims_call(custom), 4, resource_version=str(rv))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "vm-b.default"),
        ("MODIFIED", "vm-b.default"),
        ("MODIFIED", "vm-a.default"),
        ("DELETED", "vm-a.default"),
    ]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    assert versions[-1] == server.resource_version


def test_a_watch_without_resource_version_starts_with_the_current_objects(server: FakeApiServer, custom) -> None:
    server.create(ipam_claim("vm-a"))
    server.create(ipam_claim("vm-b"))
    events = raw_watch(claims_call(custom), 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "vm-a.default"),
        ("ADDED", "vm-b.default"),
    ]


def test_bookmarks_carry_the_newest_resource_version_when_asked_for(server: FakeApiServer, custom, core) -> None:
    rv = server.resource_version
    server.create(node("worker-1", "192.168.126.31"))  # another kind moves the global resourceVersion
    events = raw_watch(claims_call(custom), 1, resource_version=str(rv), allow_watch_bookmarks=True)
    assert events == [
        {
            "type": "BOOKMARK",
            "object": {
                "kind": "IPAMClaim",
                "apiVersion": f"{GROUP}/{VERSION}",
                "metadata": {"resourceVersion": str(server.resource_version)},
            },
        }
    ]
    assert raw_watch(claims_call(custom), 1, resource_version=str(rv), timeout_seconds=1) == []


def test_a_watch_from_a_compacted_version_gets_an_expired_error_event(server: FakeApiServer, custom) -> None:
    server.create(ipam_claim("vm-a"))
    rv = server.resource_version
    server.create(ipam_claim("vm-b"))
    server.compact()
    (event,) = raw_watch(claims_call(custom), 1, resource_version=str(rv))
    assert event["type"] == "ERROR"
    assert event["object"]["kind"] == "Status"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


def test_the_client_watch_helper_raises_410_on_a_compacted_version(server: FakeApiServer, custom) -> None:
    server.create(ipam_claim("vm-a"))
    rv = server.resource_version
    server.create(ipam_claim("vm-b"))
    server.compact()
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            custom.list_cluster_custom_object, GROUP, VERSION, CLAIMS, resource_version=str(rv), timeout_seconds=2
        ):
            pass
    assert err.value.status == 410


def test_a_selector_watch_sees_objects_enter_and_leave_the_selection(server: FakeApiServer, core) -> None:
    launcher = server.create(pod("virt-launcher-vm-a-x7k2p", "worker-1", launcher_of="vm-a"))
    rv = launcher["metadata"]["resourceVersion"]
    server.patch("v1", "Pod", "virt-launcher-vm-a-x7k2p", NS, {"metadata": {"labels": {"kubevirt.io": None}}})
    server.patch(
        "v1", "Pod", "virt-launcher-vm-a-x7k2p", NS, {"metadata": {"labels": {"kubevirt.io": "virt-launcher"}}}
    )
    events = raw_watch(
        core.list_pod_for_all_namespaces, 2, resource_version=rv, label_selector="kubevirt.io=virt-launcher"
    )
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


def test_drop_watches_cuts_open_streams(server: FakeApiServer, custom) -> None:
    response = custom.list_cluster_custom_object(
        GROUP, VERSION, CLAIMS, watch=True, resource_version=str(server.resource_version), _preload_content=False
    )
    server.drop_watches()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for _ in response.stream(amt=None, decode_content=False):
            pass


def test_a_watch_ends_cleanly_after_timeout_seconds(server: FakeApiServer, custom) -> None:
    assert raw_watch(claims_call(custom), 1, resource_version=str(server.resource_version), timeout_seconds=1) == []


# -- writes ---------------------------------------------------------------------------------------------------------
def test_http_create_sets_server_fields_and_drops_status(server: FakeApiServer, custom) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, ipam_claim("vm-a", ["1.2.3.4/24"]))
    meta = created["metadata"]
    assert "status" not in created
    assert meta["generation"] == 1
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["resourceVersion"] == str(server.resource_version)
    assert meta["managedFields"][0]["manager"] == "bgpadv"  # from the client's User-Agent
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, ipam_claim("vm-a"))
    assert err.value.status == 409
    assert json.loads(err.value.body)["reason"] == "AlreadyExists"


def test_the_status_subresource_is_the_only_way_to_change_status(server: FakeApiServer, custom) -> None:
    claim = server.create(ipam_claim("vm-a", ["192.168.100.10/24"]))
    claim["spec"]["network"] = "cluster_udn_vmnet-b"
    claim["status"]["ips"] = ["192.168.100.99/24"]
    updated = custom.replace_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, "vm-a.default", claim)
    assert updated["spec"]["network"] == "cluster_udn_vmnet-b"
    assert updated["status"]["ips"] == ["192.168.100.10/24"]  # a plain update ignores status
    assert updated["metadata"]["generation"] == 2

    updated["spec"]["network"] = "cluster_udn_vmnet-c"
    updated["status"]["ips"] = ["192.168.100.42/24"]
    on_status = custom.replace_namespaced_custom_object_status(GROUP, VERSION, NS, CLAIMS, "vm-a.default", updated)
    assert on_status["spec"]["network"] == "cluster_udn_vmnet-b"  # /status ignores everything else
    assert on_status["status"]["ips"] == ["192.168.100.42/24"]
    assert on_status["metadata"]["generation"] == 2

    patched = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, CLAIMS, "vm-a.default", {"status": {"ownerPod": {"name": "virt-launcher-vm-a-9zz9z"}}}
    )
    assert patched["status"]["ownerPod"] == {"name": "virt-launcher-vm-a-9zz9z"}
    assert patched["status"]["ips"] == ["192.168.100.42/24"]
    assert {(m["manager"], m.get("subresource")) for m in patched["metadata"]["managedFields"]} >= {
        ("bgpadv", None),
        ("bgpadv", "status"),
    }


def test_an_update_with_a_stale_resource_version_is_a_409_conflict(server: FakeApiServer, custom) -> None:
    stale = server.create(ipam_claim("vm-a"))
    server.patch(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-a.default", NS, {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ApiException) as err:
        custom.replace_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, "vm-a.default", stale)
    assert err.value.status == 409
    assert json.loads(err.value.body)["reason"] == "Conflict"
    del stale["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as err:  # custom resources refuse unconditional updates
        custom.replace_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, "vm-a.default", stale)
    assert err.value.status == 422


def test_a_write_that_changes_nothing_keeps_the_resource_version(server: FakeApiServer, custom) -> None:
    claim = server.create(ipam_claim("vm-a"))
    same = custom.replace_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, "vm-a.default", claim)
    assert same["metadata"]["resourceVersion"] == claim["metadata"]["resourceVersion"]


def test_merge_and_json_patches(server: FakeApiServer, custom, api) -> None:
    server.create(ipam_claim("vm-a"))
    merged = custom.patch_namespaced_custom_object(
        GROUP, VERSION, NS, CLAIMS, "vm-a.default", {"metadata": {"labels": {"team": "blue"}}}
    )
    assert merged["metadata"]["labels"] == {"kubevirt.io/vm": "vm-a", "team": "blue"}
    patched = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        NS,
        CLAIMS,
        "vm-a.default",
        [
            {"op": "test", "path": "/metadata/labels/team", "value": "blue"},
            {"op": "remove", "path": "/metadata/labels/team"},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/hold"},
        ],
        _content_type="application/json-patch+json",
    )
    assert "team" not in patched["metadata"]["labels"]
    assert patched["metadata"]["finalizers"] == ["kubevirt.io/persistent-ipam", "example.com/hold"]
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            NS,
            CLAIMS,
            "vm-a.default",
            [{"op": "test", "path": "/spec/network", "value": "other"}],
            _content_type="application/json-patch+json",
        )
    assert err.value.status == 422
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            NS,
            CLAIMS,
            "vm-a.default",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param([{"op": "remove", "path": "/metadata/labels/absent"}], id="remove-a-missing-key"),
        pytest.param([{"op": "replace", "path": "/spec/absent/deeper", "value": 1}], id="replace-under-a-missing-key"),
        pytest.param([{"op": "add", "path": "/metadata/finalizers/9", "value": "x"}], id="add-past-a-list-end"),
        pytest.param([{"op": "frobnicate", "path": "/spec"}], id="unknown-operation"),
    ],
)
def test_a_json_patch_that_cannot_apply_is_refused_with_422_and_changes_nothing(
    server: FakeApiServer, custom, ops
) -> None:
    claim = server.create(ipam_claim("vm-a"))
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, NS, CLAIMS, "vm-a.default", ops, _content_type="application/json-patch+json"
        )
    assert err.value.status == 422
    assert server.get(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-a.default", NS) == claim


def test_core_kinds_take_a_strategic_merge_patch(server: FakeApiServer, core) -> None:
    server.create(pod("virt-launcher-vm-a-x7k2p", "worker-1", launcher_of="vm-a"))
    ready = {"metadata": {"annotations": {"kubevirt.io/migration-target-ready-timestamp": "2026-11-30T10:00:00Z"}}}
    patched = core.patch_namespaced_pod("virt-launcher-vm-a-x7k2p", NS, ready)
    assert patched.metadata.annotations["kubevirt.io/migration-target-ready-timestamp"] == "2026-11-30T10:00:00Z"
    assert patched.metadata.annotations["kubevirt.io/domain"] == "vm-a"


def test_delete_waits_for_finalizers(server: FakeApiServer, custom) -> None:
    rv = str(server.create(ipam_claim("vm-a"))["metadata"]["resourceVersion"])
    pending = custom.delete_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, "vm-a.default")
    assert pending["metadata"]["deletionTimestamp"]
    assert server.get(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-a.default", NS) is not None
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, NS, CLAIMS, "vm-a.default", {"metadata": {"finalizers": None}}
    )
    assert server.get(f"{GROUP}/{VERSION}", "IPAMClaim", "vm-a.default", NS) is None
    events = raw_watch(claims_call(custom), 2, resource_version=rv)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, CLAIMS, "vm-a.default")
    assert err.value.status == 404


# -- installation, faults, events, discovery -----------------------------------------------------------------------
def test_an_uninstalled_group_answers_404_until_installed() -> None:
    with FakeApiServer(installed={"k8s.ovn.org", GROUP}) as server:
        server.create(
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstance",
                "metadata": {"name": "vm-a", "namespace": NS},
            }
        )
        api = client.ApiClient(client.Configuration(host=server.url))
        vmis = client.CustomObjectsApi(api)
        with pytest.raises(ApiException) as err:
            vmis.list_cluster_custom_object("kubevirt.io", "v1", "virtualmachineinstances")
        assert err.value.status == 404
        assert json.loads(err.value.body)["reason"] == "NotFound"
        groups = [g.name for g in client.ApisApi(api).get_api_versions().groups]
        assert "kubevirt.io" not in groups
        server.set_installed("kubevirt.io", True)
        listed = vmis.list_cluster_custom_object("kubevirt.io", "v1", "virtualmachineinstances")
        assert names(listed["items"]) == ["vm-a"]
        api.close()


def test_fail_next_answers_the_next_matching_requests_with_an_error(server: FakeApiServer, custom, core) -> None:
    server.fail_next(1, 500, verb="list", plural=CLAIMS)
    core.list_node()  # another resource is not affected
    with pytest.raises(ApiException) as err:
        custom.list_cluster_custom_object(GROUP, VERSION, CLAIMS)
    assert err.value.status == 500
    custom.list_cluster_custom_object(GROUP, VERSION, CLAIMS)
    assert server.requests[("list", CLAIMS)] == 2
    assert server.requests[("list", "nodes")] == 1


def test_a_429_carries_retry_after(server: FakeApiServer) -> None:
    server.fail_next(1, 429)
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{server.url}/api/v1/nodes", timeout=5)
    assert err.value.code == 429
    assert err.value.headers["Retry-After"] == "1"


def test_events_created_by_clients_are_kept(server: FakeApiServer, core) -> None:
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name="vm-a.default."),
        involved_object=client.V1ObjectReference(kind="IPAMClaim", name="vm-a.default", namespace=NS),
        reason="OutsideNetworkSubnets",
        message="192.168.200.5 is outside the subnets of cluster_udn_vmnet-a",
        type="Warning",
        source=client.V1EventSource(component="bgpadv"),
    )
    core.create_namespaced_event(NS, event)
    (stored,) = server.events()
    assert stored["metadata"]["name"].startswith("vm-a.default.")
    assert stored["reason"] == "OutsideNetworkSubnets"
    assert stored["involvedObject"]["kind"] == "IPAMClaim"


def test_discovery_is_enough_for_the_client(server: FakeApiServer, api) -> None:
    assert client.VersionApi(api).get_code().major == "1"
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"k8s.ovn.org", "k8s.cni.cncf.io", "kubevirt.io"} <= groups
    resources = client.CustomObjectsApi(api).get_api_resources(GROUP, VERSION).resources
    assert {r.name for r in resources} >= {"ipamclaims", "ipamclaims/status"}


def test_it_serves_on_a_socket_handed_in() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    with FakeApiServer(sock=sock) as server:
        server.create(node("worker-1", "192.168.126.31"))
        assert server.url == f"http://127.0.0.1:{sock.getsockname()[1]}"
        nodes = client.CoreV1Api(client.ApiClient(client.Configuration(host=server.url))).list_node()
        assert [n.metadata.name for n in nodes.items] == ["worker-1"]


# -- Python-side API ----------------------------------------------------------------------------------------------
def test_python_side_writes_behave_like_api_writes(server: FakeApiServer) -> None:
    created = server.create(ipam_claim("vm-a", ["192.168.100.10/24"]))
    assert created["status"]["ips"] == ["192.168.100.10/24"]  # seeding keeps status
    assert created["metadata"]["managedFields"][0]["time"].endswith("Z")
    changed = server.apply({**ipam_claim("vm-a", ["192.168.100.10/24"]), "spec": {"network": "cluster_udn_b"}})
    assert changed["metadata"]["generation"] == 2
    assert int(changed["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert names(server.list(f"{GROUP}/{VERSION}", "IPAMClaim")) == ["vm-a.default"]


def test_load_expands_lists_and_reads_multi_document_yaml(server: FakeApiServer, tmp_path: Path) -> None:
    import yaml

    (tmp_path / "nodes.yaml").write_text(
        yaml.safe_dump_all([node("worker-1", "10.0.0.1"), node("worker-2", "10.0.0.2")])
    )
    (tmp_path / "claims.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [ipam_claim("vm-a")]})
    )
    assert server.load(read_seed(tmp_path)) == 3
    assert names(server.list("v1", "Node")) == ["worker-1", "worker-2"]
