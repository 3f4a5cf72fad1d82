"""What each watched object says of what `bgpadv explain` was asked about, in one line for people: an IPAMClaim, a
VirtualMachineInstance, a virt-launcher pod, a ClusterUserDefinedNetwork, a Node."""

from __future__ import annotations

from collections.abc import Iterable

from bgpadv.core.model import ObjectRef
from bgpadv.core.prefix import Address
from bgpadv.core.views import Claim, LauncherPod, Network, Node, VmAddress, Vmi
from bgpadv.planner.claims import Referenced


def _texts(addresses: Iterable[VmAddress]) -> str:
    return ", ".join(a.text for a in addresses)


def describe_claim(claim: Claim, referenced: Referenced = ((), ())) -> str:
    """One claim's line; `referenced`: what the running launcher pods say of it (`claims.References.of`)."""
    pending = "empty (allocation pending)"
    if claim.allocation_refused is not None:
        pending = f"empty (OVN-K refused: {claim.allocation_refused.value})"
    ips = _texts(claim.ips) or ("not a list" if claim.ips_malformed else pending)
    vm = claim.vm or (claim.vm_problem.message if claim.vm_problem else "none")
    referencing, mine = referenced
    if len(referencing) > 1:
        vm = f"none: the launcher pods of VMs {', '.join(referencing)} all reference it (label or owner: {vm})"
    elif referencing and referencing[0] != claim.vm:
        vm = f"{referencing[0]}, whose launcher pod references it (label or owner: {vm})"
    elif not referencing and mine:
        vm = f"{vm} by label or owner, whose launcher pod references IPAMClaim {', '.join(mine)} instead"
    parts = [f"spec.network {claim.network_text or '-'}", f"status.ips {ips}", f"VM {vm}"]
    if claim.deleting:
        parts.append("being deleted")
    if claim.ref.created:
        parts.append(f"created {claim.ref.created}")
    return "; ".join(parts)


def describe_vmi(vmi: Vmi, address: Address | None = None) -> str:
    parts = [f"phase {vmi.phase or '-'}", f"node {vmi.node_name or '-'}"]
    if vmi.deleting:
        parts.append("being deleted (stopping)")
    m = vmi.migration
    if m is not None:
        state = (
            "completed"
            if m.completed
            else "failed or aborted"
            if m.given_up
            else "target ready"
            if m.target_ready
            else "target not ready yet"
        )
        parts.append(f"migration {m.source_node or '?'} -> {m.target_node or '?'} ({state})")
    if address is not None:
        for iface in vmi.interfaces:
            if any(a.address == address for a in iface.addresses or ()):
                source = "guest agent" if iface.guest else "not the guest agent"
                parts.append(f"interface {iface.name} reports it ({source})")
    return "; ".join(parts)


def describe_pod(pod: LauncherPod, vmi_uid: str | None = None) -> str:
    """A launcher pod in a few words; with `vmi_uid`, whether KubeVirt binds it to that VMI (`LauncherPod.runs`): a
    pod that only names the VMI (domain annotation, owner name) is listed but never places it (migration trust)."""
    parts = [f"node {pod.node or '-'}", "finished" if pod.finished else "running"]
    if pod.target_ready:
        parts.append("migration target ready")
    if vmi_uid is not None and not pod.runs(vmi_uid):
        stated = ", ".join(u for u in (pod.created_by, pod.owner_uid) if u) or "none"
        parts.append(f"names the VMI but is not its pod (uids stated {stated}): ignored for placement")
    return "; ".join(parts)


def describe_network(view: Network, status: str) -> str:
    subnets = " ".join(str(s) for s in view.subnets) or "-"
    kind = " ".join(x for x in (view.topology, view.role) if x) or "-"
    return f"{kind}; subnets {subnets}; {status}"


def describe_node(view: Node, address: Address | None = None) -> str:
    hops = ", ".join(str(a) for a in dict.fromkeys(view.next_hop_candidates)) or "none"
    text = f"next-hop candidates {hops}"
    if address is not None and address in view.addresses:
        text += f"; {address} is an address of this node"
    return text


def object_ref(kind: str, key: tuple[str, str] | str) -> ObjectRef:
    """The reference of an object of `kind` by its key: (namespace, name), or a cluster-scoped name."""
    if isinstance(key, tuple):
        return ObjectRef(kind, key[1], key[0])
    return ObjectRef(kind, key)
