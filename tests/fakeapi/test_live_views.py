"""`render --kubeconfig` and `explain --kubeconfig`: the live cluster read once, read-only, through the real client.

Scope: the example dump loaded into the fake apiserver gives exactly what the offline forms give for the same
objects (render's JSON, explain's verdicts); the only requests are LISTs of the resources the service reads (no
watch, no write, no Event: the service's ClusterRole suffices); a CRD that is not installed reads as empty with a
warning, as the service treats it; a refused LIST (403) and an unreachable API are input errors (exit 2) naming the
resource, never an empty plan.

The API server stamps `creationTimestamp` itself when an object is created, so the dump's younger duplicate claimant
(vm-dup-new, which only the timestamps tell apart) is left out: everything else does not depend on object age.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bgpadv.commands import explain, render
from bgpadv.sources.manifests import load_manifest_objects
from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.objects import as_list, rebound

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "config" / "bgpadv.yaml")
EXAMPLES = ROOT / "config" / "examples"


def example_objects() -> list[dict]:
    objects, warnings = load_manifest_objects(EXAMPLES)
    assert warnings == []
    return [o for o in objects if "vm-dup-new" not in o["metadata"]["name"]]


@pytest.fixture
def dump(tmp_path) -> str:
    """The same objects as the API holds, as one manifest file."""
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(as_list(example_objects())))
    return str(path)


def load_as_created(server: FakeApiServer, objects: list[dict]) -> None:
    """The dump into the API as a cluster creates it: the API server gives every object its own uid, and
    virt-controller creates each launcher pod after its VMI, bound to the uid the VMI got (`objects.rebound`): a pod
    keeping the dump's uids would be no VMI's pod (migration trust), and db-1 (no claim) would lose its host route."""
    uids = {}
    for obj in objects:
        if obj["kind"] != "Pod":
            uids[obj["metadata"]["uid"]] = server.apply(obj)["metadata"]["uid"]
    for obj in objects:
        if obj["kind"] == "Pod":
            server.apply(rebound(obj, uids))


@pytest.fixture
def api(tmp_path):
    with FakeApiServer() as server:
        load_as_created(server, example_objects())
        yield server, str(server.write_kubeconfig(tmp_path / "kubeconfig"))


def test_live_render_is_the_offline_render_of_the_same_objects_and_only_lists(api, dump, capsys):
    server, kubeconfig = api
    assert render.main(CONFIG, [dump], "json") == 0
    offline, offline_err = capsys.readouterr()
    assert render.main(CONFIG, (), "json", kubeconfig=kubeconfig) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == json.loads(offline)
    # the data-path warning of the IPAM-less secondary network (core/datapath.py) and the note that a live replica
    # would take IPv6 next-hop self from its node (render cannot know which node), as offline
    assert err == offline_err
    assert [line.split(":")[1] for line in err.splitlines() if "family-not-carried" not in line] == [
        " network guestnet"
    ]
    assert {verb for verb, _plural in server.requests} == {"list"}
    assert {plural for _verb, plural in server.requests} == {
        "clusteruserdefinednetworks",
        "ipamclaims",
        "virtualmachineinstances",
        "pods",
        "nodes",
        "namespaces",
    }


@pytest.mark.parametrize(
    ("target", "code", "verdict"),
    [
        pytest.param("192.168.100.205", 0, "announced", id="announced"),
        pytest.param("imported-vms/vm-migrating", 0, "announced", id="migrating"),
        pytest.param("192.168.100.40", 1, "not announced", id="stopped"),
        pytest.param("192.168.100.1", 1, "refused", id="refused"),
        pytest.param("10.1.2.3", 1, "unknown", id="unknown"),
    ],
)
def test_live_explain_says_what_the_offline_one_says(api, dump, capsys, target, code, verdict):
    _server, kubeconfig = api
    assert explain.main(target, CONFIG, kubeconfig=kubeconfig, output="json") == code
    live = json.loads(capsys.readouterr().out)
    assert explain.main(target, CONFIG, [dump], output="json") == code
    offline = json.loads(capsys.readouterr().out)
    assert [o["object"] for o in live.pop("objects")] == [o["object"] for o in offline.pop("objects")]  # ages differ
    assert live == offline
    assert live["verdict"] == verdict


def test_a_crd_not_installed_reads_as_empty_with_a_warning(tmp_path, capsys):
    objects, _ = load_manifest_objects(EXAMPLES)
    with FakeApiServer(installed={"k8s.ovn.org", "k8s.cni.cncf.io"}) as server:  # no KubeVirt
        server.load(o for o in objects if not o["apiVersion"].startswith("kubevirt.io/"))
        kubeconfig = str(server.write_kubeconfig(tmp_path / "kubeconfig"))
        assert explain.main("192.168.100.205", CONFIG, kubeconfig=kubeconfig) == 1
    out, err = capsys.readouterr()
    assert "virtualmachineinstances.kubevirt.io: not installed (404), read as empty" in err
    assert out.splitlines()[0] == "192.168.100.205: not announced"
    assert "VM stopped: no VirtualMachineInstance" in out


def test_a_refused_list_is_an_input_error_naming_the_resource(api, capsys):
    server, kubeconfig = api
    server.fail_next(1, 403, verb="list", plural="ipamclaims")
    assert render.main(CONFIG, (), "table", kubeconfig=kubeconfig) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "cannot list ipamclaims: HTTP 403" in err


def test_an_unreachable_api_is_an_input_error(tmp_path, capsys):
    with FakeApiServer() as server:
        kubeconfig = str(server.write_kubeconfig(tmp_path / "kubeconfig"))
    assert explain.main("vmnet-a", CONFIG, kubeconfig=kubeconfig) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "cannot list clusteruserdefinednetworks" in err
