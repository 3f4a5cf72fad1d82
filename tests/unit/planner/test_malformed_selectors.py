"""Planner, malformed label selectors in cluster objects select nothing (`malformed-selector`).

Scope: a CUDN whose `namespaceSelector` has a shape the API server would refuse (`matchLabels: ""`, `0`, `false`,
`matchExpressions: {}`, a misspelt operator, an invalid key) is refused whole with `malformed-selector` and every
claim on it with the same code: no namespace is selected, so nothing of it is announced, in `plan()` and the
incremental planner alike. A RouteAdvertisements' malformed `networkSelector` selects no CUDN and its malformed
`nodeSelector` no node; each gets one refusal on the RouteAdvertisements. `{}` keeps its meaning: everything.

Fixture shapes: CUDNs and RouteAdvertisements as `bgpadv_lab.objects` writes them (OVN-K's CRD shapes,
docs/features/bgp-integration/route-advertisements.md), the selectors of the hostile shapes hand-edited into them.
"""

from __future__ import annotations

import pytest

from bgpadv.core import reasons
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

ADV = k8s.ADVERTISED
NET = "cluster_udn_vmnet-a"
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), k8s.node("worker-2", "10.0.0.12", "fd00::12")]
FOLLOW = {"networks": {"followRouteAdvertisements": True}}  # the configuration that follows RouteAdvertisements

HOSTILE = [
    pytest.param({"matchLabels": ""}, id="matchLabels-empty-string"),
    pytest.param({"matchLabels": 0}, id="matchLabels-zero"),
    pytest.param({"matchLabels": False}, id="matchLabels-false"),
    pytest.param({"matchExpressions": {}}, id="matchExpressions-empty-mapping"),
    pytest.param({"matchExpressions": [{"key": "team", "operator": "in", "values": ["blue"]}]}, id="operator-case"),
    pytest.param({"matchExpressions": [{"key": "team", "operator": "NotIn"}]}, id="notin-without-values"),
    pytest.param({"matchLabels": {"team blue": "x"}}, id="invalid-key"),
    pytest.param({"matchLabels": {"team": "blue", "matchExpressions": []}}, id="field-inside-matchLabels"),
]


def network(namespace_selector: object) -> dict:
    return k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespace_selector=namespace_selector)


def claim(ns: str = NS) -> list[dict]:
    return [
        k8s.ipam_claim(ns, "vm-a.vmnet-a", "vm-a", NET, ["192.168.100.10/24"]),
        k8s.vmi(ns, "vm-a", "worker-1"),
    ]


def announced(p) -> set[str]:
    return {str(r.prefix) for r in p.routes}


def refused(p) -> set[tuple[str, str]]:
    return {(str(r.source), r.reason) for r in p.rejected}


@pytest.mark.parametrize("selector", HOSTILE)
def test_a_cudn_with_a_malformed_namespace_selector_is_refused_whole(selector):
    state = k8s.state(NODES, network(selector), k8s.namespace(NS), claim())
    p = plan(state, k8s.config())
    assert announced(p) == set()
    assert refused(p) == {
        ("ClusterUserDefinedNetwork vmnet-a", reasons.MALFORMED_SELECTOR),
        (f"IPAMClaim {NS}/vm-a.vmnet-a", reasons.MALFORMED_SELECTOR),
    }
    cudn = next(r for r in p.rejected if r.source.kind == "ClusterUserDefinedNetwork")
    assert cudn.value.startswith("spec.namespaceSelector")
    assert "selects nothing" in cudn.message and "not announced" in cudn.message
    assert IncrementalPlanner(k8s.config()).plan(state, None) == p


def test_the_empty_namespace_selector_still_selects_every_namespace():
    p = plan(k8s.state(NODES, network({}), claim("anywhere")), k8s.config())
    assert "192.168.100.10/32" in announced(p) and p.rejected == ()


@pytest.mark.parametrize("selector", HOSTILE)
def test_a_malformed_network_selector_of_a_route_advertisements_selects_no_cudn(selector):
    ra = k8s.route_advertisements("ra-hostile", selector)
    p = plan(k8s.state(NODES, network({}), ra, claim()), k8s.config(**FOLLOW))
    assert announced(p) == set()
    assert ("RouteAdvertisements ra-hostile", reasons.MALFORMED_SELECTOR) in refused(p)
    assert (f"IPAMClaim {NS}/vm-a.vmnet-a", reasons.NETWORK_NOT_SELECTED) in refused(p)
    bad = next(r for r in p.rejected if r.reason == reasons.MALFORMED_SELECTOR)
    assert bad.value.startswith("spec.networkSelectors[0].clusterUserDefinedNetworkSelector.networkSelector")


@pytest.mark.parametrize("selector", HOSTILE)
def test_a_malformed_node_selector_of_a_route_advertisements_selects_no_node(selector):
    ra = k8s.route_advertisements("ra-hostile", {"matchLabels": dict(ADV)}, node_selector=selector)
    p = plan(k8s.state(NODES, network({}), ra, claim()), k8s.config(**FOLLOW))
    assert "192.168.100.10/32" not in announced(p)
    assert ("RouteAdvertisements ra-hostile", reasons.MALFORMED_SELECTOR) in refused(p)
    assert (f"IPAMClaim {NS}/vm-a.vmnet-a", reasons.NODE_NOT_SELECTED) in refused(p)


def test_a_valid_route_advertisements_beside_a_malformed_one_still_advertises():
    good = k8s.route_advertisements("ra-good", {"matchLabels": dict(ADV)})
    hostile = k8s.route_advertisements("ra-hostile", {"matchLabels": ""})
    p = plan(k8s.state(NODES, network({}), good, hostile, claim()), k8s.config(**FOLLOW))
    assert "192.168.100.10/32" in announced(p)
    assert refused(p) == {("RouteAdvertisements ra-hostile", reasons.MALFORMED_SELECTOR)}


def test_the_refusal_is_a_warning_event_and_counted_like_every_refusal_of_a_served_network():
    from bgpadv.observe.events import event_reason
    from bgpadv.observe.metrics import Metrics
    from bgpadv.observe.metrics_observer import MetricsObserver

    assert reasons.MALFORMED_SELECTOR in reasons.ALL_REASONS
    assert reasons.MALFORMED_SELECTOR not in reasons.OUT_OF_SCOPE_REASONS  # a Warning Event, not a debug line
    assert event_reason(reasons.MALFORMED_SELECTOR) == "MalformedSelector"
    p = plan(k8s.state(NODES, network({"matchLabels": ""}), claim()), k8s.config())
    observer = MetricsObserver(Metrics(process_collectors=False))
    observer.planned(p, None, 0.001, False)
    registry = observer.metrics.registry
    assert registry.get_sample_value("bgpadv_routes_rejected_total", {"reason": reasons.MALFORMED_SELECTOR}) == 2


def test_render_and_explain_show_the_refusal(tmp_path, capsys):
    import yaml

    from bgpadv.commands.cli import main

    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump_all([*NODES, network({"matchExpressions": {}}), *claim()]))
    cfg = tmp_path / "bgpadv.yaml"
    cfg.write_text(yaml.safe_dump({"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}))
    assert main(["render", "--config", str(cfg), "--manifests", str(dump)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "ClusterUserDefinedNetwork vmnet-a" in line)
    assert "malformed-selector" in row and "spec.namespaceSelector.matchExpressions" in row
    assert out.startswith("no routes")
    assert main(["explain", "vmnet-a", "--config", str(cfg), "--manifests", str(dump)]) == 1  # nothing announced
    out = capsys.readouterr().out
    assert "malformed-selector" in out and "a malformed label selector selects nothing" in out
