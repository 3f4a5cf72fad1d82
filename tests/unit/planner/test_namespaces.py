"""Planner, namespaces bind: claims and guest reports count only from namespaces the CUDN's `namespaceSelector`
selects (OVN-K renders the network's NetworkAttachmentDefinition only there), in `plan()` and the incremental planner.

Scope: a claim or a VMI attachment in an unselected namespace is refused `namespace-not-selected` and never takes part
in the duplicate rule (an older claim there cannot take a real VM's address); the selector is evaluated on the
Namespaces' real labels; a namespace bgpadv has not listed (a dump without Namespace objects) is judged by its name
label alone, and only by a selector that reads nothing else; relabelling a namespace re-plans.

Fixture shapes: the CUDN's `namespaceSelector` by `kubernetes.io/metadata.name` and by a tenant label as in
ovn-kubernetes test/e2e/kubevirt.go and docs/features/bgp-integration/evpn.md (a `network: <tenant>` label); the
Namespace with the name label the API server adds (kubernetes pkg/registry/core/namespace/strategy.go); IPAMClaims
as kubevirt/ipam-extensions writes them (pkg/ipamclaimswebhook, `<vm>.<network>` names, label `kubevirt.io/vm`).
"""

from __future__ import annotations

import pytest

from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import planned_both_ways, refused

ADV = k8s.ADVERTISED
NET = "cluster_udn_vmnet-a"
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), k8s.node("worker-2", "10.0.0.12", "fd00::12")]
TENANT = {"matchLabels": {"network": "blue"}}  # evpn.md's tenant label selector


def by_name(*namespaces: str) -> dict:
    return k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespaces=list(namespaces) or [NS])


def by_label(selector: dict = TENANT) -> dict:
    return k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespace_selector=selector)


def vm(name: str, ip: str, *, ns: str = NS, node: str = "worker-1", created: str = k8s.DEFAULT_CREATED) -> list[dict]:
    return [
        k8s.ipam_claim(ns, f"{name}.vmnet-a", name, NET, [f"{ip}/24"], created=created),
        k8s.vmi(ns, name, node),
    ]


def hosts(p) -> set[tuple[str, str]]:
    return {(str(r.prefix), str(r.source)) for r in p.routes if r.kind.value == "host"}


@pytest.mark.parametrize(
    ("cudn", "namespaces", "claim_ns", "announced"),
    [
        pytest.param(by_name(), [], NS, True, id="by-name-unlisted-namespace-selected"),
        pytest.param(by_name(), [k8s.namespace(NS)], NS, True, id="by-name-listed-namespace-selected"),
        pytest.param(by_name(), [], "elsewhere", False, id="by-name-other-namespace-refused"),
        pytest.param(
            by_label(),
            [k8s.namespace("tenant-blue", {"network": "blue"})],
            "tenant-blue",
            True,
            id="by-label-listed-labelled-selected",
        ),
        pytest.param(
            by_label(),
            [k8s.namespace("tenant-blue", {"network": "red"})],
            "tenant-blue",
            False,
            id="by-label-listed-other-label-refused",
        ),
        pytest.param(by_label(), [], "tenant-blue", False, id="by-label-unlisted-namespace-refused"),
        pytest.param(
            by_label({"matchExpressions": [{"key": "network", "operator": "NotIn", "values": ["red"]}]}),
            [],
            "tenant-blue",
            False,
            id="notin-other-label-unlisted-refused",
        ),
        pytest.param(
            by_label({"matchExpressions": [{"key": "network", "operator": "NotIn", "values": ["red"]}]}),
            [k8s.namespace("tenant-blue")],
            "tenant-blue",
            True,
            id="notin-other-label-listed-selected",
        ),
        pytest.param(by_label({}), [], "anywhere", True, id="empty-selector-selects-every-namespace"),
    ],
)
def test_a_claim_counts_only_from_a_selected_namespace(cudn, namespaces, claim_ns, announced):
    p = plan(k8s.state(NODES, cudn, namespaces, vm("vm-a", "192.168.100.10", ns=claim_ns)), k8s.config())
    claim = f"IPAMClaim {claim_ns}/vm-a.vmnet-a"
    if announced:
        assert hosts(p) == {("192.168.100.10/32", claim)}
        assert p.rejected == ()
    else:
        assert hosts(p) == set()
        assert refused(p) == {(claim, claim_ns, "namespace-not-selected")}
        assert p.rejected[0].network == "vmnet-a"


def test_an_older_claim_in_an_unselected_namespace_never_wins_a_real_vms_address():
    squatter = vm("squatter", "192.168.100.10", ns="elsewhere", created="2020-01-01T00:00:00Z")
    real = vm("vm-a", "192.168.100.10", node="worker-2", created="2025-03-01T09:00:00Z")
    p = plan(k8s.state(NODES, by_name(), k8s.namespace("elsewhere"), squatter, real), k8s.config())
    assert hosts(p) == {("192.168.100.10/32", f"IPAMClaim {NS}/vm-a.vmnet-a")}
    assert [str(r.next_hop) for r in p.routes if r.kind.value == "host"] == ["10.0.0.12"]
    assert refused(p) == {("IPAMClaim elsewhere/squatter.vmnet-a", "elsewhere", "namespace-not-selected")}


def test_a_pending_claim_in_an_unselected_namespace_is_refused_and_a_deleted_one_skipped():
    pending = k8s.ipam_claim("elsewhere", "vm-p.vmnet-a", "vm-p", NET, None)
    deleting = k8s.ipam_claim("elsewhere", "vm-d.vmnet-a", "vm-d", NET, ["192.168.100.11/24"], deleting=True)
    p = plan(k8s.state(NODES, by_name(), pending, deleting), k8s.config())
    assert refused(p) == {("IPAMClaim elsewhere/vm-p.vmnet-a", "elsewhere", "namespace-not-selected")}


def test_relabelling_a_namespace_replans_in_both_planners():
    """A Namespace label change moves claims in and out, in the incremental planner as in plan()."""
    config = k8s.config()
    state = k8s.state(NODES, by_label(), k8s.namespace("tenant-blue", {"network": "blue"}),
                      vm("vm-a", "192.168.100.10", ns="tenant-blue"))  # fmt: skip
    inc = IncrementalPlanner(config)
    first = inc.plan(state, None)
    assert first == plan(state, config)
    assert hosts(first) == {("192.168.100.10/32", "IPAMClaim tenant-blue/vm-a.vmnet-a")}
    relabelled = k8s.state(k8s.namespace("tenant-blue", {"network": "red"})).namespaces["tenant-blue"]
    state.namespaces["tenant-blue"] = relabelled
    second = inc.plan(state, {("namespaces", "tenant-blue")})
    assert second == plan(state, config)
    assert hosts(second) == set()
    assert refused(second) == {("IPAMClaim tenant-blue/vm-a.vmnet-a", "tenant-blue", "namespace-not-selected")}
    del state.namespaces["tenant-blue"]  # unlisted again: judged by its name label, which the selector does not read
    assert inc.plan(state, {("namespaces", "tenant-blue")}) == plan(state, config)


# --- guest reports (IPAM-less secondary networks) -------------------------------------------------------------------

GUESTS = {"matchLabels": {"network.example.com/guests": "static"}}
SECONDARY = {"secondary": [{"name": "static", "allowedPrefixes": ["10.70.0.0/24"]}]}


def static_network() -> dict:
    return k8s.cudn_layer2("static", None, labels=ADV, role="Secondary", ipam_mode="Disabled",
                           namespace_selector=GUESTS)  # fmt: skip


def guest(ns: str, nad: str) -> dict:
    iface = k8s.interface(["10.70.0.20"], name="data", pod_interface="pod6c6a4b6e0f1",
                          info_source="domain, guest-agent, multus-status")  # fmt: skip
    return k8s.vmi(ns, "db", "worker-2", interfaces=[iface], secondary=[("data", nad)])


@pytest.mark.parametrize(
    ("vmi_ns", "nad", "announced", "value"),
    [
        pytest.param("static-vms", "static", True, "", id="selected-namespace-own-nad"),
        pytest.param("static-vms", "static-vms/static", True, "", id="selected-namespace-qualified-nad"),
        pytest.param("other", "static", False, "static", id="unselected-namespace-own-nad"),
        pytest.param("other", "static-vms/static", False, "static-vms/static", id="unselected-vmi-selected-nad"),
        pytest.param("static-vms", "other/static", False, "other/static", id="selected-vmi-unselected-nad"),
    ],
)
def test_guest_reports_count_only_from_selected_namespaces(vmi_ns, nad, announced, value):
    namespaces = [k8s.namespace("static-vms", {"network.example.com/guests": "static"}), k8s.namespace("other")]
    state = k8s.state(NODES, namespaces, static_network(), guest(vmi_ns, nad))
    config = k8s.config(networks=SECONDARY)
    p = planned_both_ways(state, config)
    if announced:
        assert hosts(p) == {("10.70.0.20/32", f"VirtualMachineInstance {vmi_ns}/db")}
        assert p.rejected == ()
    else:
        assert hosts(p) == set()
        assert refused(p) == {(f"VirtualMachineInstance {vmi_ns}/db", value, "namespace-not-selected")}
