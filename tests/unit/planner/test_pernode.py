"""Per-node mode: what the instance on one node announces, and where it learns its node name.

Scope: the per-node view of a plan (`plan(..., node)`, `Config.node_name`): Layer2 subnets on every node (ECMP at
the ToR), Layer3 host subnets and VM host routes on their own node only, the live-migration hand-off (the target
announces from target-ready, the source until completion: both instances together never leave the ToR without a
path), the node name's sources (`nodeName`, `BGPADV_NODE_NAME`) and what a per-node instance watches. The
incremental planner's equality with plan() for a per-node configuration is in test_incremental.py.
"""

from __future__ import annotations

import pytest

from bgpadv.config import ConfigError, parse
from bgpadv.core import resources
from bgpadv.planner import plan
from bgpadv.runtime.controller import watched_resources
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

W1, W2, W3 = "worker-1", "worker-2", "worker-3"
ADDRESS = {W1: "10.0.0.11", W2: "10.0.0.12", W3: "10.0.0.13"}
NODES = [
    k8s.node(W1, "10.0.0.11", node_subnets={"cluster_udn_vmnet-l3": "10.132.1.0/24"}),
    k8s.node(W2, "10.0.0.12", node_subnets={"cluster_udn_vmnet-l3": "10.132.2.0/24"}),
    k8s.node(W3, "10.0.0.13"),
]
LAYER2 = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED)
LAYER3 = k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=k8s.ADVERTISED)
READY = "2025-03-01T10:00:10Z"


def vm(name: str, ip: str, node: str | None, migration: dict | None = None, pods: tuple[dict, ...] = ()) -> list:
    claim = k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/24"])
    return [claim, k8s.vmi(NS, name, node, migration_state=migration), *pods]


def announced(view: str, *objects) -> dict[str, str | None]:
    """prefix -> next hop ("self" for the session's address) of what the instance on `view` announces."""
    p = plan(k8s.state(NODES, LAYER2, LAYER3, *objects), k8s.config(nodeName=view))
    return {str(r.prefix): str(r.next_hop) if r.next_hop else "self" for r in p.routes}


SUBNETS = {"192.168.100.0/24": "self"}  # the Layer2 subnet: every node announces it, next hop itself


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        pytest.param(
            W1,
            {**SUBNETS, "10.132.1.0/24": "10.0.0.11", "192.168.100.10/32": "10.0.0.11"},
            id="worker-1: Layer2 subnet, its Layer3 host subnet, its VM",
        ),
        pytest.param(
            W2,
            {**SUBNETS, "10.132.2.0/24": "10.0.0.12", "192.168.100.20/32": "10.0.0.12"},
            id="worker-2: Layer2 subnet, its Layer3 host subnet, its VM",
        ),
        pytest.param(W3, SUBNETS, id="worker-3: no host subnet, no VM: the Layer2 subnet only"),
    ],
)
def test_an_instance_announces_layer2_subnets_its_own_layer3_host_subnet_and_its_own_vms(view, expected):
    objects = [
        *vm("vm-a", "192.168.100.10", W1),
        *vm("vm-b", "192.168.100.20", W2),
        *vm("vm-c", "192.168.100.30", None),
    ]
    assert announced(view, *objects) == expected


def test_a_vm_running_on_no_known_node_is_announced_by_no_instance():
    objects = vm("vm-a", "192.168.100.10", "")
    assert all("192.168.100.10/32" not in announced(n, *objects) for n in (W1, W2, W3))


def _target_pod(ready: bool) -> dict:
    return k8s.launcher_pod(
        NS, "vm-a", W2, suffix="tgt01", target_ready=READY if ready else None, migration_job="migration-1"
    )


# (phase of a migration of vm-a from worker-1 to worker-2, VMI status.nodeName, migrationState, pods) -> who announces
MIGRATION = [
    pytest.param(W1, k8s.migration_state(W1, W2, vmi="vm-a"), (), {W1}, id="started: source only"),
    pytest.param(
        W1, k8s.migration_state(W1, W2, vmi="vm-a"), (_target_pod(False),), {W1}, id="target pod not ready: source only"
    ),
    pytest.param(
        W1,
        k8s.migration_state(W1, W2, vmi="vm-a"),
        (_target_pod(True),),
        {W1, W2},
        id="target pod ready (annotation): both",
    ),
    pytest.param(
        W1, k8s.migration_state(W1, W2, vmi="vm-a", target_ready=READY), (), {W1, W2}, id="target ready (VMI): both"
    ),
    pytest.param(
        W1,
        k8s.migration_state(W1, W2, vmi="vm-a", target_ready=READY, completed=True),
        (),
        {W2},
        id="completed, nodeName still the source: target only",
    ),
    pytest.param(
        W2,
        k8s.migration_state(W1, W2, vmi="vm-a", target_ready=READY, completed=True),
        (),
        {W2},
        id="completed, nodeName flipped: target only",
    ),
    pytest.param(
        W2, k8s.migration_state(W1, W2, vmi="vm-a", target_ready=READY), (), {W2}, id="nodeName flipped: target only"
    ),
    pytest.param(W1, k8s.migration_state(W1, W2, vmi="vm-a", failed=True), (), {W1}, id="failed: source only"),
    pytest.param(
        W1,
        k8s.migration_state(W1, W2, vmi="vm-a", target_ready=READY, abort_status="Succeeded"),
        (),
        {W1},
        id="aborted: source only",
    ),
]


@pytest.mark.parametrize(("node_name", "migration", "pods", "announcers"), MIGRATION)
def test_a_migrating_vm_is_announced_by_the_source_until_completion_and_by_the_target_from_target_ready(
    node_name, migration, pods, announcers
):
    objects = vm("vm-a", "192.168.100.10", node_name, migration, pods)
    got = {n for n in (W1, W2, W3) if "192.168.100.10/32" in announced(n, *objects)}
    assert got == announcers
    for n in got:  # each announces itself as the next hop
        assert announced(n, *objects)["192.168.100.10/32"] == ADDRESS[n]


def test_the_handoff_sequence_never_leaves_the_vm_without_an_announcing_instance():
    """The phases in the order KubeVirt goes through them: at every step at least one instance announces."""
    steps = [MIGRATION[i].values for i in (0, 1, 2, 3, 4, 5)]
    for node_name, migration, pods, _ in steps:
        objects = vm("vm-a", "192.168.100.10", node_name, migration, pods)
        assert any("192.168.100.10/32" in announced(n, *objects) for n in (W1, W2))


def test_cluster_mode_places_a_migrating_vm_on_the_target_from_target_ready():
    """The whole-cluster view is unchanged: one path, the target's, once the target is live."""
    objects = vm("vm-a", "192.168.100.10", W1, k8s.migration_state(W1, W2, vmi="vm-a", target_ready=READY))
    p = plan(k8s.state(NODES, LAYER2, LAYER3, *objects), k8s.config())
    assert {str(r.next_hop) for r in p.routes if str(r.prefix) == "192.168.100.10/32"} == {"10.0.0.12"}


# --- the node name ------------------------------------------------------------------------------------------------

BASE = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


def test_per_node_mode_takes_the_node_name_from_the_environment():
    cfg = parse({**BASE, "mode": "per-node"}, environ={"BGPADV_NODE_NAME": W2})
    assert cfg.node_name == W2


def test_the_environments_node_name_alone_selects_per_node_mode():
    """The per-node DaemonSet sets BGPADV_NODE_NAME and shares the Deployment's configuration unchanged."""
    assert parse(BASE, environ={"BGPADV_NODE_NAME": W2}).node_name == W2
    assert parse(BASE, environ={"BGPADV_NODE_NAME": ""}).node_name is None


def test_node_name_in_the_file_selects_per_node_mode_and_may_repeat_the_environment():
    assert parse({**BASE, "nodeName": W1}, environ={}).node_name == W1
    assert parse({**BASE, "nodeName": W1}, environ={"BGPADV_NODE_NAME": W1}).node_name == W1


def test_explicit_cluster_mode_ignores_the_environment():
    assert parse(BASE, environ={}).node_name is None
    assert parse({**BASE, "mode": "cluster"}, environ={"BGPADV_NODE_NAME": W2}).node_name is None


@pytest.mark.parametrize(
    ("raw", "environ", "problem"),
    [
        pytest.param(
            {"mode": "per-node"},
            {},
            "mode: per-node mode needs the node name: set BGPADV_NODE_NAME (downward API) or nodeName",
            id="neither",
        ),
        pytest.param(
            {"nodeName": W1},
            {"BGPADV_NODE_NAME": W2},
            "nodeName: 'worker-1' differs from BGPADV_NODE_NAME='worker-2'",
            id="file and environment disagree",
        ),
        pytest.param(
            {"mode": "cluster", "nodeName": W1},
            {},
            "nodeName: is only for mode: per-node (cluster mode announces the whole cluster)",
            id="node name in cluster mode",
        ),
        pytest.param({"mode": "daemonset"}, {}, "mode: must be cluster or per-node, got 'daemonset'", id="bad mode"),
    ],
)
def test_an_unknown_or_contradictory_node_name_is_a_configuration_error(raw, environ, problem):
    with pytest.raises(ConfigError) as err:
        parse({**BASE, **raw}, environ=environ)
    assert err.value.problems == [problem]


# --- what an instance watches -------------------------------------------------------------------------------------


def test_a_per_node_instance_watches_its_nodes_launcher_pods_and_vmis_and_everything_else_whole():
    watched = watched_resources(k8s.config(nodeName=W2))
    selectors = sorted((r.plural, r.label_selector, r.field_selector) for r in watched)
    assert selectors == [
        ("clusteruserdefinednetworks", "", ""),
        ("ipamclaims", "", ""),
        ("namespaces", "", ""),
        ("nodes", "", ""),
        ("pods", "kubevirt.io=virt-launcher", "spec.nodeName=worker-2"),
        ("virtualmachineinstances", "kubevirt.io/migrationTargetNodeName=worker-2", ""),
        ("virtualmachineinstances", "kubevirt.io/nodeName=worker-2", ""),
    ]
    assert [r.moves for r in watched if r.plural == "virtualmachineinstances"] == [True, True]


def test_a_cluster_instance_watches_every_launcher_pod():
    watched = {r.plural: r for r in watched_resources(k8s.config())}
    assert watched["pods"] is resources.LAUNCHER_POD
    assert watched["pods"].field_selector == ""
    assert watched["virtualmachineinstances"] is resources.VMI
