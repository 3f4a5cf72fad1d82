"""The Kubernetes resources bgpadv reads: one table shared by the sources, the manifests loader and the fake API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Resource:
    """One watched kind. `field` is the attribute of `ClusterState` that holds its objects."""

    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    field: str
    label_selector: str = ""  # what the watch asks for (server-side filter)
    field_selector: str = ""  # likewise (per-node mode: launcher pods of this node only, see `for_node`)
    moves: bool = False  # objects leave this watch when they move to another node (per-node VMIs, `for_node`)
    on_demand: bool = False  # read for the node's VMs only, not listed whole (per-node IPAMClaims, `for_node`)
    optional: bool = True  # a CRD that may be absent (KubeVirt not installed): logged and retried, never fatal
    also_served: tuple[str, ...] = ()  # other versions upstream still serves in the same shape (read as `version`)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_versions(self) -> tuple[str, ...]:
        """Every apiVersion an object of this kind is read in: `api_version`, then the other served ones."""
        return (self.api_version, *(f"{self.group}/{v}" if self.group else v for v in self.also_served))

    def key(self, obj: dict[str, Any]) -> tuple[str, str] | str:
        """The key an object is stored under: name, or (namespace, name) for namespaced kinds. Malformed metadata
        (not a mapping, non-string names) gives an empty name rather than an exception."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        name = meta.get("name")
        name = name if isinstance(name, str) else ""
        if self.namespaced:
            namespace = meta.get("namespace")
            return (namespace if isinstance(namespace, str) else "", name)
        return name


CUDN = Resource("ClusterUserDefinedNetwork", "k8s.ovn.org", "v1", "clusteruserdefinednetworks", False, "cudns")
ROUTE_ADVERTISEMENTS = Resource(
    "RouteAdvertisements", "k8s.ovn.org", "v1", "routeadvertisements", False, "route_advertisements"
)
IPAM_CLAIM = Resource("IPAMClaim", "k8s.cni.cncf.io", "v1alpha1", "ipamclaims", True, "ipam_claims")
VMI = Resource(
    "VirtualMachineInstance", "kubevirt.io", "v1", "virtualmachineinstances", True, "vmis", also_served=("v1alpha3",)
)
"""KubeVirt's CRD serves v1 (storage) and v1alpha3, identical in shape (kubevirt pkg/virt-operator/resource/generate/
components/crds.go: one schema, both versions served); the watch asks for v1 and the API server converts, a manifest
dump may hold either."""
LAUNCHER_POD = Resource(
    "Pod", "", "v1", "pods", True, "pods", label_selector="kubevirt.io=virt-launcher", optional=False
)
NODE = Resource("Node", "", "v1", "nodes", False, "nodes", optional=False)
NAMESPACE = Resource("Namespace", "", "v1", "namespaces", False, "namespaces", optional=False)
"""Read for their labels only: a CUDN's `namespaceSelector` decides which namespaces its claims and guest reports may
come from (`namespace-not-selected`).

Served versions (checked against upstream): ClusterUserDefinedNetwork and RouteAdvertisements k8s.ovn.org/v1 only
(ovn-kubernetes go-controller/pkg/crd/*/v1); IPAMClaim k8s.cni.cncf.io/v1alpha1 only (k8snetworkplumbingwg/ipamclaims
pkg/crd/ipamclaims/v1alpha1); VirtualMachineInstance kubevirt.io/v1 and v1alpha3; Pod, Node, Namespace v1. A
manifest of a watched kind in any other apiVersion is refused with a warning (`unread_version`), never silently."""


NODE_NAME_LABEL = "kubevirt.io/nodeName"
"""The node a VMI runs on, as a label: virt-controller sets it when it hands the VMI to its first node's handler
(pkg/virt-controller/watch/vmi/lifecycle.go), the target's virt-handler moves it to the target node when a live
migration completes, in the same write as `status.nodeName` (pkg/virt-handler/migration-target.go,
`ackMigrationCompletion`). A failed or cancelled migration leaves it on the source."""
MIGRATION_TARGET_LABEL = "kubevirt.io/migrationTargetNodeName"
"""The target node of a live migration in progress: virt-controller sets it once the target pod is scheduled "so
that virt-handler on the target node will receive the vmi" (pkg/virt-controller/watch/migration/migration.go); the
target's virt-handler removes it when the migration is over (completed after moving `kubevirt.io/nodeName`, failed
or cancelled alike: pkg/virt-handler/migration-target.go, `finalCleanup`), in a later write."""


def for_node(resource: Resource, node: str) -> tuple[Resource, ...]:
    """What a per-node instance on `node` watches of `resource`: launcher pods by `spec.nodeName`; VMIs twice, by
    label: those on the node (`kubevirt.io/nodeName`) and those migrating to it (`kubevirt.io/migrationTargetNodeName`,
    set before the target is ready, so the target can announce at target-ready). Both watches fill one view (the
    store keeps an object while either holds it); a VMI that leaves a watch without a deletionTimestamp moved, it was
    not deleted (`moves`: no mass deletion, `bgpadv.safety.failstatic`). IPAMClaims name no node: those of the
    node's VMs only, read when a VM arrives and kept by one filtered watch (`on_demand`, `bgpadv.sources.claims`);
    they leave the view when their VM leaves the node (`moves`). Every other resource whole: custom resources
    select on labels and metadata.name/namespace only, and nothing else names a node (networks, nodes,
    namespaces)."""
    if resource is LAUNCHER_POD:
        return (replace(resource, field_selector=f"spec.nodeName={node}"),)
    if resource is VMI:
        return (
            replace(resource, label_selector=f"{NODE_NAME_LABEL}={node}", moves=True),
            replace(resource, label_selector=f"{MIGRATION_TARGET_LABEL}={node}", moves=True),
        )
    if resource is IPAM_CLAIM:
        return (replace(resource, moves=True, on_demand=True),)
    return (resource,)


def hands_over(resource: Resource) -> bool:
    """`resource` is a per-node instance's watch of the VMIs migrating to its node: a VMI that leaves it (the
    migration over) may arrive through the node's own watch a moment later, when the migration completed."""
    return resource.moves and resource.label_selector.startswith(f"{MIGRATION_TARGET_LABEL}=")


def watched_on(labels: Mapping[str, str], node: str) -> bool:
    """A VMI with these labels is seen by the per-node instance on `node` (`for_node`): it runs there, or migrates
    there."""
    return labels.get(NODE_NAME_LABEL) == node or labels.get(MIGRATION_TARGET_LABEL) == node


ALL: tuple[Resource, ...] = (CUDN, ROUTE_ADVERTISEMENTS, IPAM_CLAIM, VMI, LAUNCHER_POD, NODE, NAMESPACE)
BY_KIND: dict[str, Resource] = {r.kind: r for r in ALL}


def resource_for(obj: dict[str, Any]) -> Resource | None:
    """The watched resource an object belongs to, by apiVersion and kind; None for anything else."""
    res = BY_KIND.get(obj.get("kind") or "")
    if res is None or obj.get("apiVersion") not in res.api_versions:
        return None
    if res is LAUNCHER_POD:
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        if not isinstance(labels, dict) or labels.get("kubevirt.io") != "virt-launcher":
            return None
    return res


def unread_version(obj: dict[str, Any]) -> str | None:
    """Why an object of a watched kind is not read for its apiVersion ("VirtualMachineInstance kubevirt.io/v2 is
    not a version bgpadv reads (kubevirt.io/v1, kubevirt.io/v1alpha3)"), or None (not a watched kind, or read)."""
    kind = obj.get("kind")
    res = BY_KIND.get(kind) if isinstance(kind, str) else None
    version = obj.get("apiVersion")
    if res is None or version in res.api_versions:
        return None
    shown = version if isinstance(version, str) and len(version) <= 64 else repr(version)[:64]
    return f"{res.kind} {shown} is not a version bgpadv reads ({', '.join(res.api_versions)})"


def resource_version(obj: dict[str, Any]) -> str:
    """An object's `metadata.resourceVersion` ("" when it has none)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
