"""deploy/helm/bgpadv: the Helm chart renders the kustomize tree's objects, for each mode and option.

Rendering: `helm template` and `helm lint --strict` of Helm built from its Go module at the version pinned in
scripts/build-helm.sh (the fixture runs the script, which reuses the binary in ${BGPADV_TOOLS_CACHE:-/var/cache/
bgpadv/tools} or builds it: minutes the first time on a fresh machine; no Go toolchain is a failure, not a skip).
Schemas: every object, custom resources aside, validated strict with PyPI's `kubernetes-validate` for the oldest and
the newest Kubernetes the project supports, exactly as tests/unit/project/test_kustomize.py does.

The rules: the default render is the kustomize default overlay in substance (same kinds, names, namespace, RBAC
rules, pod spec, configuration) and so are per-node, openshift and monitoring against their overlays — except what
each tool owns: `app.kubernetes.io/managed-by` and `helm.sh/chart`, the chart's selectors also naming the release
(`app.kubernetes.io/instance`), the ConfigMap's name (kustomize hashes it; the chart rolls the pods with a checksum
annotation instead). The default configuration is the same refused placeholder; the values override image,
configuration, the MD5 Secret's name, placement and resources; names follow the release; the namespace is created
or taken from the release. The Grafana dashboard (deploy/grafana-dashboard.json, verbatim) comes as a ConfigMap for
Grafana's dashboard sidecar only when `monitoring.grafanaDashboard.enabled`, with the sidecar's label by default.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tomllib
from functools import cache
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from bgpadv.commands import checkconfig

from .test_kustomize import CUSTOM_RESOURCES, KUBERNETES_VERSIONS, readme_block, render

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "bgpadv"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
SELECTOR = {"app.kubernetes.io/name": "bgpadv", "app.kubernetes.io/instance": "bgpadv"}
EXAMPLE_CONFIG = yaml.safe_load((ROOT / "deploy" / "examples" / "bgpadv.yaml").read_text())

OPTION_SETS = {
    "default": {},
    "per-node": {"mode": "per-node"},
    "openshift": {"openshift": {"enabled": True}},
    "monitoring": {"monitoring": {"podMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}},
    "monitoring-and-dashboard": {
        "monitoring": {
            "podMonitor": {"enabled": True},
            "prometheusRule": {"enabled": True},
            "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "Network"}},
        }
    },
    "per-node-openshift-monitoring": {
        "mode": "per-node",
        "openshift": {"enabled": True},
        "monitoring": {"podMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
    },
    "per-node-openshift-bfd-import": {
        "mode": "per-node",
        "openshift": {"enabled": True},
        "config": {
            "localASN": 64513,
            "peers": [{"address": "10.0.0.1", "asn": 64512, "bfd": {"enabled": True}}],
            "importRoutes": {"enabled": True, "networks": [{"name": "blue"}]},
        },
    },
    "per-node-openshift-unnumbered-bfd": {
        "mode": "per-node",
        "openshift": {"enabled": True},
        "config": {"localASN": 64513, "peers": [{"interface": "eth1", "asn": 64512, "bfd": {"enabled": True}}]},
    },
    "own-namespace-and-overrides": {
        "namespace": {"create": False, "name": ""},
        "image": {"repository": "registry.example.com/net/bgpadv", "tag": "0.1.0-1", "pullPolicy": "Always"},
        "config": EXAMPLE_CONFIG,
        "rollOnConfigChange": False,
        "md5Secret": "tor-passwords",
        "resources": {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
        "nodeSelector": {"node-role.kubernetes.io/worker": ""},
        "deployment": {
            "replicas": 3,
            "priorityClassName": "network-critical",
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "network", "effect": "NoSchedule"}],
            "spreadTopologyKey": "example.org/rack",
        },
    },
}


@pytest.fixture(scope="session")
def helm() -> str:
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-helm.sh")], capture_output=True, text=True, timeout=3600
    )
    assert built.returncode == 0, built.stderr
    path = built.stdout.strip().splitlines()[-1]
    assert os.access(path, os.X_OK), path
    return path


@cache
def _template(helm: str, values_json: str, release: str, namespace: str) -> tuple[dict, ...]:
    values = Path(f"/tmp/bgpadv-helm-values-{os.getpid()}-{abs(hash(values_json))}.yaml")
    values.write_text(yaml.safe_dump(json.loads(values_json)))
    try:
        result = subprocess.run(
            [helm, "template", release, str(CHART), "--namespace", namespace, "--values", str(values)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        values.unlink()
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def template(helm: str, values: dict, release: str = "bgpadv", namespace: str = "default") -> tuple[dict, ...]:
    return _template(helm, json.dumps(values, sort_keys=True), release, namespace)


def one(docs: tuple[dict, ...], kind: str) -> dict:
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind}"
    return found[0]


def workload(docs: tuple[dict, ...]) -> dict:
    return next(d for d in docs if d["kind"] in ("Deployment", "DaemonSet"))


# -- lint, schemas ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", sorted(OPTION_SETS))
def test_helm_lint_passes_strict(helm: str, options: str, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(OPTION_SETS[options]))
    result = subprocess.run(
        [helm, "lint", "--strict", str(CHART), "--values", str(values)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("options", sorted(OPTION_SETS))
def test_every_rendered_object_is_valid_for_kubernetes(helm: str, options: str, version: str) -> None:
    for doc in template(helm, OPTION_SETS[options]):
        if doc["kind"] in CUSTOM_RESOURCES:
            continue
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_chart_is_the_packages_version_and_ships_the_kustomize_rules_verbatim() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (VERSION, VERSION)
    kustomize_rules = ROOT / "deploy" / "components" / "monitoring" / "prometheus-rules.yaml"
    assert (CHART / "files" / "prometheus-rules.yaml").read_bytes() == kustomize_rules.read_bytes()
    dashboard = ROOT / "deploy" / "grafana-dashboard.json"
    assert (CHART / "files" / "grafana-dashboard.json").read_bytes() == dashboard.read_bytes()


def dashboards(docs: tuple[dict, ...]) -> list[dict]:
    return [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")]


@pytest.mark.parametrize("options", ["default", "monitoring", "per-node-openshift-monitoring"])
def test_no_dashboard_unless_asked_for(helm: str, options: str) -> None:
    assert dashboards(template(helm, OPTION_SETS[options])) == []


def test_the_dashboard_is_a_configmap_grafanas_sidecar_loads(helm: str) -> None:
    (cm,) = dashboards(template(helm, OPTION_SETS["monitoring-and-dashboard"], release="fabric-a"))
    assert cm["metadata"]["name"] == "fabric-a-bgpadv-dashboard"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["labels"]["app.kubernetes.io/component"] == "monitoring"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "Network"}
    assert list(cm["data"]) == ["bgpadv.json"]
    assert json.loads(cm["data"]["bgpadv.json"]) == json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())


def test_the_dashboard_goes_where_the_sidecar_searches_with_the_label_it_wants(helm: str) -> None:
    values = {
        "monitoring": {
            "grafanaDashboard": {
                "enabled": True,
                "namespace": "grafana",
                "labels": {"grafana_dashboard": None, "dashboards": "network"},
            }
        }
    }
    (cm,) = dashboards(template(helm, values))
    assert cm["metadata"]["namespace"] == "grafana"
    assert cm["metadata"]["labels"]["dashboards"] == "network"
    assert "grafana_dashboard" not in cm["metadata"]["labels"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({"mode": "active-standby"}, "mode", id="an-unknown-mode"),
        pytest.param({"image": {"repository": "r/bgpadv", "pullPolicy": "Sometimes"}}, "pullPolicy", id="pull-policy"),
        pytest.param({"deployment": {"replica": 2}}, "replica", id="a-misspelt-key"),
        pytest.param(
            {"config": {"localASN": 64513, "peers": [{"adress": "10.0.0.1", "asn": 64512}]}},
            "adress",
            id="a-misspelt-configuration-key",
        ),
        pytest.param(
            {"config": {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": "64512"}]}},
            "/config/peers/0/asn",
            id="a-configuration-value-of-the-wrong-type",
        ),
        pytest.param({"config": {"nextHop": "router"}}, "/config/nextHop", id="a-configuration-value-not-allowed"),
    ],
)
def test_values_outside_the_schema_are_refused(helm: str, tmp_path: Path, values: dict, message: str) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    result = subprocess.run(
        [helm, "template", "bgpadv", str(CHART), "--values", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_the_values_schema_embeds_the_configurations_schema_as_check_config_prints_it() -> None:
    """values.schema.json's `config` is `bgpadv check-config --schema` (its definitions at the root, where its
    `$ref`s point): scripts/helm-values-schema.py writes it, and the checked-in file is what it writes."""
    import runpy

    script = runpy.run_path(str(ROOT / "scripts" / "helm-values-schema.py"))
    checked_in = json.loads((CHART / "values.schema.json").read_text())
    assert (CHART / "values.schema.json").read_text() == script["text"](script["generated"](checked_in))
    schema = checkconfig.json_schema()
    assert checked_in["$defs"] == schema["$defs"]
    assert checked_in["properties"]["config"]["properties"] == schema["properties"]


# -- the same objects as kustomize -----------------------------------------------------------------------------------

MANAGED_BY = {"kustomize": "kustomize", "helm": "Helm"}


def _label_sets(doc: dict) -> list[dict]:
    sets = [doc["metadata"].setdefault("labels", {})]
    if "template" in doc.get("spec", {}):
        sets.append(doc["spec"]["template"]["metadata"]["labels"])
    return sets


def _selectors(doc: dict) -> list[dict]:
    """Every label selector in the object (matchLabels, a Service's selector)."""
    spec = doc.get("spec", {})
    found = []
    if doc["kind"] == "Service":
        found.append(spec["selector"])
    elif "selector" in spec:
        found.append(spec["selector"]["matchLabels"])
    pod = spec.get("template", {}).get("spec", {})
    for term in (
        pod.get("affinity", {}).get("podAntiAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", [])
    ):
        found.append(term["labelSelector"]["matchLabels"])
    found.extend(c["labelSelector"]["matchLabels"] for c in pod.get("topologySpreadConstraints", []))
    return found


def substance(docs: tuple[dict, ...], tool: str) -> dict[tuple[str, str], dict]:
    """Each object by (kind, name) without what belongs to the tool that rendered it (see the module docstring)."""
    out = {}
    for original in docs:
        doc = copy.deepcopy(original)
        for labels in _label_sets(doc):
            assert labels.pop("app.kubernetes.io/managed-by") == MANAGED_BY[tool], doc["kind"]
            assert labels.pop("helm.sh/chart", f"bgpadv-{VERSION}") == f"bgpadv-{VERSION}"
        if tool == "helm":
            for selector in _selectors(doc):
                assert selector == SELECTOR, doc["kind"]  # the release too: two releases never share pods
                del selector["app.kubernetes.io/instance"]
        if doc["kind"] == "ConfigMap":
            doc["metadata"]["name"] = "bgpadv"  # kustomize's bgpadv-<hash>
            doc["data"] = {key: yaml.safe_load(value) for key, value in doc["data"].items()}
        if "template" in doc.get("spec", {}):
            doc["spec"]["template"]["metadata"].pop("annotations", None)  # the chart's checksum/config
            for volume in doc["spec"]["template"]["spec"]["volumes"]:
                if "configMap" in volume:
                    volume["configMap"]["name"] = "bgpadv"
        out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


@pytest.mark.parametrize(
    ("options", "overlay"),
    [
        pytest.param("default", "default", id="default"),
        pytest.param("per-node", "per-node", id="per-node"),
        pytest.param("openshift", "openshift", id="openshift"),
        pytest.param("monitoring", "monitoring", id="monitoring"),
    ],
)
def test_the_chart_renders_the_kustomize_overlays_objects_in_substance(helm: str, options: str, overlay: str) -> None:
    chart = substance(template(helm, OPTION_SETS[options]), "helm")
    # the CRD is in the chart's crds/ (installed by helm install, not templated): the same file, compared below
    kustomized = substance(tuple(d for d in render(overlay) if d["kind"] != "CustomResourceDefinition"), "kustomize")
    assert sorted(chart) == sorted(kustomized)
    for key, doc in kustomized.items():
        assert chart[key] == doc, key


# -- configuration, values, names ------------------------------------------------------------------------------------


def test_the_default_configuration_is_the_placeholder_check_config_refuses(helm: str, tmp_path: Path, capsys) -> None:
    path = tmp_path / "bgpadv.yaml"
    path.write_text(one(template(helm, {}), "ConfigMap")["data"]["bgpadv.yaml"])
    assert checkconfig.main(str(path)) == 2
    assert "peers[0].address: is the shipped placeholder 'REPLACE-WITH-YOUR-TOR-ADDRESS'" in (capsys.readouterr().err)


def test_values_override_image_configuration_secret_placement_and_resources(
    helm: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    docs = template(helm, OPTION_SETS["own-namespace-and-overrides"], namespace="network-system")
    assert "Namespace" not in {d["kind"] for d in docs}  # an existing namespace: the release's
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] not in ("ClusterRole", "ClusterRoleBinding")} == {
        "network-system"
    }
    deployment = workload(docs)
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]
    assert "annotations" not in pod["metadata"]  # rollOnConfigChange: false, the ConfigMap is reloaded live
    (container,) = pod["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"]) == ("registry.example.com/net/bgpadv:0.1.0-1", "Always")
    assert container["resources"] == {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"node-role.kubernetes.io/worker": ""}
    assert spec["priorityClassName"] == "network-critical"
    assert spec["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "network", "effect": "NoSchedule"}
    ]
    assert spec["topologySpreadConstraints"][0]["topologyKey"] == "example.org/rack"
    assert {"name": "secrets", "secret": {"secretName": "tor-passwords", "optional": True, "defaultMode": 0o440}} in (
        spec["volumes"]
    )
    path = tmp_path / "bgpadv.yaml"
    path.write_text(one(docs, "ConfigMap")["data"]["bgpadv.yaml"])
    assert yaml.safe_load(path.read_text()) == EXAMPLE_CONFIG
    monkeypatch.setenv("BGPADV_NODE_IP", "10.0.0.11")
    assert checkconfig.main(str(path)) == 0, capsys.readouterr().err


def test_a_configuration_change_rolls_the_pods_by_default(helm: str) -> None:
    def checksum(values: dict) -> str:
        return workload(template(helm, values))["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum({}) != checksum({"config": EXAMPLE_CONFIG})
    assert checksum({"config": EXAMPLE_CONFIG}) == checksum({"config": EXAMPLE_CONFIG, "md5Secret": "other"})


def test_the_chart_ships_the_same_session_state_crd_as_kustomize() -> None:
    assert (ROOT / "deploy/helm/bgpadv/crds/bgpsessionstates.yaml").read_text() == (
        ROOT / "deploy/base/crd-bgpsessionstates.yaml"
    ).read_text()


def test_names_follow_the_release_and_every_reference_matches(helm: str) -> None:
    docs = template(helm, OPTION_SETS["per-node-openshift-monitoring"], release="fabric-a")
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("DaemonSet", "fabric-a-bgpadv") in names and ("Service", "fabric-a-bgpadv-metrics") in names
    assert ("Role", "fabric-a-bgpadv-scc") in names and (
        "SecurityContextConstraints",
        "fabric-a-bgpadv-speaker",
    ) in names
    scc_role = next(d for d in docs if d["metadata"]["name"] == "fabric-a-bgpadv-scc" and d["kind"] == "Role")
    assert scc_role["rules"][0]["resourceNames"] == ["fabric-a-bgpadv-speaker"]
    subject = {"kind": "ServiceAccount", "name": "fabric-a-bgpadv", "namespace": "bgpadv"}
    assert one(docs, "ClusterRoleBinding")["subjects"] == [subject]
    assert {tuple(map(str, d["subjects"][0].values())) for d in docs if d["kind"] == "RoleBinding"} == {
        tuple(subject.values())
    }
    assert ("RoleBinding", "fabric-a-bgpadv-session-state") in names
    pod = workload(docs)["spec"]["template"]
    assert pod["spec"]["serviceAccountName"] == "fabric-a-bgpadv"
    assert pod["spec"]["volumes"][0]["configMap"]["name"] == one(docs, "ConfigMap")["metadata"]["name"]
    selector = {"app.kubernetes.io/name": "bgpadv", "app.kubernetes.io/instance": "fabric-a"}
    assert workload(docs)["spec"]["selector"]["matchLabels"] == selector
    assert one(docs, "PodMonitor")["spec"]["selector"]["matchLabels"] == selector
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert one(docs, "PodMonitor")["spec"]["jobLabel"] == "app.kubernetes.io/name"  # job "bgpadv", as the alerts expect


def test_per_node_tolerates_every_taint_at_node_critical_priority_with_no_disruption_budget(helm: str) -> None:
    docs = template(helm, OPTION_SETS["per-node"])
    assert "PodDisruptionBudget" not in {d["kind"] for d in docs}
    spec = one(docs, "DaemonSet")["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["priorityClassName"] == "system-node-critical"
    env = spec["containers"][0]["env"]
    assert {"name": "BGPADV_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in env


def test_the_prometheus_rule_carries_the_selector_labels_from_the_values(helm: str) -> None:
    """`role: alert-rules` by default; Helm merges maps, so a label is removed by setting it to null."""
    labels = {"release": "kube-prometheus-stack", "role": None}
    values = {"monitoring": {"prometheusRule": {"enabled": True, "labels": labels}}}
    rule = one(template(helm, values), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert "role" not in rule["metadata"]["labels"]
    default = one(template(helm, OPTION_SETS["monitoring"]), "PrometheusRule")
    assert default["metadata"]["labels"]["role"] == "alert-rules"


def test_the_readme_values_install_the_readme_configuration(helm: str, tmp_path: Path, monkeypatch, capsys) -> None:
    values = yaml.safe_load(readme_block("# my-values.yaml"))
    docs = template(helm, values)
    for doc in docs:
        if doc["kind"] not in CUSTOM_RESOURCES:
            kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[-1], strict=True)
    assert {"PodMonitor", "PrometheusRule"} <= {d["kind"] for d in docs}
    assert len(dashboards(docs)) == 1
    assert workload(docs)["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/bgpadv:0.1.0"
    path = tmp_path / "bgpadv.yaml"
    (config_map,) = [d for d in docs if d["kind"] == "ConfigMap" and d not in dashboards(docs)]
    path.write_text(config_map["data"]["bgpadv.yaml"])
    assert yaml.safe_load(path.read_text()) == EXAMPLE_CONFIG  # the kustomize path's configuration, the same
    monkeypatch.setenv("BGPADV_NODE_IP", "10.0.0.11")
    assert checkconfig.main(str(path)) == 0, capsys.readouterr().err


# -- BFD: the capabilities bfdd needs, only when asked for -----------------------------------------------------------

BFD_PEER = {"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11", "bfd": {"enabled": True}}
NO_BFD_PEER = {"address": "10.0.1.1", "asn": 64512, "bfd": {"enabled": False}}


def security_context(docs: tuple[dict, ...]) -> dict:
    (container,) = workload(docs)["spec"]["template"]["spec"]["containers"]
    return container["securityContext"]


@pytest.mark.parametrize("mode", ["cluster", "per-node"])
@pytest.mark.parametrize(
    ("values", "bfd"),
    [
        pytest.param({}, False, id="default"),
        pytest.param({"config": {"localASN": 64513, "peers": [NO_BFD_PEER]}}, False, id="peer-bfd-off"),
        pytest.param({"config": {"localASN": 64513, "peers": [NO_BFD_PEER, BFD_PEER]}}, True, id="a-peer-enables-bfd"),
        pytest.param({"bfd": {"enabled": True}}, True, id="values-bfd-enabled"),
    ],
)
def test_bfdd_gets_its_three_capabilities_only_when_bfd_is_enabled(
    helm: str, mode: str, values: dict, bfd: bool
) -> None:
    from .test_kustomize import BFD_CAPABLE, HARDENED

    docs = template(helm, {**values, "mode": mode})
    assert security_context(docs) == (BFD_CAPABLE if bfd else HARDENED)


def test_the_chart_with_bfd_renders_what_kustomize_with_the_bfd_component_does(helm: str, tmp_path: Path) -> None:
    from .test_kustomize import with_components

    chart = substance(template(helm, {"bfd": {"enabled": True}}), "helm")
    kustomized = substance(
        tuple(d for d in with_components(tmp_path, "bfd") if d["kind"] != "CustomResourceDefinition"), "kustomize"
    )
    assert chart == kustomized


def test_bfd_enabled_must_be_a_boolean(helm: str, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"bfd": {"enabled": "yes"}}))
    result = subprocess.run(
        [helm, "template", "bgpadv", str(CHART), "--values", str(values)], capture_output=True, text=True
    )
    assert result.returncode != 0 and "bfd" in result.stderr


def runbooks(docs: tuple[dict, ...]) -> dict[str, str]:
    rules = one(docs, "PrometheusRule")["spec"]["groups"]
    return {r["alert"]: r["annotations"]["runbook_url"] for g in rules for r in g["rules"] if "alert" in r}


def test_the_runbooks_base_url_is_a_value(helm: str) -> None:
    """`monitoring.runbookBaseURL` moves every alert's runbook_url to another copy of the guide, anchor kept; by
    default the rules are the shipped file's."""
    monitoring = OPTION_SETS["monitoring"]["monitoring"]
    shipped = runbooks(template(helm, OPTION_SETS["monitoring"]))
    assert shipped and all(url.startswith("https://bgpadv.example.org/troubleshooting/#") for url in shipped.values())
    base = "https://wiki.example.com/net/bgpadv-runbooks/"
    moved = runbooks(template(helm, {"monitoring": {**monitoring, "runbookBaseURL": base}}))
    assert moved == {alert: base + "#" + alert.lower() for alert in shipped}


# -- egress import, unnumbered peers, BFD on them: NET_ADMIN, NET_RAW only when needed; the SCC admits exactly the pod

IMPORTING = {"enabled": True, "networks": [{"name": "blue"}]}
UNNUMBERED_PEER = {"interface": "eth1", "asn": 64512}
UNNUMBERED_PEER_BFD_OFF = {"interface": "eth1", "asn": 64512, "bfd": {"enabled": False}}
UNNUMBERED_BFD_PEER = {"interface": "eth2", "asn": 64512, "bfd": {"enabled": True}}
BFD_ON_AN_UNNUMBERED_PEER = ["NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN", "NET_ADMIN"]  # bfdd's three, the host route


@pytest.mark.parametrize("mode", ["cluster", "per-node"])
@pytest.mark.parametrize(
    ("values", "wanted"),
    [
        pytest.param({}, [], id="default"),
        pytest.param({"config": {"importRoutes": {"enabled": False}}}, [], id="import-off"),
        pytest.param({"config": {"importRoutes": IMPORTING}}, ["NET_ADMIN"], id="config-imports"),
        pytest.param({"import": {"enabled": True}}, ["NET_ADMIN"], id="values-import-enabled"),
        pytest.param(
            {"bfd": {"enabled": True}, "config": {"importRoutes": IMPORTING}},
            ["NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN", "NET_ADMIN"],
            id="bfd-and-import",
        ),
        pytest.param({"config": {"peers": [UNNUMBERED_PEER]}}, ["NET_RAW"], id="config-interface-peer"),
        pytest.param({"unnumbered": {"enabled": True}}, ["NET_RAW"], id="values-unnumbered-enabled"),
        pytest.param(
            {"import": {"enabled": True}, "config": {"peers": [UNNUMBERED_PEER]}},
            ["NET_ADMIN", "NET_RAW"],
            id="import-and-unnumbered",
        ),
        pytest.param({"config": {"peers": [UNNUMBERED_PEER_BFD_OFF]}}, ["NET_RAW"], id="config-interface-peer-bfd-off"),
        pytest.param(  # BFD on a numbered peer beside an interface peer without it: no host route, no NET_ADMIN
            {"config": {"peers": [BFD_PEER, UNNUMBERED_PEER]}},
            ["NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN"],
            id="config-bfd-on-the-numbered-peer-only",
        ),
        pytest.param(  # the same through the values: bfd.enabled, unnumbered.enabled false
            {"bfd": {"enabled": True}, "unnumbered": {"enabled": False}, "config": {"peers": [UNNUMBERED_PEER]}},
            ["NET_BIND_SERVICE", "NET_RAW", "SYS_ADMIN"],
            id="values-bfd-enabled-unnumbered-off",
        ),
        pytest.param(  # bfdd's NET_RAW and the controller's are one entry
            {"config": {"peers": [BFD_PEER, UNNUMBERED_BFD_PEER]}},
            BFD_ON_AN_UNNUMBERED_PEER,
            id="config-interface-peer-with-bfd",
        ),
        pytest.param(
            {"bfd": {"enabled": True}, "unnumbered": {"enabled": True}},
            BFD_ON_AN_UNNUMBERED_PEER,
            id="values-bfd-and-unnumbered-enabled",
        ),
        pytest.param(  # the import's NET_ADMIN and the host route's are one entry
            {"import": {"enabled": True}, "config": {"peers": [UNNUMBERED_BFD_PEER]}},
            BFD_ON_AN_UNNUMBERED_PEER,
            id="import-and-interface-peer-with-bfd",
        ),
    ],
)
@pytest.mark.parametrize("openshift", [False, True], ids=["kubernetes", "openshift"])
def test_the_container_and_the_scc_grant_exactly_what_bfd_the_import_and_unnumbered_peers_need(
    helm: str, mode: str, values: dict, wanted: list, openshift: bool
) -> None:
    from .test_kustomize import HARDENED, check_scc

    docs = template(helm, {**values, "mode": mode, "openshift": {"enabled": openshift}})
    assert security_context(docs) == {
        **HARDENED,
        "allowPrivilegeEscalation": bool(wanted),
        "capabilities": {"drop": ["ALL"], "add": wanted},
    }
    sccs = [d for d in docs if d["kind"] == "SecurityContextConstraints"]
    assert len(sccs) == openshift
    for scc in sccs:
        check_scc(scc, workload(docs))


@pytest.mark.parametrize(
    ("components", "values"),
    [
        pytest.param(("per-node", "import"), {"mode": "per-node", "import": {"enabled": True}}, id="per-node-import"),
        pytest.param(
            ("per-node", "openshift", "bfd", "import"),
            {"mode": "per-node", "openshift": {"enabled": True}, "bfd": {"enabled": True}, "import": {"enabled": True}},
            id="per-node-openshift-bfd-import",
        ),
        pytest.param(
            ("per-node", "openshift", "import", "unnumbered"),
            {
                "mode": "per-node",
                "openshift": {"enabled": True},
                "import": {"enabled": True},
                "unnumbered": {"enabled": True},
            },
            id="per-node-openshift-import-unnumbered",
        ),
        pytest.param(
            ("per-node", "openshift", "bfd", "unnumbered", "unnumbered-bfd"),
            {
                "mode": "per-node",
                "openshift": {"enabled": True},
                "bfd": {"enabled": True},
                "unnumbered": {"enabled": True},
            },
            id="per-node-openshift-bfd-unnumbered-unnumbered-bfd",
        ),
        pytest.param(
            ("per-node", "openshift", "bfd", "import", "unnumbered", "unnumbered-bfd"),
            {
                "mode": "per-node",
                "openshift": {"enabled": True},
                "bfd": {"enabled": True},
                "import": {"enabled": True},
                "unnumbered": {"enabled": True},
            },
            id="per-node-openshift-everything",
        ),
    ],
)
def test_the_chart_renders_what_kustomize_does_with_the_same_components(
    helm: str, tmp_path: Path, components: tuple, values: dict
) -> None:
    """Where two components append the same capability (NET_RAW: bfd and unnumbered; NET_ADMIN: import and
    unnumbered-bfd) kustomize lists it twice and the chart once; the kernel and the SCC take both as one."""
    from .test_kustomize import with_components

    chart = substance(template(helm, values), "helm")
    kustomized = substance(
        tuple(
            each_capability_once(d)
            for d in with_components(tmp_path, *components)
            if d["kind"] != "CustomResourceDefinition"
        ),
        "kustomize",
    )
    assert chart == kustomized


def each_capability_once(doc: dict) -> dict:
    """`doc` with its capability lists (a pod's containers' `add`, an SCC's `allowedCapabilities`) deduplicated, in
    first-seen order."""
    doc = copy.deepcopy(doc)
    if doc["kind"] == "SecurityContextConstraints":
        doc["allowedCapabilities"] = list(dict.fromkeys(doc["allowedCapabilities"]))
    for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        c["securityContext"]["capabilities"]["add"] = list(dict.fromkeys(c["securityContext"]["capabilities"]["add"]))
    return doc
