"""What the controller still derives from the store beside the plan: live-migration handovers (for the handover
metric) and the networks the egress importer fills.

Both are pure functions of the plans, the cluster state and the configuration, each in one place: once the Plan
carries its network index and its handovers, these become reads of the plan.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from bgpadv.config import Config
from bgpadv.core.model import Plan, RouteKind
from bgpadv.core.state import ClusterState
from bgpadv.importer.reconciler import SelectedNetwork, selected_networks
from bgpadv.planner.networks import index_networks
from bgpadv.planner.vms import VMI_KIND, claim_vm

Changed = Collection[tuple[str, object]]
"""(ClusterState field, object key) of what changed since the previous plan."""


def handovers_of(old: Plan | None, new: Plan, state: ClusterState, changed: Changed | None) -> list[tuple[str, float]]:
    """(prefix, wall time the target became ready) of each host route that moved to another node because a live
    migration's target became ready.

    Only VMIs changed in this batch that carry a target-ready time are candidates, so a plan without such a VMI
    costs nothing here; a full plan (start-up, resync, relist: `changed` None or empty) attributes no handover.
    """
    if old is None or not changed:
        return []
    vmis = state.vmis
    ready = {key: wall for field, key in changed if field == "vmis" and (wall := target_ready_wall(vmis.get(key)))}
    if not ready:
        return []
    claims = state.ipam_claims
    # keyed by integers: hashing 100k netaddr objects costs more than this whole comparison
    before = {(r.prefix.version, r.prefix.value): r.node for r in old.routes if r.kind is RouteKind.HOST}
    moved: list[tuple[str, float]] = []
    for route in new.routes:
        if route.kind is not RouteKind.HOST or route.node is None:
            continue
        if before.get((route.prefix.version, route.prefix.value), route.node) == route.node:
            continue
        src = route.source
        if src.kind == VMI_KIND:  # an IPAM-disabled network: the route's source is the VMI itself
            vm: str | None = src.name
        else:
            claim = claims.get((src.namespace, src.name))
            meta = claim.get("metadata") if isinstance(claim, dict) else None
            vm = claim_vm(meta)[0] if isinstance(meta, dict) else None
        wall = ready.get((src.namespace, vm))
        if wall is not None:
            moved.append((str(route.prefix), wall))
    return moved


def target_ready_wall(vmi: dict | None) -> float | None:
    """The wall time a VMI's live-migration target domain became ready (migrationState), if it says so."""
    status = (vmi or {}).get("status")
    state = status.get("migrationState") if isinstance(status, dict) else None
    stamp = state.get("targetNodeDomainReadyTimestamp") if isinstance(state, dict) else None
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def import_networks(state: ClusterState, config: Config) -> dict[str, SelectedNetwork]:
    """The selected networks whose routing tables the egress importer fills (`bgpadv.importer`)."""
    return selected_networks(index_networks(state, config).advertised, state.cudns)
