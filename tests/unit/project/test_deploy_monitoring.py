"""The monitoring files in deploy/: the PrometheusRule (deploy/components/monitoring) and the Grafana dashboard.

Scope: the rules pass `promtool check rules`, each alert fires (and stays quiet) as intended under `promtool test
rules` with synthetic series, each has its severity (critical pages, warning is the team's queue, info a ticket) and a
runbook_url into the user guide's Troubleshooting page (docs/troubleshooting.md); a tenant's refused address is a
ticket, a platform's refusal the team's; every dashboard query is valid PromQL, the dashboard has a convergence
heatmap and BFD, import and per-node rows, and every bgpadv metric the rules and the dashboard name exists in
`bgpadv.observe.metrics`. promtool comes with Debian's `prometheus`
package, which the project's install script puts on every machine: its absence is a failure, not a skip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import generate_latest

from bgpadv.observe.metrics import Metrics
from bgpadv.planner import checks

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
TROUBLESHOOTING = (ROOT / "docs" / "troubleshooting.md").read_text()
# the docs site's Troubleshooting page (mkdocs.yml site_url + the page), the default of the runbooks' base URL
RUNBOOK = "https://bgpadv.example.org/troubleshooting/#"
RULES = DEPLOY / "components" / "monitoring" / "prometheus-rules.yaml"
DASHBOARD = DEPLOY / "grafana-dashboard.json"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

T = 'job="bgpadv", instance="10.0.0.9:9179"'


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert Path(PROMTOOL).exists(), "promtool missing: run scripts/install-system-deps.sh (Debian package prometheus)"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def rule_file(tmp_path: Path) -> Path:
    """The PrometheusRule's spec, as the plain rule file promtool reads."""
    doc = yaml.safe_load(RULES.read_text())
    assert doc["apiVersion"] == "monitoring.coreos.com/v1" and doc["kind"] == "PrometheusRule"
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(doc["spec"]))
    return path


def test_rules_pass_promtool_check(rule_file: Path) -> None:
    result = promtool("check", "rules", str(rule_file), cwd=rule_file.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 20 rules found" in result.stdout


def rules() -> dict[str, dict]:
    spec = yaml.safe_load(RULES.read_text())["spec"]
    return {r["alert"]: r for g in spec["groups"] for r in g["rules"] if "alert" in r}


SEVERITIES = {
    # the fabric is, or is about to be, wrong about where VMs are: page
    "BgpadvDown": "critical",
    "BgpadvAbsent": "critical",
    "BgpadvNodeWithoutSpeaker": "critical",
    "BgpadvAllPeersDown": "critical",
    "BgpadvNoRecentSync": "critical",
    # degraded, or about to be: the team's queue, the same day
    "BgpadvPeerDown": "warning",
    "BgpadvExabgpCommandErrors": "warning",
    "BgpadvConvergenceUnmatched": "warning",
    "BgpadvConvergenceSlow": "warning",
    "BgpadvRoutesHeld": "warning",
    "BgpadvResourceHeld": "warning",
    "BgpadvWatchRestarting": "warning",
    "BgpadvConfigStale": "warning",
    "BgpadvRoutesRefusedByPlatform": "warning",
    "BgpadvImportOverLimit": "warning",
    "BgpadvNetlinkErrors": "warning",
    "BgpadvBfddCannotStart": "warning",
    # a tenant's object refused: the fabric is right, the tenant's VM is not announced: a ticket
    "BgpadvRoutesRejected": "info",
}


def test_the_alerts_and_their_severities() -> None:
    assert {name: r["labels"]["severity"] for name, r in rules().items()} == SEVERITIES


def page_anchors() -> set[str]:
    """MkDocs' anchors (its default slugs) of the `##` headings of docs/troubleshooting.md."""
    headings = re.findall(r"^## (.+)$", TROUBLESHOOTING, re.M)
    return {re.sub(r"[^a-z0-9 _-]", "", h.lower()).strip().replace(" ", "-") for h in headings}


def test_every_alert_has_its_runbook_on_the_troubleshooting_page() -> None:
    anchors = page_anchors()
    for name, rule in rules().items():
        assert rule["annotations"]["runbook_url"] == RUNBOOK + name.lower(), name
        assert name.lower() in anchors, f"docs/troubleshooting.md has no '## {name}'"


def test_the_runbooks_base_is_the_docs_sites_troubleshooting_page() -> None:
    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["site_url"]
    assert site.rstrip("/") + "/troubleshooting/#" == RUNBOOK


TENANT_REASONS = {
    # what a tenant's VM, claim or guest agent causes (the tenant can fix it; the fabric is right without it)
    checks.OUTSIDE_NETWORK_SUBNETS,
    checks.DEFAULT_GATEWAY_ADDRESS,
    checks.INFRASTRUCTURE_ADDRESS,
    checks.NETWORK_OR_BROADCAST_ADDRESS,
    checks.LINK_LOCAL,
    checks.LOOPBACK_OR_MULTICAST,
    checks.UNSPECIFIED_ADDRESS,
    checks.MALFORMED_ADDRESS,
    checks.DUPLICATE_ADDRESS,
    checks.NAMESPACED_UDN_NOT_ADVERTISABLE,
    checks.UNKNOWN_NETWORK,
    checks.NETWORK_NOT_SELECTED,
    checks.PERSISTENT_IPS_NOT_SUPPORTED,
    checks.OUTSIDE_ALLOWED_PREFIXES,
    checks.TOO_MANY_ADDRESSES,
}


def reason_regex(alert_name: str) -> tuple[str, set[str]]:
    (op, alternatives) = re.findall(r'reason(=~|!~)"([^"]+)"', rules()[alert_name]["expr"])[0]
    return op, set(alternatives.split("|"))


def test_tenant_reasons_are_a_ticket_and_every_other_reason_is_the_platform_teams() -> None:
    assert set(checks.ALL_REASONS) >= TENANT_REASONS
    assert reason_regex("BgpadvRoutesRejected") == ("=~", TENANT_REASONS)
    assert reason_regex("BgpadvRoutesRefusedByPlatform") == ("!~", TENANT_REASONS)  # a new code is seen, not ticketed


def test_the_header_calls_the_file_what_it_is() -> None:
    """promtool reads rule files; this is a PrometheusRule custom resource whose `spec` is one."""
    header = " ".join(line.lstrip("# ") for line in RULES.read_text().split("apiVersion:")[0].splitlines())
    assert "PrometheusRule custom resource" in header and "not a Prometheus rule file" in header


def alert(name: str, at: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict:
    """An alert_rule_test entry: no labels means "must not fire" at that time. The runbook_url is the alert's own."""
    runbook = {"runbook_url": RUNBOOK + name.lower()}
    exp = [{"exp_labels": labels, "exp_annotations": {**(annotations or {}), **runbook}}] if labels is not None else []
    return {"eval_time": at, "alertname": name, "exp_alerts": exp}


def rendered(name: str, value: float, labels: dict[str, str], summary: str) -> dict[str, str]:
    """The alert's annotations as Prometheus renders them for these labels and value (the two template forms the
    rules use: `{{ $labels.x }}`, `{{ $value | printf "%.0f" }}`); the summary is given, and checked, in full."""

    def fill(text: str) -> str:
        text = re.sub(r'\{\{ \$value \| printf "%\.0f" \}\}', f"{value:.0f}", text)
        return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)

    out = {k: fill(v) for k, v in rules()[name]["annotations"].items() if k != "runbook_url"}
    assert "{{" not in "".join(out.values()), out
    assert out["summary"] == summary
    return out


BASE = {"job": "bgpadv", "instance": "10.0.0.9:9179"}

# Histogram buckets of the `sent` stage growing by 60 changes a minute; `slow` puts them all above 1 s.
_LE = ("0.005", "0.05", "1.0", "2.5", "+Inf")


def _sent_buckets(slow: bool) -> list[dict[str, str]]:
    out = []
    for le in _LE:
        per_min = 60 if le in ("2.5", "+Inf") or not slow else 0  # slow: every change between 1 s and 2.5 s
        series = f'bgpadv_convergence_seconds_bucket{{{T}, stage="sent", op="announce", kind="host", le="{le}"}}'
        out.append({"series": series, "values": f"0+{per_min}x40"})
    return out


def _vm_on(node: str, vm: str, phase: str) -> list[dict[str, str]]:
    """kube-state-metrics' series of a VM's virt-launcher pod on `node` in `phase`."""
    pod = f'namespace="imported-vms", pod="virt-launcher-{vm}-x7k2p"'
    ksm = 'job="kube-state-metrics", instance="10.128.2.7:8443"'
    info = f'{ksm}, {pod}, node="{node}", created_by_kind="VirtualMachineInstance", created_by_name="{vm}"'
    return [
        {"series": f"kube_pod_info{{{info}}}", "values": "1x30"},
        {"series": f'kube_pod_status_phase{{{ksm}, {pod}, phase="{phase}"}}', "values": "1x30"},
        {"series": f'kube_pod_status_phase{{{ksm}, {pod}, phase="Running"}}', "values": "0x30"}
        if phase != "Running"
        else {"series": f'kube_pod_status_phase{{{ksm}, {pod}, phase="Pending"}}', "values": "0x30"},
    ]


def _up(node: str, mode: str) -> str:
    """bgpadv's `up` on `node`, with the target labels the PodMonitor adds (node, mode)."""
    address = {"worker-1": "10.0.0.11", "worker-2": "10.0.0.12", "worker-3": "10.0.0.13"}[node]
    return f'up{{job="bgpadv", instance="{address}:9179", node="{node}", mode="{mode}"}}'


UNIT_TESTS = {
    "rule_files": ["rules.yaml"],
    "evaluation_interval": "1m",
    "tests": [
        {
            "name": "a target failing its scrapes for 5 minutes alerts; a one-minute miss does not",
            "interval": "1m",
            "input_series": [
                {"series": f"up{{{T}}}", "values": "1 1 0 0 0 0 0 0 0 0"},
                {"series": 'up{job="bgpadv", instance="10.0.0.8:9179"}', "values": "1 0 1 1 1 1 1 1 1 1"},
            ],
            "alert_rule_test": [
                alert("BgpadvDown", "4m"),
                alert(
                    "BgpadvDown",
                    "8m",
                    {**BASE, "severity": "critical"},
                    {
                        "summary": "bgpadv on 10.0.0.9:9179 cannot be scraped",
                        "description": "Prometheus has failed to scrape bgpadv's metrics on 10.0.0.9:9179 for 5 "
                        "minutes: the process is down, hung or unreachable, and nothing it announces is being kept "
                        "current. See the pods' status and logs (`kubectl -n bgpadv get pods`, `kubectl -n bgpadv "
                        "logs -l app.kubernetes.io/name=bgpadv`).",
                    },
                ),
            ],
        },
        {
            "name": "no bgpadv target at all for 10 minutes alerts",
            "interval": "1m",
            "input_series": [{"series": 'up{job="node"}', "values": "1x20"}],
            "alert_rule_test": [
                alert("BgpadvAbsent", "5m"),
                alert(
                    "BgpadvAbsent",
                    "12m",
                    {"job": "bgpadv", "severity": "critical"},
                    {
                        "summary": "no bgpadv target is being scraped",
                        "description": "Prometheus has had no bgpadv target for 10 minutes: bgpadv is not "
                        "deployed, not scheduled, or its PodMonitor no longer selects it. VM and network routes are "
                        "not being advertised or updated.",
                    },
                ),
            ],
        },
        {
            "name": "a scraped target, even a failing one, is not absent",
            "interval": "1m",
            "input_series": [{"series": f"up{{{T}}}", "values": "0x20"}],
            "alert_rule_test": [alert("BgpadvAbsent", "15m")],
        },
        {
            "name": "a watch failing every 30 s for 10 minutes alerts; normal ends and a burst of errors do not",
            "interval": "1m",
            "input_series": [
                {
                    "series": f'bgpadv_watch_restarts_total{{{T}, resource="pods", reason="error"}}',
                    "values": "0+2x40",
                },
                {
                    "series": f'bgpadv_watch_restarts_total{{{T}, resource="nodes", reason="stream-ended"}}',
                    "values": "0+1x40",
                },
                {
                    "series": f'bgpadv_watch_restarts_total{{{T}, resource="ipamclaims", reason="error"}}',
                    "values": "0 0 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6",
                },
            ],
            "alert_rule_test": [
                alert("BgpadvWatchRestarting", "8m"),
                alert(
                    "BgpadvWatchRestarting",
                    "20m",
                    {**BASE, "resource": "pods", "severity": "warning"},
                    {
                        "summary": "bgpadv keeps restarting its pods watch on 10.0.0.9:9179",
                        "description": "10 failed list/watch restarts of pods in the last 5 minutes, and more than 3 "
                        "in every 5 minutes for 10 minutes: bgpadv may be acting on a stale view of the cluster. "
                        "Check its logs, its RBAC and the Kubernetes API server.",
                    },
                ),
            ],
        },
        {
            "name": "ExaBGP answering error alerts; commands answered done do not",
            "interval": "1m",
            "input_series": [
                {
                    "series": f'bgpadv_exabgp_commands_total{{{T}, result="error"}}',
                    "values": "0 0 0 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2",
                },
                {"series": f'bgpadv_exabgp_commands_total{{{T}, result="done"}}', "values": "0+100x40"},
            ],
            "alert_rule_test": [
                alert("BgpadvExabgpCommandErrors", "2m"),
                alert(
                    "BgpadvExabgpCommandErrors",
                    "5m",
                    {**BASE, "severity": "warning"},
                    {
                        "summary": "ExaBGP refused bgpadv's commands on 10.0.0.9:9179",
                        "description": "ExaBGP answered `error` to 2 command(s) in the last 10 minutes: some "
                        "announcements or withdrawals did not happen. ExaBGP's log, in the pod's output, names the "
                        "command.",
                    },
                ),
                alert("BgpadvExabgpCommandErrors", "20m"),
            ],
        },
        {
            "name": "changes unconfirmed for 15 minutes alert; a single lost echo does not",
            "interval": "1m",
            "input_series": [
                {"series": f'bgpadv_convergence_unmatched_total{{{T}, stage="sent"}}', "values": "0+1x40"},
                {
                    "series": f'bgpadv_convergence_unmatched_total{{{T}, stage="acked"}}',
                    "values": "0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
                },
            ],
            "alert_rule_test": [
                alert("BgpadvConvergenceUnmatched", "10m"),
                alert(
                    "BgpadvConvergenceUnmatched",
                    "25m",
                    {**BASE, "stage": "sent", "severity": "warning"},
                    {
                        "summary": "bgpadv cannot confirm route changes (sent) on 10.0.0.9:9179",
                        "description": "Route changes have gone without ExaBGP's sent confirmation for 15 minutes "
                        "(5 in the last 5): updates may not be reaching the peers. Check the peers' state (`bgpadv "
                        "status`) and ExaBGP's log.",
                    },
                ),
            ],
        },
        {
            "name": "bfdd given up for a minute alerts; a pod whose bfdd runs (or that wants none) does not",
            "interval": "1m",
            "input_series": [
                {"series": f"bgpadv_bfdd_cannot_start{{{T}}}", "values": "0 0 1 1 1 1 1 1"},
                {"series": 'bgpadv_bfdd_cannot_start{job="bgpadv", instance="10.0.0.8:9179"}', "values": "0x8"},
            ],
            "alert_rule_test": [
                alert("BgpadvBfddCannotStart", "2m"),
                alert(
                    "BgpadvBfddCannotStart",
                    "4m",
                    {**BASE, "severity": "warning"},
                    {
                        "summary": "bfdd cannot start on 10.0.0.9:9179: its BFD sessions stay down",
                        "description": "bgpadv's supervisor on 10.0.0.9:9179 gave up starting FRR's bfdd (it lacks "
                        "NET_BIND_SERVICE, NET_RAW and SYS_ADMIN, or cannot run at all) and does not retry: every "
                        "peer with peers[].bfd has no BFD session, so a failed path is found by the BGP hold time "
                        "only. The pod's log names what is missing; deploy the BFD-capable pod (Helm bfd.enabled, "
                        "kustomize deploy/components/bfd).",
                    },
                ),
            ],
        },
        {
            "name": "a peer down for 2 minutes alerts; a flap shorter than that does not",
            "interval": "1m",
            "input_series": [
                {"series": f'bgpadv_peer_up{{{T}, peer="192.0.2.1"}}', "values": "1 1 0 0 0 0 0 0"},
                {"series": f'bgpadv_peer_up{{{T}, peer="192.0.2.2"}}', "values": "1 0 1 1 1 1 1 1"},
            ],
            "alert_rule_test": [
                alert("BgpadvPeerDown", "3m"),
                alert(
                    "BgpadvPeerDown",
                    "5m",
                    {**BASE, "peer": "192.0.2.1", "severity": "warning"},
                    {
                        "summary": "bgpadv has no BGP session with 192.0.2.1",
                        "description": "The session from 10.0.0.9:9179 to the peer 192.0.2.1 has not been established "
                        "for 2 minutes: the VM and network routes bgpadv advertises are not reaching that router. "
                        "See `bgpadv status`, ExaBGP's log and the router's neighbor state.",
                    },
                ),
            ],
        },
        {
            "name": "convergence p99 over 1s for 10 minutes alerts",
            "interval": "1m",
            "input_series": _sent_buckets(slow=True),
            "alert_rule_test": [
                alert("BgpadvConvergenceSlow", "5m"),
                alert(
                    "BgpadvConvergenceSlow",
                    "25m",
                    {**BASE, "severity": "warning"},
                    {
                        "summary": "bgpadv p99 convergence above 1s on 10.0.0.9:9179",
                        "description": "The 99th percentile from a watch event to the route on the wire is 2.485s "
                        "(threshold 1s). VM migrations take that long to be followed by the fabric.",
                    },
                ),
            ],
        },
        {
            "name": "fast convergence does not alert",
            "interval": "1m",
            "input_series": _sent_buckets(slow=False),
            "alert_rule_test": [alert("BgpadvConvergenceSlow", "25m")],
        },
        {
            "name": "new refusals alert by reason; a steady counter does not",
            "interval": "1m",
            "input_series": [
                {
                    "series": f'bgpadv_routes_rejected_total{{{T}, reason="outside-network-subnets"}}',
                    "values": "0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
                },
                {"series": f'bgpadv_routes_rejected_total{{{T}, reason="link-local"}}', "values": "3x40"},
            ],
            "alert_rule_test": [
                alert("BgpadvRoutesRejected", "2m"),
                alert(
                    "BgpadvRoutesRejected",
                    "5m",
                    {**BASE, "reason": "outside-network-subnets", "severity": "info"},
                    {
                        "summary": "bgpadv refused addresses (outside-network-subnets)",
                        "description": "1 new value(s) refused with reason outside-network-subnets in the last 15 "
                        "minutes. `kubectl get events -A --field-selector type=Warning,source=bgpadv` names the "
                        "objects.",
                    },
                ),
                alert("BgpadvRoutesRejected", "24m"),
            ],
        },
        {
            "name": "no sync for 15 minutes alerts once the process has run that long",
            "interval": "1m",
            "input_series": [
                # The last sync happened at t=0 (epoch 0 in promtool's clock), then never again.
                {"series": f"bgpadv_last_sync_timestamp_seconds{{{T}}}", "values": "0x40"},
                {"series": f"process_start_time_seconds{{{T}}}", "values": "0x40"},
            ],
            "alert_rule_test": [
                alert("BgpadvNoRecentSync", "10m"),
                alert(
                    "BgpadvNoRecentSync",
                    "16m",
                    {**BASE, "severity": "critical"},
                    {
                        "summary": "bgpadv has not completed a sync for 15 minutes on 10.0.0.9:9179",
                        "description": "bgpadv last confirmed that ExaBGP holds the desired routes 16m 0s ago: the "
                        "advertised routes may be stale. Check the controller's logs, the Kubernetes API and ExaBGP.",
                    },
                ),
            ],
        },
        {
            "name": "regular syncs keep it quiet",
            "interval": "1m",
            "input_series": [
                {"series": f"bgpadv_last_sync_timestamp_seconds{{{T}}}", "values": "0+60x40"},
                {"series": f"process_start_time_seconds{{{T}}}", "values": "0x40"},
            ],
            "alert_rule_test": [alert("BgpadvNoRecentSync", "30m")],
        },
        {
            "name": "the last session of an instance down for 2 minutes pages; one of two down is only PeerDown",
            "interval": "1m",
            "input_series": [
                {"series": f'bgpadv_peer_up{{{T}, peer="192.0.2.1"}}', "values": "1 1 0 0 0 0 0 0"},
                {"series": f'bgpadv_peer_up{{{T}, peer="192.0.2.2"}}', "values": "1 1 1 1 0 0 0 0"},
            ],
            "alert_rule_test": [
                alert("BgpadvAllPeersDown", "5m"),
                alert(
                    "BgpadvAllPeersDown",
                    "7m",
                    {**BASE, "severity": "critical"},
                    rendered("BgpadvAllPeersDown", 0, BASE, "bgpadv on 10.0.0.9:9179 has no BGP session at all"),
                ),
            ],
        },
        {
            "name": "a node running VMs without a bgpadv instance for 10 minutes pages (per-node mode)",
            "interval": "1m",
            "input_series": [
                *_vm_on("worker-1", "vm-a", "Running"),
                *_vm_on("worker-3", "vm-b", "Running"),
                *_vm_on("worker-3", "vm-c", "Running"),
                *_vm_on("worker-4", "vm-d", "Pending"),  # not running yet: nothing to announce
                {"series": _up("worker-1", "per-node"), "values": "1x30"},
                {"series": _up("worker-3", "per-node"), "values": "1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"},
            ],
            "alert_rule_test": [
                alert("BgpadvNodeWithoutSpeaker", "10m"),
                alert(
                    "BgpadvNodeWithoutSpeaker",
                    "13m",
                    {"node": "worker-3", "severity": "critical"},
                    rendered(
                        "BgpadvNodeWithoutSpeaker",
                        2,
                        {"node": "worker-3"},
                        "2 running VM(s) on worker-3 and no bgpadv there",
                    ),
                ),
            ],
        },
        {
            "name": "central speakers (cluster mode) on two nodes do not make the other nodes' VMs an alert",
            "interval": "1m",
            "input_series": [
                *_vm_on("worker-3", "vm-b", "Running"),
                {"series": _up("worker-1", "cluster"), "values": "1x30"},
                {"series": _up("worker-2", "cluster"), "values": "1x30"},
            ],
            "alert_rule_test": [alert("BgpadvNodeWithoutSpeaker", "20m")],
        },
        {
            "name": "withdrawals held for 15 minutes alert; a hold a LIST confirms within minutes does not",
            "interval": "1m",
            "input_series": [
                {"series": f'bgpadv_routes_held{{{T}, peer="192.0.2.1"}}', "values": "0 0 5 5 5 5 5 5 5 5 5x30"},
                {"series": f'bgpadv_routes_held{{{T}, peer="192.0.2.2"}}', "values": "0 0 5 5 0 0 0 0 0 0 0x30"},
            ],
            "alert_rule_test": [
                alert("BgpadvRoutesHeld", "10m"),
                alert(
                    "BgpadvRoutesHeld",
                    "18m",
                    {**BASE, "peer": "192.0.2.1", "severity": "warning"},
                    rendered(
                        "BgpadvRoutesHeld",
                        5,
                        {**BASE, "peer": "192.0.2.1"},
                        "bgpadv has held 5 withdrawal(s) toward 192.0.2.1 for 15 minutes",
                    ),
                ),
            ],
        },
        {
            "name": "a resource held for 15 minutes alerts; a held resource that comes back does not",
            "interval": "1m",
            "input_series": [
                {"series": f'bgpadv_resource_held{{{T}, resource="virtualmachineinstances"}}', "values": "0 1x30"},
                {"series": f'bgpadv_resource_held{{{T}, resource="ipamclaims"}}', "values": "0 1 1 1 0x30"},
            ],
            "alert_rule_test": [
                alert("BgpadvResourceHeld", "10m"),
                alert(
                    "BgpadvResourceHeld",
                    "17m",
                    {**BASE, "resource": "virtualmachineinstances", "severity": "warning"},
                    rendered(
                        "BgpadvResourceHeld",
                        1,
                        {**BASE, "resource": "virtualmachineinstances"},
                        "bgpadv cannot read virtualmachineinstances and keeps its last view (10.0.0.9:9179)",
                    ),
                ),
            ],
        },
        {
            "name": "a refused configuration still running an older one after 2 minutes alerts; a fix clears it",
            "interval": "1m",
            "input_series": [
                {"series": f"bgpadv_config_stale{{{T}}}", "values": "0 0 1 1 1 1 1 1 0 0 0 0"},
            ],
            "alert_rule_test": [
                alert("BgpadvConfigStale", "3m"),
                alert(
                    "BgpadvConfigStale",
                    "5m",
                    {**BASE, "severity": "warning"},
                    rendered(
                        "BgpadvConfigStale",
                        1,
                        BASE,
                        "bgpadv on 10.0.0.9:9179 refused its configuration and runs an older one",
                    ),
                ),
                alert("BgpadvConfigStale", "10m"),
            ],
        },
        {
            "name": "a platform refusal is the team's (warning); a tenant's address is not",
            "interval": "1m",
            "input_series": [
                {
                    "series": f'bgpadv_routes_rejected_total{{{T}, reason="max-routes-exceeded"}}',
                    "values": "0 0 0 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40 40",
                },
                {
                    "series": f'bgpadv_routes_rejected_total{{{T}, reason="duplicate-address"}}',
                    "values": "0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
                },
            ],
            "alert_rule_test": [
                alert(
                    "BgpadvRoutesRefusedByPlatform",
                    "5m",
                    {**BASE, "reason": "max-routes-exceeded", "severity": "warning"},
                    rendered(
                        "BgpadvRoutesRefusedByPlatform",
                        40,
                        {**BASE, "reason": "max-routes-exceeded"},
                        "bgpadv refused routes for a platform reason (max-routes-exceeded)",
                    ),
                ),
                alert(
                    "BgpadvRoutesRejected",
                    "5m",
                    {**BASE, "reason": "duplicate-address", "severity": "info"},
                    rendered(
                        "BgpadvRoutesRejected",
                        1,
                        {**BASE, "reason": "duplicate-address"},
                        "bgpadv refused addresses (duplicate-address)",
                    ),
                ),
                alert("BgpadvRoutesRefusedByPlatform", "24m"),
            ],
        },
        {
            "name": "learned routes over the import limit for 15 minutes alert; routes outside the policy do not",
            "interval": "1m",
            "input_series": [
                {"series": f'bgpadv_import_refused{{{T}, network="vmnet-a", reason="limit"}}', "values": "0 0 3x30"},
                {"series": f'bgpadv_import_refused{{{T}, network="vmnet-a", reason="policy"}}', "values": "250x30"},
            ],
            "alert_rule_test": [
                alert("BgpadvImportOverLimit", "10m"),
                alert(
                    "BgpadvImportOverLimit",
                    "18m",
                    {**BASE, "network": "vmnet-a", "severity": "warning"},
                    rendered(
                        "BgpadvImportOverLimit",
                        3,
                        {**BASE, "network": "vmnet-a"},
                        "vmnet-a: learned routes over importRoutes.maxRoutes on 10.0.0.9:9179",
                    ),
                ),
            ],
        },
        {
            "name": "netlink requests failing for 10 minutes alert; one failed request does not",
            "interval": "1m",
            "input_series": [
                {"series": f'bgpadv_netlink_errors_total{{{T}, operation="install"}}', "values": "0+6x30"},
                {"series": f'bgpadv_netlink_errors_total{{{T}, operation="delete"}}', "values": "0 0 1x30"},
            ],
            "alert_rule_test": [
                alert("BgpadvNetlinkErrors", "5m"),
                alert(
                    "BgpadvNetlinkErrors",
                    "15m",
                    {**BASE, "operation": "install", "severity": "warning"},
                    rendered(
                        "BgpadvNetlinkErrors",
                        60,
                        {**BASE, "operation": "install"},
                        "netlink install keeps failing on 10.0.0.9:9179",
                    ),
                ),
                alert(
                    "BgpadvNetlinkErrors",
                    "25m",
                    {**BASE, "operation": "install", "severity": "warning"},
                    rendered(
                        "BgpadvNetlinkErrors",
                        60,
                        {**BASE, "operation": "install"},
                        "netlink install keeps failing on 10.0.0.9:9179",
                    ),
                ),
            ],
        },
    ],
}


def test_alerts_fire_as_intended_under_promtool_test_rules(rule_file: Path) -> None:
    tests = rule_file.parent / "tests.yaml"
    tests.write_text(yaml.safe_dump(UNIT_TESTS, sort_keys=False))
    result = promtool("test", "rules", str(tests), cwd=rule_file.parent)
    assert result.returncode == 0, result.stdout + result.stderr


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def test_every_dashboard_query_is_valid_promql(tmp_path: Path) -> None:
    exprs = dashboard_exprs()
    assert len(exprs) >= 15
    rules = [
        {"record": f"dashboard:query_{i}", "expr": e.replace("$__rate_interval", "5m").replace("$job", ".*")}
        for i, e in enumerate(exprs)
    ]
    for r in rules:
        r["expr"] = r["expr"].replace("$instance", ".*")
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_dashboard_charts_convergence_quantiles_handover_routes_refusals_peers_and_watch_restarts() -> None:
    joined = "\n".join(dashboard_exprs())
    for needle in (
        "bgpadv_convergence_seconds_bucket",
        "histogram_quantile(0.5",
        "histogram_quantile(0.99",
        "bgpadv_migration_handover_seconds_bucket",
        "bgpadv_routes_advertised",
        "bgpadv_routes_rejected_total",
        "bgpadv_peer_up",
        "bgpadv_watch_restarts_total",
    ):
        assert needle in joined, needle


def test_every_bgpadv_metric_named_in_deploy_exists() -> None:
    exposition = generate_latest(Metrics(process_collectors=False).registry).decode()
    names = set(re.findall(r"^# TYPE (\S+) ", exposition, re.MULTILINE))
    text = RULES.read_text() + "\n".join(dashboard_exprs())
    used = set(re.findall(r"\bbgpadv_[a-z_]+", text)) - {"bgpadv_convergence_seconds"}
    missing = {n for n in used if n not in names and not n.endswith(("_bucket", "_count", "_sum"))}
    missing |= {n for n in used if n.endswith(("_bucket", "_count", "_sum")) and n.rsplit("_", 1)[0] not in names}
    assert not missing


def test_the_dashboard_has_a_convergence_heatmap_of_the_sent_stage_buckets() -> None:
    panels = [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] == "heatmap"]
    assert len(panels) == 1
    (target,) = panels[0]["targets"]
    assert target["format"] == "heatmap" and target["legendFormat"] == "{{le}}"
    assert target["expr"].startswith("sum by (le) (increase(bgpadv_convergence_seconds_bucket{")
    assert 'stage="sent"' in target["expr"]
    assert panels[0]["options"]["calculate"] is False  # the histogram's own buckets, not Grafana's guess
    assert panels[0]["options"]["yAxis"]["unit"] == "s"


def test_the_dashboard_has_bfd_import_and_per_node_panels() -> None:
    """The rows an operator of BFD, egress import and per-node mode looks at, on the metrics bgpadv really exports
    (checked by test_every_bgpadv_metric_named_in_deploy_exists) and the PodMonitor's node and mode labels."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    rows = [p["title"] for p in panels if p["type"] == "row"]
    assert {"BFD", "Egress import", "Per node"} <= set(rows)
    joined = "\n".join(dashboard_exprs())
    for needle in (
        "bgpadv_bfd_session_up",
        "bgpadv_bfdd_cannot_start",
        "bgpadv_routes_imported",
        "bgpadv_import_refused",
        "bgpadv_netlink_errors_total",
        'mode="per-node"',
        "sum by (node)",
    ):
        assert needle in joined, needle
    assert len({p["id"] for p in panels}) == len(panels)
