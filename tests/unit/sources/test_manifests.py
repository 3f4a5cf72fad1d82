"""Manifests loader: a ClusterState from a directory of YAML/JSON files, as `kubectl get -o yaml` writes them.

Scope: multi-document YAML, `kind: List` and typed lists (`IPAMClaimList`), JSON files, kinds bgpadv ignores,
file suffixes, timestamps kept as strings, duplicate objects, and malformed files giving warnings instead of errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bgpadv.sources.manifests import load_manifests
from bgpadv_lab import objects as k8s

EXAMPLES = Path(__file__).resolve().parents[3] / "config" / "examples"


def write(tmp_path: Path, name: str, *docs: object) -> Path:
    path = tmp_path / name
    path.write_text("".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in docs))
    return path


def test_reads_multi_document_files_and_list_dumps(tmp_path):
    write(tmp_path, "nodes.yaml", k8s.as_list([k8s.node("worker-1", "10.0.0.11"), k8s.node("worker-2", "10.0.0.12")]))
    write(
        tmp_path,
        "net.yml",
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"]),
        k8s.route_advertisements("ra", {}),
        None,  # an empty document
    )
    (tmp_path / "claims.json").write_text(
        json.dumps(k8s.ipam_claim("imported-vms", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24"]))
    )
    state, warnings = load_manifests(tmp_path)
    assert warnings == []
    assert set(state.nodes) == {"worker-1", "worker-2"}
    assert set(state.cudns) == {"vmnet-a"}
    assert set(state.route_advertisements) == {"ra"}
    assert set(state.ipam_claims) == {("imported-vms", "vm-a.default")}


def test_typed_list_items_inherit_api_version_and_kind(tmp_path):
    claim = k8s.ipam_claim("imported-vms", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24"])
    del claim["apiVersion"], claim["kind"]
    write(
        tmp_path, "claims.yaml", {"apiVersion": "k8s.cni.cncf.io/v1alpha1", "kind": "IPAMClaimList", "items": [claim]}
    )
    state, warnings = load_manifests(tmp_path)
    assert warnings == []
    assert set(state.ipam_claims) == {("imported-vms", "vm-a.default")}


def test_other_kinds_files_and_pods_are_ignored(tmp_path):
    write(tmp_path, "ns.yaml", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "imported-vms"}})
    plain_pod = k8s.launcher_pod("imported-vms", "vm-a", "worker-1")
    plain_pod["metadata"]["labels"]["kubevirt.io"] = "something-else"
    write(tmp_path, "pods.yaml", plain_pod)
    write(tmp_path, "notes.txt", k8s.node("worker-1", "10.0.0.11"))
    (tmp_path / "subdir").mkdir()
    write(tmp_path / "subdir", "nodes.yaml", k8s.node("worker-2", "10.0.0.12"))
    state, warnings = load_manifests(tmp_path)
    assert warnings == []
    assert not state.nodes and not state.pods


def test_timestamps_stay_strings_even_unquoted(tmp_path):
    (tmp_path / "claim.yaml").write_text(
        "apiVersion: k8s.cni.cncf.io/v1alpha1\nkind: IPAMClaim\n"
        "metadata: {name: vm-a.default, namespace: imported-vms, creationTimestamp: 2025-02-10T08:00:00Z}\n"
        "spec: {network: cluster_udn_vmnet-a}\n"
    )
    state, _ = load_manifests(tmp_path)
    assert state.ipam_claims[("imported-vms", "vm-a.default")].ref.created == "2025-02-10T08:00:00Z"


@pytest.mark.parametrize(
    ("name", "text", "warning"),
    [
        pytest.param("bad.yaml", "kind: Node\n  - : [\n", "not valid YAML", id="broken-yaml"),
        pytest.param("bad.json", "{not json", "not valid JSON", id="broken-json"),
        pytest.param("scalar.yaml", "just a string\n", "not a mapping", id="scalar-document"),
        pytest.param(
            "list.yaml", "apiVersion: v1\nkind: List\nitems: 3\n", "no list of items", id="list-without-items"
        ),
        pytest.param(
            "meta.yaml", "apiVersion: v1\nkind: Node\nmetadata: [1, 2]\n", "without metadata", id="metadata-not-mapping"
        ),
        pytest.param("binary.yaml", b"\xff\xfe\x00garbage", "cannot read", id="not-utf8"),
    ],
)
def test_malformed_files_give_warnings_not_errors(tmp_path, name, text, warning):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    write(tmp_path, "good.yaml", k8s.node("worker-1", "10.0.0.11"))
    state, warnings = load_manifests(tmp_path)
    assert set(state.nodes) == {"worker-1"}
    assert len(warnings) == 1 and warning in warnings[0] and name in warnings[0]


def test_documents_before_and_after_a_yaml_syntax_error_are_kept(tmp_path):
    path = tmp_path / "mixed.yaml"
    node1 = yaml.safe_dump(k8s.node("worker-1", "10.0.0.11"))
    node2 = yaml.safe_dump(k8s.node("worker-2", "10.0.0.12"))
    path.write_text(node1 + "---\nkind: [\n---\n" + node2)
    state, warnings = load_manifests(tmp_path)
    assert set(state.nodes) == {"worker-1", "worker-2"}
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path} document 2, line ")
    assert "not valid YAML" in warnings[0]


def test_an_object_defined_twice_gives_a_warning_and_the_later_wins(tmp_path):
    write(tmp_path, "a.yaml", k8s.node("worker-1", "10.0.0.11"))
    write(tmp_path, "b.yaml", k8s.node("worker-1", "10.0.0.99"))
    state, warnings = load_manifests(tmp_path)
    assert str(state.nodes["worker-1"].next_hop_candidates[0]) == "10.0.0.99"
    assert len(warnings) == 1 and "also defined" in warnings[0]


def test_missing_directory_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        load_manifests(tmp_path / "absent")


def test_the_example_cluster_dump_loads_cleanly():
    state, warnings = load_manifests(EXAMPLES)
    assert warnings == []
    assert set(state.nodes) == {"worker-1", "worker-2", "worker-3"}
    assert set(state.cudns) == {"vmnet-a", "vmnet-b", "vmnet-l3", "vmnet-lab", "physnet", "guestnet"}
    assert len(state.ipam_claims) >= 20 and len(state.vmis) >= 15 and len(state.pods) >= 15
    assert set(state.namespaces) == {"imported-vms", "tenant-b", "l3-apps", "lab-vms", "static-vms"}


# --- served API versions -------------------------------------------------------------------------------------------


def test_a_vmi_written_as_v1alpha3_is_read_as_v1(tmp_path):
    """KubeVirt still serves kubevirt.io/v1alpha3, identical in shape to v1 (its CRD serves both versions from one
    schema; kubevirt staging/src/kubevirt.io/api/apitesting/testdata/HEAD/kubevirt.io.v1alpha3.VirtualMachineInstance
    is the round-trip fixture): a dump holding it must see the VM running, not stopped."""
    vmi = k8s.vmi("imported-vms", "vm-a", "worker-1")
    vmi["apiVersion"] = "kubevirt.io/v1alpha3"
    write(tmp_path, "vmis.yaml", k8s.as_list([vmi]))
    state, warnings = load_manifests(tmp_path)
    assert warnings == []
    assert state.vmis[("imported-vms", "vm-a")].running
    assert state.vmis[("imported-vms", "vm-a")].node_name == "worker-1"


def test_a_v1alpha3_vmi_renders_its_vms_host_route(tmp_path):
    from bgpadv.planner import plan

    vmi = k8s.vmi("imported-vms", "vm-a", "worker-1")
    vmi["apiVersion"] = "kubevirt.io/v1alpha3"
    write(
        tmp_path,
        "cluster.yaml",
        k8s.node("worker-1", "10.0.0.11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        k8s.ipam_claim("imported-vms", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.5/24"]),
        vmi,
    )
    state, _ = load_manifests(tmp_path)
    assert "192.168.100.5/32" in {str(r.prefix) for r in plan(state, k8s.config()).routes}


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        pytest.param("kubevirt.io/v2", "VirtualMachineInstance", id="vmi-unknown-version"),
        pytest.param("k8s.cni.cncf.io/v1", "IPAMClaim", id="ipamclaim-v1-not-served"),
        pytest.param("k8s.ovn.org/v2", "ClusterUserDefinedNetwork", id="cudn-unknown-version"),
        pytest.param("k8s.ovn.org/v1alpha1", "RouteAdvertisements", id="ra-unknown-version"),
    ],
)
def test_a_watched_kind_in_a_version_bgpadv_does_not_read_is_refused_with_a_warning(tmp_path, api_version, kind):
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "imported-vms"}}
    write(tmp_path, "odd.yaml", obj)
    state, warnings = load_manifests(tmp_path)
    assert len(warnings) == 1
    assert f"{kind} {api_version} is not a version bgpadv reads" in warnings[0]
    assert not state.vmis and not state.ipam_claims and not state.cudns and not state.route_advertisements
