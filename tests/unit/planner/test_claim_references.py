"""Which VM an IPAMClaim belongs to: the one whose running launcher pod references it, as OVN-K reads it.

OVN-K allocates a claim's address to the pod that references the claim (the `ipam-claim-reference` of the pod's
`v1.multus-cni.io/default-network` selection, else the deprecated `k8s.ovn.org/primary-udn-ipamclaim` annotation),
whatever the claim's `kubevirt.io/vm` label or ownerReference say. Scope: the planner's rule (`planner.claims`), in
the full and the incremental planner alike, in cluster and per-node mode, and what `render` and `explain` say of it:

- a claim referenced by one VM's pods is that VM's, announced via its node; a label naming another VM is refused
  `claim-referenced-by-other-vm` (the address stays announced, for the referencing VM);
- a claim referenced by two VMs' pods is refused `claim-referenced-by-several-vms`, announced for neither;
- a claim no pod references keeps its label's VM, unless that VM's pods reference other claims only
  (`claim-not-referenced-by-its-vm`: a stale claim);
- a live migration's source and target pods are one VM; a finished pod, or one KubeVirt does not bind to the VMI,
  references nothing.
"""

from __future__ import annotations

import pytest

from bgpadv.commands.explain_engine import Explainer
from bgpadv.commands.explain_query import parse_query
from bgpadv.commands.outcome import instances
from bgpadv.commands.render import render_plan
from bgpadv.core import reasons
from bgpadv.core.model import Outcome
from bgpadv.observe.events import event_reason
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import planned_both_ways, refused
from tests.unit.planner.test_incremental import _apply  # a watch event applied as the store applies it

NET = "cluster_udn_vmnet-a"
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), k8s.node("worker-2", "10.0.0.12", "fd00::12")]
VMNET_A = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED)
IPS = ["192.168.100.3/24", "fd10:100::3/64"]
CLAIM_X = k8s.ipam_claim(NS, "vm-x.default", "vm-x", NET, IPS)  # as ipam-extensions creates it for VM vm-x
VMI_X = k8s.vmi(NS, "vm-x", "worker-1")
VMI_Y = k8s.vmi(NS, "vm-y", "worker-2")
VIA = [
    pytest.param(k8s.DEFAULT_NETWORK_ANNOTATION, id="ipam-claim-reference"),
    pytest.param(k8s.CLAIM_ANNOTATION, id="primary-udn-ipamclaim"),
]
SOURCE_X = f"IPAMClaim {NS}/vm-x.default"
ON_1 = {("192.168.100.3/32", SOURCE_X, "worker-1"), ("fd10:100::3/128", SOURCE_X, "worker-1")}
ON_2 = {("192.168.100.3/32", SOURCE_X, "worker-2"), ("fd10:100::3/128", SOURCE_X, "worker-2")}


def pod(vm: str, node: str, claim: str | None, via: str = k8s.DEFAULT_NETWORK_ANNOTATION, **kw) -> dict:
    """VM `vm`'s launcher pod on `node`, referencing `claim`, with OVN-K's pod-networks copy of the claim's address
    (what OVN-K writes for the pod that references the claim)."""
    return k8s.launcher_pod(NS, vm, node, claim=claim, claim_via=via, ips=IPS if claim else (), nad="vmnet-a", **kw)


def cluster(*objects: dict) -> list[dict]:
    return [*NODES, VMNET_A, *objects]


def hosts(p) -> set[tuple[str, str, str | None]]:
    return {(str(r.prefix), str(r.source), r.node) for r in p.routes if str(r.kind) == "host"}


def planned(objects: list[dict], **config):
    """The full plan, checked equal to the incremental planner's first plan of the same state."""
    return planned_both_ways(k8s.state(objects), k8s.config(**config))


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize(
    ("objects", "routes", "refusals"),
    [
        pytest.param(
            lambda via: [CLAIM_X, VMI_X, pod("vm-x", "worker-1", "vm-x.default", via)], ON_1, set(), id="own-claim"
        ),
        pytest.param(
            lambda via: [
                k8s.ipam_claim(NS, "static-ip", None, NET, IPS),  # no label, no owner: the reference ties it
                VMI_X,
                pod("vm-x", "worker-1", "static-ip", via),
            ],
            {(p, f"IPAMClaim {NS}/static-ip", "worker-1") for p in ("192.168.100.3/32", "fd10:100::3/128")},
            set(),
            id="claim-under-another-name-without-label",
        ),
        pytest.param(
            lambda via: [CLAIM_X, VMI_X, VMI_Y, pod("vm-y", "worker-2", "vm-x.default", via)],
            ON_2,
            {(SOURCE_X, "vm-x", reasons.CLAIM_REFERENCED_BY_OTHER_VM)},
            id="labelled-for-x-referenced-by-y",
        ),
        pytest.param(
            lambda via: [
                CLAIM_X,
                VMI_X,
                VMI_Y,
                pod("vm-x", "worker-1", "vm-x.default", via),
                pod("vm-y", "worker-2", "vm-x.default", via),
            ],
            set(),
            {(SOURCE_X, "vm-x, vm-y", reasons.CLAIM_REFERENCED_BY_SEVERAL_VMS)},
            id="referenced-by-two-vms",
        ),
        pytest.param(
            lambda via: [
                CLAIM_X,
                VMI_X,
                pod("vm-x", "worker-1", "vm-x.default", via),
                pod("vm-x", "worker-2", "vm-x.default", via, suffix="tgt01", migration_job="mig-1"),
            ],
            ON_1,
            set(),
            id="migration-source-and-target-are-one-vm",
        ),
        pytest.param(
            lambda via: [CLAIM_X, VMI_X, VMI_Y, pod("vm-y", "worker-2", "vm-x.default", via, phase="Succeeded")],
            ON_1,
            set(),
            id="finished-pod-references-nothing",
        ),
        pytest.param(
            lambda via: [CLAIM_X, VMI_X, VMI_Y, pod("vm-y", "worker-2", "vm-x.default", via, runs_for="vm-z")],
            ON_1,
            set(),
            id="pod-kubevirt-does-not-bind-references-nothing",
        ),
        pytest.param(
            lambda via: [CLAIM_X, VMI_X, k8s.launcher_pod(NS, "vm-x", "worker-1")],
            ON_1,
            set(),
            id="no-reference-keeps-the-label",
        ),
        pytest.param(
            lambda via: [
                CLAIM_X,
                k8s.ipam_claim(NS, "vm-x.new", "vm-x", NET, ["192.168.100.4/24"], created="2025-06-01T00:00:00Z"),
                VMI_X,
                pod("vm-x", "worker-1", "vm-x.new", via),
            ],
            {("192.168.100.4/32", f"IPAMClaim {NS}/vm-x.new", "worker-1")},
            {(SOURCE_X, "vm-x", reasons.CLAIM_NOT_REFERENCED_BY_ITS_VM)},
            id="stale-claim-of-a-vm-now-on-another",
        ),
    ],
)
def test_a_claim_is_the_vms_whose_running_launcher_pod_references_it(objects, routes, refusals, via):
    p = planned(cluster(*objects(via)))
    assert hosts(p) == routes
    assert refused(p) == refusals


def test_a_vm_whose_pod_references_a_claim_of_two_vms_is_not_read_from_its_pod_either():
    """Both pods carry OVN-K's copy of the address: neither is read (the claim holds each VM's address)."""
    objects = [CLAIM_X, VMI_X, VMI_Y, pod("vm-x", "worker-1", "vm-x.default"), pod("vm-y", "worker-2", "vm-x.default")]
    p = planned(cluster(*objects), networks={"podNetworkAddresses": True})
    assert hosts(p) == set()


@pytest.mark.parametrize(
    ("node", "routes", "refusals"),
    [
        pytest.param("worker-1", set(), {(SOURCE_X, "vm-x", reasons.CLAIM_NOT_REFERENCED_BY_ITS_VM)}, id="x-node"),
        pytest.param("worker-2", ON_2, {(SOURCE_X, "vm-x", reasons.CLAIM_REFERENCED_BY_OTHER_VM)}, id="y-node"),
    ],
)
def test_per_node_each_instance_sees_its_own_pods_and_none_routes_the_claim_via_x(node, routes, refusals):
    """In per-node mode an instance watches its own node's launcher pods only. VM x (worker-1) now uses another
    claim; its old claim is referenced by VM y (worker-2): worker-1's instance sees x's pod reference the other claim
    and refuses the old one, worker-2's sees y's reference and announces it via worker-2."""
    other = k8s.ipam_claim(NS, "vm-x.new", "vm-x", NET, ["192.168.100.4/24"], created="2025-06-01T00:00:00Z")
    pods = [pod("vm-x", "worker-1", "vm-x.new"), pod("vm-y", "worker-2", "vm-x.default")]
    visible = [p for p in pods if p["spec"]["nodeName"] == node]
    p = planned(cluster(CLAIM_X, other, VMI_X, VMI_Y, *visible), nodeName=node)
    assert {r for r in hosts(p) if r[1] == SOURCE_X} == routes
    assert {r for r in refused(p) if r[0] == SOURCE_X} == refusals


def test_the_risky_case_end_to_end_render_explain_event_and_metric():
    """VM y's launcher pod references the claim ipam-extensions made for VM x; both VMs run. The address is on y's
    pod (OVN-K), so the route goes via y's node, never via x's; render lists the label's refusal, explain of either
    VM and of the address says whose claim it is."""
    state, cfg = k8s.state(cluster(CLAIM_X, VMI_X, VMI_Y, pod("vm-y", "worker-2", "vm-x.default"))), k8s.config()
    p = plan(state, cfg)
    assert hosts(p) == ON_2
    table = render_plan(p, "table")
    assert "claim-referenced-by-other-vm" in table and "10.0.0.12" in table and "10.0.0.11" not in table

    found = instances(state, cfg)
    y = Explainer(state, cfg, found).explain(parse_query(f"{NS}/vm-y"))
    assert y.verdict == "announced"
    assert {str(a.route.prefix) for a in y.routes} == {"192.168.100.3/32", "fd10:100::3/128"}
    (claim_line,) = [m.says for m in y.objects if m.ref.kind == "IPAMClaim"]
    assert "VM vm-y, whose launcher pod references it (label or owner: vm-x)" in claim_line
    (pod_line,) = [m.says for m in y.objects if m.ref.kind == "Pod"]
    assert pod_line.endswith(
        "IPAMClaim vm-x.default, whose label or owner names VM vm-x: the reference wins, it is this VM's claim"
    )

    x = Explainer(state, cfg, found).explain(parse_query(f"{NS}/vm-x"))
    assert x.verdict == "refused"
    (rule,) = [r for r in x.rules if r.verdict == "refused"]
    assert rule.reason == reasons.CLAIM_REFERENCED_BY_OTHER_VM and "announced for VM vm-y" in rule.message

    address = Explainer(state, cfg, found).explain(parse_query("192.168.100.3"))
    assert address.verdict == "announced"
    assert any(m.ref.kind == "VirtualMachineInstance" and m.ref.name == "vm-y" for m in address.objects)

    assert event_reason(reasons.CLAIM_REFERENCED_BY_OTHER_VM) == "ClaimReferencedByOtherVm"
    observer = MetricsObserver(Metrics(process_collectors=False))
    observer.planned(Outcome.of(p), None, 0.001, False)
    counted = observer.metrics.registry.get_sample_value(
        "bgpadv_routes_rejected_total", {"reason": "claim-referenced-by-other-vm"}
    )
    assert counted == 1


@pytest.mark.parametrize("hinted", [True, False], ids=["hinted", "unhinted"])
def test_the_incremental_planner_follows_pod_and_vmi_changes_to_the_claim(hinted):
    """Each step changes a pod or a VMI only (never the claim): the claim's VM moves, and the incremental plan is
    the full plan."""
    cfg = k8s.config()
    state = k8s.state(cluster(CLAIM_X, VMI_X, VMI_Y))
    planner = IncrementalPlanner(cfg)
    assert hosts(planner.plan(state)) == ON_1
    y_pod = pod("vm-y", "worker-2", "vm-x.default")
    x_new = k8s.launcher_pod(NS, "vm-x", "worker-1", claim="vm-x.new", claim_via=k8s.DEFAULT_NETWORK_ANNOTATION)
    steps = [
        ((False, y_pod), ON_2),  # y references x's claim: via worker-2
        ((False, x_new), ON_2),  # x's pod references another claim: still y's
        ((True, VMI_Y), set()),  # y stopped: its pod runs no VMI; x's pod references another claim: stale
        ((True, x_new), ON_1),  # x's pod gone: the label ties it again
        ((False, VMI_Y), ON_2),  # y back (same uid): its pod references the claim again
        ((False, pod("vm-x", "worker-1", "vm-x.default")), set()),  # x too: two VMs, refused
        ((True, y_pod), ON_1),
    ]
    for (delete, obj), routes in steps:
        hint = _apply(state, delete, obj)
        got = planner.plan(state, [hint] if hinted else None)
        assert got == plan(state, cfg)
        assert hosts(got) == routes
