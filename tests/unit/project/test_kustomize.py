"""deploy/ as kustomize: every overlay rendered by a real kustomize, checked against Kubernetes' schemas and our rules.

Rendering: `kubectl kustomize` (kustomize v5 inside kubectl >= 1.27, see
scripts/install-system-deps.sh). Its absence is a failure, not a skip. Schemas: PyPI's `kubernetes-validate`, strict
(unknown fields are errors), for the oldest and the newest Kubernetes the project supports. Custom resources
(PodMonitor, PrometheusRule) have no schema there and are skipped by the validator; their content is asserted below
and the rules are tested with promtool in tests/unit/project/test_deploy_monitoring.py.

The rules: the namespace enforces the `privileged` Pod Security level (hostNetwork needs it); RBAC is exactly
list/watch on what bgpadv reads plus create/patch on Events; the pod is hardened (non-root, no privilege escalation,
no capabilities, RuntimeDefault seccomp, read-only root filesystem with the runtime directory on an emptyDir), has
no nodeSelector, 60 s to terminate, measured requests/limits; the ConfigMap is generated from the shipped placeholder
configuration, which `check-config` refuses (applying the base unchanged peers with nothing), and referenced under
its hashed name; the install guide's overlay replaces it with a configuration `check-config` accepts; each overlay adds
exactly its piece. Placement: the DaemonSet tolerates every taint at `system-node-critical`, the Deployment spreads
over zones besides its required anti-affinity by hostname; every object and pod template carries the recommended
`app.kubernetes.io/*` labels, and the selectors only `app.kubernetes.io/name`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tomllib
from functools import cache
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from bgpadv.commands import checkconfig
from bgpadv.config import parse
from tests import guide

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
OVERLAYS = ("default", "openshift", "per-node", "monitoring")
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())  # OpenShift 4.16's Kubernetes, and the newest
CUSTOM_RESOURCES = {"PodMonitor", "PrometheusRule", "SecurityContextConstraints"}  # OpenShift's: see check_scc
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"localhost/bgpadv:{VERSION}"


EXAMPLE_CONFIG = DEPLOY / "examples" / "bgpadv.yaml"


def kustomize(directory: Path) -> tuple[dict, ...]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl missing: `kubectl kustomize` renders deploy/ (see scripts/install-system-deps.sh)"
    result = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


@cache
def render(overlay: str) -> tuple[dict, ...]:
    return kustomize(DEPLOY / "overlays" / overlay)


def readme_block(first: str) -> str:
    """The guide's code block whose first line starts with `first` (a `# path` comment), without the fences."""
    return guide.code_block(first)


def one(docs: tuple[dict, ...], kind: str) -> dict:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind}"
    return found[0]


def kinds(overlay: str) -> list[str]:
    return sorted(d["kind"] for d in render(overlay))


def workload(docs: tuple[dict, ...]) -> dict:
    return next(d for d in docs if d["kind"] in ("Deployment", "DaemonSet"))


def container(docs: tuple[dict, ...]) -> dict:
    (c,) = workload(docs)["spec"]["template"]["spec"]["containers"]
    return c


# -- rendering and schemas ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_is_valid_for_kubernetes(overlay: str, version: str) -> None:
    for doc in render(overlay):
        if doc["kind"] in CUSTOM_RESOURCES:
            continue
        kubernetes_validate.validate(doc, version, strict=True)


def test_each_overlay_renders_exactly_its_objects() -> None:
    base = [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "CustomResourceDefinition",
        "Deployment",
        "Namespace",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    assert kinds("default") == base
    assert kinds("openshift") == sorted([*base, "Role", "RoleBinding", "SecurityContextConstraints"])
    assert kinds("monitoring") == sorted([*base, "PodMonitor", "PrometheusRule"])
    assert kinds("per-node") == sorted([*(set(base) - {"Deployment", "PodDisruptionBudget"}), "DaemonSet"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_namespaced_object_lives_in_bgpadv(overlay: str) -> None:
    cluster_scoped = {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "SecurityContextConstraints",
    }
    for doc in render(overlay):
        expected = None if doc["kind"] in cluster_scoped else "bgpadv"
        assert doc["metadata"].get("namespace") == expected, doc["kind"]
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "bgpadv", doc["kind"]


def test_the_namespace_enforces_the_privileged_pod_security_level_a_host_network_pod_needs() -> None:
    ns = one(render("default"), "Namespace")
    assert ns["metadata"]["name"] == "bgpadv"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


# -- RBAC -----------------------------------------------------------------------------------------------------------


def test_the_cluster_role_lists_and_watches_what_bgpadv_reads_and_writes_only_events() -> None:
    role = one(render("default"), "ClusterRole")
    rules = {
        (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"]), tuple(r.get("resourceNames", ())))
        for r in role["rules"]
    }
    assert rules == {
        (("k8s.ovn.org",), ("clusteruserdefinednetworks", "routeadvertisements"), ("list", "watch"), ()),
        (("k8s.cni.cncf.io",), ("ipamclaims",), ("list", "watch"), ()),
        (("kubevirt.io",), ("virtualmachineinstances",), ("list", "watch"), ()),
        (("",), ("pods", "nodes", "namespaces"), ("list", "watch"), ()),
        (("",), ("events",), ("create", "patch"), ()),
    }


def test_a_namespaced_role_lets_bgpadv_write_its_session_state_objects_and_nothing_else() -> None:
    docs = render("default")
    role = next(d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "bgpadv-session-state")
    assert role["metadata"]["namespace"] == "bgpadv"
    assert role["rules"] == [
        {"apiGroups": ["bgpadv.io"], "resources": ["bgpsessionstates"], "verbs": ["list", "create", "patch", "delete"]},
        {"apiGroups": ["bgpadv.io"], "resources": ["bgpsessionstates/status"], "verbs": ["patch"]},
    ]
    binding = next(d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "bgpadv-session-state")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bgpadv", "namespace": "bgpadv"}]
    crd = one(docs, "CustomResourceDefinition")
    assert crd["metadata"]["name"] == "bgpsessionstates.bgpadv.io"
    (version,) = crd["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns[:7] == ["Peer", "ASN", "Node", "State", "Uptime", "Sent", "Received"]


def test_the_cluster_role_covers_every_resource_bgpadv_watches() -> None:
    from bgpadv.core import resources

    role = one(render("default"), "ClusterRole")
    granted = {
        (g, res) for r in role["rules"] if "watch" in r["verbs"] for g in r["apiGroups"] for res in r["resources"]
    }
    assert granted == {(r.group, r.plural) for r in resources.ALL}


def test_the_cluster_role_is_bound_to_the_service_account_the_pod_runs_as() -> None:
    docs = render("default")
    binding = one(docs, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bgpadv"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bgpadv", "namespace": "bgpadv"}]
    assert workload(docs)["spec"]["template"]["spec"]["serviceAccountName"] == "bgpadv"


def test_openshift_lets_the_service_account_use_bgpadvs_own_scc_and_nothing_else() -> None:
    docs = tuple(d for d in render("openshift") if not d["metadata"]["name"].endswith("-session-state"))
    role, binding = one(docs, "Role"), one(docs, "RoleBinding")
    assert role["rules"] == [
        {
            "apiGroups": ["security.openshift.io"],
            "resources": ["securitycontextconstraints"],
            "resourceNames": [one(docs, "SecurityContextConstraints")["metadata"]["name"]],
            "verbs": ["use"],
        }
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bgpadv", "namespace": "bgpadv"}]
    labels = one(docs, "Namespace")["metadata"]["labels"]
    assert labels["security.openshift.io/scc.podSecurityLabelSync"] == "false"
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"


# -- the pod --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pod_is_hardened(overlay: str) -> None:
    pod = workload(render(overlay))["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert container(render(overlay))["securityContext"] == {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"], "add": []},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert "runAsUser" not in pod["securityContext"]  # the image's 65532, or the UID OpenShift assigns


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pod_runs_on_any_node_on_the_host_network_with_time_to_drain(overlay: str) -> None:
    pod = workload(render(overlay))["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["terminationGracePeriodSeconds"] == 60


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_runtime_dir_is_writable_and_the_configuration_is_the_generated_config_map(overlay: str) -> None:
    docs = render(overlay)
    pod, c = workload(docs)["spec"]["template"]["spec"], container(docs)
    assert c["args"] == ["run", "--config", "/etc/bgpadv/bgpadv.yaml", "--runtime-dir", "/run/bgpadv"]
    assert c["volumeMounts"] == [
        {"name": "config", "mountPath": "/etc/bgpadv", "readOnly": True},
        {"name": "run", "mountPath": "/run/bgpadv"},
        {"name": "secrets", "mountPath": "/etc/bgpadv-secrets", "readOnly": True},
    ]
    config_map = one(docs, "ConfigMap")
    assert config_map["metadata"]["name"].startswith("bgpadv-")  # the generator's content hash: edits roll the pods
    assert pod["volumes"] == [
        {"name": "config", "configMap": {"name": config_map["metadata"]["name"]}},
        {"name": "run", "emptyDir": {"sizeLimit": "16Mi"}},
        # MD5 passwords (md5PasswordFile), readable by group 0 whatever the UID; optional: no Secret, no passwords
        {"name": "secrets", "secret": {"secretName": "bgpadv-md5", "optional": True, "defaultMode": 0o440}},
    ]
    assert {"name": "BGPADV_RUNTIME_DIR", "value": "/run/bgpadv"} in c["env"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_node_address_reaches_the_pod_from_the_downward_api(overlay: str) -> None:
    env = container(render(overlay))["env"]
    assert {"name": "BGPADV_NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}} in env


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_node_the_pod_runs_on_reaches_it_from_the_downward_api(overlay: str) -> None:
    """peers[].nodeSelector is matched against this node's labels, in cluster mode as in per-node mode."""
    env = container(render(overlay))["env"]
    assert {"name": "BGPADV_POD_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in env


def test_the_shipped_configuration_is_a_placeholder_that_check_config_refuses(tmp_path, capsys) -> None:
    """Applying the base unchanged never peers with anything: the pod's configuration is refused, field by field."""
    config_map = one(render("default"), "ConfigMap")
    assert set(config_map["data"]) == {"bgpadv.yaml"}
    path = tmp_path / "bgpadv.yaml"
    path.write_text(config_map["data"]["bgpadv.yaml"])
    assert checkconfig.main(str(path)) == 2
    err = capsys.readouterr().err
    assert f"{path}: peers[0].address: is the shipped placeholder 'REPLACE-WITH-YOUR-TOR-ADDRESS'" in err
    assert "replace with your ToR" in config_map["data"]["bgpadv.yaml"]  # the comment says what to do


def readme_overlay(tmp: Path) -> tuple[dict, ...]:
    """The install guide's own overlay (`my-bgpadv/` beside `deploy/`), with its configuration, rendered."""
    (tmp / "deploy").symlink_to(DEPLOY, target_is_directory=True)
    mine = tmp / "my-bgpadv"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(readme_block("# my-bgpadv/kustomization.yaml"))
    (mine / "bgpadv.yaml").write_text(readme_block("# my-bgpadv/bgpadv.yaml"))
    return kustomize(mine)


def test_the_readme_configuration_is_the_example_file_and_check_config_accepts_it(monkeypatch, capsys) -> None:
    assert readme_block("# my-bgpadv/bgpadv.yaml") == EXAMPLE_CONFIG.read_text()
    monkeypatch.setenv("BGPADV_NODE_IP", "10.0.0.11")  # status.hostIP, as the pod gets it
    assert checkconfig.main(str(EXAMPLE_CONFIG)) == 0, capsys.readouterr().err


def test_the_readme_overlay_replaces_the_placeholder_and_serves_metrics_on_the_node_address_only(
    tmp_path_factory, monkeypatch
) -> None:
    docs = readme_overlay(tmp_path_factory.mktemp("readme"))
    for doc in docs:
        kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[-1], strict=True)
    config_map = one(docs, "ConfigMap")
    assert config_map["data"] == {"bgpadv.yaml": EXAMPLE_CONFIG.read_text()}
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["volumes"][0] == {"name": "config", "configMap": {"name": config_map["metadata"]["name"]}}
    assert pod["containers"][0]["image"] == f"registry.example.com/bgpadv:{VERSION}"
    monkeypatch.setenv("BGPADV_NODE_IP", "10.0.0.11")  # status.hostIP, as the pod gets it
    config = parse(yaml.safe_load(config_map["data"]["bgpadv.yaml"]))
    # the kubelet probes the pod's address (the node's: hostNetwork), and only there is /metrics served
    assert (config.metrics.listen_from_env, config.metrics.host_port) == ("BGPADV_NODE_IP", ("10.0.0.11", 9179))
    assert all(p.md5_password is None for p in config.peers)  # passwords live in the Secret, never in the ConfigMap


def test_requests_and_limits_rest_on_the_measurement_at_10k_routes() -> None:
    """bench/rss.py at 10,000 host routes: 225 MiB resident in all, the controller 136 MiB of it (docs/operations.md);
    the limit leaves room for a relist (fresh views beside the old ones)."""
    assert container(render("default"))["resources"] == {
        "requests": {"cpu": "100m", "memory": "384Mi"},
        "limits": {"memory": "1Gi"},
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_image_is_the_one_make_image_builds(overlay: str) -> None:
    c = container(render(overlay))
    assert (c["image"], c["imagePullPolicy"]) == (IMAGE, "IfNotPresent")


def test_probes_and_service_use_the_metrics_port() -> None:
    docs = render("default")
    c = container(docs)
    assert c["ports"] == [{"name": "metrics", "containerPort": 9179, "protocol": "TCP"}]
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    service = one(docs, "Service")
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "bgpadv"}
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9179, "targetPort": "metrics", "protocol": "TCP"}]


ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "bgpadv"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


@pytest.mark.parametrize("overlay", ("default", "openshift", "monitoring"))
def test_two_active_speakers_run_on_two_nodes_and_roll_one_at_a_time_without_a_surge(overlay: str) -> None:
    """Both replicas announce the same routes (docs/operations.md, "High availability"); a third pod would find no
    free node."""
    deployment = one(render(overlay), "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert deployment["spec"]["template"]["spec"]["affinity"] == ANTI_AFFINITY


def test_the_disruption_budget_keeps_one_speaker_through_any_drain() -> None:
    docs = render("default")
    pdb, deployment = one(docs, "PodDisruptionBudget"), one(docs, "Deployment")
    assert pdb["spec"] == {"minAvailable": 1, "selector": deployment["spec"]["selector"]}
    assert (
        deployment["spec"]["selector"]["matchLabels"].items()
        <= deployment["spec"]["template"]["metadata"]["labels"].items()
    )


# -- per-node and monitoring ----------------------------------------------------------------------------------------


def test_per_node_runs_the_same_pod_as_a_daemonset_with_the_node_name_from_the_downward_api() -> None:
    daemonset = one(render("per-node"), "DaemonSet")
    deployment = one(render("default"), "Deployment")
    pod = daemonset["spec"]["template"]
    env = pod["spec"]["containers"][0]["env"]
    assert {"name": "BGPADV_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in env
    assert daemonset["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    without_node_name = yaml.safe_load(yaml.safe_dump(pod))
    without_node_name["spec"]["containers"][0]["env"] = [e for e in env if e["name"] != "BGPADV_NODE_NAME"]
    assert "affinity" not in pod["spec"] and "topologySpreadConstraints" not in pod["spec"]  # one pod per node
    for placement in ("tolerations", "priorityClassName"):  # the DaemonSet's own (below)
        del without_node_name["spec"][placement]
    central = yaml.safe_load(yaml.safe_dump(deployment["spec"]["template"]))
    for placement in ("affinity", "topologySpreadConstraints", "priorityClassName"):  # the Deployment's own
        del central["spec"][placement]
    assert without_node_name == central  # one pod, two controllers: they must not drift


def test_the_node_speaker_runs_on_every_node_tainted_or_not_and_is_evicted_last() -> None:
    """A VM on a tainted node is announced by that node's instance only; the speaker outlives the VMs it serves."""
    pod = one(render("per-node"), "DaemonSet")["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["priorityClassName"] == "system-node-critical"
    assert "nodeSelector" not in pod


@pytest.mark.parametrize("overlay", ("default", "openshift", "monitoring"))
def test_the_central_speakers_spread_over_zones_and_never_share_a_node(overlay: str) -> None:
    pod = one(render(overlay), "Deployment")["spec"]["template"]["spec"]
    assert pod["affinity"] == ANTI_AFFINITY
    assert pod["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "bgpadv"}},
        }
    ]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert "tolerations" not in pod


# -- labels -----------------------------------------------------------------------------------------------------------

RECOMMENDED = {
    "app.kubernetes.io/name": "bgpadv",
    "app.kubernetes.io/instance": "bgpadv",
    "app.kubernetes.io/version": VERSION,
    "app.kubernetes.io/part-of": "bgpadv",
    "app.kubernetes.io/managed-by": "kustomize",
}
MONITORING = {"PodMonitor", "PrometheusRule"}
SELECTOR = {"app.kubernetes.io/name": "bgpadv"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_and_pod_template_carries_the_recommended_labels(overlay: str) -> None:
    for doc in render(overlay):
        component = "monitoring" if doc["kind"] in MONITORING else "speaker"
        labels = {k: v for k, v in doc["metadata"]["labels"].items() if k.startswith("app.kubernetes.io/")}
        assert labels == {**RECOMMENDED, "app.kubernetes.io/component": component}, doc["kind"]
    template = workload(render(overlay))["spec"]["template"]["metadata"]["labels"]
    assert template == {**RECOMMENDED, "app.kubernetes.io/component": "speaker"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_selectors_name_the_application_only(overlay: str) -> None:
    """As before the recommended labels: a Deployment's selector cannot change in place, and a version in it would."""
    docs = render(overlay)
    assert workload(docs)["spec"]["selector"] == {"matchLabels": SELECTOR}
    assert one(docs, "Service")["spec"]["selector"] == SELECTOR
    for doc in docs:
        if doc["kind"] in ("PodDisruptionBudget", "PodMonitor"):
            assert doc["spec"]["selector"] == {"matchLabels": SELECTOR}


def test_the_version_label_and_the_image_tag_are_the_package_version() -> None:
    for path in [DEPLOY / "base" / "kustomization.yaml", *sorted((DEPLOY / "components").glob("*/kustomization.yaml"))]:
        doc = yaml.safe_load(path.read_text())
        for labels in doc.get("labels", []):
            assert labels["pairs"]["app.kubernetes.io/version"] == VERSION, path
        for image in doc.get("images", []):
            assert image["newTag"] == VERSION, path


def test_monitoring_scrapes_the_pods_metrics_port_as_job_bgpadv_and_ships_the_rules() -> None:
    docs = render("monitoring")
    monitor = one(docs, "PodMonitor")
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert monitor["spec"]["podMetricsEndpoints"] == [
        {
            "port": "metrics",
            "path": "/metrics",
            "interval": "30s",
            "relabelings": [  # the target labels the alerts use: node, mode (per-node | cluster)
                {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"},
                {
                    "sourceLabels": ["__meta_kubernetes_pod_controller_kind"],
                    "regex": "DaemonSet",
                    "targetLabel": "mode",
                    "replacement": "per-node",
                },
                {
                    "sourceLabels": ["__meta_kubernetes_pod_controller_kind"],
                    "regex": "ReplicaSet",
                    "targetLabel": "mode",
                    "replacement": "cluster",
                },
            ],
        }
    ]
    assert pod_labels[monitor["spec"]["jobLabel"]] == "bgpadv"  # the job the alerts name
    rules = one(docs, "PrometheusRule")
    shipped = yaml.safe_load((DEPLOY / "components" / "monitoring" / "prometheus-rules.yaml").read_text())
    assert rules["spec"] == shipped["spec"]
    assert 'up{job="bgpadv"}' in yaml.safe_dump(rules["spec"])  # the alerts watch the job this PodMonitor makes


def test_nothing_refers_to_the_old_flat_manifest() -> None:
    assert not (DEPLOY / "bgpadv.yaml").exists()
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        path = ROOT / name
        if path.suffix in (".md", ".py", ".yaml", ".sh", ".toml", "") and path.is_file() and path != Path(__file__):
            assert "deploy/bgpadv.yaml" not in path.read_text(errors="replace"), name


# -- BFD (deploy/components/bfd) --------------------------------------------------------------------------------------

HARDENED = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"], "add": []},
    "seccompProfile": {"type": "RuntimeDefault"},
}
BFD_CAPABLE = {
    **HARDENED,
    "allowPrivilegeEscalation": True,  # no_new_privs would ignore the file capabilities of the image's bfdd
    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN"]},
}


def with_components(tmp_path: Path, *components: str) -> tuple[dict, ...]:
    """An operator's overlay: the base plus the named components of deploy/components (kustomize refuses absolute
    paths: relative ones from the overlay's directory)."""
    deploy = Path(os.path.relpath(DEPLOY, tmp_path))
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {"resources": [str(deploy / "base")], "components": [str(deploy / "components" / c) for c in components]}
        )
    )
    return kustomize(tmp_path)


@pytest.mark.parametrize(("components", "kind"), [((), "Deployment"), (("per-node",), "DaemonSet")])
def test_the_bfd_component_adds_exactly_bfdds_three_capabilities_and_allows_escalation(
    tmp_path: Path, components: tuple[str, ...], kind: str
) -> None:
    without = with_components(tmp_path, *components)
    docs = with_components(tmp_path, *components, "bfd")
    assert workload(docs)["kind"] == kind
    assert container(without)["securityContext"] == HARDENED
    assert container(docs)["securityContext"] == BFD_CAPABLE
    # nothing else changes: the pod's own securityContext, every other object
    assert [d for d in docs if d["kind"] != kind] == [d for d in without if d["kind"] != kind]
    assert workload(docs)["spec"]["template"]["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_the_guide_names_the_bfd_component_and_what_it_grants() -> None:
    section = guide.page("bfd.md")
    for needed in ("deploy/components/bfd", "allowPrivilegeEscalation: true", "bfd.enabled", "setcap"):
        assert needed in section, needed
    for cap in ("NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN"):
        assert cap in section, cap


def test_the_runbook_url_component_moves_every_runbook_to_the_given_base(tmp_path: Path) -> None:
    """deploy/components/runbook-url, used as its comment says: a local-config ConfigMap names the base, every alert's
    runbook_url keeps its anchor, the ConfigMap itself is never applied and nothing else changes."""
    (tmp_path / "deploy").symlink_to(DEPLOY, target_is_directory=True)
    mine = tmp_path / "my-bgpadv"
    mine.mkdir()
    base = "https://wiki.example.com/bgpadv/troubleshooting/"
    (mine / "runbook-url.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "bgpadv-runbook-url",
                    "annotations": {"config.kubernetes.io/local-config": "true"},
                },
                "data": {"baseURL": base},
            }
        )
    )
    (mine / "kustomization.yaml").write_text(
        "resources: [../deploy/overlays/monitoring, runbook-url.yaml]\ncomponents: [../deploy/components/runbook-url]\n"
    )
    docs = kustomize(mine)
    shipped = render("monitoring")
    alerts = [r for g in one(docs, "PrometheusRule")["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert len(alerts) >= 18
    assert {r["annotations"]["runbook_url"] for r in alerts} == {base + "#" + r["alert"].lower() for r in alerts}
    assert [d for d in docs if d["kind"] != "PrometheusRule"] == [d for d in shipped if d["kind"] != "PrometheusRule"]


# -- egress import (deploy/components/import), unnumbered peers (deploy/components/unnumbered), BFD on them
# (deploy/components/unnumbered-bfd) and OpenShift's SCC, in every combination -------------------------------------

BFD_CAPABILITIES = ["NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN"]
IMPORT_CAPABILITIES = ["NET_ADMIN"]  # route writes into a VRF's table (RTM_NEWROUTE/RTM_DELROUTE); reads need none
UNNUMBERED_CAPABILITIES = ["NET_RAW"]  # the raw ICMPv6 socket of Router Solicitations and Advertisements
UNNUMBERED_BFD_CAPABILITIES = ["NET_ADMIN"]  # the host route to the ToR's link-local address bfdd's packets take
ORDER = ("per-node", "openshift", "bfd", "import", "unnumbered", "unnumbered-bfd")
COMBINATIONS = [
    pytest.param(tuple(c for c in ORDER if c in chosen), id="+".join(chosen))
    for chosen in (
        ("cluster",),
        ("per-node",),
        ("openshift",),
        ("bfd",),
        ("import",),
        ("per-node", "import"),
        ("per-node", "bfd", "import"),
        ("per-node", "openshift"),
        ("per-node", "openshift", "bfd"),
        ("per-node", "openshift", "import"),
        ("per-node", "openshift", "bfd", "import"),
        ("openshift", "bfd"),
        ("unnumbered",),
        ("per-node", "unnumbered"),
        ("per-node", "import", "unnumbered"),
        ("per-node", "bfd", "unnumbered"),
        ("per-node", "openshift", "unnumbered"),
        ("per-node", "openshift", "bfd", "unnumbered"),
        ("per-node", "openshift", "bfd", "import", "unnumbered"),
        ("unnumbered-bfd",),
        ("per-node", "bfd", "unnumbered", "unnumbered-bfd"),
        ("per-node", "import", "unnumbered", "unnumbered-bfd"),
        ("per-node", "openshift", "bfd", "unnumbered", "unnumbered-bfd"),
        ("per-node", "openshift", "bfd", "import", "unnumbered", "unnumbered-bfd"),
    )
]
SCC_REQUIRED = (  # security.openshift.io/v1 SecurityContextConstraints: the fields its schema requires
    "allowHostDirVolumePlugin",
    "allowHostIPC",
    "allowHostNetwork",
    "allowHostPID",
    "allowHostPorts",
    "allowPrivilegedContainer",
    "allowedCapabilities",
    "defaultAddCapabilities",
    "priority",
    "readOnlyRootFilesystem",
    "requiredDropCapabilities",
    "volumes",
)
SCC_BOOLEANS = (
    *(k for k in SCC_REQUIRED if k.startswith("allow") and k != "allowedCapabilities"),
    "readOnlyRootFilesystem",
)
SCC_LISTS = ("allowedCapabilities", "defaultAddCapabilities", "requiredDropCapabilities", "volumes", "users", "groups")
SCC_STRATEGIES = {  # each strategy's `type`, as OpenShift's SCC admission knows them
    "runAsUser": {"MustRunAs", "MustRunAsRange", "MustRunAsNonRoot", "RunAsAny"},
    "seLinuxContext": {"MustRunAs", "RunAsAny"},
    "fsGroup": {"MustRunAs", "RunAsAny"},
    "supplementalGroups": {"MustRunAs", "RunAsAny"},
}
VOLUME_PLUGINS = {"configMap": "configMap", "emptyDir": "emptyDir", "secret": "secret", "projected": "projected"}


def check_scc(scc: dict, pod: dict) -> None:
    """The SCC is well formed for security.openshift.io/v1 (no package ships OpenShift's schema: its required fields,
    types and strategy values are checked here) and admits `pod` exactly: host network, the pod's capabilities and
    escalation, its volumes and seccomp profile, a UID OpenShift assigns, nothing for anyone but bgpadv's account."""
    assert scc["apiVersion"] == "security.openshift.io/v1" and "namespace" not in scc["metadata"]  # cluster-scoped
    for key in SCC_REQUIRED:
        assert key in scc, key
    for key in SCC_BOOLEANS:
        assert isinstance(scc[key], bool), key
    for key in SCC_LISTS:
        assert isinstance(scc[key], list) and all(isinstance(x, str) for x in scc[key]), key
    assert scc["priority"] is None or isinstance(scc["priority"], int)
    for key, types in SCC_STRATEGIES.items():
        assert scc[key]["type"] in types, key
    assert not set(scc["allowedCapabilities"]) & set(scc["requiredDropCapabilities"])
    assert scc["users"] == scc["groups"] == [] and scc["defaultAddCapabilities"] == []
    spec = pod["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    assert spec["hostNetwork"] and scc["allowHostNetwork"] and scc["allowHostPorts"]
    assert not any(
        scc[k] for k in ("allowHostDirVolumePlugin", "allowHostIPC", "allowHostPID", "allowPrivilegedContainer")
    )
    assert scc["allowedCapabilities"] == c["securityContext"]["capabilities"]["add"]
    assert scc["allowPrivilegeEscalation"] == c["securityContext"]["allowPrivilegeEscalation"]
    assert c["securityContext"]["readOnlyRootFilesystem"] or not scc["readOnlyRootFilesystem"]
    assert (
        "runtime/default" in scc["seccompProfiles"]
        and spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    )
    used = {next(VOLUME_PLUGINS[k] for k in v if k in VOLUME_PLUGINS) for v in spec["volumes"]}
    assert used <= set(scc["volumes"])
    # a UID from the namespace's range: the pod asks for none and refuses root
    assert scc["runAsUser"]["type"] == "MustRunAsRange" and "runAsUser" not in c["securityContext"]
    assert spec["securityContext"]["runAsNonRoot"] and c["securityContext"]["runAsNonRoot"]


@pytest.mark.parametrize("components", COMBINATIONS)
def test_each_combination_grants_exactly_what_bfd_the_import_and_unnumbered_peers_need(
    tmp_path: Path, components: tuple
) -> None:
    docs = with_components(tmp_path, *components)
    for doc in docs:
        if doc["kind"] not in CUSTOM_RESOURCES:
            kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[-1], strict=True)
    wanted = [
        *(BFD_CAPABILITIES if "bfd" in components else []),
        *(IMPORT_CAPABILITIES if "import" in components else []),
        *(UNNUMBERED_CAPABILITIES if "unnumbered" in components else []),  # NET_RAW twice with bfd: one to the kernel
        *(UNNUMBERED_BFD_CAPABILITIES if "unnumbered-bfd" in components else []),  # NET_ADMIN twice with import
    ]
    context = container(docs)["securityContext"]
    assert context == {
        **HARDENED,
        "allowPrivilegeEscalation": bool(wanted),  # no_new_privs would ignore the image's file capabilities
        "capabilities": {"drop": ["ALL"], "add": wanted},
    }
    assert workload(docs)["kind"] == ("DaemonSet" if "per-node" in components else "Deployment")
    sccs = [d for d in docs if d["kind"] == "SecurityContextConstraints"]
    assert len(sccs) == ("openshift" in components)
    for scc in sccs:
        check_scc(scc, workload(docs))


@pytest.mark.parametrize(
    "order",
    [
        pytest.param(order, id="+".join(order))
        for order in itertools.permutations(("bfd", "import", "unnumbered", "unnumbered-bfd"))
    ],
)
def test_bfd_import_unnumbered_and_unnumbered_bfd_compose_in_any_order(tmp_path: Path, order: tuple[str, ...]) -> None:
    docs = with_components(tmp_path, "per-node", "openshift", *order)
    everything = sorted(BFD_CAPABILITIES + IMPORT_CAPABILITIES + UNNUMBERED_CAPABILITIES + UNNUMBERED_BFD_CAPABILITIES)
    assert sorted(container(docs)["securityContext"]["capabilities"]["add"]) == everything
    assert container(docs)["securityContext"]["allowPrivilegeEscalation"] is True
    scc = one(docs, "SecurityContextConstraints")
    assert sorted(scc["allowedCapabilities"]) == everything and scc["allowPrivilegeEscalation"] is True


def test_the_docs_name_each_component_and_what_it_grants() -> None:
    egress = (ROOT / "docs" / "egress.md").read_text()
    for needed in ("deploy/components/import", "allowPrivilegeEscalation: true", "NET_ADMIN", "python3-netadmin"):
        assert needed in egress, needed
    unnumbered = (ROOT / "docs" / "unnumbered.md").read_text()
    for needed in ("deploy/components/unnumbered", "unnumbered.enabled", "NET_RAW", "python3-netadmin", "radvd"):
        assert needed in unnumbered, needed
    for needed in ("deploy/components/unnumbered-bfd", "NET_ADMIN", "bfd.enabled"):  # BFD on interface peers
        assert needed in unnumbered, needed
    openshift = (ROOT / "docs" / "openshift.md").read_text()
    for needed in ("bgpadv-speaker", "frrConfigurationSelector", "localAddress: {fromEnv: BGPADV_NODE_IPS}"):
        assert needed in openshift, needed
    for component in ("bfd", "import", "unnumbered", "unnumbered-bfd"):  # each widens the SCC
        assert f"`{component}`" in openshift, component
    install = (ROOT / "docs" / "install.md").read_text()
    for component in sorted(p.name for p in (DEPLOY / "components").iterdir()):
        assert f"components/{component}" in install, component
    # the Helm values that grant the controller's NET_ADMIN for BFD on interface peers
    for needed in ("components/unnumbered-bfd", "a peer with `interface` and `bfd.enabled`", "`unnumbered.enabled`"):
        assert needed in install, needed
