"""The stable reason codes of every refusal (planner, decoder and guard alike).

Each code is a module constant with its own docstring. Codes are kebab-case, and once published they never change:
they become a metric label, a log field and a Kubernetes Event reason. `bgpadv.planner.checks` re-exports them.
"""

from __future__ import annotations

OUTSIDE_NETWORK_SUBNETS = "outside-network-subnets"
"""The address lies in no subnet of the network the claim (or the node annotation) names."""

DEFAULT_GATEWAY_ADDRESS = "default-gateway-address"
"""The address is the network's default gateway: `defaultGatewayIPs`, or, when those are not set, the address OVN-K
takes for the gateway (the first host of the first `infrastructureSubnets` entry of that family, else the subnet's
first host, `.1`)."""

INFRASTRUCTURE_ADDRESS = "infrastructure-address"
"""The address lies in the network's `infrastructureSubnets` (OVN gateway and management-port addresses), or, when
the network has none, is the subnet's second host (`.2`), which OVN-K reserves for the management port."""

NETWORK_OR_BROADCAST_ADDRESS = "network-or-broadcast-address"
"""IPv4: the network or broadcast address of the containing subnet (subnets of /30 and wider). IPv6: the
subnet-router anycast address, which is the subnet's network address."""

LINK_LOCAL = "link-local"
"""169.254.0.0/16 or fe80::/10: never routable, often reported by a guest agent."""

LOOPBACK_OR_MULTICAST = "loopback-or-multicast"
"""127.0.0.0/8, ::1, 224.0.0.0/4 or ff00::/8: not a unicast host address."""

UNSPECIFIED_ADDRESS = "unspecified-address"
"""0.0.0.0 or :: (the unspecified address)."""

MALFORMED_ADDRESS = "malformed-address"
"""A value that is not exactly one IPv4 or IPv6 address, bare or with a prefix length: wrong type, trailing words
(`"10.0.0.1/32 next-hop 203.0.113.9"`), whitespace, zone indexes, out-of-range prefix lengths, or a subnet string
in a network definition that does not parse."""

DUPLICATE_ADDRESS = "duplicate-address"
"""The same address is claimed by two different objects (two VMs) whose addresses come from sources of the same trust
rank (two IPAMClaims, two launcher pods' `k8s.ovn.org/pod-networks`, two guest reports). The one with the oldest
`metadata.creationTimestamp` wins, ties broken by (namespace, name); every other claimant is refused with this code.
Applies across networks too: all routes share one table on the fabric. Across ranks: `outranked-address`."""

OUTRANKED_ADDRESS = "outranked-address"
"""The same address is held by two objects whose sources differ in trust, and this one's is the less trusted: an
IPAMClaim's status (written by OVN-K's allocator; tenants cannot write it) outranks a launcher pod's
`k8s.ovn.org/pod-networks` annotation (tenants may patch their pods), which outranks a guest report (VMI
`status.interfaces`). The more trusted source keeps the address whatever the ages; the refusal names it and both
ranks. A tenant who edits a pod annotation to list another tenant's claimed address gets this, not the address."""

OUTSIDE_NODE_SUBNET = "outside-node-subnet"
"""Layer3: a VM address read from its launcher pod's `k8s.ovn.org/pod-networks` annotation lies outside the host
subnet of the node the pod runs on (`k8s.ovn.org/node-subnets` of that node for the network, as held: an older node
naming the same subnet keeps it), in another node's host subnet or in none. OVN-K allocates a Layer3 pod's address
from its node's host subnet, so such an annotation was edited (or is stale): a host route for it would pull another
node's traffic. Refused before the duplicate rule."""

CLAIM_REQUIRED = "claim-required"
"""Per-node mode: a VM address read from its launcher pod's `k8s.ovn.org/pod-networks` annotation on a network with
persistent IPs (Layer2, `ipam.lifecycle: Persistent`), for a VM that has no IPAMClaim on it. There every VM's
address comes from an IPAMClaim, and a per-node instance holds only the claims of its own node's VMs: it cannot tell
whether a VM on another node claims the address, and tenants may patch their pods' annotations, so announcing it
could give the fabric a second path to another VM. The VM's IPAMClaim (created by KubeVirt's ipam-extensions) brings
its address back; without one, run the VM on a network without persistent IPs, or let a cluster-mode instance
announce it (it sees every claim and refuses a taken address `outranked-address`)."""

NAMESPACED_UDN_NOT_ADVERTISABLE = "namespaced-udn-not-advertisable"
"""The claim's `spec.network` names a namespaced UserDefinedNetwork (`<namespace>_<name>`), which RouteAdvertisements
cannot select."""

UNKNOWN_NETWORK = "unknown-network"
"""The claim's `spec.network` names a ClusterUserDefinedNetwork (`cluster_udn_<name>`) that does not exist."""

FOREIGN_NETWORK = "foreign-network"
"""The claim's `spec.network` is neither a CUDN's network name (`cluster_udn_<name>`) nor a namespaced UDN's
(`<namespace>_<name>`): the network of a NetworkAttachmentDefinition bgpadv does not serve (kubevirt/ipam-extensions'
README example `tenantblue`). Out of scope (`OUT_OF_SCOPE_REASONS`). Before 2026-12 such claims were refused
`unknown-network`."""

NETWORK_NOT_SELECTED = "network-not-selected"
"""The claim is on an existing CUDN that the configuration (label selector and/or RouteAdvertisements) does not
select. Refused, not silently skipped, so operators see why a VM is not announced."""

NETWORK_NOT_ADVERTISABLE = "network-not-advertisable"
"""A selected CUDN that is not a primary Layer2 or Layer3 network (Localnet, Secondary): refused for the CUDN itself
and for every claim on it."""

NO_NODE_ADDRESS = "no-node-address"
"""The node the route must point at is unknown, or has no address of the route's family (no InternalIP and no
`k8s.ovn.org/node-primary-ifaddr` entry)."""

MALFORMED_OBJECT = "malformed-object"
"""An object lacks the structure the planner needs (metadata, spec.network, a list where a list belongs, a
parseable annotation): it contributes nothing."""

MALFORMED_SELECTOR = "malformed-selector"
"""A label selector in a cluster object that the Kubernetes API would refuse (`bgpadv.core.selectors`: a field of
the wrong type such as `matchLabels: ""` or `matchExpressions: {}`, an invalid label key or value, an unknown or
misspelt operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values, an unknown field). It selects
nothing, never everything: a CUDN whose `namespaceSelector` is malformed is refused whole, with every claim on it; a
RouteAdvertisements' malformed `networkSelector` selects no CUDN and a malformed `nodeSelector` no node (the
refusal is on the RouteAdvertisements, one per selector)."""

# -- network and node definitions (validated like OVN-K's CRD rules) ----------------------------------------------

INVALID_NETWORK_DEFINITION = "invalid-network-definition"
"""A CUDN whose definition OVN-K's own CRD validation would reject, or that holds a range no route may cover: a
subnet that is a default route, a /32 or /128, or overlaps loopback/link-local/multicast/unspecified/IPv4-mapped
space; Layer2 `subnets` not 1-2 CIDRs of different families; `defaultGatewayIPs` not one per subnet, outside the
subnets or outside the `infrastructureSubnets`; infrastructure or reserved subnets with host bits, outside the
subnets, or overlapping each other; Layer3 cidrs overlapping or repeated, a `hostSubnet` that is not an integer
from 1 to 127 longer than its cidr (shorter than 32 for IPv4, exactly 64 for IPv6) or differs within a family, an
absent `hostSubnet` whose OVN-K default (24, 64) is not longer than the cidr. The CUDN is refused whole (one refusal
per offending value) and every claim on it is refused with this code. The rules are listed in `networks`."""

NETWORK_OVERLAP = "network-overlap"
"""A valid, selected CUDN whose subnets overlap those of another valid, selected CUDN: the older network
(creationTimestamp, then name) keeps the address space, the younger one is refused whole (the refusal names the
older network and the overlapping subnet), with every claim on it."""

HOST_SUBNET_CONFLICT = "host-subnet-conflict"
"""Two nodes name the same Layer3 host subnet in `k8s.ovn.org/node-subnets`: the older node (creationTimestamp,
then name) keeps it, the younger node's entry is refused. (Host subnets of one network all have their cidr's
`hostSubnet` length and advertised networks never overlap, so host subnets that overlap are equal.)"""

PERSISTENT_IPS_NOT_SUPPORTED = "persistent-ips-not-supported"
"""A claim on an advertised Layer3 CUDN: OVN-K honours persistent IPs (IPAMClaims) only on Layer2 and Localnet, so
nothing in the claim is announced."""

INVALID_NODE_ADDRESS = "invalid-node-address"
"""A route must point at a node whose only addresses of the route's family (InternalIP, `node-primary-ifaddr`) can never
be next hops: a special-purpose range refused for next hops (loopback, link-local, multicast, limited broadcast,
unspecified, "this network", IPv4-mapped, NAT64, 6to4, Teredo, documentation, benchmarking, ...: the `next_hop` column
of `bgpadv.core.addressing.SPECIAL_PURPOSE`), a BGP peer's address, in per-node mode another speaker's local or
nextHopSelf address, or inside an advertised network's subnets. (A node with no address of the family at all gives
`no-node-address`.) Refused, for VM host routes and Layer3 host subnets alike."""

# -- node and infrastructure space (bgpadv.planner.space; the guard applies the same rule) -------------------------

CONTAINS_PEER_ADDRESS = "contains-peer-address"
"""A selected network (any topology) one of whose subnets contains an address of bgpadv's own BGP sessions (a
peer's address, a session's local address, a `nextHopSelf` address) or overlaps a session's connected subnet (the
node connected network, `k8s.ovn.org/host-cidrs`, that holds one of those addresses). Refused whole, with every claim
on it: announcing it would pull the ToR's own session network into the cluster."""

OVERLAPS_NODE_NETWORK = "overlaps-node-network"
"""A selected network one of whose subnets contains a node address (InternalIP, ExternalIP,
`k8s.ovn.org/node-primary-ifaddr`, a `k8s.ovn.org/host-cidrs` address) or overlaps a node's connected network (a
`k8s.ovn.org/host-cidrs` prefix); a Layer3 network whose host subnets would contain one likewise (they lie in its
cidrs). Refused whole, with every claim on it; no other network is affected (its node next hops stay valid)."""

OVERLAPS_CLUSTER_NETWORK = "overlaps-cluster-network"
"""A selected network one of whose subnets overlaps the default pod network (a node's `k8s.ovn.org/node-subnets`
"default" entries). Refused whole, with every claim on it."""

OVERLAPS_OVN_INTERNAL = "overlaps-ovn-internal"
"""A selected network one of whose subnets overlaps an OVN-Kubernetes internal range (`ovnKubernetes` in the
configuration; defaults: join 100.64.0.0/16 and fd98::/64, transit 100.88.0.0/16 and fd97::/64, masquerade
169.254.0.0/17 and fd69::/112). Refused whole, with every claim on it."""

DUPLICATE_NODE_ADDRESS = "duplicate-node-address"
"""Two nodes report the same address (InternalIP, ExternalIP, `node-primary-ifaddr`, `host-cidrs`: a cloned image, or
one node's hostile annotation): the node that reported it first (the oldest by creationTimestamp, then name) keeps it
as its next hop; every later node is refused with this code on the Node (one refusal naming the addresses and the
nodes that keep them), and a route that needs that address as a later node's next hop (its only valid candidate of
the family) is refused with it too. One node's annotation never takes or withdraws another node's next hops."""

# -- the last guard before the speaker (bgpadv.safety.guard) -----------------------------------------------------------

DEFAULT_ROUTE = "default-route"
"""A default route (0.0.0.0/0 or ::/0): never announced, whatever the cluster says."""

PREFIX_TOO_SHORT = "prefix-too-short"
"""A prefix shorter than `safety.minPrefixLength` of its family."""

SPECIAL_PREFIX = "special-prefix"
"""A prefix that overlaps a range that is never a VM's or a network's unicast space: loopback, link-local,
multicast, unspecified, limited broadcast, IPv4-mapped IPv6."""

OUTSIDE_SELECTED_NETWORKS = "outside-selected-networks"
"""A route whose prefix lies in no subnet of a selected, advertised network."""

COVERS_INFRASTRUCTURE = "covers-infrastructure"
"""A route that would hijack the fabric's own infrastructure: a host route that covers a node address, a BGP peer
address, a session's local or nextHopSelf address, or its own next hop; any route that covers a peer, local or
nextHopSelf address. The planner already refuses with this code a running VM's address that is a node's address
(see `vms`, rule 8); a network over a session address is `contains-peer-address`."""

INVALID_NEXT_HOP = "invalid-next-hop"
"""A next hop that is not a unicast, non-link-local address of the prefix's family, or that lies inside an
advertised network."""

DUPLICATE_PREFIX = "duplicate-prefix"
"""Two routes for one prefix toward one peer (two origins): the oldest origin keeps it, the other is refused."""

FAMILY_NOT_CARRIED = "family-not-carried"
"""No session can carry the route: its family is configured for no peer, or a peer configured for it cannot express
its `self` next hop in the session's family (an IPv6 `self` over an IPv4 session without `nextHopSelf`). Refused
instead of silently skipped, so the counters tell the truth. A peer simply not configured for a family that another
peer carries does not get those routes, without a refusal."""

EXTENDED_NEXT_HOP_NOT_NEGOTIATED = "extended-next-hop-not-negotiated"
"""An IPv4 route toward an interface peer (`peers[].interface`) whose session has not negotiated the Extended Next
Hop capability for IPv4 unicast (RFC 8950): over such a session every next hop is the node's IPv6 link-local address,
which RFC 8950 forbids sending with an IPv4 prefix unless both sides advertised the capability. Withheld from that
peer until a session negotiates it (IPv6 routes still go); withdrawn if the session comes back without it. Also
while the session is not (yet) established, and after a controller restart found the session up with no IPv4 route
sent on it. What to do: enable the capability on the ToR's neighbour (FRR: `neighbor ... capability
extended-nexthop`, on by itself only for `neighbor IFACE interface`), then reset the session."""

MAX_ROUTES_EXCEEDED = "max-routes-exceeded"
"""More routes for one peer than `safety.maxRoutes`: the newest routes are refused and the rest stay announced
(the ToR's own max-prefix limit would tear the whole session down)."""

OUTSIDE_ALLOWED_PREFIXES = "outside-allowed-prefixes"
"""A guest-reported address of an IPAM-less secondary network lies in the network's subnet but in none of the
prefixes bgpadv's configuration allows for that network (`networks.secondary[].allowedPrefixes`)."""

TOO_MANY_ADDRESSES = "too-many-addresses"
"""A VMI interface on an IPAM-less secondary network reports more addresses than
`networks.secondary[].maxAddressesPerInterface`: the first ones (in the order reported) are taken, the rest refused
in one refusal (a guest reports anything; 1,000 addresses must not become 1,000 routes)."""

NAMESPACE_NOT_SELECTED = "namespace-not-selected"
"""An IPAMClaim, or a VMI interface reporting guest addresses, in a namespace the CUDN's `namespaceSelector` does not
select (OVN-K renders the network's NetworkAttachmentDefinition only in the selected namespaces, so no VM there is on
the network). Refused, and never a party to the duplicate rule: an older claim there cannot take a real VM's address.
A namespace bgpadv has not listed is judged by its name label alone (`planner.advertised.selects_unlisted`)."""

VRF_NOT_SERVED = "vrf-not-served"
"""A selected CUDN bound to a VRF other than the default one, which bgpadv's sessions (default VRF only; peers have
no VRF) do not serve: `spec.network.transport: EVPN` (its MAC-VRF/IP-VRF), or, with
`networks.followRouteAdvertisements`, only RouteAdvertisements whose `targetVRF` is not `default` (`auto`: the
network's own VRF, VRF-Lite; or a VRF name) select it. Announcing it on the default-VRF sessions would leak a
VRF-isolated network: the CUDN is refused whole, and so is every claim on it. A network also selected by a
default-VRF RouteAdvertisements is served (OVN-K advertises it in the default VRF too)."""

NODE_NOT_SELECTED = "node-not-selected"
"""The route points at a node that no default-VRF RouteAdvertisements advertising the network selects
(`spec.nodeSelector`; OVN-K's CRD allows a non-empty one only without PodNetwork, so only a hand-written dump or an
older CRD holds this): OVN-K treats the network as advertised on the selected nodes only, so traffic for a VM (or a
Layer3 host subnet) on another node would meet SNAT and no ingress path. Refused, for host routes and Layer3 host
subnets alike, and for a Layer2 subnet (next hop self) a per-node speaker on such a node would announce; the VM's
route comes back when it runs on a selected node."""

ADVERTISEMENT_NOT_IMPLEMENTED = "advertisement-not-implemented"
"""A RouteAdvertisements that selects a network bgpadv serves asks for an advertisement type bgpadv does not
implement (`EgressIP`, or any value but `PodNetwork`): bgpadv announces pod networks (subnets and VM host routes)
only, so the refusal, on the RouteAdvertisements, says that part is left to OVN-K's own FRR integration."""

ALLOCATION_REFUSED = "allocation-refused"
"""OVN-K refused to allocate the IPAMClaim's addresses: its `IPsAllocated` condition is False, with OVN-K's reason
(`SubnetExhausted`: no free address left in the network's subnets; `IPAddressConflict`: a static address the VM asks
for is another's; `MACAddressConflict`, `InternalError`, or any other reason, shown verbatim) and message. OVN-K
empties `status.ips` then: nothing is announced for the claim until OVN-K allocates (the condition turns True). A
claim without the condition, or with it True or Unknown and no address yet, is pending, not refused."""

NETWORK_NOT_CREATED = "network-not-created"
"""OVN-K says the CUDN's network is not there: its `NetworkCreated` or `NetworkAllocationSucceeded` condition is
False (`NetworkAttachmentDefinitionSyncError`, `VTEPNotFound`, an allocation failure, ..., reason and message
verbatim). The CUDN is refused whole with every claim on it: its routes are withdrawn. `NetworkCreated` False because
its NetworkAttachmentDefinitions are being deleted (`NetworkAttachmentDefinitionDeleted`) is a network going away:
withdrawn without a refusal, as a CUDN being deleted."""

CLAIM_REFERENCED_BY_OTHER_VM = "claim-referenced-by-other-vm"
"""The IPAMClaim's `kubevirt.io/vm` label (or its VirtualMachine ownerReference) names one VM, but the running
launcher pod of another VM references the claim (the `ipam-claim-reference` of its `v1.multus-cni.io/default-network`
selection, or the deprecated `k8s.ovn.org/primary-udn-ipamclaim` annotation). OVN-K allocates the claim's address to
the pod that references it, so the address is announced for the referencing VM, via its node; the refusal (value: the
VM the label names) is of the label's tie only, so that the disagreement is seen and fixed (a VM spec pointing at
another VM's claim, or a claim relabelled)."""

CLAIM_NOT_REFERENCED_BY_ITS_VM = "claim-not-referenced-by-its-vm"
"""The IPAMClaim's `kubevirt.io/vm` label (or its VirtualMachine ownerReference) names a VM (value) whose running
launcher pods reference other IPAMClaims only, and no running launcher pod references this one. OVN-K allocates the
VM's address from the claim its pod references, so this claim's address is on no pod: a stale claim (the VM now
uses another one), and a host route for it would point at a VM that does not have the address. Not announced."""

CLAIM_REFERENCED_BY_SEVERAL_VMS = "claim-referenced-by-several-vms"
"""The running launcher pods of two or more different VMs reference the same IPAMClaim (value: those VMs). OVN-K
hands the claim's address to each pod that references it, so the address may be live on several VMs at once: it is
announced for none of them (each VM's pod copy of it is not read either) until only one VM references the claim.
The source and target pods of one VM during a live migration are one VM, not this."""

ADDRESSES_KEPT_REASONS: frozenset[str] = frozenset({CLAIM_REFERENCED_BY_OTHER_VM})
"""Refusals of one part of an object's reading (a claim's label tie) that leave its addresses announced: `render`
and `explain` do not count them against the addresses; the Warning Event and `bgpadv_routes_rejected_total` still
raise them."""

OUT_OF_SCOPE_REASONS: frozenset[str] = frozenset(
    {NETWORK_NOT_SELECTED, NAMESPACED_UDN_NOT_ADVERTISABLE, FOREIGN_NETWORK}
)
"""Refusals of objects on networks bgpadv does not serve (a CUDN its selector or RouteAdvertisements do not select, a
namespaced UDN, a NAD network): they stay in the plan (render lists them) but raise no Warning Event and no
`bgpadv_routes_rejected_total`; `bgpadv_out_of_scope_objects{reason}` counts them, and each new one is logged at
debug level. Every other refusal concerns a network bgpadv serves and keeps its Warning."""

ALL_REASONS: tuple[str, ...] = (
    OUTSIDE_NETWORK_SUBNETS,
    DEFAULT_GATEWAY_ADDRESS,
    INFRASTRUCTURE_ADDRESS,
    NETWORK_OR_BROADCAST_ADDRESS,
    LINK_LOCAL,
    LOOPBACK_OR_MULTICAST,
    UNSPECIFIED_ADDRESS,
    MALFORMED_ADDRESS,
    DUPLICATE_ADDRESS,
    OUTRANKED_ADDRESS,
    OUTSIDE_NODE_SUBNET,
    CLAIM_REQUIRED,
    NAMESPACED_UDN_NOT_ADVERTISABLE,
    UNKNOWN_NETWORK,
    NETWORK_NOT_SELECTED,
    NETWORK_NOT_ADVERTISABLE,
    NO_NODE_ADDRESS,
    MALFORMED_OBJECT,
    MALFORMED_SELECTOR,
    INVALID_NETWORK_DEFINITION,
    NETWORK_OVERLAP,
    HOST_SUBNET_CONFLICT,
    PERSISTENT_IPS_NOT_SUPPORTED,
    INVALID_NODE_ADDRESS,
    DEFAULT_ROUTE,
    PREFIX_TOO_SHORT,
    SPECIAL_PREFIX,
    OUTSIDE_SELECTED_NETWORKS,
    COVERS_INFRASTRUCTURE,
    INVALID_NEXT_HOP,
    DUPLICATE_PREFIX,
    FAMILY_NOT_CARRIED,
    EXTENDED_NEXT_HOP_NOT_NEGOTIATED,
    MAX_ROUTES_EXCEEDED,
    OUTSIDE_ALLOWED_PREFIXES,
    TOO_MANY_ADDRESSES,
    CONTAINS_PEER_ADDRESS,
    OVERLAPS_NODE_NETWORK,
    OVERLAPS_CLUSTER_NETWORK,
    OVERLAPS_OVN_INTERNAL,
    DUPLICATE_NODE_ADDRESS,
    NAMESPACE_NOT_SELECTED,
    VRF_NOT_SERVED,
    NODE_NOT_SELECTED,
    ADVERTISEMENT_NOT_IMPLEMENTED,
    FOREIGN_NETWORK,
    ALLOCATION_REFUSED,
    NETWORK_NOT_CREATED,
    CLAIM_REFERENCED_BY_OTHER_VM,
    CLAIM_NOT_REFERENCED_BY_ITS_VM,
    CLAIM_REFERENCED_BY_SEVERAL_VMS,
)


# -- the egress import (bgpadv.importer): why a learned path is not installed -------------------------------------
# Metric label of `bgpadv_import_refused{network, reason}`, log field, and the reason of the Event on the CUDN.

IMPORT_POLICY = "policy"
"""No accept rule of the network's import policy takes the learned prefix (the default policy takes only 0.0.0.0/0
and ::/0)."""

IMPORT_OWN_SUBNET = "own-subnet"
"""The learned prefix lies inside one of the network's own subnets (or its `exclude` list): the VMs reach those
inside the overlay."""

IMPORT_NEXT_HOP = "next-hop"
"""The learned path has no next hop, the unspecified one, or one of the other family than its prefix (an IPv4 route
with an IPv6 next hop is taken from an unnumbered peer only: RFC 8950)."""

IMPORT_LIMIT = "limit"
"""Over `importRoutes.maxRoutes` for the network and family: the longest prefixes are left out."""

IMPORT_SPECIAL_DESTINATION = "special-destination"
"""The learned prefix overlaps a range that is never a destination beyond the ToR: "this network" 0.0.0.0/8,
loopback 127.0.0.0/8, link-local 169.254.0.0/16 (OVN-K's masquerade subnet 169.254.0.0/17 included), multicast
224.0.0.0/4, reserved 240.0.0.0/4 and the limited broadcast; ::/128, ::1, IPv4-mapped ::ffff:0:0/96, fe80::/10,
ff00::/8. The default routes themselves (0.0.0.0/0, ::/0) are not refused for it."""

IMPORT_INSIDE_SELECTED_NETWORK = "inside-selected-network"
"""The learned prefix lies inside a subnet of another selected (advertised) network: the fabric would steer one
tenant's traffic for another tenant's addresses."""

IMPORT_NEXT_HOP_SPECIAL = "next-hop-special"
"""The next hop is no unicast host address: in a special range of `special-destination` (127.0.0.1, 224.0.0.9,
0.0.0.5, ff02::1, ::1, a link-local address, ...), or the network or broadcast address of the subnet shared with
the peer."""

IMPORT_NEXT_HOP_LOCAL = "next-hop-local"
"""The next hop is one of this speaker's own addresses: a session's `localAddress`, a `nextHopSelf` address, or an
address of the node's own interfaces. Traffic would loop back into the node."""

IMPORT_NEXT_HOP_NODE = "next-hop-node"
"""The next hop is a cluster node's address (InternalIP, ExternalIP, node-primary-ifaddr, host-cidrs): the egress
of one node's VMs would be sent to another node (or itself) instead of the fabric. A configured peer's address is
never refused for this (a node claiming the ToR's address cannot cut the egress)."""

IMPORT_NEXT_HOP_VM_NETWORK = "next-hop-vm-network"
"""The next hop lies inside a selected network's subnets, where every VM address is: a default route through a VM
would hand every tenant's egress to that VM. Refused under every policy, the default-only one included."""

IMPORT_NEXT_HOP_OFF_LINK = "next-hop-off-link"
"""Single-hop eBGP: the next hop is not on a subnet this node shares with the peer on the session's link in the next
hop's family (of the session's family, the node's connected subnets holding the peer's address; of the other, the
node's connected subnets of that family on the same interface); when those are unknown, it is not a configured
peer's own address."""

IMPORT_MALFORMED = "malformed-learned-route"
"""A learned route that cannot be read: a peer that is no address or no configured peer, a prefix or next hop that
is no address, a value of the wrong type (in a `render --learned` file or in ExaBGP's echo). Refused and counted
(`bgpadv_import_malformed_total`), never an error of the whole input."""

IMPORT_REASONS: tuple[str, ...] = (
    IMPORT_POLICY,
    IMPORT_OWN_SUBNET,
    IMPORT_NEXT_HOP,
    IMPORT_LIMIT,
    IMPORT_SPECIAL_DESTINATION,
    IMPORT_INSIDE_SELECTED_NETWORK,
    IMPORT_NEXT_HOP_SPECIAL,
    IMPORT_NEXT_HOP_LOCAL,
    IMPORT_NEXT_HOP_NODE,
    IMPORT_NEXT_HOP_VM_NETWORK,
    IMPORT_NEXT_HOP_OFF_LINK,
    IMPORT_MALFORMED,
)
"""Every reason a learned path is not installed (`bgpadv.importer`), each a label of `bgpadv_import_refused`."""
