"""The plan carries its context (`Plan.context`): what the guard, the importer hand-off and the handover metric read
instead of deriving it again.

Scope: the advertised networks (subnets, OVN-K network ID), each node's next hops and every node address, and node
space (one rule for the planner's network refusal and the guard's rule 5b: an ExternalIP is node space for both, and
the guard refuses only the bad network's routes); the incremental planner
keeps the same mappings while nothing moved (the guard caches by identity) and names the host routes that moved to
another node (handovers, with the VM and its migration's target-ready time); context is no part of plan equality.
"""

from __future__ import annotations

import dataclasses

from bgpadv.core import resources
from bgpadv.core.model import Plan, PlannedNetwork
from bgpadv.core.prefix import Address, Prefix
from bgpadv.planner import checks, plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.safety.guard import Guard
from bgpadv.sources.decode.dispatch import decode
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

EDGE = Prefix.parse("172.20.0.96/28")


def _cluster(*extra: dict):
    node1 = k8s.node("worker-1", "10.0.0.11", "fd00::11")
    node1["status"]["addresses"].append({"type": "ExternalIP", "address": "172.20.0.99"})
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
    ctx = plan(_cluster(), k8s.config()).context
    assert ctx.networks["vmnet-a"].subnets == (Prefix.parse("192.168.100.0/24"),)
    assert ctx.networks["vmnet-a"].network_id == 7
    assert ctx.next_hops["worker-1"][4] == Address.parse("10.0.0.11")
    assert Address.parse("172.20.0.99") in ctx.node_addresses["worker-1"]
    assert ctx.handovers == ()


def test_a_network_over_a_nodes_external_ip_is_refused_by_the_planner_and_the_guard_alike():
    # a CUDN laid over worker-1's ExternalIP 172.20.0.99 (no InternalIP inside it, no host-cidrs entry)
    bad = k8s.cudn_layer2("edge", ["172.20.0.96/28"], labels=k8s.ADVERTISED)
    state = _cluster(
        bad,
        k8s.ipam_claim(NS, "vm-x.default", "vm-x", "cluster_udn_edge", ["172.20.0.100/28"]),
        k8s.vmi(NS, "vm-x", "worker-2"),
    )
    p = plan(state, k8s.config())
    assert {(r.source.name, r.reason) for r in p.rejected} == {
        ("edge", checks.OVERLAPS_NODE_NETWORK),
        ("vm-x.default", checks.OVERLAPS_NODE_NETWORK),
    }
    assert "edge" not in p.context.networks
    # a (buggy) planner that advertised it anyway: the guard refuses the network's routes with the planner's reason
    # and keeps every other network's routes, their next hops included
    buggy = dataclasses.replace(p.context, networks={**p.context.networks, "edge": PlannedNetwork("edge", (EDGE,))})
    good = next(r for r in p.routes if r.prefix == Prefix.parse("192.168.100.10/32"))
    subnet = dataclasses.replace(p.routes[0], prefix=EDGE, network="edge")
    vm = dataclasses.replace(good, prefix=Prefix.parse("172.20.0.100/32"), network="edge")
    guard = Guard(k8s.config())
    guarded = guard.check([subnet, vm, good], guard.context(Plan(p.routes, p.rejected, buggy)))
    assert [(r.value, r.reason) for r in guarded.rejected] == [
        ("172.20.0.96/28", checks.OVERLAPS_NODE_NETWORK),
        ("172.20.0.100/32", checks.OVERLAPS_NODE_NETWORK),
    ]
    assert guarded.per_peer["10.0.0.1"] == (good,)


def test_the_incremental_planner_names_the_routes_that_moved_and_keeps_unmoved_mappings():
    state = _cluster()
    planner = IncrementalPlanner(k8s.config())
    first = planner.plan(state, None)
    ms = k8s.migration_state("worker-1", "worker-2", target_ready="2025-03-01T10:00:05Z", vmi="vm-a")
    state.vmis[(NS, "vm-a")] = decode(resources.VMI, k8s.vmi(NS, "vm-a", "worker-1", migration_state=ms))
    second = planner.plan(state, {("vmis", (NS, "vm-a"))})
    assert second == plan(state, k8s.config())  # context is no part of equality
    assert second.context.networks is first.context.networks
    assert second.context.node_addresses is first.context.node_addresses
    (handover,) = second.context.handovers
    assert (handover.prefix, handover.vmi, handover.from_node, handover.node) == (
        Prefix.parse("192.168.100.10/32"),
        (NS, "vm-a"),
        "worker-1",  # where the previous plan had it: the loop reads it here, not from a pass over that plan
        "worker-2",
    )
    assert handover.target_ready_at is not None
    third = planner.plan(state, set())
    assert third.context.handovers == ()
