"""The plan carries its context (`Plan.context`): what the guard, the importer hand-off and the handover metric read
instead of deriving it again.

Scope: the advertised networks (subnets, OVN-K network ID), each node's next hops and every node address (one rule
for the planner's rule 8 and the guard's rule 5: an ExternalIP is a node address for both); the incremental planner
keeps the same mappings while nothing moved (the guard caches by identity) and names the host routes that moved to
another node (handovers, with the VM and its migration's target-ready time); context is no part of plan equality.
"""

from __future__ import annotations

import dataclasses

from bgpadv.core import resources
from bgpadv.core.prefix import Address, Prefix
from bgpadv.planner import checks, plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.safety.guard import Guard
from bgpadv.sources.decode import decode
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

CONFIG = k8s.config()


def _cluster(*extra: dict):
    node1 = k8s.node("worker-1", "10.0.0.11", "fd00::11")
    node1["status"]["addresses"].append({"type": "ExternalIP", "address": "192.168.100.99"})
    cudn = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED)
    cudn["metadata"]["annotations"] = {"k8s.ovn.org/network-id": "7"}
    return k8s.state(
        node1,
        k8s.node("worker-2", "10.0.0.12"),
        cudn,
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.10/24"]),
        k8s.vmi(NS, "vm-a", "worker-1"),
        *extra,
    )


def test_the_plan_carries_networks_next_hops_and_every_node_address():
    ctx = plan(_cluster(), CONFIG).context
    assert ctx.networks["vmnet-a"].subnets == (Prefix.parse("192.168.100.0/24"),)
    assert ctx.networks["vmnet-a"].network_id == 7
    assert ctx.next_hops["worker-1"][4] == Address.parse("10.0.0.11")
    assert Address.parse("192.168.100.99") in ctx.node_addresses["worker-1"]
    assert ctx.handovers == ()


def test_a_vm_on_a_nodes_external_ip_is_refused_by_the_planner_and_the_guard_alike():
    state = _cluster(
        k8s.ipam_claim(NS, "vm-x.default", "vm-x", "cluster_udn_vmnet-a", ["192.168.100.99/24"]),
        k8s.vmi(NS, "vm-x", "worker-2"),
    )
    p = plan(state, CONFIG)
    refused = [(r.value, r.reason) for r in p.rejected if r.source.name == "vm-x.default"]
    assert refused == [("192.168.100.99/24", checks.COVERS_INFRASTRUCTURE)]
    guard = Guard(CONFIG)  # a (buggy) planner's host route for the same address: the guard holds the line
    good = next(r for r in p.routes if r.prefix == Prefix.parse("192.168.100.10/32"))
    hijack = dataclasses.replace(good, prefix=Prefix.parse("192.168.100.99/32"))
    guarded = guard.check([hijack], guard.context(p))
    assert [r.reason for r in guarded.rejected] == [checks.COVERS_INFRASTRUCTURE]


def test_the_incremental_planner_names_the_routes_that_moved_and_keeps_unmoved_mappings():
    state = _cluster()
    planner = IncrementalPlanner(CONFIG)
    first = planner.plan(state, None)
    ms = k8s.migration_state("worker-1", "worker-2", target_ready="2025-03-01T10:00:05Z", vmi="vm-a")
    state.vmis[(NS, "vm-a")] = decode(resources.VMI, k8s.vmi(NS, "vm-a", "worker-1", migration_state=ms))
    second = planner.plan(state, {("vmis", (NS, "vm-a"))})
    assert second == plan(state, CONFIG)  # context is no part of equality
    assert second.context.networks is first.context.networks
    assert second.context.node_addresses is first.context.node_addresses
    (handover,) = second.context.handovers
    assert (handover.prefix, handover.vmi, handover.node) == (
        Prefix.parse("192.168.100.10/32"),
        (NS, "vm-a"),
        "worker-2",
    )
    assert handover.target_ready_at is not None
    third = planner.plan(state, set())
    assert third.context.handovers == ()
