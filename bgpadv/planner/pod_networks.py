"""VMs without an IPAMClaim: their addresses from OVN-K's own assignment (rule 10 of `vms`), read from
`views.LauncherPod.networks` (the launcher pod's `k8s.ovn.org/pod-networks` annotation).

For each Running VMI (with a uid) on an advertised primary network (Layer2 or Layer3, IPAM enabled): the entry of
its launcher pod keyed by the NAD name `<VMI namespace>/<CUDN name>` (OVN-K renders a CUDN's NAD in each selected
namespace under the CUDN's name: clustermanager/userdefinednetwork/template/net-attach-def-template.go) whose role
is `primary`. Only pods KubeVirt says run that VMI count (`LauncherPod.runs`: created-by / ownerReference uid); of
several (a live migration: OVN-K copies the source pod's annotation to the target pod,
go-controller/pkg/kubevirt/pod.go `EnsurePodAnnotationForVM`, so both list the same addresses), the unfinished pod on
the VMI's `status.nodeName` is read, else the first by pod key. An IPAMClaim of the VM wins: a pod has one primary
network ("at a given time a pod can have only 1 network with role:primary", pod_annotation.go), so a VM that any
claim (not being deleted, allocated or not) links to an advertised primary network (`claim_links`: the VM whose
running launcher pod references the claim, else the VM its label or ownerReference names; `claims`) is not read
from its pods at all; an address is never held twice by one VM, and the claims' VMs cost nothing here.
The record carries the VMI as its source and the VMI's age in conflicts, and goes through the claims' validation,
duplicate, placement and next-hop rules (3-8), with its own trust rank: tenants may patch their pods' annotations, so
an address a claim holds always stays the claim's (`candidates.POD_NETWORKS`, `conflicts`).

Layer3: OVN-K gives a pod an address of its node's host subnet, so an address that lies outside every host subnet
the launcher pod's node holds (`host_subnets`: in another node's, or in none) is refused `outside-node-subnet`
before the duplicate rule (an edited annotation must not even contest another VM's address). An address that is not
valid on the network at all keeps its own refusal (`outside-network-subnets`, ...).

Per-node mode (`per_node`): on a network with persistent IPs (Layer2, `ipam.lifecycle: Persistent`) every VM's
address comes from an IPAMClaim, and an instance holds only the claims of its own node's VMs, so it cannot see a
claim of another node's VM that an edited annotation names. An annotation address of a VM without a claim there is
refused `claim-required` (before the duplicate rule, like `outside-node-subnet`): announced, it could give the
fabric a second path to another node's VM. Cluster mode sees every claim and refuses such an address
`outranked-address` instead; a network without persistent IPs has no claims to hide.

Not read: the VMI's `status.interfaces[]` entry of the pod network. KubeVirt merges there what the guest agent
reports with Multus' network status (`infoSource: domain, guest-agent, multus-status`), so it cannot tell OVN-K's
assignment from an address the guest configured itself inside the subnet (an IPv6 privacy address, a static one),
which OVN-K's port security drops: a host route for it would be a wrong route, and a guest could take another VM's
address. Without a visible launcher pod (a dump of VMIs only) such a VM gets no host route.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping

from bgpadv.core import reasons
from bgpadv.core.bounded import describe
from bgpadv.core.state import ClusterState
from bgpadv.core.views import Claim, LauncherPod, VmAddress, Vmi
from bgpadv.planner.advertised import Network
from bgpadv.planner.candidates import POD_NETWORKS, Collector, Record
from bgpadv.planner.claims import Referenced, References, claim_vms
from bgpadv.planner.host_subnets import HostSubnets
from bgpadv.planner.networks import CUDN_PREFIX, Networks
from bgpadv.planner.placement import LauncherPods

ClaimLink = tuple[str, str, str]
"""(namespace, VMI name, CUDN name) of an IPAMClaim: that VM's address on that network is the claim's."""


def primary_networks(networks: Networks) -> dict[str, Network]:
    """The advertised primary networks (Layer2 and Layer3 with IPAM), whose VMs' addresses OVN-K assigns."""
    return {n.name: n for n in networks.advertised.values() if not n.ipam_disabled}


def claim_links_of(claim: Claim, referenced: Referenced = ((), ())) -> tuple[ClaimLink, ...]:
    """The (namespace, VM, CUDN) an IPAMClaim holds the address of (none: not a CUDN's, no VM, being deleted); its VM
    as `claims.claim_vms` says (`referenced`: what the running launcher pods say of it, `claims.References.of`)."""
    net = claim.network
    if not claim.identified or claim.deleting or net is None or not net.startswith(CUDN_PREFIX):
        return ()
    vms = claim_vms(claim, referenced)
    if not vms:
        return ()
    cudn = sys.intern(net[len(CUDN_PREFIX) :])  # one CUDN name string, not one per claim
    namespace = claim.key[0]
    return ((namespace, vms[0], cudn),) if len(vms) == 1 else tuple((namespace, vm, cudn) for vm in vms)


def claim_links(claims: Iterable[Claim], references: References | None = None) -> set[ClaimLink]:
    """The links of these claims (`references`: `claims.claim_references` of the launcher pods; None: none)."""
    refs = references if references is not None else References()
    links: set[ClaimLink] = set()
    for c in claims:
        found = claim_links_of(c, refs.of(c))
        if len(found) == 1:
            links.add(found[0])
        elif found:
            links.update(found)
    return links


def claimed_here(namespace: str, name: str, primary: Mapping[str, Network], claimed: set[ClaimLink]) -> bool:
    """True when a claim links the VM to one of the advertised primary networks (then the claim holds its address)."""
    return any((namespace, name, cudn) in claimed for cudn in primary)


def vmi_pods(vmi: Vmi, pods: LauncherPods) -> tuple[LauncherPod, ...]:
    """The VMI's unfinished launcher pods, the one to read first (see the module)."""
    namespace, name = vmi.key
    live = [p for p in pods.for_vmi(namespace, name, vmi.uid) if not p.finished]
    live.sort(key=lambda p: (p.node != vmi.node_name, p.key))
    return tuple(live)


def wanted_keys(vmis: Iterable[Vmi]) -> set[tuple[str, str]]:
    """The `LauncherPods` index keys of these VMIs (name and uid)."""
    wanted: set[tuple[str, str]] = set()
    for vmi in vmis:
        wanted.add(vmi.key)
        if vmi.uid:
            wanted.add((vmi.key[0], vmi.uid))
    return wanted


def on_node(
    addresses: tuple[VmAddress, ...], network: Network, pod: LauncherPod, vmi: Vmi, subnets: HostSubnets, out: Collector
) -> tuple[VmAddress, ...]:
    """The addresses of a Layer3 entry that lie in a host subnet of the pod's node (or that validation refuses
    anyway); the others are refused `outside-node-subnet` (see the module)."""
    kept: list[VmAddress] = []
    for a in addresses:
        address = a.address
        if address is None or network.check(address.version, address.value) is not None:
            kept.append(a)  # refused by validation, with its own reason
            continue
        held = subnets.holder(network.name, address.version, address.value)
        if held is not None and held[1] == pod.node:
            kept.append(a)
            continue
        where = f"in host subnet {held[0]} of node {held[1]}" if held is not None else "in no node's host subnet"
        own = ", ".join(str(p) for p in subnets.of_node(network.name, pod.node or "")) or "none"
        message = (
            f"launcher pod {pod.key[1]} runs on node {pod.node or '?'} (host subnets of CUDN {network.name}: {own}), "
            f"but the address lies {where} (k8s.ovn.org/node-subnets): OVN-K gives a Layer3 pod an address of its "
            "own node's host subnet"
        )
        out.refuse(vmi.ref, a.text, reasons.OUTSIDE_NODE_SUBNET, message, network.name)
    return tuple(kept) if len(kept) != len(addresses) else addresses


def claim_required(
    addresses: tuple[VmAddress, ...], network: Network, pod: LauncherPod, vmi: Vmi, out: Collector
) -> None:
    """Per-node mode, a network with persistent IPs: refuse each annotation address `claim-required` (see the
    module)."""
    message = (
        f"launcher pod {pod.key[1]} lists it, but the VM has no IPAMClaim on CUDN {network.name}, whose addresses "
        "are persistent IPs (IPAMClaims): a per-node instance holds only its own node's claims and cannot tell "
        "whether a VM elsewhere claims the address"
    )
    for a in addresses:
        out.refuse(vmi.ref, a.text, reasons.CLAIM_REQUIRED, message, network.name)


def read_vmi_pods(
    vmi: Vmi,
    pods: tuple[LauncherPod, ...],
    primary: Mapping[str, Network],
    claimed: set[ClaimLink],
    out: Collector,
    subnets: HostSubnets | None = None,
    per_node: bool = False,
) -> None:
    """One VMI's addresses from its launcher pods (`vmi_pods`) into `out`; `subnets`: the Layer3 host subnets as
    held (`host_subnets`; None: no node holds any); `per_node`: an instance of per-node mode (`claim-required`)."""
    namespace, name = vmi.key
    if not vmi.identified or not vmi.running or not pods or claimed_here(namespace, name, primary, claimed):
        return
    pod = pods[0]
    if pod.networks_problem is not None:
        p = pod.networks_problem
        out.refuse(vmi.ref, p.value, p.reason, f"launcher pod {pod.key[1]}: {p.message}")
        return
    for nad, entry in pod.networks.items():
        nad_namespace, _, cudn = nad.partition("/")
        network = primary.get(cudn)
        if network is None or nad_namespace != namespace:
            continue
        if not network.selects_namespace(namespace):
            message = f"CUDN {network.name} does not select namespace {describe(namespace)} (no NAD of it there)"
            out.refuse(vmi.ref, describe(namespace), reasons.NAMESPACE_NOT_SELECTED, message, network.name)
            continue  # never a party to the duplicate rule
        addresses = entry.addresses
        if per_node and network.persistent_ips and entry.refused is None:
            claim_required(addresses, network, pod, vmi, out)
            continue  # never a party to the duplicate rule
        if network.topology == "Layer3" and entry.refused is None:
            addresses = on_node(addresses, network, pod, vmi, subnets or HostSubnets((), ()), out)
        if addresses or entry.refused is not None:
            out.records.append(Record(addresses, network, vmi.ref, vmi.key, vmi.age, POD_NETWORKS, entry.refused))


def read_pod_networks(
    vmis: Mapping[tuple[str, str], Vmi],
    state: ClusterState,
    networks: Networks,
    claimed: set[ClaimLink],
    out: Collector,
    subnets: HostSubnets | None = None,
    per_node: bool = False,
) -> None:
    """Read the pod-assigned addresses of Running VMIs (`ClusterState.vmis`, or any part of it) into `out`;
    `subnets`: the Layer3 host subnets as held (`host_subnets`; None: no node holds any); `per_node`: an instance
    of per-node mode (`claim-required`)."""
    primary = primary_networks(networks)
    if not primary:
        return
    claimed_vms = {(ns, vm) for ns, vm, cudn in claimed if cudn in primary}
    running = [v for v in vmis.values() if v.identified and v.running and v.uid and v.key not in claimed_vms]
    if not running:
        return
    pods = LauncherPods(state.pods, wanted_keys(running))
    for vmi in running:
        read_vmi_pods(vmi, vmi_pods(vmi, pods), primary, claimed, out, subnets, per_node)
