"""The cluster state the planner reads: watched objects indexed by kind and key (bottom layer: sources/ builds it).

Objects are the plain dicts the API returns (camelCase JSON). The planner treats them as read-only; the store
that owns them hands out a `ClusterState` whose mappings it alone mutates, between plans, on one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bgpadv.core import resources

Namespaced = tuple[str, str]


@dataclass(frozen=True)
class ClusterState:
    cudns: Mapping[str, dict] = field(default_factory=dict)
    route_advertisements: Mapping[str, dict] = field(default_factory=dict)
    ipam_claims: Mapping[Namespaced, dict] = field(default_factory=dict)
    vmis: Mapping[Namespaced, dict] = field(default_factory=dict)
    pods: Mapping[Namespaced, dict] = field(default_factory=dict)  # virt-launcher pods only
    nodes: Mapping[str, dict] = field(default_factory=dict)
    namespaces: Mapping[str, dict] = field(default_factory=dict)  # for their labels (CUDN namespaceSelector)

    @staticmethod
    def from_objects(objects: Iterable[dict]) -> tuple[ClusterState, list[dict]]:
        """Sort objects into a state by apiVersion/kind; returns the state and the objects it did not take."""
        buckets: dict[str, dict] = {r.field: {} for r in resources.ALL}
        ignored: list[dict] = []
        for obj in objects:
            res = resources.resource_for(obj) if isinstance(obj, dict) else None
            if res is None:
                ignored.append(obj)
                continue
            buckets[res.field][res.key(obj)] = obj
        return ClusterState(**buckets), ignored
