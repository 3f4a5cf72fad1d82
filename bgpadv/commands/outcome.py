"""What the fabric would get from a cluster state: the plan through the last guard, per instance and per peer, and
why each claim/VMI address that yields no route yields none. Shared by `bgpadv render` and `bgpadv explain`.

Everything here reads the pure planner's `Plan` (routes and refusals) and the guard's `Guarded` (what each peer
gets); nothing decides a route again. The one thing the plan does not carry is why an address it neither routes nor
refuses is silent: those are the planner's documented silent skips (`bgpadv.planner.vms` rules 1, 3 and 5: a CUDN
being deleted, a claim being deleted or still waiting for its address, a VM that is not running; and `hostRoutes`
off), and `silent_reason` names them from the same views, only for addresses the plan says nothing of.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bgpadv.commands.reported import Reported, reported, vm_state, why_silent
from bgpadv.config import Config
from bgpadv.core import reasons
from bgpadv.core.model import ObjectRef, Plan, Refusal, Route
from bgpadv.core.prefix import Prefix
from bgpadv.core.resources import watched_on
from bgpadv.core.state import ClusterState
from bgpadv.core.views import Claim, VmAddress, Vmi
from bgpadv.planner import plan as make_plan
from bgpadv.planner.claims import References, claim_references, claim_vms
from bgpadv.planner.networks import CUDN_PREFIX, index_networks
from bgpadv.runtime.peering import effective
from bgpadv.safety.guard import Guard

CLUSTER = "cluster"
"""The name of the one instance of cluster mode (per-node mode names its instances by node)."""


@dataclass(frozen=True, slots=True)
class Instance:
    """One bgpadv instance: `name` is its node in per-node mode, `CLUSTER` in cluster mode. `plan` is what it
    announces (the routes some peer gets) and refuses (the planner's, then the guard's); `peers` names the peers
    each of its routes goes to."""

    name: str
    plan: Plan
    peers: Mapping[int, tuple[str, ...]] = field(default_factory=dict)  # id(route) -> peer names
    by_guard: frozenset[tuple[ObjectRef, str, str]] = frozenset()  # (source, value, reason) of the guard's refusals
    interfaces: Mapping[str, str] = field(default_factory=dict)  # peer name -> interface, of unnumbered peers

    def peers_of(self, route: Route) -> tuple[str, ...]:
        return self.peers.get(id(route), ())

    def peer_labels_of(self, route: Route) -> tuple[str, ...]:
        """The peers `route` goes to as people read them: an unnumbered peer's address scoped to its interface
        (`fe80::1%eth1`; one left to discovery is named `%eth1` already)."""
        return tuple(self._label(name) for name in self.peers_of(route))

    def _label(self, name: str) -> str:
        interface = self.interfaces.get(name)
        return name if interface is None or name.startswith("%") else f"{name}%{interface}"


@dataclass(frozen=True, slots=True)
class Unrouted:
    """A claim or VMI address that yields neither a route nor a refusal, and why (for people; not a reason code)."""

    source: ObjectRef
    value: str
    why: str
    network: str = ""


def node_view(state: ClusterState, node: str) -> ClusterState:
    """What the instance on `node` holds of `state`: its own node's launcher pods and VMIs (`resources.for_node`),
    and the IPAMClaims of those VMs."""
    pods = {k: p for k, p in state.pods.items() if p.node == node}
    vmis = {k: v for k, v in state.vmis.items() if watched_on(v.labels, node)}
    claims = {k: c for k, c in state.ipam_claims.items() if c.vm is not None and (c.key[0], c.vm) in vmis}
    return dataclasses.replace(state, pods=pods, vmis=vmis, ipam_claims=claims)


def guarded(state: ClusterState, config: Config, node: str | None = None) -> Instance:
    """The instance of `config` (per-node mode: on `node`, default `config.node_name`): its plan through the guard
    for the configured peers, as the controller applies it (`bgpadv.safety.guard`). An instance on a node sees the
    launcher pods and the VMIs of its node only (running there or migrating there), and the IPAMClaims of those VMs,
    as the service watches them."""
    node = node or config.node_name
    if node is not None:
        state = node_view(state, node)
    plan = make_plan(state, config, node)
    guard = Guard(config if node is None else dataclasses.replace(config, node_name=node))
    result = guard.check(plan.routes, guard.context(plan))
    peers: dict[int, list[str]] = {}
    for peer, routes in result.per_peer.items():
        for route in routes:
            peers.setdefault(id(route), []).append(peer)
    name = node or CLUSTER
    by_guard = frozenset((r.source, r.value, r.reason) for r in result.rejected)
    interfaces = {p.name: p.interface for p in config.peers if p.interface is not None}
    return Instance(name, result.observed(plan), {k: tuple(v) for k, v in peers.items()}, by_guard, interfaces)


def served_on(state: ClusterState, config: Config, node: str | None) -> Config:
    """`config` as the instance on `node` runs it (`bgpadv.runtime.peering.effective`): the peers whose
    `nodeSelector` the node's labels match, each with the next-hop self addresses derived from the node's
    InternalIPs (never from an interface: nothing here reads the kernel). `node` None (cluster mode, the pod's node
    unknown): `config` unchanged."""
    if node is None:
        return config
    return effective(config, state.nodes.get(node), lambda _peer, _version: ())


def instances(state: ClusterState, config: Config) -> tuple[Instance, ...]:
    """Every instance the configuration runs: the one of cluster mode (with the peers its pod's node serves,
    `speaker_node`, when known), or one per Node of the state in per-node mode (each judged from its own node, as
    `plan(node=...)` does, with the peers that node's labels select: `served_on`)."""
    if config.node_name is None:
        return (guarded(state, served_on(state, config, config.speaker_node)),)
    return tuple(guarded(state, served_on(state, config, name), name) for name in sorted(state.nodes) if name)


def unique_refusals(found: Iterable[Instance]) -> tuple[Refusal, ...]:
    """The refusals of every instance, each (source, value, reason) once, in the first instance's order."""
    seen: set[tuple[object, ...]] = set()
    out: list[Refusal] = []
    for instance in found:
        for r in instance.plan.rejected:
            key = (r.source, r.value, r.reason)
            if key not in seen:
                seen.add(key)
                out.append(r)
    return tuple(out)


def _covers(refusal: Refusal, address: VmAddress) -> bool:
    """True when `refusal` speaks of `address`: its value is the address as written, or a prefix (the guard's
    values) that is the address's host route; a refusal of the whole object has some other value (its network name,
    its metadata) and speaks of every address of the object."""
    if refusal.reason in reasons.ADDRESSES_KEPT_REASONS:
        return False  # a refusal of the label's tie only: the addresses are announced
    if refusal.value == address.text:
        return True
    try:
        prefix = Prefix.parse(refusal.value.strip(), strict=False)
    except ValueError:
        return True  # not an address: a refusal of the object (network, VM link, the status whole)
    return address.address is not None and prefix == Prefix.host(address.address.version, address.address.value)


def silent_reason(state: ClusterState, config: Config, claim: Claim | None, vmi: Vmi | None, node: str | None) -> str:
    """Why the planner skips an address of `claim` (or of `vmi`'s guest report) without a word (see the module);
    `node` is the instance's node in per-node mode. The VM's own state goes first: it is the operator's question."""
    if not config.networks.host_routes:
        return "hostRoutes is off: no VM host routes are announced"
    if claim is not None:
        if claim.deleting:
            return "the IPAMClaim is being deleted"
        cudn = (claim.network or "")[len(CUDN_PREFIX) :] if (claim.network or "").startswith(CUDN_PREFIX) else ""
        view = state.cudns.get(cudn)
        if view is not None and view.withdrawn:
            return f"CUDN {cudn} is being deleted or not created by OVN-K: its routes are withdrawn"
        if claim.ips_pending:
            return "no address allocated yet (status.ips is empty): pending"
    return vm_state(vmi, node) or "not announced, and no rule says why (please report this)"


def claim_vm(claim: Claim, references: References) -> str | None:
    """The one VM the planner announces the claim's addresses for (`claims.claim_vms`), or None."""
    vms = claim_vms(claim, references.of(claim))
    return vms[0] if len(vms) == 1 else None


def _vmi_of_claim(state: ClusterState, claim: Claim, references: References) -> Vmi | None:
    vm = claim_vm(claim, references)
    return state.vmis.get((claim.key[0], vm)) if vm else None


def claim_addresses(claim: Claim) -> tuple[VmAddress, ...]:
    """A claim's addresses as the plan sees them; one empty placeholder when it lists none (pending)."""
    return claim.ips or (VmAddress("-", None, 0),)


def _speaks_of_reported(refusal: Refusal, item: Reported) -> bool:
    """True when `refusal` (of the item's VMI) speaks of the reported address: the address or its host prefix, or
    the VMI's whole report on the item's network (a namespace not selected, a malformed or too long list)."""
    if refusal.network and refusal.network != item.network() and not _is_address(refusal.value):
        return False
    return _covers(refusal, item.address)


def _is_address(value: str) -> bool:
    try:
        Prefix.parse(value.strip(), strict=False)
    except ValueError:
        return False
    return True


def unrouted(state: ClusterState, config: Config, found: Sequence[Instance]) -> list[Unrouted]:
    """Every claim address, and every address a VMI without a claim reports or is assigned (`reported`), that
    yields neither a route nor a refusal in any instance of `found`, with why: a stopped, pending or stopping VM, a
    claim still waiting for its address or being deleted, a network being deleted or not selected, an interface the
    planner never reads (the pod network's guest report, a report that is not the guest agent's)."""
    routed: dict[ObjectRef, set[Prefix]] = {}
    for instance in found:
        for route in instance.plan.routes:
            routed.setdefault(route.source, set()).add(route.prefix)
    refused: dict[ObjectRef, list[Refusal]] = {}
    for refusal in unique_refusals(found):
        refused.setdefault(refusal.source, []).append(refusal)
    node = config.node_name
    out: list[Unrouted] = []
    references = claim_references(state.pods.values(), state.vmis)
    for claim in state.ipam_claims.values():
        prefixes = routed.get(claim.ref, set())
        refusals = refused.get(claim.ref, [])
        for address in claim_addresses(claim):
            a = address.address
            if a is not None and Prefix.host(a.version, a.value) in prefixes:
                continue
            if any(_covers(r, address) for r in refusals):
                continue
            why = silent_reason(state, config, claim, _vmi_of_claim(state, claim, references), node)
            network = (claim.network or "").removeprefix(CUDN_PREFIX)
            out.append(Unrouted(claim.ref, address.text, why, network))
    out.extend(_unrouted_reported(state, config, found, refused, node))
    return sorted(out, key=lambda u: (str(u.source), u.value))


def _unrouted_reported(
    state: ClusterState,
    config: Config,
    found: Sequence[Instance],
    refused: dict[ObjectRef, list[Refusal]],
    node: str | None,
) -> list[Unrouted]:
    """The VMI addresses (`reported`) without a route or a refusal; an address a claim lists is the claim's."""
    routed = {route.prefix for instance in found for route in instance.plan.routes}
    claimed = {a.key for claim in state.ipam_claims.values() for a in claim.ips if a.address is not None}
    networks = None
    seen: set[tuple[ObjectRef, str]] = set()
    out: list[Unrouted] = []
    for item in reported(state):
        a = item.address.address
        if a is not None and (item.address.key in claimed or Prefix.host(a.version, a.value) in routed):
            continue
        source = item.source
        if (source, item.address.text) in seen:
            continue
        seen.add((source, item.address.text))
        if any(_speaks_of_reported(r, item) for r in refused.get(source, ())):
            continue
        networks = networks or index_networks(state, config)
        why = f"{item.origin}: {why_silent(state, config, networks, item, node)}"
        out.append(Unrouted(source, item.address.text, why, item.network()))
    return out
