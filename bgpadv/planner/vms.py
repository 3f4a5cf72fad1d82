"""VM host routes: which address (IPAMClaim, the launcher pod's OVN-K assignment without a claim, or the guest on
IPAM-less secondary networks), on which node, which next hop.

Rules, in the order the planner applies them to each IPAMClaim:

1. Network: `spec.network` `cluster_udn_<name>` names CUDN `<name>`. An advertised Layer2 CUDN goes on; an
   advertised Layer3 CUDN refuses the claim (`persistent-ips-not-supported`: OVN-K honours IPAMClaims only on
   Layer2/Localnet, so the addresses are whatever a pod got from some node's host subnet); a CUDN that is not
   selected, not advertisable, invalid or overlapped by an older network refuses the claim with the CUDN's own code
   (`network-not-selected`, `network-not-advertisable`, `invalid-network-definition`, `network-overlap`); a CUDN being
   deleted skips it silently; a missing CUDN gives `unknown-network`. `<ns>_<name>` is a namespaced UDN
   (`namespaced-udn-not-advertisable`); anything else is `unknown-network`. A claim being deleted is skipped.
   1b. Namespace: the claim's namespace must be one the CUDN's `namespaceSelector` selects (OVN-K renders the NAD
   only there; `Network.selects_namespace`); otherwise it is refused `namespace-not-selected` and takes no part in
   rule 4, so an older claim elsewhere never takes a real VM's address.
2. VM: same namespace. OVN-K allocates the claim's address to the launcher pod that references it (the
   `ipam-claim-reference` of its `v1.multus-cni.io/default-network` selection, else the deprecated
   `k8s.ovn.org/primary-udn-ipamclaim` annotation), so a claim the unfinished launcher pod(s) of one VMI reference
   (pods KubeVirt says run that VMI, `LauncherPod.runs`; a live migration's source and target are one VM) is that
   VM's. When its label or ownerReference names another VM the claim is still that VM's, and the label's tie is
   refused `claim-referenced-by-other-vm`; a claim the pods of two different VMs reference is refused whole
   `claim-referenced-by-several-vms` (`claims`). A claim no pod references: VMI name = the claim's label
   `kubevirt.io/vm`, else the name of its ownerReference of kind VirtualMachine or VirtualMachineInstance; when that
   VM's running launcher pods reference other claims only, the claim is stale and refused
   `claim-not-referenced-by-its-vm`. The claim name is never parsed. No link at all, or a label and an
   ownerReference that name different VMs (and no pod reference): `malformed-object`.
3. Addresses: `status.ips`, CIDR strings with the subnet mask (bare IPs accepted), each announced as /32 or /128.
   Empty or missing: allocation pending, nothing to do. Each address is validated against the network
   (`Network.check`); the same address listed twice by one claim counts once. OVN-K allocates at most
   one address per family per claim: a claim listing two distinct addresses of one family, or more than
   `MAX_CLAIM_IPS` (8) entries, is refused whole as `malformed-object` (nothing of it is announced, so a
   hostile 40k-address claim costs one refusal, not 40k routes). Malformed entries beside valid ones are refused
   one by one (`malformed-address`) and do not count as addresses.
4. Conflicts: one address held by several objects (in any network) goes to the most trusted source first
   (`candidates`: an IPAMClaim's status, then a launcher pod's `k8s.ovn.org/pod-networks`, rule 10, then a guest
   report, rule 9); the less trusted are refused `outranked-address` whatever their ages. Within one rank it goes
   to the oldest `metadata.creationTimestamp` (of the claim, or of the VMI), ties broken by (namespace, name); the
   others are refused `duplicate-address`. The winner may be a stopped VM: its claim keeps the address reserved, so
   the younger claimant, and any pod annotation or guest report of it, is still refused.
5. Running: only a VMI in phase Running and not being deleted (no `metadata.deletionTimestamp`: the VM is being
   stopped, its finalizers hold the object a while) is announced; no VMI or another phase is a stopped VM, not a
   refusal.
6. Node: `status.nodeName`, except during a live migration (`status.migrationState` present and neither
   completed, failed nor abortStatus Succeeded) where the target node wins once the target is live:
   `migrationState.targetNodeDomainReadyTimestamp` is set, or a launcher pod of the VMI on the target node carries the
   annotation `kubevirt.io/migration-target-ready-timestamp`. A pod is the VMI's only by KubeVirt's own statement
   (`LauncherPod.runs`): the VMI has a uid, and every uid the pod states (its VirtualMachineInstance ownerReference,
   its label `kubevirt.io/created-by`; at least one) is that uid. The `kubevirt.io/domain` annotation and the
   VM-name labels only help find the pod: a pod that carries another VM's domain annotation never moves its route. An
   abort request alone changes nothing: once the
   target domain runs the abort fails (`abortStatus: Failed`) and the VM is on the target. A completed migration
   is on `migrationState.targetNode` (even before `status.nodeName` flips). A failed or aborted
   (`abortStatus: Succeeded`) migration stays on (returns to) the source: `status.nodeName`, else
   `migrationState.sourceNode`. `status.ownerPod` of the claim is never used.
   6b. Per-node mode (`config.node_name`, one instance per node): the source's instance keeps a migrating VM on
   its own node until the migration completes (`completed`, or `status.nodeName` leaves the source) or is given up,
   while the target's instance places it on the target from target-ready on (rule 6, judged from its own launcher
   pod on the target node). Between the two the ToR has both paths; at no moment has it none.
6c. Nodes: with `followRouteAdvertisements`, a VM placed on a node that no default-VRF RouteAdvertisements
   advertising its network selects (`nodeSelector`, see `networks`) is refused `node-not-selected`, with either
   next-hop setting (checked before rules 7-8).
   6d. Cross-cluster (decentralized) live migration (`migrationState.sourceState` and `targetState` both present,
   exactly one with a `syncAddress`, as KubeVirt's `IsDecentralizedMigration` reads it): the other side's node is in
   another cluster and is never a placement. The source side keeps the VM on `status.nodeName` until the target
   domain is live (per-node mode: until completion, as in 6b), then the VM is away: its routes are withdrawn like a
   stopped VM's, with no refusal. The target side (`targetState.virtualMachineInstanceUID` is this VMI's uid) places
   it on `status.nodeName` from target-ready on (also `targetState.domainReadyTimestamp`), never when given up.
7. Next hop: config `nextHop: self` → None (the speaker's address); `node` → that node's address of the route's
   family (`nodes`), or the refusal `no-node-address` when the node is unknown or has none, `invalid-node-address`
   when its only addresses of that family can never be next hops (loopback, link-local, inside an advertised
   network, ...).
8. Node addresses: the address of a running VM that is also an address of any node (`views.Node.addresses`: InternalIP,
   ExternalIP, `node-primary-ifaddr`, `host-cidrs`, the set the guard's rule 5 reads too) is refused
   `covers-infrastructure`: its host route would steal the node's traffic. A network holding a node address is refused
   whole before (`networks`, `space`: `overlaps-node-network`), so this is a last line for VM addresses. Checked after
   rules 4-5 (the claim still holds the address against younger claims), with either next-hop setting.

Advertised networks never overlap (`networks` refuses the younger of two overlapping ones), so an address lies in
at most one of them; the same address claimed on two networks can only be a claim on a network that is not
advertised, refused by rule 1 before any conflict.

9. Guest-reported addresses: an IPAM-less secondary Layer2 network (`role: Secondary`, `ipam.mode: Disabled`;
   see `networks`) has no claims. A Running VMI attaches to it through `spec.networks[].multus.networkName` =
   `<cudn>` or `<namespace>/<cudn>` (the NetworkAttachmentDefinition the CUDN generates is named after it), where the
   NAD's namespace (the VMI's when not written) and the VMI's own are namespaces the CUDN's `namespaceSelector`
   selects by their real labels (else the attachment is refused `namespace-not-selected`, rule 1b).
   The addresses are the `status.interfaces[]` entry of the same `name`: `ipAddresses` (else `ipAddress`), bare IPs,
   taken only when `infoSource` names `guest-agent` (or is absent, older KubeVirt). A guest reports anything: each
   address is validated as for claims (plus `outside-allowed-prefixes` against the configured allowed prefixes) and
   what fails is refused with its reason *before* the bound counts anything, so a link-local or loopback report never
   crowds out a real address; of the valid ones, the first `maxAddressesPerInterface` in address order (IPv4 before
   IPv6, then numerically: KubeVirt's `ipAddresses` carries no stable/temporary flag, and the guest agent's order
   changes between reports) are taken and the rest refused `too-many-addresses`. The decoder keeps at most
   `views.MAX_GUEST_ADDRESSES` entries per interface, the plausible (non-special) ones first. The VMI is the source;
   conflicts with claims or other VMIs, running, node and next hop follow rules 4-8. A primary network
   with `ipam.mode: Disabled` cannot exist under the CRD: `networks` refuses it (`invalid-network-definition`), so
   no address is ever read from the primary UDN interface.

10. VMs without an IPAMClaim (`networks.podNetworkAddresses`, default true): on an advertised primary Layer2 or
   Layer3 CUDN, a Running VMI's addresses are OVN-K's own assignment, the `k8s.ovn.org/pod-networks` entry of its
   launcher pod (a pod KubeVirt says runs it, rule 6) keyed by the NAD name `<VMI namespace>/<CUDN name>` with role
   `primary` (`ip_addresses`, else the deprecated `ip_address`; read like a claim's `status.ips`, rule 3). During a
   live migration both launcher pods list the same addresses (OVN-K copies them to the target pod); the unfinished
   pod on `status.nodeName` is read, else the first by name. An IPAMClaim of the VM naming that network (any claim
   not being deleted, allocated or not) wins: the pod is not read for it. The VMI is the source and its age counts
   in conflicts within its trust rank (below any claim's: tenants may patch their pods' annotations); rules 3-8
   apply as for claims. On a Layer3 CUDN an address outside every host subnet the pod's node holds
   (`k8s.ovn.org/node-subnets`; in another node's, or in none) is refused `outside-node-subnet` first. In per-node
   mode, on a network with persistent IPs (`ipam.lifecycle: Persistent`), every such address is refused
   `claim-required` first: the instance holds only its own node's claims and cannot check it against the others.

The reading of each object is the decoder's (`bgpadv.sources.decode`, into `bgpadv.core.views`): a claim's
addresses, its VM, a VMI's migration and guest reports arrive parsed, with their problems. The rules live in the
modules that apply them, used alike by `host_routes` (the full planner) and `planner.incremental` (one object at a
time): `claims` (rules 1-3 for IPAMClaims), `guest_reports` (rule 9), `pod_networks` (rule 10), `candidates` (validation
into a `Collector`;
`Collector.entry()` is what one object contributes), `conflicts` (rule 4), `placement` (rules 5-6b), and here
`host_route` (rules 7-8, one winning address).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bgpadv.config import Config
from bgpadv.core import reasons
from bgpadv.core.model import Attributes, Refusal, Route, RouteKind
from bgpadv.core.prefix import Prefix
from bgpadv.core.state import ClusterState
from bgpadv.core.views import MAX_CLAIM_IPS, address_key
from bgpadv.planner import checks
from bgpadv.planner.advertised import Network
from bgpadv.planner.candidates import Candidate, Collector
from bgpadv.planner.claims import claim_references, read_claims
from bgpadv.planner.conflicts import resolve_conflict, resolve_conflicts
from bgpadv.planner.fast import make_route
from bgpadv.planner.guest_reports import namespace_networks, read_vmi_interfaces
from bgpadv.planner.host_subnets import HostSubnets
from bgpadv.planner.networks import Networks
from bgpadv.planner.nodes import NodeInfo, node_address_keys
from bgpadv.planner.placement import LauncherPods, needs_pods, placements, vmi_node
from bgpadv.planner.pod_networks import claim_links, primary_networks, read_pod_networks
from bgpadv.planner.policy import Policies, host_attributes

__all__ = [
    "MAX_CLAIM_IPS",
    "Candidate",
    "Collector",
    "LauncherPods",
    "address_key",
    "host_route",
    "host_routes",
    "namespace_networks",
    "needs_pods",
    "placements",
    "read_claims",
    "read_vmi_interfaces",
    "resolve_conflict",
    "resolve_conflicts",
    "vmi_node",
]

_V6 = 1 << 128


def host_routes(
    state: ClusterState, config: Config, networks: Networks, nodes: Mapping[str, NodeInfo]
) -> tuple[list[Route], list[Refusal]]:
    """One /32 or /128 per address of every Running VM on an advertised network, and the refusals met on the way."""
    out = Collector()
    if not config.networks.host_routes:
        return [], []
    references = claim_references(state.pods.values(), state.vmis)
    read_claims(state.ipam_claims, networks, out, references)
    read_vmi_interfaces(state.vmis, networks, out)
    if config.networks.pod_network_addresses:
        subnets = HostSubnets(state.nodes.values(), primary_networks(networks).values())
        claimed = claim_links(state.ipam_claims.values(), references)
        read_pod_networks(state.vmis, state, networks, claimed, out, subnets, config.node_name is not None)
        del claimed
    del references  # with the links, 6 MiB at 20,000 claims: not held while the routes are made
    out.validate()
    resolve_conflicts(out)
    placed = placements({c.vmi for c in out.owner.values()}, state, config.node_name)
    routes = _place(out.owner, placed, config, nodes, out, host_attributes(state, Policies(config)))
    return routes, out.refusals


def node_address_refusal(key: int, candidate: Candidate, nodes: Mapping[str, NodeInfo]) -> Refusal:
    """The refusal of a VM address that is also a node's address (rule 8 of the module docstring)."""
    holder = next((n for n in sorted(nodes) if key in nodes[n].keys), "?")
    message = f"the address is an address of node {holder}: a host route for it would hijack the node"
    return Refusal(candidate.ref, candidate.text, checks.COVERS_INFRASTRUCTURE, message, candidate.network.name)


def no_next_hop_refusal(version: int, candidate: Candidate, node_name: str, nodes: Mapping[str, NodeInfo]) -> Refusal:
    """The refusal of a host route whose node has no (valid) address of its family (rule 7)."""
    network: Network = candidate.network
    info = nodes.get(node_name)
    if info is None:
        message = f"VM runs on unknown node {node_name}" if node_name else "VMI status names no node"
        return Refusal(candidate.ref, candidate.text, checks.NO_NODE_ADDRESS, message, network.name)
    reason, message = info.no_address(version)
    return Refusal(candidate.ref, candidate.text, reason, message, network.name)


def node_not_selected_refusal(candidate: Candidate, node_name: str, nodes: Mapping[str, NodeInfo]) -> Refusal | None:
    """The `node-not-selected` refusal of a host route on a node no default-VRF RouteAdvertisements of the network
    selects (an unknown node's labels are unknown: not selected), or None (rule 6c)."""
    network: Network = candidate.network
    info = nodes.get(node_name)
    if info is not None and network.selects_node(info.labels):
        return None
    message = (
        f"the VM runs on node {node_name or '?'}, which no RouteAdvertisements advertising CUDN {network.name} "
        "selects (nodeSelector): OVN-K gives the network no ingress there"
    )
    return Refusal(candidate.ref, candidate.text, reasons.NODE_NOT_SELECTED, message, network.name)


def host_route(
    key: int,
    candidate: Candidate,
    node_name: str | None,
    nodes: Mapping[str, NodeInfo],
    node_keys: frozenset[int] | set[int],
    config: Config,
    attributes_of: Callable[[Candidate], Attributes] | None = None,
) -> Route | Refusal | None:
    """The host route of one winning address (`key`, see `address_key`) placed on `node_name` (`placements`), or
    its refusal (rules 7-8); None when the VM is not running. `node_keys`: `nodes.node_address_keys(nodes)`.
    `attributes_of`: the route's attributes (`bgpadv.planner.policy.host_attributes`; None: `config.attributes`)."""
    if node_name is None:
        return None  # VM not running: a stopped VM is normal
    if candidate.network.node_selectors is not None:
        refusal = node_not_selected_refusal(candidate, node_name, nodes)
        if refusal is not None:
            return refusal
    if key in node_keys:
        return node_address_refusal(key, candidate, nodes)
    version, value = (6, key ^ _V6) if key >= _V6 else (4, key)
    name, ref = candidate.network.name, candidate.ref
    attributes = config.attributes if attributes_of is None else attributes_of(candidate)
    if config.next_hop == "self":
        return make_route(Prefix.host(version, value), None, name, RouteKind.HOST, ref, node_name or None, attributes)
    info = nodes.get(node_name)
    next_hop = info.address(version) if info is not None else None
    if next_hop is None:
        return no_next_hop_refusal(version, candidate, node_name, nodes)
    return make_route(Prefix.host(version, value), next_hop, name, RouteKind.HOST, ref, node_name, attributes)


def _place(
    candidates: dict[int, Candidate],
    placed: Mapping[tuple[str, str], str | None],
    config: Config,
    nodes: Mapping[str, NodeInfo],
    out: Collector,
    attributes_of: Callable[[Candidate], Attributes] | None = None,
) -> list[Route]:
    """The host routes of the winning candidates; their refusals go to `out`."""
    node_keys = node_address_keys(nodes)
    routes: list[Route] = []
    append = routes.append
    refuse = out.refusals.append
    for key, candidate in candidates.items():
        result = host_route(key, candidate, placed[candidate.vmi], nodes, node_keys, config, attributes_of)
        if result.__class__ is Route:
            append(result)
        elif result is not None:
            refuse(result)  # type: ignore[arg-type]
    return routes
