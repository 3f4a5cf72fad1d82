"""The planner: cluster state in, desired routes and refusals out. Pure: no I/O, no logging, no clocks.

`plan()` is the only entry point (and `incremental.IncrementalPlanner`, which returns the same plans). It reads the
typed views of `bgpadv.core.views` only (decoded at the edge, `bgpadv.sources.decode`). The rules live in the
modules that apply them, each with its docstring: `networks` (CUDN selection, subnet routes), `vms` (host routes,
and the rules of `claims`, `guest_reports`, `candidates`, `conflicts`, `placement`), `nodes` (next-hop addresses)
and `checks` (address validation; the stable reason codes of `bgpadv.core.reasons`). The plan carries its context
(`PlanContext`: the network and node indexes its consumers would otherwise derive again).
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator
from contextlib import contextmanager

from bgpadv.config import Config
from bgpadv.core.model import Handover, Plan, PlanContext
from bgpadv.core.space import EMPTY_SPACE, InfrastructureSpace
from bgpadv.core.state import ClusterState
from bgpadv.planner.networks import Networks, advertised_subnets, index_networks, planned_networks, subnet_routes
from bgpadv.planner.nodes import NodeInfo, index_nodes, node_refusals
from bgpadv.planner.space import infrastructure_space, next_hop_exclusions
from bgpadv.planner.vms import host_routes

__all__ = ["plan"]


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the planner runs (restored afterwards, even on error).

    The planner allocates about ten objects per announced address, none of them in reference cycles, while the
    cluster state it reads holds millions of tracked objects: every full collection triggered by those allocations
    walks the whole state, which doubled plan() time at 100,000 claims. Reference counting still frees everything;
    only the cycle detector waits until the plan is built. If the collector was already disabled, it stays so.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def plan_context(
    state: ClusterState,
    networks: Networks,
    nodes: dict[str, NodeInfo],
    handovers: tuple[Handover, ...] = (),
    space: InfrastructureSpace = EMPTY_SPACE,
) -> PlanContext:
    """What a plan carries for its consumers (`PlanContext`): the network index, the node index and every node
    address (the decoder's `Node.addresses`, the guard's rule 5)."""
    return PlanContext(
        networks=planned_networks(networks),
        next_hops={name: info.addresses for name, info in nodes.items()},
        node_addresses={node.name: node.addresses for node in state.nodes.values() if node.name},
        handovers=handovers,
        space=space,
        node_ages={node.name: node.age for node in state.nodes.values() if node.name},
    )


def plan(state: ClusterState, config: Config, node: str | None = None) -> Plan:
    """Compute the desired routes and the refusals for a cluster state.

    `node` (default `config.node_name`) asks for one node's view (per-node mode, `Plan.for_node`): its Layer3 host
    subnets, every Layer2 subnet, and the host routes of the VMs placed on it, a VM migrating away included until
    its migration completes (`vms` rule 6b); refusals are kept whole.
    """
    if node is not None and node != config.node_name:
        config = dataclasses.replace(config, node_name=node)
    with cyclic_gc_paused():
        space = infrastructure_space(state.nodes, config)
        networks = index_networks(state, config, space)
        nodes = index_nodes(state.nodes, advertised_subnets(networks), *next_hop_exclusions(config), config.node_name)
        routes, refusals = subnet_routes(state, config, networks, nodes)
        hosts, host_refusals = host_routes(state, config, networks, nodes)
        context = plan_context(state, networks, nodes, space=space)
        rejected = [*networks.refusals, *node_refusals(nodes), *refusals, *host_refusals]
        result = Plan.build([*routes, *hosts], rejected, context)
    return result.for_node(config.node_name) if config.node_name else result
