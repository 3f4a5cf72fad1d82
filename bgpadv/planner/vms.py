"""VM host routes: which address (IPAMClaim, or the guest on IPAM-less secondary networks), on which node, which
next hop.

Rules, in the order the planner applies them to each IPAMClaim:

1. Network: `spec.network` `cluster_udn_<name>` names CUDN `<name>`. An advertised Layer2 CUDN goes on; an
   advertised Layer3 CUDN refuses the claim (`persistent-ips-not-supported`: OVN-K honours IPAMClaims only on
   Layer2/Localnet, so the addresses are whatever a pod got from some node's host subnet); a CUDN that is not
   selected, not advertisable, invalid or overlapped by an older network refuses the claim with the CUDN's own code
   (`network-not-selected`, `network-not-advertisable`, `invalid-network-definition`, `network-overlap`); a CUDN being
   deleted skips it silently; a missing CUDN gives `unknown-network`. `<ns>_<name>` is a namespaced UDN
   (`namespaced-udn-not-advertisable`); anything else is `unknown-network`. A claim being deleted is skipped.
2. VM: same namespace, VMI name = the claim's label `kubevirt.io/vm`, else the name of its ownerReference of kind
   VirtualMachine or VirtualMachineInstance. The claim name is never parsed. No link at all, or a label and an
   ownerReference that name different VMs: `malformed-object`.
3. Addresses: `status.ips`, CIDR strings with the subnet mask (bare IPs accepted), each announced as /32 or /128.
   Empty or missing: allocation pending, nothing to do. Each address is validated against the network
   (`Network.address_reason`); the same address listed twice by one claim counts once. OVN-K allocates at most
   one address per family per claim: a claim listing two distinct addresses of one family, or more than
   `MAX_CLAIM_IPS` (8) entries, is refused whole as `malformed-object` (nothing of it is announced, so a
   hostile 40k-address claim costs one refusal, not 40k routes). Malformed entries beside valid ones are refused
   one by one (`malformed-address`) and do not count as addresses.
4. Conflicts: one address held by several claims (in any network) goes to the claim with the oldest
   `metadata.creationTimestamp`, ties broken by (namespace, name); the others are refused `duplicate-address`. The
   winner may be a stopped VM: its claim keeps the address reserved, so the younger claimant is still refused.
5. Running: only a VMI in phase Running and not being deleted (no `metadata.deletionTimestamp`: the VM is being
   stopped, its finalizers hold the object a while) is announced; no VMI or another phase is a stopped VM, not a
   refusal.
6. Node: `status.nodeName`, except during a live migration (`status.migrationState` present and neither
   completed, failed nor abortStatus Succeeded) where the target node wins once the target is live:
   `migrationState.targetNodeDomainReadyTimestamp` is set, or a launcher pod of the VMI (annotation
   `kubevirt.io/domain` = VMI name, or label `kubevirt.io/created-by` = VMI uid) on the target node carries the
   annotation `kubevirt.io/migration-target-ready-timestamp`. An abort request alone changes nothing: once the
   target domain runs the abort fails (`abortStatus: Failed`) and the VM is on the target. A completed migration
   is on `migrationState.targetNode` (even before `status.nodeName` flips). A failed or aborted
   (`abortStatus: Succeeded`) migration stays on (returns to) the source: `status.nodeName`, else
   `migrationState.sourceNode`. `status.ownerPod` of the claim is never used.
   6b. Per-node mode (`config.node_name`, one instance per node): the source's instance keeps a migrating VM on
   its own node until the migration completes (`completed`, or `status.nodeName` leaves the source) or is given up,
   while the target's instance places it on the target from target-ready on (rule 6, judged from its own launcher
   pod on the target node). Between the two the ToR has both paths; at no moment has it none.
7. Next hop: config `nextHop: self` → None (the speaker's address); `node` → that node's address of the route's
   family (`nodes`), or the refusal `no-node-address` when the node is unknown or has none, `invalid-node-address`
   when its only addresses of that family can never be next hops (loopback, link-local, inside an advertised
   network, ...).
8. Node addresses: the address of a running VM that is also an address of any node (InternalIP,
   `node-primary-ifaddr`, `host-cidrs`; e.g. a CUDN covering the node network) is refused `covers-infrastructure`:
   its host route would steal the node's traffic. Checked after rules 4-5 (the claim still holds the address against
   younger claims), with either next-hop setting.

Advertised networks never overlap (`networks` refuses the younger of two overlapping ones), so an address lies in
at most one of them; the same address claimed on two networks can only be a claim on a network that is not
advertised, refused by rule 1 before any conflict.

9. Guest-reported addresses: an IPAM-less secondary Layer2 network (`role: Secondary`, `ipam.mode: Disabled`;
   see `networks`) has no claims. A Running VMI attaches to it through `spec.networks[].multus.networkName` =
   `<cudn>` or `<namespace>/<cudn>` (the NetworkAttachmentDefinition the CUDN generates is named after it), where the
   NAD's namespace (the VMI's when not written) is one the CUDN's `namespaceSelector` selects by its real labels.
   The addresses are the `status.interfaces[]` entry of the same `name`: `ipAddresses` (else `ipAddress`), bare IPs,
   taken only when `infoSource` names `guest-agent` (or is absent, older KubeVirt). A guest reports anything: at most
   `maxAddressesPerInterface` entries are taken per interface (the rest refused `too-many-addresses`), each
   validated as for claims (plus `outside-allowed-prefixes` against the configured allowed prefixes), with the VMI as
   the source; conflicts with claims or other VMIs, running, node and next hop follow rules 4-8. A primary network
   with `ipam.mode: Disabled` cannot exist under the CRD: `networks` refuses it (`invalid-network-definition`), so
   no address is ever read from the primary UDN interface.

The per-object API, used alike by `host_routes` (the full planner) and `planner.incremental` (one object at a time):
`claim_vm` (rule 2), `read_claims` / `read_vmi_interfaces` into a `Collector` (rules 1-3; `Collector.entry()` is what
one object contributes), `resolve_conflict` / `resolve_conflicts` (rule 4), `placements` and `needs_pods` (rules 5-6),
`host_route` (rules 7-8, one winning address).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping

from bgpadv.config import Config
from bgpadv.core.model import ObjectRef, Refusal, Route, RouteKind
from bgpadv.core.prefix import Prefix
from bgpadv.core.state import ClusterState
from bgpadv.planner import checks
from bgpadv.planner.checks import mapping
from bgpadv.planner.fast import make_ref, make_route
from bgpadv.planner.networks import CUDN_PREFIX, Network, Networks
from bgpadv.planner.nodes import NodeInfo, node_address_keys

VM_LABEL = "kubevirt.io/vm"
DOMAIN_ANNOTATION = "kubevirt.io/domain"
CREATED_BY_LABEL = "kubevirt.io/created-by"
TARGET_READY_ANNOTATION = "kubevirt.io/migration-target-ready-timestamp"
CLAIM_KIND = "IPAMClaim"
VMI_KIND = "VirtualMachineInstance"
_OWNER_KINDS = ("VirtualMachine", "VirtualMachineInstance")
_BITS = {4: 32, 6: 128}
_NEWEST = "\uffff"  # sorts after every timestamp: an object without creationTimestamp never wins a conflict
_EMPTY: dict = {}
_AF = {4: socket.AF_INET, 6: socket.AF_INET6}
_inet_pton = socket.inet_pton
_from_bytes = int.from_bytes
_AF4, _AF6 = socket.AF_INET, socket.AF_INET6
MAX_CLAIM_IPS = 8
"""Most entries a claim's `status.ips` may list (OVN-K writes one per family); more is refused whole."""


Record = tuple[list, Network, ObjectRef, tuple[str, str], dict]
"""One object's addresses to validate: (values as written, network, source, (namespace, VMI name), metadata)."""

Candidate = tuple[str, Network, ObjectRef, tuple[str, str], dict]
"""One validated address waiting for conflict resolution and placement, stored under its address key (see
`address_key`): (text as written, network, source, (namespace, VMI name), metadata of the source object)."""

ObjectEntry = tuple[list[Refusal], list[tuple[int, Candidate]]]
"""What one object contributes to the plan before conflicts: its refusals, and its validated addresses as
(address key, candidate) (`Collector.entry`)."""

_V6 = 1 << 128


def address_key(version: int, value: int) -> int:
    """One integer per address, distinct across families: the IPv4 value itself, or the IPv6 value + 2**128."""
    return value if version == 4 else value | _V6


def _age(meta: dict) -> tuple[str, str, str]:
    """(creationTimestamp, namespace, name): the smallest wins a conflict; no timestamp sorts last."""
    created = meta.get("creationTimestamp")
    name, namespace = meta.get("name"), meta.get("namespace")
    return (created if isinstance(created, str) and created else _NEWEST, str(namespace), str(name))


class LauncherPods:
    """virt-launcher pods indexed by the VMI they run (`kubevirt.io/domain` annotation and `created-by` label).

    `wanted` limits the index to those (namespace, VMI name or uid) keys: the planner only needs the pods of
    migrating VMIs, and indexing every pod of a large cluster would cost more than the rest of the plan.
    """

    def __init__(self, pods: Mapping[tuple[str, str], dict], wanted: set[tuple[str, str]] | None = None):
        self._pods = pods
        self._wanted = wanted
        self._by_vmi: dict[tuple[str, str], list[dict]] | None = None

    def _index(self) -> dict[tuple[str, str], list[dict]]:
        index: dict[tuple[str, str], list[dict]] = {}
        wanted = self._wanted
        for pod in self._pods.values():
            if not isinstance(pod, dict):
                continue
            meta = mapping(pod.get("metadata"))
            ns = meta.get("namespace")
            if not isinstance(ns, str):
                continue
            domain = mapping(meta.get("annotations")).get(DOMAIN_ANNOTATION)
            created_by = mapping(meta.get("labels")).get(CREATED_BY_LABEL)
            keys = [k for k in (domain, created_by) if isinstance(k, str) and k]
            for k in dict.fromkeys(keys):
                if wanted is None or (ns, k) in wanted:
                    index.setdefault((ns, k), []).append(pod)
        return index

    def for_vmi(self, namespace: str, name: str, uid: str) -> list[dict]:
        if self._by_vmi is None:
            self._by_vmi = self._index()
        pods = list(self._by_vmi.get((namespace, name), ()))
        if uid:
            pods.extend(p for p in self._by_vmi.get((namespace, uid), ()) if not any(p is q for q in pods))
        return pods

    def target_ready(self, namespace: str, vmi: dict, target_node: str, target_pod: object = None) -> bool:
        """True when a launcher pod of this VMI on the target node says the target domain is live.

        The pod named by `migrationState.targetPod` is looked up directly; the index of every launcher pod is
        built only when that name is missing or names no pod of this VMI.
        """
        meta = mapping(vmi.get("metadata"))
        name, uid = meta.get("name"), meta.get("uid")
        if not isinstance(name, str):
            return False
        uid = uid if isinstance(uid, str) else ""
        if isinstance(target_pod, str) and target_pod:
            pod = self._pods.get((namespace, target_pod))
            if isinstance(pod, dict) and _runs(pod, name, uid):
                return _live_on(pod, target_node)
        return any(_live_on(pod, target_node) for pod in self.for_vmi(namespace, name, uid))


def _runs(pod: dict, vmi_name: str, vmi_uid: str) -> bool:
    """True when the launcher pod belongs to the VMI (annotation kubevirt.io/domain or label created-by)."""
    meta = mapping(pod.get("metadata"))
    if mapping(meta.get("annotations")).get(DOMAIN_ANNOTATION) == vmi_name:
        return True
    return bool(vmi_uid) and mapping(meta.get("labels")).get(CREATED_BY_LABEL) == vmi_uid


def _live_on(pod: dict, node: str) -> bool:
    """True when the pod runs on `node`, is not finished, and carries the migration-target-ready annotation."""
    if mapping(pod.get("spec")).get("nodeName") != node:
        return False
    if mapping(pod.get("status")).get("phase") in ("Failed", "Succeeded"):
        return False
    return bool(mapping(mapping(pod.get("metadata")).get("annotations")).get(TARGET_READY_ANNOTATION))


def needs_pods(vmi: dict) -> bool:
    """True when placing this VMI needs its launcher pods (a migration whose target is not known live yet)."""
    ms = mapping(vmi.get("status")).get("migrationState")
    if not isinstance(ms, dict):
        return False
    if _given_up(ms):
        return False
    return ms.get("completed") is not True and not ms.get("targetNodeDomainReadyTimestamp")


def _given_up(ms: Mapping) -> bool:
    """True when the migration failed or was aborted: the VM stays on (returns to) the source.

    An abort request alone does not decide it: the abort fails (`abortStatus: Failed`) once the target domain runs,
    and then the VM is on the target.
    """
    return ms.get("failed") is True or ms.get("abortStatus") == "Succeeded"


def vmi_node(namespace: str, vmi: Mapping, pods: LauncherPods, view: str | None = None) -> str | None:
    """The node the VMI runs on now, by the migration rules of this module's docstring (None: unknown).

    `view` (per-node mode: the instance's own node) hands a migrating VM over without a gap (rule 6b): while a
    migration from `view` is neither completed nor given up, the VM stays placed on `view` even once the target is
    live, so the source keeps its host route until completion while the target already announces its own."""
    node = _vmi_node(namespace, vmi, pods)
    if view is not None and node != view:
        ms = mapping(vmi.get("status")).get("migrationState")
        if (
            isinstance(ms, dict)
            and ms.get("sourceNode") == view
            and ms.get("completed") is not True
            and not _given_up(ms)
            and mapping(vmi.get("status")).get("nodeName") in (view, None)
        ):
            return view
    return node


def _vmi_node(namespace: str, vmi: Mapping, pods: LauncherPods) -> str | None:
    status = mapping(vmi.get("status"))
    current = status.get("nodeName")
    current = current if isinstance(current, str) and current else None
    ms = status.get("migrationState")
    if not isinstance(ms, dict):
        return current
    source = ms.get("sourceNode")
    source = source if isinstance(source, str) and source else None
    if _given_up(ms):
        return current or source
    target = ms.get("targetNode")
    if ms.get("completed") is True:
        # the VM runs on the target; status.nodeName may still name the source for a moment (older KubeVirt
        # sets `completed` from the source before the target flips nodeName)
        return target if isinstance(target, str) and target else current
    live = bool(ms.get("targetNodeDomainReadyTimestamp"))
    if isinstance(target, str) and target and (live or pods.target_ready(namespace, vmi, target, ms.get("targetPod"))):
        return target
    return current or source


def claim_vm(meta: Mapping) -> tuple[str | None, str | None]:
    """The VMI an IPAMClaim belongs to, from its metadata (rule 2): `(vmi_name, None)`, or `(None, problem)`.

    The name is the label `kubevirt.io/vm`, else the name of an ownerReference of kind VirtualMachine or
    VirtualMachineInstance (a VMI is named after its VM; the VMI lives in the claim's namespace). The claim name is
    never parsed. The problem is a message: no link at all, or a label and an ownerReference naming different VMs
    (ipam-extensions sets both to the same name; when they disagree the claim cannot be placed without guessing).
    This is the one place the claim → VM link is read: the planner and the controller's handover metric use it.
    """
    labels = meta.get("labels")
    name = labels.get(VM_LABEL) if labels.__class__ is dict else None
    owners = meta.get("ownerReferences")
    if name.__class__ is str and name:
        other = _other_owner(owners, name) if owners else None  # type: ignore[arg-type]
        if other is None:
            return name, None  # type: ignore[return-value]
        return None, f"label kubevirt.io/vm names {name} but the ownerReference names {other}"
    if isinstance(owners, list):
        for owner in owners:
            if isinstance(owner, dict) and owner.get("kind") in _OWNER_KINDS:
                owner_name = owner.get("name")
                if isinstance(owner_name, str) and owner_name:
                    return owner_name, None
    return None, "claim names no VM (label kubevirt.io/vm or a VirtualMachine ownerReference)"


def _other_owner(owners: object, vmi_name: str) -> str | None:
    """The name of a VirtualMachine/VirtualMachineInstance ownerReference that is not `vmi_name`, or None."""
    if owners.__class__ is not list:
        return None
    for owner in owners:  # type: ignore[attr-defined]
        if owner.__class__ is dict:
            name = owner.get("name")
            if name != vmi_name and owner.get("kind") in _OWNER_KINDS and isinstance(name, str) and name:
                return name
    return None


class Collector:
    """Accumulates candidates (by address key) and refusals while claims and VMIs are read."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.owner: dict[int, Candidate] = {}  # address key -> first claimant seen
        self.contested: dict[int, list[Candidate]] = {}  # address key -> every claimant, when several
        self.refusals: list[Refusal] = []

    def refuse(self, ref: ObjectRef, value: object, reason: str, message: str, network: str = "") -> None:
        self.refusals.append(Refusal(ref, checks.describe(value), reason, message, network))

    def validate(self) -> None:
        """Validate every address of every record; distinct valid ones become candidates.

        One loop over every address of the cluster, so it is written for speed: `checks.parse_address` inlined,
        integer address keys, a fast path for the common one-address record. Per object, an address listed twice
        counts once (a set: linear in the list's length). A claim listing more than `MAX_CLAIM_IPS` entries, or
        more than one distinct address of a family, is refused whole (rule 3).
        """
        owner = self.owner
        contested = self.contested
        refuse = self.refuse
        for values, network, ref, vmi_key, meta in self.records:
            check = network.check
            if len(values) == 1:
                parsed = _parse(values[0])
                if parsed is None:
                    refuse(ref, values[0], checks.MALFORMED_ADDRESS, "not an IP address or CIDR", network.name)
                    continue
                items: list[tuple[str, tuple[int, int, int] | None]] = [(values[0], parsed)]
            elif len(values) == 2 and (a := _parse(values[0])) and (b := _parse(values[1])) and a[0] != b[0]:
                items = [(values[0], a), (values[1], b)]  # the common dual-stack claim: one address per family
            else:
                items = self._distinct(values, network, ref)
            for text, found in items:
                if found is None:
                    refuse(ref, text, checks.MALFORMED_ADDRESS, "not an IP address or CIDR", network.name)
                    continue
                version, value, key = found
                reason = check(version, value)
                if reason is not None:
                    refuse(ref, text, reason, checks.explain(reason, network.name), network.name)
                    continue
                candidate = (text, network, ref, vmi_key, meta)
                holder = owner.setdefault(key, candidate)
                if holder is not candidate:
                    contested.setdefault(key, [holder]).append(candidate)

    def _distinct(
        self, values: list, network: Network, ref: ObjectRef
    ) -> list[tuple[str, tuple[int, int, int] | None]]:
        """The entries of a multi-address record, parsed, each address once; [] when a claim is refused whole."""
        claim = ref.kind == CLAIM_KIND
        if claim and len(values) > MAX_CLAIM_IPS:
            message = f"status.ips lists {len(values)} entries; OVN-K writes at most one address per family"
            self.refuse(ref, values, checks.MALFORMED_OBJECT, message, network.name)
            return []
        items: list[tuple[str, tuple[int, int, int] | None]] = []
        seen: set[int] = set()
        first: dict[int, str] = {}  # version -> the first address text of that family
        for text in values:
            found = _parse(text)
            if found is None:
                items.append((text, None))
                continue
            key = found[2]
            if key in seen:
                continue  # the same address listed twice by one object
            seen.add(key)
            version = found[0]
            if claim and version in first:
                message = (
                    f"status.ips lists more than one IPv{version} address ({checks.describe(first[version])}, "
                    f"{checks.describe(text)}); OVN-K allocates one per family, so the claim is refused whole"
                )
                self.refuse(ref, values, checks.MALFORMED_OBJECT, message, network.name)
                return []
            first[version] = text
            items.append((text, found))
        return items

    def entry(self) -> ObjectEntry:
        """Validate what was read and return it as one entry: (refusals, candidates as (address key, candidate)),
        every candidate of an address listed, the first read first (conflicts are resolved by the caller)."""
        self.validate()
        candidates = list(self.owner.items())
        candidates.extend((k, c) for k, group in self.contested.items() for c in group[1:])
        return self.refusals, candidates


def _parse(text: object) -> tuple[int, int, int] | None:
    """(version, integer value, address key) of `"a.b.c.d"`, `"a.b.c.d/len"` or IPv6 alike; None when malformed."""
    if text.__class__ is not str:
        return None
    addr, slash, plen = text.partition("/")  # type: ignore[union-attr]
    try:
        if ":" in addr:
            version, bits = 6, 128
            value = _from_bytes(_inet_pton(_AF6, addr), "big")
            key = value | _V6
        else:
            version, bits = 4, 32
            key = value = _from_bytes(_inet_pton(_AF4, addr), "big")
    except (OSError, ValueError):
        return None
    if slash and not (plen.isascii() and plen.isdigit() and len(plen) <= 3 and int(plen) <= bits):
        return None
    return version, value, key


class _NetworkResolver:
    """Maps a claim's `spec.network` to an advertised Network, or to the refusal every claim naming it gets.

    Results are cached per network name: a cluster has few networks and many claims.
    """

    def __init__(self, networks: Networks):
        self._networks = networks
        self._cache: dict[str, tuple[Network | None, tuple[str, str, str] | None]] = {}

    def resolve(self, net_name: str) -> tuple[Network | None, tuple[str, str, str] | None]:
        """(network, None) to go on; (None, (reason, message, cudn)) to refuse; (None, None) to skip silently."""
        found = self._cache.get(net_name)
        if found is None:
            found = self._cache[net_name] = self._resolve(net_name)
        return found

    def _resolve(self, net_name: str) -> tuple[Network | None, tuple[str, str, str] | None]:
        networks = self._networks
        if net_name.startswith(CUDN_PREFIX):
            cudn = net_name[len(CUDN_PREFIX) :]
            network = networks.advertised.get(cudn)
            if network is not None and network.topology != "Layer2":
                where = "only on Layer2 and Localnet networks"
                message = f"CUDN {cudn} is {network.topology}: OVN-K honours persistent IPs (IPAMClaims) {where}"
                return None, (checks.PERSISTENT_IPS_NOT_SUPPORTED, message, cudn)
            if network is not None or cudn in networks.withdrawn:
                return network, None
            refused = networks.claim_refusals.get(cudn)
            if refused is not None:
                return None, (refused[0], refused[1], cudn)
            return None, (checks.UNKNOWN_NETWORK, f"no ClusterUserDefinedNetwork {checks.describe(cudn)}", "")
        if "_" in net_name:
            return None, (checks.NAMESPACED_UDN_NOT_ADVERTISABLE, "RouteAdvertisements cannot select a UDN", "")
        return None, (checks.UNKNOWN_NETWORK, "not the network name of a ClusterUserDefinedNetwork", "")


def read_claims(claims: Mapping, networks: Networks, out: Collector) -> None:
    """Read IPAMClaims (`ClusterState.ipam_claims`, or any part of it) into `out`: rules 1-3 up to validation."""
    resolve = _NetworkResolver(networks).resolve
    records = out.records
    for key, claim in claims.items():
        meta = claim.get("metadata") if isinstance(claim, dict) else None
        if isinstance(meta, dict):
            name = meta.get("name")
            namespace = meta.get("namespace")
        else:
            meta, name, namespace = _EMPTY, None, None
        if not isinstance(name, str) or not name or not isinstance(namespace, str) or not namespace:
            key_ns, key_name = key if isinstance(key, tuple) and len(key) == 2 else ("", str(key))
            ref = ObjectRef(CLAIM_KIND, str(key_name), str(key_ns))
            out.refuse(ref, "metadata", checks.MALFORMED_OBJECT, "no name/namespace")
            continue
        uid, created = meta.get("uid"), meta.get("creationTimestamp")
        ref = make_ref(
            CLAIM_KIND,
            name,
            namespace,
            uid if uid.__class__ is str else "",
            created if created.__class__ is str else "",
        )
        spec = claim.get("spec")
        net_name = spec.get("network") if spec.__class__ is dict else None
        if net_name.__class__ is not str or not net_name:
            out.refuse(ref, net_name, checks.MALFORMED_OBJECT, "spec.network is missing or not a string")
            continue
        network, refused = resolve(net_name)
        if network is None:
            if refused is not None:
                out.refuse(ref, net_name, refused[0], refused[1], refused[2])
            continue
        if meta.get("deletionTimestamp"):
            continue
        status = claim.get("status")
        ips = status.get("ips") if isinstance(status, dict) else None
        if not ips:
            continue  # allocation pending (or failed): nothing to announce yet
        if not isinstance(ips, list):
            out.refuse(ref, ips, checks.MALFORMED_OBJECT, "status.ips is not a list", network.name)
            continue
        vmi_name, problem = claim_vm(meta)
        if vmi_name is None:
            labels = meta.get("labels")
            label = labels.get(VM_LABEL) if labels.__class__ is dict else None
            value = label if label.__class__ is str and label else net_name
            out.refuse(ref, value, checks.MALFORMED_OBJECT, str(problem), network.name)
            continue
        records.append((ips, network, ref, (namespace, vmi_name), meta))


def namespace_networks(networks: Networks) -> list[Network]:
    """The advertised IPAM-less secondary networks, whose addresses come from VMI interfaces (guest reports)."""
    return [n for n in networks.advertised.values() if n.namespaces is not None]


def _guest_reported(iface: Mapping) -> bool:
    """False when `infoSource` is given and does not name the guest agent: then the addresses come from the pod's
    network status (OVN-K assigns none on an IPAM-less network), not from the guest. No `infoSource` (KubeVirt
    before 0.59): taken."""
    source = iface.get("infoSource")
    if source is None:
        return True
    return isinstance(source, str) and "guest-agent" in (part.strip() for part in source.split(","))


def read_vmi_interfaces(vmis: Mapping, networks: Networks, out: Collector) -> None:
    """Read the guest-reported addresses of Running VMIs (`ClusterState.vmis`, or any part of it) on IPAM-less
    secondary networks into `out` (rule 9 of the module docstring)."""
    secondary = {n.name: n for n in namespace_networks(networks)}
    if not secondary:
        return
    for vmi in vmis.values():
        if not isinstance(vmi, dict):
            continue
        meta = mapping(vmi.get("metadata"))
        name, namespace = meta.get("name"), meta.get("namespace")
        if not isinstance(name, str) or not isinstance(namespace, str) or not name or not namespace:
            continue
        status = mapping(vmi.get("status"))
        if status.get("phase") != "Running" or meta.get("deletionTimestamp"):
            continue
        spec_networks = mapping(vmi.get("spec")).get("networks")
        attached: dict[str, Network] = {}  # VMI interface name -> network
        for entry in spec_networks if isinstance(spec_networks, list) else []:
            if not isinstance(entry, dict):
                continue
            iface_name = entry.get("name")
            nad = mapping(entry.get("multus")).get("networkName")
            if not isinstance(iface_name, str) or not iface_name or not isinstance(nad, str) or not nad:
                continue
            nad_namespace, _, nad_name = nad.rpartition("/")
            network = secondary.get(nad_name)
            namespaces = network.namespaces if network is not None else None
            if network is not None and namespaces is not None and (nad_namespace or namespace) in namespaces:
                attached[iface_name] = network
        if not attached:
            continue
        uid, created = meta.get("uid"), meta.get("creationTimestamp")
        ref = ObjectRef(
            VMI_KIND, name, namespace, uid if isinstance(uid, str) else "", created if isinstance(created, str) else ""
        )
        taken: dict[str, tuple[Network, list]] = {}  # network name -> (network, values of all its interfaces)
        interfaces = status.get("interfaces")
        for iface in interfaces if isinstance(interfaces, list) else []:
            if not isinstance(iface, dict):
                continue
            iface_name = iface.get("name")
            network = attached.pop(iface_name, None) if isinstance(iface_name, str) else None
            if network is None or not _guest_reported(iface):
                continue  # not on such a network, listed twice, or not from the guest
            values = iface.get("ipAddresses")
            if values is None and iface.get("ipAddress") is not None:
                values = [iface.get("ipAddress")]
            if values is None:
                continue
            if not isinstance(values, list):
                out.refuse(ref, values, checks.MALFORMED_OBJECT, "ipAddresses is not a list", network.name)
                continue
            limit = network.max_addresses
            if len(values) > limit:
                message = (
                    f"interface {iface_name} reports {len(values)} addresses; only the first {limit} are taken "
                    f"(networks.secondary[].maxAddressesPerInterface)"
                )
                out.refuse(ref, values[limit:], checks.TOO_MANY_ADDRESSES, message, network.name)
                values = values[:limit]
            taken.setdefault(network.name, (network, []))[1].extend(values)
        for network, values in taken.values():
            # one record per network: an address reported on two interfaces of one VM counts once, not as a conflict
            out.records.append((values, network, ref, (namespace, name), meta))


def resolve_conflict(group: list[Candidate]) -> tuple[Candidate, list[Refusal], bool]:
    """One address held by several candidates (rule 4): (the winner, the others' `duplicate-address` refusals, tied).

    Sorts `group` in place, oldest first; the sort is stable, so of two candidates of the same age the one read
    first wins, and `tied` says so (the outcome then depends on reading order).
    """
    group.sort(key=lambda c: _age(c[4]))
    winner = group[0]
    refusals = []
    for text, network, ref, _vmi_key, _meta in group[1:]:
        message = f"also claimed by {winner[2]}, which is older and keeps it"
        refusals.append(Refusal(ref, checks.describe(text), checks.DUPLICATE_ADDRESS, message, network.name))
    return winner, refusals, _age(group[0][4]) == _age(group[1][4])


def resolve_conflicts(out: Collector) -> None:
    """Keep one claimant per contested address of `out` (the oldest); refuse the others as duplicate-address."""
    owner = out.owner
    for key, group in out.contested.items():
        owner[key], refusals, _tied = resolve_conflict(group)
        out.refusals.extend(refusals)


def host_routes(
    state: ClusterState, config: Config, networks: Networks, nodes: Mapping[str, NodeInfo]
) -> tuple[list[Route], list[Refusal]]:
    """One /32 or /128 per address of every Running VM on an advertised network, and the refusals met on the way."""
    out = Collector()
    if not config.networks.host_routes:
        return [], []
    read_claims(state.ipam_claims, networks, out)
    read_vmi_interfaces(state.vmis, networks, out)
    out.validate()
    resolve_conflicts(out)
    routes = _place(out.owner, state, config, nodes, out)
    return routes, out.refusals


_NO_PODS = LauncherPods({})


def node_address_refusal(
    key: int, text: str, network: Network, ref: ObjectRef, nodes: Mapping[str, NodeInfo]
) -> Refusal:
    """The refusal of a VM address that is also a node's address (rule 8 of the module docstring)."""
    holder = next((n for n in sorted(nodes) if key in nodes[n].keys), "?")
    message = f"the address is an address of node {holder}: a host route for it would hijack the node"
    return Refusal(ref, checks.describe(text), checks.COVERS_INFRASTRUCTURE, message, network.name)


def no_next_hop_refusal(
    version: int, text: str, network: Network, ref: ObjectRef, node_name: str, nodes: Mapping[str, NodeInfo]
) -> Refusal:
    """The refusal of a host route whose node has no (valid) address of its family (rule 7)."""
    info = nodes.get(node_name)
    if info is None:
        message = f"VM runs on unknown node {node_name}" if node_name else "VMI status names no node"
        return Refusal(ref, checks.describe(text), checks.NO_NODE_ADDRESS, message, network.name)
    invalid, message = info.no_address(version)
    reason = checks.INVALID_NODE_ADDRESS if invalid else checks.NO_NODE_ADDRESS
    return Refusal(ref, checks.describe(text), reason, message, network.name)


def placements(
    keys: Iterable[tuple[str, str]], state: ClusterState, view: str | None = None
) -> dict[tuple[str, str], str | None]:
    """Where each VMI runs now: None when it is not Running (or absent), "" when Running on no known node.
    `view`: the per-node instance's node (`vmi_node`)."""
    vmis = state.vmis
    placed: dict[tuple[str, str], str | None] = {}
    migrating: list[tuple[tuple[str, str], dict]] = []
    for key in keys:
        try:  # the common shape, read with plain subscripts (this runs once per VM of the cluster)
            vmi = vmis[key]
            status = vmi["status"]
            running = status["phase"] == "Running" and "deletionTimestamp" not in vmi["metadata"]
        except (KeyError, TypeError):
            vmi = vmis.get(key)
            status = vmi.get("status") if isinstance(vmi, dict) else None
            running = (
                isinstance(status, dict)
                and status.get("phase") == "Running"
                and not mapping(vmi.get("metadata")).get("deletionTimestamp")
            )
        if not running:
            placed[key] = None
            continue
        if "migrationState" not in status:
            node = status.get("nodeName")
            placed[key] = node if node.__class__ is str else ""
            continue
        if needs_pods(vmi):
            migrating.append((key, vmi))
            continue
        placed[key] = vmi_node(key[0], vmi, _NO_PODS, view) or ""
    if migrating:
        wanted: set[tuple[str, str]] = set()
        for (ns, name), vmi in migrating:
            wanted.add((ns, name))
            uid = mapping(vmi.get("metadata")).get("uid")
            if isinstance(uid, str) and uid:
                wanted.add((ns, uid))
        pods = LauncherPods(state.pods, wanted)
        for key, vmi in migrating:
            placed[key] = vmi_node(key[0], vmi, pods, view) or ""
    return placed


def host_route(
    key: int,
    candidate: Candidate,
    node_name: str | None,
    nodes: Mapping[str, NodeInfo],
    node_keys: frozenset[int] | set[int],
    config: Config,
) -> Route | Refusal | None:
    """The host route of one winning address (`key`, see `address_key`) placed on `node_name` (`placements`), or
    its refusal (rules 7-8); None when the VM is not running. `node_keys`: `nodes.node_address_keys(nodes)`."""
    if node_name is None:
        return None  # VM not running: a stopped VM is normal
    text, network, ref, _vmi_key, _meta = candidate
    if key in node_keys:
        return node_address_refusal(key, text, network, ref, nodes)
    version, value = (6, key ^ _V6) if key >= _V6 else (4, key)
    if config.next_hop == "self":
        return make_route(
            Prefix.host(version, value), None, network.name, RouteKind.HOST, ref, node_name or None, config.attributes
        )
    info = nodes.get(node_name)
    next_hop = info.address(version) if info is not None else None
    if next_hop is None:
        return no_next_hop_refusal(version, text, network, ref, node_name, nodes)
    return make_route(
        Prefix.host(version, value), next_hop, network.name, RouteKind.HOST, ref, node_name, config.attributes
    )


def _place(
    candidates: dict[int, Candidate],
    state: ClusterState,
    config: Config,
    nodes: Mapping[str, NodeInfo],
    out: Collector,
) -> list[Route]:
    """The host routes of the winning candidates; their refusals go to `out`."""
    placed = placements({c[3] for c in candidates.values()}, state, config.node_name)
    node_keys = node_address_keys(nodes)
    routes: list[Route] = []
    append = routes.append
    refuse = out.refusals.append
    for key, candidate in candidates.items():
        result = host_route(key, candidate, placed[candidate[3]], nodes, node_keys, config)
        if result.__class__ is Route:
            append(result)  # type: ignore[arg-type]
        elif result is not None:
            refuse(result)  # type: ignore[arg-type]
    return routes
