"""What the controller reads from the plan beside its routes: live-migration handovers (for the handover metric) and
the networks the egress importer fills.

Both are reads of the plan's context (`Plan.context`): the planner computed them once (the handovers by the
incremental planner, with each VM and its migration's target-ready time as the decoder parsed them; the advertised
networks with OVN-K's network IDs), so nothing here reads the cluster state again.
"""

from __future__ import annotations

from collections.abc import Collection

from bgpadv.config import Config
from bgpadv.core.model import Plan
from bgpadv.core.prefix import Address
from bgpadv.importer.reconciler import SelectedNetwork, selected_networks

Changed = Collection[tuple[str, object]]
"""(ClusterState field, object key) of what changed since the previous plan."""


def handovers_of(old: Plan | None, new: Plan, changed: Changed | None, config: Config) -> list[tuple[str, float]]:
    """(prefix, wall time the target became ready) of each host route that moved to another node because a live
    migration's target became ready.

    The planner names the host routes that moved (`Plan.context.handovers`); a route counts when its VMI changed in
    this batch, its migration says when the target became ready, and the previous plan had it on another node (in
    per-node mode: a route of this node's plan). A full plan (start-up, resync, relist: `changed` None or empty)
    attributes no handover, and a plan without such a route costs nothing here.
    """
    if old is None or not changed:
        return []
    vmis = {key for field, key in changed if field == "vmis"}
    view = config.node_name
    moved = [
        h
        for h in new.context.handovers
        if h.target_ready_at and h.node and h.vmi in vmis and (view is None or h.node == view)
    ]
    if not moved:
        return []
    out: list[tuple[str, float]] = []
    for h in moved:
        # the planner's previous output for the prefix, which the previous plan held (in per-node mode: only a
        # route of this node): read from the handover, never by a pass over the previous plan's routes
        previous = h.from_node if view is None or h.from_node == view else None
        if previous is not None and previous != h.node and h.target_ready_at is not None:
            out.append((str(h.prefix), h.target_ready_at))
    return out


def import_networks(plan: Plan) -> dict[str, SelectedNetwork]:
    """The selected networks whose routing tables the egress importer fills (`bgpadv.importer`): the plan's."""
    return selected_networks(plan.context.networks)


def node_addresses(plan: Plan) -> frozenset[Address]:
    """Every address of every node (the plan's context): next hops the egress importer refuses."""
    return frozenset(a for addresses in plan.context.node_addresses.values() for a in addresses)
