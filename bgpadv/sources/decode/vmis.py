"""VirtualMachineInstances → `views.Vmi`: its node, phase, network attachments and guest-reported addresses (bounded
before they are parsed), and the one reading of a live migration (`decode_migration`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from bgpadv.core import reasons
from bgpadv.core.addressing import special_range_reason
from bgpadv.core.bounded import describe
from bgpadv.core.model import ObjectRef
from bgpadv.core.views import MAX_GUEST_ADDRESSES, Attachment, GuestInterface, Migration, Problem, VmAddress, Vmi
from bgpadv.sources.decode.fields import (
    _OPT_IN,
    _age,
    _key_pair,
    _labels,
    _list,
    _map,
    _nonempty,
    _shared,
    _str,
    _version,
    _vm_address,
)

VMI_KIND = "VirtualMachineInstance"
_TAIL = 9  # entries kept beyond MAX_GUEST_ADDRESSES: a refusal shows 8 entries and "..." (bounded.brief)
_SCAN = 4 * MAX_GUEST_ADDRESSES  # guest-reported entries parsed per interface (the plausible ones are kept)
_MIGRATION_TIMES = ("startTimestamp", "endTimestamp", "targetNodeDomainReadyTimestamp")


def _wall(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _side(source_state: Mapping, target_state: Mapping, uid: str, node: object, source_node: object) -> str | None:
    """Which side of a decentralized migration this VMI is: KubeVirt names each side's VMI uid
    (`sourceState/targetState.virtualMachineInstanceUID`); without them, the side whose node is the VMI's."""
    if uid:
        if source_state.get("virtualMachineInstanceUID") == uid:
            return "source"
        if target_state.get("virtualMachineInstanceUID") == uid:
            return "target"
    if isinstance(node, str) and node:
        if node in (source_node, source_state.get("node")):
            return "source"
        if node == target_state.get("node"):
            return "target"
    return None


def decode_migration(raw: object, uid: str = "", node: object = None) -> Migration | None:
    """A VMI's `status.migrationState` (None when it is not a mapping): the one reading of a live migration.
    `uid`, `node`: the VMI's, to tell the side of a decentralized migration."""
    if not isinstance(raw, dict):
        return None
    ready = raw.get("targetNodeDomainReadyTimestamp")
    source_state, target_state = raw.get("sourceState"), raw.get("targetState")
    side = None
    decentralized = (
        isinstance(source_state, dict)
        and isinstance(target_state, dict)
        and ((source_state.get("syncAddress") is None) != (target_state.get("syncAddress") is None))
    )
    if decentralized:
        assert isinstance(source_state, dict) and isinstance(target_state, dict)
        side = _side(source_state, target_state, uid, node, raw.get("sourceNode"))
        ready = ready or target_state.get("domainReadyTimestamp")
    return Migration(
        source_node=_nonempty(raw.get("sourceNode")),
        target_node=_nonempty(raw.get("targetNode")),
        target_pod=_nonempty(raw.get("targetPod")),
        completed=raw.get("completed") is True,
        given_up=raw.get("failed") is True or raw.get("abortStatus") == "Succeeded",
        target_ready=bool(ready),
        target_ready_at=_wall(ready),
        timestamps=tuple(s for s in (raw.get(n) for n in _MIGRATION_TIMES) if isinstance(s, str)),
        decentralized=decentralized,
        side=side,
    )


def _guest_reported(iface: Mapping) -> bool:
    """False when `infoSource` is given and does not name the guest agent: then the addresses come from the pod's
    network status (OVN-K assigns none on an IPAM-less network), not from the guest. No `infoSource` (KubeVirt
    before 0.59): taken."""
    source = iface.get("infoSource")
    if source is None:
        return True
    return isinstance(source, str) and "guest-agent" in (part.strip() for part in source.split(","))


def _plausible(a: VmAddress) -> bool:
    """A parsed address outside every special range (link-local, loopback, ...): one the planner may take."""
    address = a.address
    return address is not None and special_range_reason(address.version, address.value, address.value, _OPT_IN) is None


def _interface(iface: Mapping, name: str) -> GuestInterface:
    values = iface.get("ipAddresses")
    if values is None and iface.get("ipAddress") is not None:
        values = [iface.get("ipAddress")]
    guest = _guest_reported(iface)
    if values is None:
        return GuestInterface(name, guest)
    if not isinstance(values, list):
        return GuestInterface(
            name, guest, malformed=Problem(describe(values), reasons.MALFORMED_OBJECT, "ipAddresses is not a list")
        )
    scanned = [_vm_address(v) for v in values[:_SCAN]]
    if len(values) > MAX_GUEST_ADDRESSES:
        # the plausible ones first, so that a guest's real address is never cut off by link-local or garbage entries
        scanned.sort(key=lambda a: not _plausible(a))
    return GuestInterface(
        name,
        guest,
        addresses=tuple(scanned[:MAX_GUEST_ADDRESSES]),
        count=len(values),
        reported=tuple(values[: MAX_GUEST_ADDRESSES + _TAIL]) if len(values) > 1 else (),
    )


def _attachments(spec: Mapping) -> tuple[Attachment, ...]:
    out = []
    for entry in _list(spec.get("networks")):
        if not isinstance(entry, dict):
            continue
        iface_name = entry.get("name")
        nad = _map(entry.get("multus")).get("networkName")
        if not isinstance(iface_name, str) or not iface_name or not isinstance(nad, str) or not nad:
            continue
        nad_namespace, _, nad_name = nad.rpartition("/")
        out.append(Attachment(iface_name, nad_namespace, nad_name))
    return tuple(out)


def decode_vmi(obj: object, key: object = None) -> Vmi:
    raw = _map(obj)
    meta = _map(raw.get("metadata"))
    name, namespace = meta.get("name"), meta.get("namespace")
    if isinstance(name, str) and isinstance(namespace, str) and name and namespace:
        identified, vkey = True, (_shared(namespace), _shared(name))
    else:
        identified, vkey = False, _key_pair(key)
    # the uid is shared with the launcher pods that state it (label, ownerReference)
    uid, created = _shared(_str(meta.get("uid"))), _shared(_str(meta.get("creationTimestamp")))
    status = _map(raw.get("status"))
    node = status.get("nodeName")
    node = _shared(node) if isinstance(node, str) else node
    phase = status.get("phase")
    phase = _shared(phase) if isinstance(phase, str) else phase
    attachments = _attachments(_map(raw.get("spec"))) if identified else ()
    interfaces: list[GuestInterface] = []
    if attachments:
        for iface in _list(status.get("interfaces")):
            if isinstance(iface, dict) and isinstance(iface.get("name"), str):
                interfaces.append(_interface(iface, iface["name"]))
    return Vmi(
        key=vkey,
        ref=ObjectRef(VMI_KIND, vkey[1], vkey[0], uid, created),
        resource_version=_version(meta),
        identified=identified,
        uid=uid,
        age=_age(meta, vkey[1] if identified else None),
        labels=_labels(meta),
        phase=phase if isinstance(phase, str) else None,
        deleting=bool(meta.get("deletionTimestamp")),
        node_name=node if isinstance(node, str) else None,
        node_name_set=node is not None,
        migration=decode_migration(status.get("migrationState"), uid, node),
        attachments=attachments,
        interfaces=tuple(interfaces),
    )
