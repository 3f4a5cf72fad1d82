"""The cluster state the planner reads: watched objects, as views (`bgpadv.core.views`), by kind and key.

Every object is decoded once, when it arrives (`bgpadv.sources.decode`: the store event by event,
`dispatch.state_from_objects` for manifests, tests and benchmarks); no raw dict travels past the sources. The store
that owns the mappings hands out a `ClusterState` it alone mutates, between plans, on one thread, and replaces an
object's view when the object changes (never mutates one: views are immutable), so the planner caches by identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bgpadv.core.views import Claim, LauncherPod, Namespace, Network, Node, RouteAdvertisement, Vmi

Namespaced = tuple[str, str]


@dataclass(frozen=True)
class ClusterState:
    cudns: Mapping[str, Network] = field(default_factory=dict)
    route_advertisements: Mapping[str, RouteAdvertisement] = field(default_factory=dict)
    ipam_claims: Mapping[Namespaced, Claim] = field(default_factory=dict)
    vmis: Mapping[Namespaced, Vmi] = field(default_factory=dict)
    pods: Mapping[Namespaced, LauncherPod] = field(default_factory=dict)  # virt-launcher pods only
    nodes: Mapping[str, Node] = field(default_factory=dict)
    namespaces: Mapping[str, Namespace] = field(default_factory=dict)  # for their labels (CUDN namespaceSelector)
