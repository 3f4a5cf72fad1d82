"""RBAC for real: the shipped ClusterRole and session-state Role (`kubectl kustomize deploy/base`) against the real
authorizer.

Scope: the shipped role grants exactly what bgpadv does (list+watch on its seven kinds, create/patch Events, nothing
else: `kubectl auth can-i` as its ServiceAccount); the Role `bgpadv-session-state` lets it list, create, patch and
delete BGPSessionStates and patch their status in its own namespace `bgpadv` only; a role missing one verb from the
start leaves bgpadv unready, its log and `bgpadv_watch_restarts_total{resource,reason="error"}` naming the resource
it cannot read; a verb withdrawn from a running bgpadv (its connections then cut with `ss -K`: an open watch was
authorized when it began) is fail static: the resource is held (log line, `bgpadv_resource_held{resource}`), its
routes stay at the ToR. `bgpadv explain --kubeconfig` and `render --kubeconfig` need nothing beyond the shipped role
(they only list).
Each case runs bgpadv in worker-1 with its own ServiceAccount bound to its own copy of the shipped rules.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, wait_for_routes
from bgpadv_lab.kubeapi import AsServiceAccount, RealApiServer, shipped_rbac, wait_until
from bgpadv_lab.topology import WORKERS

pytestmark = [pytest.mark.kube, pytest.mark.lab]
W1, W2 = WORKERS["w1"][0], WORKERS["w2"][0]
W1_6 = WORKERS["w1"][1]

NS = "kube-rbac"
SELECTED = {"bgpadv.test/tier": "rbac"}
NETWORK = "cluster_udn_vmnet-r"
SA = "system:serviceaccount:bgpadv:bgpadv"

KINDS = [
    ("clusteruserdefinednetworks.k8s.ovn.org", ""),
    ("routeadvertisements.k8s.ovn.org", ""),
    ("ipamclaims.k8s.cni.cncf.io", NS),
    ("virtualmachineinstances.kubevirt.io", NS),
    ("pods", NS),
    ("nodes", ""),
    ("namespaces", ""),
]


def shipped_rules() -> list[dict]:
    (role,) = [doc for doc in shipped_rbac() if doc["kind"] == "ClusterRole"]
    return role["rules"]


def cluster() -> list[dict]:
    return [
        k8s.cudn_layer2("vmnet-r", ["192.168.120.0/24"], labels=SELECTED, namespaces=[NS]),
        k8s.ipam_claim(NS, "vm-r.default", "vm-r", NETWORK, ["192.168.120.10/24"]),
        k8s.vmi(NS, "vm-r", "worker-1", interfaces=[k8s.interface(["192.168.120.10"])]),
    ]


EXPECTED = {"192.168.120.0/24": [W1], "192.168.120.10/32": [W1]}


def bind(api: RealApiServer, name: str, rules: list[dict]) -> AsServiceAccount:
    """ServiceAccount `name` in namespace bgpadv bound to a ClusterRole `name` with `rules`."""
    api.apply(
        [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "bgpadv"}},
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules,
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "bgpadv"}],
            },
        ]
    )
    return AsServiceAccount(api, "bgpadv", name)


def without(rules: list[dict], resource: str, verb: str) -> list[dict]:
    """The rules with `verb` taken away from `resource` (the resource keeps its other verbs in a rule of its own)."""
    out = []
    for rule in copy.deepcopy(rules):
        if resource in rule["resources"]:
            rest = [r for r in rule["resources"] if r != resource]
            if rest:
                out.append({**rule, "resources": rest})
            verbs = [v for v in rule["verbs"] if v != verb]
            if verbs:
                out.append({**rule, "resources": [resource], "verbs": verbs})
        else:
            out.append(rule)
    return out


@pytest.fixture(scope="module")
def rbac(kube):
    lab, api = kube
    api.ensure_namespaces(NS)
    api.apply(cluster())
    return lab, api


def config(lab) -> dict:
    return lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", networks={"selector": {"matchLabels": dict(SELECTED)}})


def metric(text: str, name: str, **labels: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return None


@pytest.mark.parametrize(("resource", "namespace"), [pytest.param(r, n, id=r.split(".")[0]) for r, n in KINDS])
def test_the_shipped_role_lets_bgpadv_list_and_watch_its_kinds_and_nothing_more(rbac, resource, namespace):
    _, api = rbac
    scope = ["-n", namespace] if namespace else []

    def can(verb: str, what: str = resource) -> bool:
        out = api.kubectl("auth", "can-i", verb, what, f"--as={SA}", *scope, check=False)
        return out.stdout.strip() == "yes"

    assert can("list") and can("watch")
    assert not any(can(verb) for verb in ("get", "create", "update", "patch", "delete"))


def test_the_shipped_role_writes_events_and_reads_no_secrets(rbac):
    _, api = rbac

    def can(*args: str) -> bool:
        return api.kubectl("auth", "can-i", *args, f"--as={SA}", check=False).stdout.strip() == "yes"

    assert can("create", "events", "-n", NS) and can("patch", "events", "-n", NS)
    assert not can("list", "secrets", "-A")
    assert not can("get", "configmaps", "-n", "bgpadv")


@pytest.mark.parametrize(
    ("verb", "what", "namespace", "allowed"),
    [
        pytest.param("list", "bgpsessionstates.bgpadv.io", "bgpadv", True, id="list-own-namespace"),
        pytest.param("create", "bgpsessionstates.bgpadv.io", "bgpadv", True, id="create-own-namespace"),
        pytest.param("patch", "bgpsessionstates.bgpadv.io", "bgpadv", True, id="patch-own-namespace"),
        pytest.param("delete", "bgpsessionstates.bgpadv.io", "bgpadv", True, id="delete-own-namespace"),
        pytest.param("patch", "bgpsessionstates.bgpadv.io/status", "bgpadv", True, id="patch-status"),
        pytest.param("update", "bgpsessionstates.bgpadv.io", "bgpadv", False, id="no-update"),
        pytest.param("get", "bgpsessionstates.bgpadv.io", "bgpadv", False, id="no-get"),
        pytest.param("watch", "bgpsessionstates.bgpadv.io", "bgpadv", False, id="no-watch"),
        pytest.param("create", "bgpsessionstates.bgpadv.io", NS, False, id="not-in-another-namespace"),
        pytest.param("list", "bgpsessionstates.bgpadv.io", "", False, id="not-cluster-wide"),
    ],
)
def test_the_shipped_session_state_role_writes_its_objects_in_its_namespace_only(rbac, verb, what, namespace, allowed):
    _, api = rbac
    scope = ["-n", namespace] if namespace else ["-A"]
    out = api.kubectl("auth", "can-i", verb, what, f"--as={SA}", *scope, check=False)
    assert (out.stdout.strip() == "yes") is allowed, out.stdout + out.stderr


def test_a_role_missing_a_verb_from_the_start_leaves_bgpadv_unready_naming_the_resource(rbac):
    lab, api = rbac
    who = bind(api, "bgpadv-no-claims-list", without(shipped_rules(), "ipamclaims", "list"))
    with BgpadvInLab(lab, api=who, config=config(lab)) as running:
        wait_until(lambda: "ipamclaims: list/watch failed (HTTP 403" in running.log_tail(400), 30, "the 403 log line")
        # the first LIST starts before the health listener (it runs while the process finishes starting)
        wait_until(lambda: running.answers("/readyz"), 30, "the health listener")
        code, body = running.get("/readyz")
        assert code == 503, body  # readiness says only "initial sync not done": the log and the metric name it
        metrics = running.get("/metrics")[1]
        assert metric(metrics, "bgpadv_watch_restarts_total", resource="ipamclaims", reason="error")
        assert not metric(metrics, "bgpadv_watch_restarts_total", resource="virtualmachineinstances", reason="error")
        assert "192.168.120.10/32" not in running.frr.bgp_routes("ipv4")


def test_a_verb_withdrawn_from_a_running_bgpadv_holds_the_resource_and_its_routes(rbac):
    lab, api = rbac
    name = "bgpadv-revoked"
    who = bind(api, name, shipped_rules())
    with BgpadvInLab(lab, api=who, config=config(lab)) as running:
        wait_for_routes(running.frr, EXPECTED, "ipv4", timeout=60)
        bind(api, name, without(shipped_rules(), "ipamclaims", "watch"))
        api.cut_clients(running.ns)  # open watches were authorized when they began: cut them
        wait_until(
            lambda: metric(running.get("/metrics")[1], "bgpadv_resource_held", resource="ipamclaims") == 1,
            60,
            "bgpadv_resource_held{resource=ipamclaims} == 1",
        )
        assert "ipamclaims: HTTP 403 after it was readable: keeping its" in running.log_tail(400)
        for _ in range(10):  # held: nothing moves at the ToR while the hold lasts
            assert running.frr.bgp_routes("ipv4") == EXPECTED
            time.sleep(0.5)
        bind(api, name, shipped_rules())  # given back: the next LIST ends the hold
        wait_until(
            lambda: metric(running.get("/metrics")[1], "bgpadv_resource_held", resource="ipamclaims") == 0,
            90,
            "the hold to end",
        )
        assert running.frr.bgp_routes("ipv4") == EXPECTED


def test_explain_and_render_live_need_nothing_beyond_the_shipped_role(rbac, tmp_path):
    lab, api = rbac
    kubeconfig = AsServiceAccount(api, "bgpadv", "bgpadv").write_kubeconfig(tmp_path / "kubeconfig")
    cfg = tmp_path / "bgpadv.yaml"
    cfg.write_text(json.dumps(config(lab)))
    common = ["--config", str(cfg), "--kubeconfig", str(kubeconfig), "--output", "json"]
    for argv, code in (
        (["explain", "192.168.120.10", *common], 0),
        (["render", *common], 0),
    ):
        proc = lab.net.spawn(
            lab.ns("w1"), [sys.executable, "-m", "bgpadv", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == code, err.decode()
        doc = json.loads(out)
        if argv[0] == "explain":
            assert doc["verdict"] == "announced"
            assert [(r["prefix"], r["nextHop"]) for r in doc["routes"]] == [("192.168.120.10/32", W1)]
        else:
            assert ("192.168.120.10/32", W1) in {(r["prefix"], r["nextHop"]) for r in doc["routes"]}
