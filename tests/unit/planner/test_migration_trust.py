"""Planner, live migration: a route moves only on KubeVirt's own statements; a VM leaving the cluster leaves quietly.

Scope (rules 6 and 6d of `bgpadv.planner.vms`): the VMI's `migrationState`, and a launcher pod only when the uids it
states (ownerReference of kind VirtualMachineInstance, label `kubevirt.io/created-by`) are that VMI's uid; a pod that
merely carries another VM's `kubevirt.io/domain` annotation and labels never moves a route.
Cross-cluster (decentralized) live migration (`migrationState.sourceState/targetState`, exactly one `syncAddress`:
kubevirt.io/api core/v1/types.go `IsDecentralizedMigration`): the source keeps the route while the VM runs here and
withdraws it when it has left, without a refusal; the target side announces from target-ready.
Both planner forms are checked on every row.
"""

from __future__ import annotations

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import planned_both_ways

ADV = k8s.ADVERTISED
W1, W2, W3 = "worker-1", "worker-2", "worker-3"
NODES = [k8s.node(W1, "10.0.0.11", "fd00::11"), k8s.node(W2, "10.0.0.12", "fd00::12"), k8s.node(W3, "10.0.0.13")]
VMNET = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespaces=[NS])
CLAIM = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.10/24"])
READY = "2025-03-01T10:00:12Z"
REMOTE = "cluster-b-worker-7"  # a node of the other cluster


def run(*objects, **config):
    state = k8s.state(NODES, VMNET, CLAIM, *objects)
    return planned_both_ways(state, k8s.config(**config))


def nodes_of(p) -> set[str | None]:
    return {r.node for r in p.routes if r.kind.value == "host"}


def migrating(target: str = W2, **state) -> dict:
    return k8s.vmi(NS, "vm-a", W1, migration_state=k8s.migration_state(W1, target, vmi="vm-a", **state))


def ready_pod(node: str = W2, **kw) -> dict:
    return k8s.launcher_pod(NS, "vm-a", node, suffix="tgt01", migration_job="job-1", target_ready=READY, **kw)


# --- migration trust ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("objects", "node"),
    [
        pytest.param([migrating(), ready_pod()], W2, id="its-own-target-pod"),
        pytest.param([migrating(), ready_pod(domain_annotation=False)], W2, id="own-pod-by-uid-without-domain"),
        pytest.param([migrating(), ready_pod(created_by=False)], W2, id="own-pod-by-owner-uid-only"),
        pytest.param([migrating(target_ready=READY)], W2, id="vmi-migration-state-says-ready"),
        # another VMI's pod carrying vm-a's domain annotation and labels, ready on the target node
        pytest.param([migrating(), ready_pod(runs_for="vm-b")], W1, id="another-vmis-pod-with-this-domain"),
        pytest.param([migrating(), ready_pod(runs_for="vm-b", created_by=False)], W1, id="owner-uid-of-another-vmi"),
        pytest.param([k8s.vmi(NS, "vm-a", W1), ready_pod()], W1, id="no-migration-state-no-move"),
    ],
)
def test_a_route_moves_only_on_kubevirts_own_statements(objects, node):
    p = run(*objects)
    assert nodes_of(p) == {node}
    assert p.rejected == ()


def test_a_pod_whose_label_and_owner_state_different_vmis_is_not_trusted():
    pod = ready_pod()
    pod["metadata"]["ownerReferences"][0]["uid"] = k8s.uid("VirtualMachineInstance", "vm-b", NS)
    assert nodes_of(run(migrating(), pod)) == {W1}


def test_a_vmi_without_uid_trusts_no_pod_only_its_migration_state():
    vmi = migrating()
    del vmi["metadata"]["uid"]
    assert nodes_of(run(vmi, ready_pod())) == {W1}
    vmi = migrating(target_ready=READY)
    del vmi["metadata"]["uid"]
    assert nodes_of(run(vmi, ready_pod())) == {W2}


# --- cross-cluster (decentralized) live migration -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "config", "node"),
    [
        pytest.param({}, {}, W1, id="in-progress-stays-here"),
        pytest.param({"target_ready": READY}, {}, None, id="target-live-in-the-other-cluster-withdrawn"),
        pytest.param({"target_ready": READY, "completed": True}, {}, None, id="completed-withdrawn"),
        pytest.param({"target_ready": READY, "failed": True}, {}, W1, id="failed-stays-here"),
        pytest.param({"abort_requested": True, "abort_status": "Succeeded"}, {}, W1, id="aborted-stays-here"),
        # per-node mode: the source's instance keeps the route until completion (rule 6b: no gap)
        pytest.param({"target_ready": READY}, {"nodeName": W1}, W1, id="per-node-target-live-kept-until-completion"),
        pytest.param({"target_ready": READY, "completed": True}, {"nodeName": W1}, None, id="per-node-completed"),
    ],
)
def test_the_source_of_a_cross_cluster_migration_keeps_the_route_while_the_vm_runs_here(state, config, node):
    p = run(migrating(REMOTE, decentralized="source", **state), **config)
    assert nodes_of(p) == ({node} if node else set())
    assert p.rejected == ()  # never no-node-address for the other cluster's node


@pytest.mark.parametrize(
    ("state", "node"),
    [
        pytest.param({}, None, id="not-here-yet"),
        pytest.param({"target_ready": READY}, W2, id="target-live-here"),
        pytest.param({"target_ready": READY, "completed": True}, W2, id="completed-here"),
        pytest.param({"failed": True}, None, id="failed-stays-in-the-other-cluster"),
    ],
)
def test_the_target_side_of_a_cross_cluster_migration_announces_from_target_ready(state, node):
    ms = k8s.migration_state(REMOTE, W2, vmi="vm-a", decentralized="target", **state)
    p = run(k8s.vmi(NS, "vm-a", W2, migration_state=ms))
    assert nodes_of(p) == ({node} if node else set())
    assert p.rejected == ()


def test_a_local_migration_to_an_unknown_node_is_still_a_fault():
    p = run(migrating("worker-9", target_ready=READY))
    assert {r.reason for r in p.rejected} == {"no-node-address"}
