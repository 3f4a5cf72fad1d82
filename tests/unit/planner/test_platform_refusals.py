"""Claims and networks the platform refused: OVN-K's own "no" is a refusal in OVN-K's words, not "pending".

Scope: an IPAMClaim whose `IPsAllocated` condition OVN-K wrote False (`SubnetExhausted`, `IPAddressConflict`,
`InternalError`, and a reason bgpadv has never seen, each verbatim) is refused `allocation-refused` with OVN-K's
message, in the plan, `render`, `explain`, the Warning Event and `bgpadv_routes_rejected_total`; a claim still being
allocated (no condition, or not False, no address yet) stays pending without a refusal; a VM whose claim was refused
is never read from a launcher pod instead. A CUDN whose `NetworkCreated` (other than its NADs being deleted) or
`NetworkAllocationSucceeded` condition is False is refused `network-not-created` with every claim on it. Both
incremental and full planners agree (the claim is read by the one function both call).

The condition shapes are the ones OVN-K's cluster manager wrote in the real-API tier (tests/kube/test_ovnk.py):
`status.ips` emptied, `ownerPod` set, one `IPsAllocated` condition with `observedGeneration`.
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
from tests.unit.planner.facts import refused

NET = "cluster_udn_vmnet-a"
NODES = [k8s.node("worker-1", "10.0.0.11", "fd00::11"), k8s.node("worker-2", "10.0.0.12", "fd00::12")]
VMNET_A = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED)

# What OVN-K wrote (tests/kube/test_ovnk.py, the pinned go-controller), names adapted to this cluster.
EXHAUSTED = (
    "SubnetExhausted",
    "failed to assign pod addresses for imported-vms/vmnet-a/imported-vms/virt-launcher-vm-a-x7k2p: failed to "
    "allocate new IPs for cluster_udn_vmnet-a: subnet address pool exhausted",
)
CONFLICT = (
    "IPAddressConflict",
    "failed to ensure requested or annotated IPs [192.168.100.3/24 fd10:100::99/64] for "
    "imported-vms/vmnet-a/imported-vms/virt-launcher-vm-a-x7k2p: provided IP is already allocated",
)
INTERNAL = (
    "InternalError",
    "layer2 network expects 2 IP(s), got 1: requested IPs family types must match network's IP family configuration",
)
UNSEEN = ("QuotaExceeded", "a reason a later OVN-K may write")


def refused_claim(reason: str, message: str, vm: str = "vm-a") -> dict:
    return k8s.ipam_claim(NS, f"{vm}.default", vm, NET, [], refused=(reason, message))


def cluster(*objects: dict) -> list[dict]:
    return [*NODES, VMNET_A, *objects]


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        pytest.param(*EXHAUSTED, id="subnet-exhausted"),
        pytest.param(*CONFLICT, id="ip-address-conflict"),
        pytest.param(*INTERNAL, id="internal-error"),
        pytest.param(*UNSEEN, id="a-reason-never-seen-verbatim"),
    ],
)
def test_a_claim_ovnk_refused_is_refused_in_ovnks_words_and_never_routed(reason, message):
    objects = cluster(refused_claim(reason, message), k8s.vmi(NS, "vm-a", "worker-1"))
    p = plan(k8s.state(objects), k8s.config())
    assert [str(r.prefix) for r in p.routes if str(r.kind) == "host"] == []
    assert refused(p) == {(f"IPAMClaim {NS}/vm-a.default", reason, reasons.ALLOCATION_REFUSED)}
    (refusal,) = p.rejected
    assert refusal.message == f"OVN-K did not allocate the claim's addresses (IPsAllocated False, {reason}): {message}"
    assert refusal.network == "vmnet-a"


@pytest.mark.parametrize(
    "claim",
    [
        pytest.param(k8s.ipam_claim(NS, "vm-a.default", "vm-a", NET, None), id="no-status-yet"),
        pytest.param(k8s.ipam_claim(NS, "vm-a.default", "vm-a", NET, []), id="empty-ips-no-condition"),
        pytest.param(
            k8s.ipam_claim(
                NS, "vm-a.default", "vm-a", NET, [], refused=("Allocating", "in progress"), condition_status="Unknown"
            ),
            id="condition-unknown",
        ),
    ],
)
def test_a_claim_still_being_allocated_stays_pending_without_a_refusal(claim):
    p = plan(k8s.state(cluster(claim, k8s.vmi(NS, "vm-a", "worker-1"))), k8s.config())
    assert p.rejected == ()
    assert [r for r in p.routes if str(r.kind) == "host"] == []


def test_a_vm_whose_claim_was_refused_is_not_read_from_a_stale_launcher_pod():
    pod = k8s.launcher_pod(NS, "vm-a", "worker-1", ips=["192.168.100.3/24"], nad="vmnet-a", claim="vm-a.default")
    objects = cluster(refused_claim(*CONFLICT), k8s.vmi(NS, "vm-a", "worker-1"), pod)
    p = plan(k8s.state(objects), k8s.config())
    assert [r for r in p.routes if str(r.kind) == "host"] == []
    assert {x.reason for x in p.rejected} == {reasons.ALLOCATION_REFUSED}


def test_the_incremental_planner_refuses_and_clears_like_the_full_one():
    vmi = k8s.vmi(NS, "vm-a", "worker-1")
    planner = IncrementalPlanner(k8s.config())
    first = planner.plan(k8s.state(cluster(refused_claim(*EXHAUSTED), vmi)))
    assert {x.reason for x in first.rejected} == {reasons.ALLOCATION_REFUSED}
    allocated = k8s.ipam_claim(NS, "vm-a.default", "vm-a", NET, ["192.168.100.3/24", "fd10:100::3/64"])
    state = k8s.state(cluster(allocated, vmi))
    second = planner.plan(state)
    assert second.rejected == () and second == plan(state, k8s.config())
    assert {str(r.prefix) for r in second.routes if str(r.kind) == "host"} == {"192.168.100.3/32", "fd10:100::3/128"}


def test_render_explain_event_and_metric_carry_ovnks_reason_and_message():
    objects = cluster(refused_claim(*EXHAUSTED), k8s.vmi(NS, "vm-a", "worker-1"))
    state, cfg = k8s.state(objects), k8s.config()
    p = plan(state, cfg)
    table = render_plan(p, "table")
    assert "allocation-refused" in table and "SubnetExhausted" in table and "subnet address pool exhausted" in table

    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(f"{NS}/vm-a"))
    assert result.verdict == "refused"
    (rule,) = [r for r in result.rules if r.verdict == "refused"]
    assert rule.reason == reasons.ALLOCATION_REFUSED and "subnet address pool exhausted" in rule.message
    assert any("OVN-K refused: SubnetExhausted" in o.says for o in result.objects if o.ref.kind == "IPAMClaim")

    assert event_reason(reasons.ALLOCATION_REFUSED) == "AllocationRefused"
    observer = MetricsObserver(Metrics(process_collectors=False))
    observer.planned(Outcome.of(p), None, 0.001, False)
    counted = observer.metrics.registry.get_sample_value(
        "bgpadv_routes_rejected_total", {"reason": "allocation-refused"}
    )
    assert counted == 1


@pytest.mark.parametrize(
    ("condition", "value"),
    [
        pytest.param(
            {
                "type": "NetworkCreated",
                "status": "False",
                "reason": "NetworkAttachmentDefinitionSyncError",
                "message": "foreign NetworkAttachmentDefinition with the desired name already exist",
            },
            "NetworkAttachmentDefinitionSyncError",
            id="nad-sync-error",
        ),
        pytest.param(
            {
                "type": "NetworkAllocationSucceeded",
                "status": "False",
                "reason": "NetworkAllocationFailed",
                "message": "Network allocation failed for at least one node: [worker-2], check UDN events",
            },
            "NetworkAllocationFailed",
            id="allocation-failed",
        ),
        pytest.param(
            {
                "type": "NetworkCreated",
                "status": "False",
                "reason": "NetworkAttachmentDefinitionDeleted",
                "message": "NetworkAttachmentDefinition are being deleted: [imported-vms/vmnet-a]",
            },
            None,
            id="nads-being-deleted-is-a-withdrawal",
        ),
    ],
)
def test_a_cudn_ovnk_says_is_not_there_is_refused_with_its_claims(condition, value):
    cudn = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED)
    kept = [c for c in cudn["status"]["conditions"] if c["type"] != condition["type"]]
    cudn["status"]["conditions"] = [*kept, {**condition, "lastTransitionTime": "2026-12-06T20:50:00Z"}]
    claim = k8s.ipam_claim(NS, "vm-a.default", "vm-a", NET, ["192.168.100.3/24"])
    p = plan(k8s.state(NODES, cudn, claim, k8s.vmi(NS, "vm-a", "worker-1")), k8s.config())
    assert p.routes == ()
    if value is None:
        assert p.rejected == ()
        return
    assert refused(p) == {
        ("ClusterUserDefinedNetwork vmnet-a", value, reasons.NETWORK_NOT_CREATED),
        (f"IPAMClaim {NS}/vm-a.default", NET, reasons.NETWORK_NOT_CREATED),
    }
    assert all(condition["message"] in x.message for x in p.rejected)


# -- the claim a launcher pod references, under either annotation ---------------------------------------------------


@pytest.mark.parametrize("claim_via", [k8s.DEFAULT_NETWORK_ANNOTATION, k8s.CLAIM_ANNOTATION])
def test_a_claim_referenced_under_another_name_is_the_vms_by_its_label_whichever_reference_the_pod_uses(claim_via):
    """OVN-K follows the pod's reference (the default-network selection's `ipam-claim-reference` before the
    deprecated annotation); bgpadv links the claim by its VM label and ownerReference, never by its name, so a claim
    named anything holds its VM's address either way, and the pod's copy of it is not read a second time."""
    claim = k8s.ipam_claim(NS, "vm-a-primary-ip", "vm-a", NET, ["192.168.100.3/24", "fd10:100::3/64"])
    pod = k8s.launcher_pod(
        NS, "vm-a", "worker-1", claim="vm-a-primary-ip", claim_via=claim_via, ips=["192.168.100.3/24"], nad="vmnet-a"
    )
    p = plan(k8s.state(cluster(claim, k8s.vmi(NS, "vm-a", "worker-1"), pod)), k8s.config())
    assert p.rejected == ()
    hosts = {(str(r.prefix), str(r.source)) for r in p.routes if str(r.kind) == "host"}
    assert hosts == {
        ("192.168.100.3/32", f"IPAMClaim {NS}/vm-a-primary-ip"),
        ("fd10:100::3/128", f"IPAMClaim {NS}/vm-a-primary-ip"),
    }


def test_a_referenced_claim_without_a_vm_link_is_the_referencing_vms():
    """A claim no label or ownerReference ties to a VM: OVN-K gave its address to the pod that references it, so the
    claim is that pod's VM's (not silently missed, and not refused for lacking a label)."""
    claim = k8s.ipam_claim(NS, "static-ip", None, NET, ["192.168.100.3/24"])
    pod = k8s.launcher_pod(
        NS,
        "vm-a",
        "worker-1",
        claim="static-ip",
        claim_via=k8s.DEFAULT_NETWORK_ANNOTATION,
        ips=["192.168.100.3/24"],
        nad="vmnet-a",
    )
    vmi = k8s.vmi(NS, "vm-a", "worker-1")
    pod = k8s.owned_by(pod, vmi["metadata"]["uid"])
    p = plan(k8s.state(cluster(claim, vmi, pod)), k8s.config())
    assert {(str(r.prefix), str(r.source), r.node) for r in p.routes if str(r.kind) == "host"} == {
        ("192.168.100.3/32", f"IPAMClaim {NS}/static-ip", "worker-1")
    }
    assert p.rejected == ()


def _pod_with(annotations: dict[str, str]) -> dict:
    pod = k8s.launcher_pod(NS, "vm-a", "worker-1")
    pod["metadata"]["annotations"].update(annotations)
    return pod


DEFAULT_NETWORK = k8s.DEFAULT_NETWORK_ANNOTATION
SELECTION = '[{"name":"default","namespace":"ovn-kubernetes","ipam-claim-reference":"vm-a.default"}]'


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({DEFAULT_NETWORK: SELECTION}, "vm-a.default", id="ipam-claim-reference"),
        pytest.param({k8s.CLAIM_ANNOTATION: "vm-a.default"}, "vm-a.default", id="deprecated-annotation"),
        pytest.param(
            {k8s.CLAIM_ANNOTATION: "old-name", DEFAULT_NETWORK: SELECTION}, "vm-a.default", id="selection-wins"
        ),
        pytest.param(
            {k8s.CLAIM_ANNOTATION: "old-name", DEFAULT_NETWORK: '[{"name":"default","namespace":"ovn-kubernetes"}]'},
            "old-name",
            id="selection-without-reference-keeps-the-annotation",
        ),
        pytest.param({DEFAULT_NETWORK: "not json"}, None, id="malformed-selection-names-nothing"),
        pytest.param({DEFAULT_NETWORK: '[{"ipam-claim-reference": 7}]'}, None, id="non-string-reference"),
        pytest.param({}, None, id="no-reference"),
    ],
)
def test_the_pods_claim_reference_is_read_as_ovnk_reads_it(annotations, expected):
    (pod,) = k8s.state(_pod_with(annotations)).pods.values()
    assert pod.claim_ref == expected


def test_explain_says_when_the_claim_a_pod_references_names_another_vm():
    """A pod referencing a claim that names another VM: OVN-K gives the pod that claim's address, and bgpadv follows
    the reference (the claim is this VM's); `explain` of the VM says so on the pod's line."""
    vmi = k8s.vmi(NS, "vm-a", "worker-1")
    pod = k8s.owned_by(
        k8s.launcher_pod(NS, "vm-a", "worker-1", claim="vm-b.default", claim_via=k8s.DEFAULT_NETWORK_ANNOTATION),
        vmi["metadata"]["uid"],
    )
    other = k8s.ipam_claim(NS, "vm-b.default", "vm-b", NET, ["192.168.100.7/24"])
    state, cfg = k8s.state(cluster(vmi, pod, other)), k8s.config()
    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(f"{NS}/vm-a"))
    (says,) = [m.says for m in result.objects if m.ref.kind == "Pod"]
    assert "OVN-K allocates its address from IPAMClaim vm-b.default, whose label or owner names VM vm-b" in says
    assert "the reference wins, it is this VM's claim" in says
    mine = k8s.ipam_claim(NS, "vm-a.default", "vm-a", NET, ["192.168.100.8/24"])
    pod = k8s.owned_by(k8s.launcher_pod(NS, "vm-a", "worker-1", claim="vm-a.default"), vmi["metadata"]["uid"])
    state = k8s.state(cluster(vmi, pod, mine))
    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(f"{NS}/vm-a"))
    (says,) = [m.says for m in result.objects if m.ref.kind == "Pod"]
    assert says.endswith("OVN-K allocates its address from IPAMClaim vm-a.default")
