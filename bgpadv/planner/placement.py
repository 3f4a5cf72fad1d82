"""Where a VM runs now (rules 5-6b of `vms`): running, its node, live migration, the per-node hand-over."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bgpadv.core.state import ClusterState
from bgpadv.core.views import LauncherPod, Vmi


class LauncherPods:
    """virt-launcher pods indexed by the VMI they point at (`kubevirt.io/domain` annotation, VirtualMachineInstance
    ownerReference name, `created-by` label uid); `for_vmi` keeps only those KubeVirt says run that VMI
    (`LauncherPod.runs`: by uid).

    `wanted` limits the index to those (namespace, VMI name or uid) keys: the planner only needs the pods of
    migrating VMIs (and of VMIs whose addresses come from their pods), and indexing every pod of a large cluster would
    cost more than the rest of the plan.
    """

    def __init__(self, pods: Mapping[tuple[str, str], LauncherPod], wanted: set[tuple[str, str]] | None = None):
        self._pods = pods
        self._wanted = wanted
        self._by_vmi: dict[tuple[str, str], list[LauncherPod]] | None = None

    def _index(self) -> dict[tuple[str, str], list[LauncherPod]]:
        index: dict[tuple[str, str], list[LauncherPod]] = {}
        wanted = self._wanted
        for pod in self._pods.values():
            ns = pod.namespace
            if ns is None:
                continue
            keys = [*pod.names, *((pod.created_by,) if pod.created_by else ())]
            for k in dict.fromkeys(keys):
                if wanted is None or (ns, k) in wanted:
                    index.setdefault((ns, k), []).append(pod)
        return index

    def for_vmi(self, namespace: str, name: str, uid: str) -> list[LauncherPod]:
        """The launcher pods of the VMI (namespace, name) of uid `uid` (none when the VMI has no uid)."""
        if not uid:
            return []
        if self._by_vmi is None:
            self._by_vmi = self._index()
        pods: list[LauncherPod] = []
        for k in (name, uid):
            for p in self._by_vmi.get((namespace, k), ()):
                if p.runs(uid) and not any(p is q for q in pods):
                    pods.append(p)
        return pods

    def target_ready(self, vmi: Vmi, target_node: str, target_pod: str | None = None) -> bool:
        """True when a launcher pod of this VMI (`LauncherPod.runs`) on the target node says the target domain is live.

        The pod named by `migrationState.targetPod` is looked up directly; the index of every launcher pod is
        built only when that name is missing or names no pod of this VMI.
        """
        namespace, name = vmi.key
        if target_pod:
            pod = self._pods.get((namespace, target_pod))
            if pod is not None and pod.runs(vmi.uid):
                return pod.live_on(target_node)
        return any(pod.live_on(target_node) for pod in self.for_vmi(namespace, name, vmi.uid))


_NO_PODS = LauncherPods({})


def needs_pods(vmi: Vmi) -> bool:
    """True when placing this VMI needs its launcher pods (a migration whose target is not known live yet)."""
    return vmi.migration is not None and vmi.migration.needs_pods


def away(vmi: Vmi, view: str | None = None) -> bool:
    """True when a Running VMI does not run in this cluster now (rule 6d of `vms`): a decentralized (cross-cluster)
    live migration, not given up, whose other side runs the VM. The source side is away once the target domain is
    live (per-node mode, `view`: once the migration completed, as rule 6b keeps the source's route until then); the
    target side until then, and for good when the migration is given up. A side KubeVirt does not name counts as the
    source. Away is a stopped VM here, not a refusal: the other cluster announces it."""
    ms = vmi.migration
    if ms is None or not ms.decentralized:
        return False
    if ms.side == "target":  # here only once the target domain runs here, and for good unless given up
        return ms.given_up or not (ms.completed or ms.target_ready)
    if ms.given_up:
        return False
    return ms.completed or (ms.target_ready and view is None)


def vmi_node(vmi: Vmi, pods: LauncherPods, view: str | None = None) -> str | None:
    """The node the VMI runs on now, by the migration rules of `vms` (None: unknown).

    `view` (per-node mode: the instance's own node) hands a migrating VM over without a gap (rule 6b): while a
    migration from `view` is neither completed nor given up, the VM stays placed on `view` even once the target is
    live, so the source keeps its host route until completion while the target already announces its own."""
    node = _vmi_node(vmi, pods)
    ms = vmi.migration
    if (
        view is not None
        and node != view
        and ms is not None
        and ms.source_node == view
        and not ms.completed
        and not ms.given_up
        and (vmi.node_name == view or not vmi.node_name_set)
    ):
        return view
    return node


def _vmi_node(vmi: Vmi, pods: LauncherPods) -> str | None:
    current = vmi.node_name or None
    ms = vmi.migration
    if ms is None:
        return current
    if ms.given_up:
        return current or ms.source_node
    if ms.decentralized:
        # the other side is another cluster's node (`away` decides whether the VM is here)
        return current if ms.side == "target" else current or ms.source_node
    if ms.completed:
        # the VM runs on the target; status.nodeName may still name the source for a moment (older KubeVirt
        # sets `completed` from the source before the target flips nodeName)
        return ms.target_node or current
    target = ms.target_node
    if target and (ms.target_ready or pods.target_ready(vmi, target, ms.target_pod)):
        return target
    return current or ms.source_node


def placements(
    keys: Iterable[tuple[str, str]], state: ClusterState, view: str | None = None
) -> dict[tuple[str, str], str | None]:
    """Where each VMI runs now: None when it is not Running (or absent), "" when Running on no known node.
    `view`: the per-node instance's node (`vmi_node`)."""
    vmis = state.vmis
    placed: dict[tuple[str, str], str | None] = {}
    migrating: list[tuple[tuple[str, str], Vmi]] = []
    for key in keys:
        vmi = vmis.get(key)
        if vmi is None or not vmi.running or away(vmi, view):
            placed[key] = None
        elif vmi.migration is None:
            node = vmi.node_name
            placed[key] = node if node is not None else ""
        elif vmi.migration.needs_pods:
            migrating.append((key, vmi))
        else:
            placed[key] = vmi_node(vmi, _NO_PODS, view) or ""
    if migrating:
        wanted: set[tuple[str, str]] = set()
        for (ns, name), vmi in migrating:
            wanted.add((ns, name))
            if vmi.uid:
                wanted.add((ns, vmi.uid))
        pods = LauncherPods(state.pods, wanted)
        for key, vmi in migrating:
            placed[key] = vmi_node(vmi, pods, view) or ""
    return placed
