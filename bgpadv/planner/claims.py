"""IPAMClaims: which network, which VM, which addresses (rules 1-3 of `vms`), read from `views.Claim`.

Which VM a claim belongs to (rule 2): OVN-K allocates a claim's address to the pod that references it (the launcher
pod's `LauncherPod.claim_ref`), so the VM whose launcher pod references the claim is where the address lives
(`claim_references`). A referenced claim is that VM's, whatever its `kubevirt.io/vm` label or ownerReference say;
when they name another VM the claim is still announced for the referencing VM and the label's tie is refused
`claim-referenced-by-other-vm`, so the operator sees the disagreement. A claim the launcher pods of two different VMs
reference is refused whole `claim-referenced-by-several-vms` (announced for neither). A claim no pod references keeps
the tie of its label or ownerReference, unless that VM's running launcher pods reference other claims only: OVN-K
allocates the VM's address from those, so this claim's address is on no pod of the VM, and it is refused
`claim-not-referenced-by-its-vm` (a stale claim: announcing it would route an address the VM does not have).

Only launcher pods KubeVirt says run a VMI of the state count (`referencing_vm`), and only while they have not
finished. In per-node mode an instance sees its own node's launcher pods only: a VM it announces runs there, so the
VM's own pods are seen, and a claim of another VM whose pods reference other claims is refused rather than routed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from bgpadv.core import reasons
from bgpadv.core.bounded import describe
from bgpadv.core.views import Claim, LauncherPod, Vmi
from bgpadv.planner import checks
from bgpadv.planner.advertised import Network
from bgpadv.planner.candidates import CLAIM, Collector, Record
from bgpadv.planner.networks import CUDN_PREFIX, Networks

Resolved = tuple[Network | None, tuple[str, str, str] | None]
"""(network, None) to go on; (None, (reason, message, cudn)) to refuse; (None, None) to skip silently."""


class NetworkResolver:
    """Maps a claim's `spec.network` to an advertised Network, or to the refusal every claim naming it gets (rule 1).

    Results are cached per network name: a cluster has few networks and many claims.
    """

    def __init__(self, networks: Networks):
        self._networks = networks
        self._cache: dict[str, Resolved] = {}

    def resolve(self, net_name: str) -> Resolved:
        found = self._cache.get(net_name)
        if found is None:
            found = self._cache[net_name] = self._resolve(net_name)
        return found

    def _resolve(self, net_name: str) -> Resolved:
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
            return None, (checks.UNKNOWN_NETWORK, f"no ClusterUserDefinedNetwork {describe(cudn)}", "")
        if "_" in net_name:
            return None, (checks.NAMESPACED_UDN_NOT_ADVERTISABLE, "RouteAdvertisements cannot select a UDN", "")
        message = "not the network name of a ClusterUserDefinedNetwork: a NetworkAttachmentDefinition's network"
        return None, (reasons.FOREIGN_NETWORK, message, "")


Referenced = tuple[tuple[str, ...], tuple[str, ...]]
"""What the launcher pods say of one claim (`References.of`): the VMs whose running launcher pods reference it, and,
when none does, the claims (names) the running launcher pods of the VM its label or ownerReference names reference."""

_NONE: Referenced = ((), ())


class References:
    """The claim references of the running launcher pods (`claim_references`): `by_claim`: (namespace, claim name)
    → the VMs (VMI names, sorted) referencing it; `by_vm`: (namespace, VMI name) → the claims (names, sorted) its
    pods reference. Only non-empty entries. `by_vm` is needed only for claims no pod references (rare where every
    launcher pod references its VM's claim): given, or made from `pods` on first need."""

    def __init__(
        self,
        by_claim: Mapping[tuple[str, str], tuple[str, ...]] | None = None,
        by_vm: Mapping[tuple[str, str], tuple[str, ...]] | None = None,
        pods: Collection[LauncherPod] = (),
        vmis: Mapping[tuple[str, str], Vmi] | None = None,
    ):
        self.by_claim = by_claim if by_claim is not None else {}
        self._by_vm = by_vm
        self._pods = pods
        self._vmis = vmis if vmis is not None else {}

    @property
    def by_vm(self) -> Mapping[tuple[str, str], tuple[str, ...]]:
        if self._by_vm is None:
            self._by_vm = _by_vm(self._pods, self._vmis)
        return self._by_vm

    def of(self, claim: Claim) -> Referenced:
        if self._by_vm is not None and not self._by_vm and not self.by_claim:
            return _NONE  # no pod references any claim: every claim keeps its label
        referencing = self.by_claim.get(claim.key)
        if referencing:  # an empty entry is no reference (the incremental planner notes what was empty before)
            return referencing, ()
        vm = claim.vm
        if vm is None:
            return _NONE
        mine = self.by_vm.get((claim.key[0], vm))
        return ((), mine) if mine else _NONE


def referencing_vm(pod: LauncherPod, vmis: Mapping[tuple[str, str], Vmi]) -> str | None:
    """The VM whose claim the pod references: the pod has a claim reference, has not finished, and names a VMI of
    its namespace (`kubevirt.io/domain`, VirtualMachineInstance ownerReference) that KubeVirt says it runs
    (`LauncherPod.runs`: by uid). None otherwise: a pod that runs no VMI of the state references nobody's claim."""
    namespace = pod.namespace
    if pod.claim_ref is None or pod.finished or namespace is None:
        return None
    for name in (pod.domain, pod.owner_name):  # `LauncherPod.names`, without making the tuple
        if name:
            vmi = vmis.get((namespace, name))
            if vmi is not None and pod.runs(vmi.uid):
                return name
    return None


def referencing_vms(pods: Iterable[LauncherPod], vmis: Mapping[tuple[str, str], Vmi]) -> tuple[str, ...]:
    """The VMs (sorted, each once) of these pods that reference a claim (`referencing_vm`): during a live migration
    the source and target pods of one VM both reference its claim, which is one VM."""
    return tuple(sorted({vm for pod in pods if (vm := referencing_vm(pod, vmis)) is not None}))


def referenced_claims(vm: str, pods: Iterable[LauncherPod], vmis: Mapping[tuple[str, str], Vmi]) -> tuple[str, ...]:
    """The claims (names, sorted, each once) that those of these pods that run VM `vm` reference."""
    return tuple(sorted({p.claim_ref for p in pods if p.claim_ref is not None and referencing_vm(p, vmis) == vm}))


def add_reference(table: dict[tuple[str, str], tuple[str, ...]], key: tuple[str, str], name: str) -> None:
    """Add `name` to the sorted names `table` holds under `key`."""
    held = table.get(key)
    if held is None:
        table[key] = (name,)  # one almost always: no set, no sort
    elif name not in held:
        table[key] = tuple(sorted((*held, name)))


def _by_vm(pods: Iterable[LauncherPod], vmis: Mapping[tuple[str, str], Vmi]) -> dict[tuple[str, str], tuple[str, ...]]:
    by_vm: dict[tuple[str, str], tuple[str, ...]] = {}
    for pod in pods:
        if pod.claim_ref is not None and (vm := referencing_vm(pod, vmis)) is not None:
            add_reference(by_vm, (pod.namespace, vm), pod.claim_ref)  # type: ignore[arg-type]  # set: a VM was found
    return by_vm


def claim_references(pods: Collection[LauncherPod], vmis: Mapping[tuple[str, str], Vmi]) -> References:
    """Every claim reference of the running launcher pods, both ways (`References`; `pods` is read again if
    `References.by_vm` is needed)."""
    by_claim: dict[tuple[str, str], tuple[str, ...]] = {}
    for pod in pods:
        if pod.claim_ref is not None and (vm := referencing_vm(pod, vmis)) is not None:
            add_reference(by_claim, (pod.namespace, pod.claim_ref), vm)  # type: ignore[arg-type]  # set: a VM was found
    return References(by_claim, None if by_claim else {}, pods, vmis)  # no reference at all: no VM has any


def claim_vms(claim: Claim, referenced: Referenced) -> tuple[str, ...]:
    """The VMs whose address on the claim's network is the claim's (see the module): those whose pods reference it,
    else the VM of its label or ownerReference unless that VM's pods reference other claims only (none: no link).
    Two or more: the claim is refused, but each VM's address is still the claim's (its pods' copy of it is not read,
    `pod_networks`)."""
    referencing, mine = referenced
    if referencing:
        return referencing
    return (claim.vm,) if claim.vm is not None and not mine else ()


def read_claim(claim: Claim, resolve: NetworkResolver, out: Collector, referenced: Referenced = _NONE) -> None:
    """One IPAMClaim into `out`: its refusal, or its record (rules 1-3, up to validation). `referenced`: what the
    running launcher pods say of it (`References.of`; see the module)."""
    ref = claim.ref
    if not claim.identified:
        out.refuse(ref, "metadata", checks.MALFORMED_OBJECT, "no name/namespace")
        return
    net_name = claim.network
    if net_name is None:
        out.refuse(ref, claim.network_text, checks.MALFORMED_OBJECT, "spec.network is missing or not a string")
        return
    network, refused = resolve.resolve(net_name)
    if network is None:
        if refused is not None:
            out.refuse(ref, claim.network_text, refused[0], refused[1], refused[2])
        return
    if claim.deleting:
        return  # being deleted
    namespace = ref.namespace
    if not network.selects_namespace(namespace):
        message = f"CUDN {network.name} does not select namespace {describe(namespace)} (no NAD of it there)"
        out.refuse(ref, describe(namespace), reasons.NAMESPACE_NOT_SELECTED, message, network.name)
        return  # never a party to the duplicate rule
    refused_by_platform = claim.allocation_refused
    if refused_by_platform is not None:  # OVN-K said no (IPsAllocated False): its words, not "pending"
        p = refused_by_platform
        out.refuse(ref, p.value, p.reason, p.message, network.name)
        return
    if claim.ips_pending:
        return  # allocation pending: nothing to announce yet
    if claim.ips_malformed is not None:
        malformed = claim.ips_malformed
        out.refuse(ref, malformed.value, malformed.reason, malformed.message, network.name)
        return
    vm = claim.vm
    referencing, mine = referenced
    # the common case (its own VM's pods reference it, or no pod does) needs no more than its label
    if vm is None or mine or (referencing and (len(referencing) != 1 or referencing[0] != vm)):
        vm = _vm(claim, referenced, network.name, out)
    if vm is not None:
        out.records.append(Record(claim.ips, network, ref, (ref.namespace, vm), claim.age, CLAIM, claim.ips_refused))


def _vm(claim: Claim, referenced: Referenced, network: str, out: Collector) -> str | None:
    """The VM the claim's addresses are announced for (see the module), or None with the refusal, if any, in `out`."""
    ref = claim.ref
    referencing, mine = referenced
    if len(referencing) > 1:
        vms = ", ".join(referencing)
        message = (
            f"the running launcher pods of VMs {vms} all reference this claim: OVN-K gives its address to each of "
            "them, so no VM can be told to hold it and it is announced for none"
        )
        out.refuse(ref, describe(vms), reasons.CLAIM_REFERENCED_BY_SEVERAL_VMS, message, network)
        return None
    if referencing:
        vm = referencing[0]
        if claim.vm is not None and claim.vm != vm:
            message = (
                f"the claim's kubevirt.io/vm label or ownerReference names VM {describe(claim.vm)}, but the running "
                f"launcher pod of VM {vm} references it: OVN-K allocates the address to that pod, so it is announced "
                f"for VM {vm}"
            )
            out.refuse(ref, describe(claim.vm), reasons.CLAIM_REFERENCED_BY_OTHER_VM, message, network)
        return vm
    if claim.vm is None:
        problem = claim.vm_problem  # set by the decoder whenever it found no VM
        if problem is not None:
            out.refuse(ref, problem.value, problem.reason, problem.message, network)
        return None
    if mine:
        message = (
            f"the claim's kubevirt.io/vm label or ownerReference names VM {describe(claim.vm)}, whose running launcher "
            f"pod references IPAMClaim {describe(', '.join(mine))} instead: OVN-K allocates the VM's address from "
            "that claim, so this claim's address is on no pod of the VM and is not announced"
        )
        out.refuse(ref, describe(claim.vm), reasons.CLAIM_NOT_REFERENCED_BY_ITS_VM, message, network)
        return None
    return claim.vm


def read_claims(
    claims: Mapping[tuple[str, str], Claim], networks: Networks, out: Collector, references: References | None = None
) -> None:
    """Read IPAMClaims (`ClusterState.ipam_claims`, or any part of it) into `out`: rules 1-3 up to validation.
    `references`: `claim_references` of the state's launcher pods (None: no pod references a claim)."""
    resolve = NetworkResolver(networks)
    refs = references if references is not None else References()
    for claim in claims.values():
        read_claim(claim, resolve, out, refs.of(claim))
