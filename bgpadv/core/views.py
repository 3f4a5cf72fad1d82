"""Typed, validated, immutable views of the watched objects: what the planner, the guard and the controller read.

`bgpadv.sources.decode` turns each raw object (the API's JSON) into one of these once, when it arrives; a
`ClusterState` holds views only, so no raw dict travels past the sources. Decoding never raises: a malformed object
becomes a view that carries its problem (`Problem`: the value as people should see it, a reason code of
`bgpadv.core.reasons`, a message), and the planner refuses it with that reason code, exactly as it did when it read
the dicts itself. Addresses and prefixes are `bgpadv.core.prefix` values; strings the cluster wrote survive only as
`text` fields, bounded (`bgpadv.core.bounded.describe`), for refusals.

One rule per fact:

- Node addresses (`Node`): the next-hop candidates of a family are its `status.addresses[]` entries of type
  `InternalIP`, in order, then the address of that family in the OVN-K annotation `k8s.ovn.org/node-primary-ifaddr`
  (mask stripped); the first valid one is the next hop (the planner decides validity: not special, not inside an
  advertised network). Every address the node has is the union of what the planner and the guard read before:
  `InternalIP` and `ExternalIP` entries, both `node-primary-ifaddr` entries, every `k8s.ovn.org/host-cidrs` entry;
  no VM address may be one of them (planner rule 8) and no host route may cover one (guard rule 5): both read
  `Node.addresses`, so `covers-infrastructure` means one thing. A node's connected networks (`Node.connected`: each
  `k8s.ovn.org/host-cidrs` entry with its length, host bits cleared) and its share of the default pod network
  (`Node.pod_subnets`: the `default` entry of `k8s.ovn.org/node-subnets`, a string or a list) are node space no
  network may overlap (`bgpadv.planner.space`).
- The claim → VM link (`Claim.vm`): the label `kubevirt.io/vm`, else an ownerReference of kind VirtualMachine or
  VirtualMachineInstance; a label and an ownerReference naming different VMs is a problem.
- A live migration (`Migration`), read once for the planner's placement, the controller's handover metric and the
  watch lag of the sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from bgpadv.core.bounded import describe
from bgpadv.core.model import ObjectRef
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.selectors import LabelSelector

NEWEST = "\uffff"
"""Sorts after every timestamp: an object without creationTimestamp is the youngest (it never wins a conflict)."""

EMPTY_LABELS: Mapping[str, str] = MappingProxyType({})

_V6 = 1 << 128

MAX_CLAIM_IPS = 8
"""Most entries a claim's `status.ips` may list (OVN-K writes one per family); more is refused whole."""
MAX_GUEST_ADDRESSES = 64
"""Most addresses kept per guest-reported interface: the highest `maxAddressesPerInterface` the configuration allows
(the planner refuses what lies beyond the configured limit, `too-many-addresses`)."""


def address_key(version: int, value: int) -> int:
    """One integer per address, distinct across families: the IPv4 value itself, or the IPv6 value + 2**128."""
    return value if version == 4 else value | _V6


class Problem(NamedTuple):
    """Why (part of) an object is refused: the value as people should see it, the reason code, a message."""

    value: str
    reason: str
    message: str


class VmAddress(NamedTuple):
    """One address a claim or a guest reports: as written (bounded text), parsed (None: malformed), its key
    (`address_key`; 0 when malformed)."""

    text: str
    address: Address | None
    key: int


# -- networks ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Network:
    """A ClusterUserDefinedNetwork.

    `withdrawn`: being deleted or `NetworkCreated` False (contributes nothing, claims skipped silently). `problems`:
    the refusals of the CUDN itself (malformed `spec.network`, not advertisable, an invalid definition); when there
    are any, `claim_problem` is the (reason, message) every claim on it gets, and the definition fields are empty.
    `secondary`: an IPAM-less secondary Layer2 network (guest-reported addresses). `persistent_ips`: IPAM enabled
    and `ipam.lifecycle: Persistent` (its VMs' addresses come from IPAMClaims). `gateways` include the implied
    ones (OVN-K's first host, or the first host of the first infrastructure subnet of the family);
    `infrastructure_addresses` are the implied management-port addresses (the second host) of families without
    infrastructure subnets. `host_subnet_lengths`: Layer3 (cidr, hostSubnet), OVN-K's default when unset.
    """

    name: str
    ref: ObjectRef
    resource_version: str = field(default="", compare=False)  # equal views say the same, whatever the version
    age: tuple[str, str] = (NEWEST, "")
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY_LABELS)
    network_id: int | None = None  # the `k8s.ovn.org/network-id` annotation (the importer's VRF)
    withdrawn: bool = False
    topology: str | None = None
    role: str | None = None
    ipam_disabled: bool = False
    persistent_ips: bool = False
    secondary: bool = False
    problems: tuple[Problem, ...] = ()
    claim_problem: tuple[str, str] | None = None
    subnets: tuple[Prefix, ...] = ()
    gateways: frozenset[Address] = frozenset()
    infrastructure: tuple[Prefix, ...] = ()
    infrastructure_addresses: frozenset[Address] = frozenset()
    reserved: tuple[Prefix, ...] = ()
    host_subnet_lengths: tuple[tuple[Prefix, int], ...] = ()
    namespace_selector: LabelSelector | None = None  # None: absent or malformed (selects no namespace); valid ones only
    transport: str | None = None  # `spec.network.transport` as written (EVPN, NoOverlay; None: the overlay)
    evpn: str = ""  # the `evpn` block's VRFs as people should see them ("macVRF vni 100, ipVRF vni 200")

    @property
    def valid(self) -> bool:
        return not self.problems and self.claim_problem is None


DEFAULT_VRFS = ("", "default")
"""The `targetVRF` values that mean the default VRF (absent, or `default`)."""


@dataclass(frozen=True, slots=True)
class RouteAdvertisement:
    """A RouteAdvertisements object: whether it advertises `PodNetwork`, whether it is accepted for its current
    generation, and the CUDN selectors it holds (valid ones only: a malformed selector selects nothing).

    `target_vrf`: `spec.targetVRF` as written ("" when absent; `auto` or a VRF name keep the networks in their own
    VRF). `node_selector`: `spec.nodeSelector` (the empty selector: every node; None: malformed, selects no node).
    `advertisements`: `spec.advertisements` as written, strings only (PodNetwork, EgressIP, ...).
    `malformed_selectors`: (field path, message) of each malformed selector, which selects nothing
    (`malformed-selector`)."""

    name: str
    resource_version: str = field(default="", compare=False)  # equal views say the same, whatever the version
    pod_network: bool = False
    accepted: bool = False
    network_selectors: tuple[LabelSelector, ...] = ()
    ref: ObjectRef | None = None
    target_vrf: str = ""
    node_selector: LabelSelector | None = field(default_factory=LabelSelector)
    advertisements: tuple[str, ...] = ()
    malformed_selectors: tuple[tuple[str, str], ...] = ()

    @property
    def default_vrf(self) -> bool:
        return self.target_vrf in DEFAULT_VRFS

    @property
    def selectors(self) -> tuple[LabelSelector, ...]:
        """The selectors that count: those of an accepted RA that advertises PodNetwork."""
        return self.network_selectors if self.pod_network and self.accepted else ()


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    resource_version: str = field(default="", compare=False)  # equal views say the same, whatever the version
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY_LABELS)


# -- nodes ----------------------------------------------------------------------------------------------------------


_EMPTY_SUBNETS: Mapping[str, tuple[HostSubnet, ...]] = MappingProxyType({})


class HostSubnet(NamedTuple):
    """One entry of a node's `k8s.ovn.org/node-subnets` for a network: as written, parsed (host bits cleared)."""

    text: str
    prefix: Prefix | None


@dataclass(frozen=True, slots=True)
class Node:
    """A Node: its next-hop candidates and every address it has (see the module), its Layer3 host subnets per CUDN
    name (from `k8s.ovn.org/node-subnets` key `cluster_udn_<name>`), or the problem of that annotation."""

    name: str
    ref: ObjectRef
    resource_version: str = field(default="", compare=False)  # equal views say the same, whatever the version
    age: tuple[str, str] = (NEWEST, "")
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY_LABELS)
    next_hop_candidates: tuple[Address, ...] = ()
    addresses: tuple[Address, ...] = ()
    host_subnets: Mapping[str, tuple[HostSubnet, ...]] = field(default_factory=lambda: _EMPTY_SUBNETS)
    host_subnets_problem: Problem | None = None
    connected: tuple[Prefix, ...] = ()  # `k8s.ovn.org/host-cidrs` entries as networks (host bits cleared)
    pod_subnets: tuple[Prefix, ...] = ()  # `k8s.ovn.org/node-subnets` "default": the default pod network's share


# -- claims, VMs, pods ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """An IPAMClaim, in the order the planner reads it (rules 1-3 of `planner.vms`).

    `identified` False: no name/namespace (`ref` from the store key). `network`: `spec.network` when a non-empty
    string (`network_text`: as written, for refusals). `ips_pending`: `status.ips` empty or missing.
    `ips_malformed`: `status.ips` is not a list. `ips`: the distinct addresses listed (malformed entries kept, each
    refused alone), or `ips_refused` when the claim is refused whole (more than `MAX_CLAIM_IPS` entries, two
    addresses of one family). `allocation_refused`: OVN-K's `IPsAllocated` condition is False (its reason as the
    value, its message in the message). `vm`: the VMI it belongs to, else `vm_problem`. No labels and no
    ownerReferences: the planner reads none of a claim's (its VM label or owner is `vm`), so a claim whose labels or
    owners alone change is unchanged (and each holds 232 B + 96 B less: its one label's mapping, its owner list,
    traced).
    """

    key: tuple[str, str]
    ref: ObjectRef
    resource_version: str = field(default="", compare=False)  # equal views say the same, whatever the version
    identified: bool = True
    age: tuple[str, str, str] = (NEWEST, "", "")
    network: str | None = None
    network_text: str = ""
    deleting: bool = False
    ips_pending: bool = True
    ips_malformed: Problem | None = None
    ips_refused: Problem | None = None
    ips: tuple[VmAddress, ...] = ()
    allocation_refused: Problem | None = None
    vm: str | None = None
    vm_problem: Problem | None = None


@dataclass(frozen=True, slots=True)
class Migration:
    """A VMI's `status.migrationState`. `given_up`: failed, or aborted (`abortStatus: Succeeded`); an abort request
    alone decides nothing. `target_ready`: `targetNodeDomainReadyTimestamp` is set (`target_ready_at`: its wall
    time when it parses). `timestamps`: its start, end and target-ready times as written (the watch lag).
    `decentralized`: a cross-cluster live migration, as KubeVirt tells it (`VirtualMachineInstance.
    IsDecentralizedMigration`, api/core/v1/types.go: `sourceState` and `targetState` both present and exactly one of
    them carries a `syncAddress`): the other side of the migration runs in another cluster. `side`: which side this
    VMI is (`sourceState`/`targetState.virtualMachineInstanceUID` names it, else the side whose node is the VMI's);
    `target_ready` also reads `targetState.domainReadyTimestamp` there."""

    source_node: str | None = None
    target_node: str | None = None
    target_pod: str | None = None
    completed: bool = False
    given_up: bool = False
    target_ready: bool = False
    target_ready_at: float | None = None
    timestamps: tuple[str, ...] = ()
    decentralized: bool = False
    side: str | None = None  # of a decentralized migration: "source", "target", or None (unknown)

    @property
    def needs_pods(self) -> bool:
        """True when placing the VMI needs its launcher pods: neither completed nor given up, target not known live."""
        return not self.given_up and not self.completed and not self.target_ready and not self.decentralized


class Attachment(NamedTuple):
    """One `spec.networks[]` entry with `multus.networkName`: the VMI interface, the NAD's namespace ("" when not
    written: the VMI's) and name."""

    interface: str
    nad_namespace: str
    nad_name: str


@dataclass(frozen=True, slots=True)
class GuestInterface:
    """One `status.interfaces[]` entry (by name). `guest`: its addresses come from the guest agent (`infoSource`
    names `guest-agent`, or is absent). `addresses`: `ipAddresses` (else `ipAddress`), None when neither; at most
    `MAX_GUEST_ADDRESSES` are kept (of a longer list, the plausible ones first: parsed, no special range), `count` is
    how many were reported; `malformed` when `ipAddresses` is not a list.
    """

    name: str
    guest: bool = True
    addresses: tuple[VmAddress, ...] | None = None
    count: int = 0
    malformed: Problem | None = None
    reported: tuple[object, ...] = ()  # the first entries as written, only to describe a refused tail

    def tail_text(self, start: int) -> str:
        """The entries from `start` on, as a refusal shows them (bounded)."""
        return describe(list(self.reported[start:]))


@dataclass(frozen=True, slots=True)
class Vmi:
    """A VirtualMachineInstance: running (phase Running, not being deleted), its node (`status.nodeName` when a
    string; `node_name_set`: the field is not null), its migration, its secondary-network attachments and the
    interfaces the guest reports."""

    key: tuple[str, str]
    ref: ObjectRef
    resource_version: str = field(default="", compare=False)  # equal views say the same, whatever the version
    identified: bool = True
    uid: str = ""
    age: tuple[str, str, str] = (NEWEST, "", "")
    labels: Mapping[str, str] = field(default_factory=lambda: EMPTY_LABELS)
    phase: str | None = None
    deleting: bool = False
    node_name: str | None = None
    node_name_set: bool = False
    migration: Migration | None = None
    attachments: tuple[Attachment, ...] = ()
    interfaces: tuple[GuestInterface, ...] = ()

    @property
    def running(self) -> bool:
        return self.phase == "Running" and not self.deleting


@dataclass(frozen=True, slots=True)
class PodNetwork:
    """One entry of a launcher pod's `k8s.ovn.org/pod-networks` annotation (OVN-K's own assignment) for a network
    whose `role` is `primary`: its addresses (`ip_addresses`, else the deprecated `ip_address`), read like a claim's
    `status.ips` (`decode.claims.claim_ips`), or the problem that refuses them whole."""

    addresses: tuple[VmAddress, ...] = ()
    refused: Problem | None = None


_EMPTY_POD_NETWORKS: Mapping[str, PodNetwork] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class LauncherPod:
    """A virt-launcher pod: the VMI it names (`kubevirt.io/domain` annotation, the name of its VirtualMachineInstance
    ownerReference: lookup hints only), the VMI uids it states (label `kubevirt.io/created-by`, the uid of its
    VirtualMachineInstance ownerReference: what makes it that VMI's, see `runs`), its node, whether it finished,
    whether it says the migration target is ready, and OVN-K's addresses for its primary networks
    (`networks`: NAD name `<namespace>/<name>` → `PodNetwork`; `networks_problem`: the annotation is not a JSON
    object). `claim_ref`: the IPAMClaim (in the pod's namespace) OVN-K allocates its primary address from, read as
    OVN-K reads it: the `ipam-claim-reference` of its `v1.multus-cni.io/default-network` selection, else the
    deprecated `k8s.ovn.org/primary-udn-ipamclaim` annotation."""

    key: tuple[str, str]
    resource_version: str = field(default="", compare=False)  # equal views say the same, whatever the version
    namespace: str | None = None
    domain: str | None = None
    created_by: str | None = None
    owner_name: str | None = None
    owner_uid: str | None = None
    node: str | None = None
    finished: bool = False
    target_ready: bool = False
    networks: Mapping[str, PodNetwork] = field(default_factory=lambda: _EMPTY_POD_NETWORKS)
    networks_problem: Problem | None = None
    claim_ref: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The VMI names the pod points at (lookup keys; never proof of anything)."""
        return tuple(dict.fromkeys(n for n in (self.domain, self.owner_name) if n))

    def runs(self, vmi_uid: str) -> bool:
        """True when KubeVirt itself says the pod runs the VMI of uid `vmi_uid`: the VMI has a uid, the pod states at
        least one (label `kubevirt.io/created-by`, VirtualMachineInstance ownerReference uid), and every uid it
        states is the VMI's. A `kubevirt.io/domain` annotation (or an owner name) alone never makes a pod a VMI's:
        any pod can carry them (migration trust, rule 6 of `planner.vms`)."""
        if not vmi_uid:
            return False
        created_by, owner_uid = self.created_by, self.owner_uid  # no list: once per launcher pod of the cluster
        if not created_by and not owner_uid:
            return False
        return (not created_by or created_by == vmi_uid) and (not owner_uid or owner_uid == vmi_uid)

    def live_on(self, node: str) -> bool:
        """True when the pod runs on `node`, is not finished, and carries the migration-target-ready annotation."""
        return self.node == node and not self.finished and self.target_ready


View = Network | RouteAdvertisement | Namespace | Node | Claim | Vmi | LauncherPod
