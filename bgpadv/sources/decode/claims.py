"""IPAMClaims → `views.Claim`: its network, its VM (the one place the claim → VM link is read) and its addresses, by
the rules of `bgpadv.planner.vms`; OVN-K's refusal to allocate them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bgpadv.core import reasons
from bgpadv.core.bounded import describe
from bgpadv.core.model import ObjectRef
from bgpadv.core.views import MAX_CLAIM_IPS, Claim, Problem, VmAddress
from bgpadv.sources.decode.fields import _age, _condition, _key_pair, _map, _shared, _str, _version, _vm_address

CLAIM_KIND = "IPAMClaim"
VM_LABEL = "kubevirt.io/vm"
ALLOCATED_CONDITION = "IPsAllocated"  # an IPAMClaim's (OVN-K's persistentips allocator)
OWNER_KINDS = ("VirtualMachine", "VirtualMachineInstance")


def claim_vm(meta: Mapping) -> tuple[str | None, str | None]:
    """The VMI an IPAMClaim belongs to, from its metadata (rule 2 of `planner.vms`): `(vmi_name, None)`, or
    `(None, problem)`.

    The name is the label `kubevirt.io/vm`, else the name of an ownerReference of kind VirtualMachine or
    VirtualMachineInstance (a VMI is named after its VM; the VMI lives in the claim's namespace). The claim name is
    never parsed. The problem is a message: no link at all, or a label and an ownerReference naming different VMs
    (ipam-extensions sets both to the same name; when they disagree the claim cannot be placed without guessing).
    This is the one place the claim → VM link is read (`views.Claim.vm`).
    """
    labels = meta.get("labels")
    name = labels.get(VM_LABEL) if isinstance(labels, dict) else None
    owners = meta.get("ownerReferences")
    if isinstance(name, str) and name:
        other = _other_owner(owners, name) if owners else None
        if other is None:
            return name, None
        return None, f"label kubevirt.io/vm names {name} but the ownerReference names {other}"
    if isinstance(owners, list):
        for owner in owners:
            if isinstance(owner, dict) and owner.get("kind") in OWNER_KINDS:
                owner_name = owner.get("name")
                if isinstance(owner_name, str) and owner_name:
                    return owner_name, None
    return None, "claim names no VM (label kubevirt.io/vm or a VirtualMachine ownerReference)"


def _other_owner(owners: object, vmi_name: str) -> str | None:
    """The name of a VirtualMachine/VirtualMachineInstance ownerReference that is not `vmi_name`, or None."""
    if not isinstance(owners, list):
        return None
    for owner in owners:
        if isinstance(owner, dict):
            name = owner.get("name")
            if name != vmi_name and owner.get("kind") in OWNER_KINDS and isinstance(name, str) and name:
                return name
    return None


def claim_ips(values: list) -> tuple[tuple[VmAddress, ...], Problem | None]:
    """The addresses of a claim's `status.ips` list (rule 3 of `planner.vms`): each distinct address once,
    malformed entries kept (each refused alone); or the problem that refuses the claim whole (more than
    `MAX_CLAIM_IPS` entries, two distinct addresses of one family). The problem's value is the whole list."""
    if len(values) > MAX_CLAIM_IPS:
        message = f"status.ips lists {len(values)} entries; OVN-K writes at most one address per family"
        return (), Problem(describe(values), reasons.MALFORMED_OBJECT, message)
    items: list[VmAddress] = []
    seen: set[int] = set()
    first: dict[int, object] = {}  # version -> the first address of that family, as written
    for value in values:
        found = _vm_address(value)
        if found.address is None:
            items.append(found)
            continue
        if found.key in seen:
            continue  # the same address listed twice by one object
        seen.add(found.key)
        version = found.address.version
        if version in first:
            message = (
                f"status.ips lists more than one IPv{version} address ({describe(first[version])}, "
                f"{describe(value)}); OVN-K allocates one per family, so the claim is refused whole"
            )
            return (), Problem(describe(values), reasons.MALFORMED_OBJECT, message)
        first[version] = value
        items.append(found)
    return tuple(items), None


def _allocation_refused(status: Mapping) -> Problem | None:
    """OVN-K's refusal of a claim's addresses: its `IPsAllocated` condition False (reason and message verbatim)."""
    condition = _condition(status, ALLOCATED_CONDITION)
    if condition is None or condition.get("status") != "False":
        return None
    reason = describe(condition.get("reason") or "no reason given")
    message = f"OVN-K did not allocate the claim's addresses (IPsAllocated False, {reason})"
    said = condition.get("message")
    if said:
        message += f": {describe(said)}"
    return Problem(reason, reasons.ALLOCATION_REFUSED, message)


def decode_claim(obj: object, key: object = None) -> Claim:
    raw = _map(obj)
    meta_raw = raw.get("metadata")
    meta = _map(meta_raw)
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name or not isinstance(namespace, str) or not namespace:
        key_ns, key_name = _key_pair(key)
        return Claim((key_ns, key_name), ObjectRef(CLAIM_KIND, key_name, key_ns), _version(meta), identified=False)
    namespace = _shared(namespace)
    ref = ObjectRef(CLAIM_KIND, name, namespace, _str(meta.get("uid")), _shared(_str(meta.get("creationTimestamp"))))
    spec = raw.get("spec")
    net_name = spec.get("network") if isinstance(spec, dict) else None
    net_name = _shared(net_name) if isinstance(net_name, str) else net_name
    status = raw.get("status")
    ips = status.get("ips") if isinstance(status, dict) else None
    fields: dict[str, Any] = {"ips_pending": not ips}
    refused = _allocation_refused(status) if isinstance(status, dict) else None
    if refused is not None:
        fields["allocation_refused"] = refused
    if ips and not isinstance(ips, list):
        fields["ips_malformed"] = Problem(describe(ips), reasons.MALFORMED_OBJECT, "status.ips is not a list")
    elif ips:
        fields["ips"], fields["ips_refused"] = claim_ips(ips)
    vm, problem = claim_vm(meta)
    vm = _shared(vm) if vm is not None else None  # the VM's name: one string for its claim, VMI and pods
    if vm is None:
        labels = meta.get("labels")
        label = labels.get(VM_LABEL) if isinstance(labels, dict) else None
        value = label if isinstance(label, str) and label else net_name
        fields["vm_problem"] = Problem(describe(value), reasons.MALFORMED_OBJECT, str(problem))
    return Claim(
        key=(namespace, name),
        ref=ref,
        resource_version=_version(meta),
        age=_age(meta),
        network=net_name if isinstance(net_name, str) and net_name else None,
        network_text=_shared(describe(net_name)),
        deleting=bool(meta.get("deletionTimestamp")),
        vm=vm,
        **fields,
    )
