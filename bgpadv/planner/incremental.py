"""Incremental planning: after a small change, the same `Plan` as `plan(state, config)`, without replanning everything.

`IncrementalPlanner(config).plan(state, changed)` returns exactly `plan(state, config)` (routes and refusals, in
order). `changed` is the set of `(ClusterState field, key)` that may have changed since the previous call on the same
`state` object, or None: then every IPAMClaim and every VMI the plan depends on is compared by identity with what was
cached (the store replaces an object's view when it changes, and views are immutable; the cache holds a reference to
every view it read, so an id is never reused while it is compared). CUDNs, RouteAdvertisements,
Nodes and Namespaces (read for IPAM-less secondary networks) are few: they are always compared by identity, whatever
`changed` says; a pod change is taken from `changed` (None: every pod may have changed).

What is cached, and what invalidates it:

- Per IPAMClaim (and per VMI, on IPAM-less secondary networks, whose addresses come from VMIs): the refusals and the
  validated candidates the cold planner derives from that object alone (`vms.read_claims`, `vms.read_vmi_interfaces`
  into a `vms.Collector`, then `Collector.take()`). Invalidated by a change of that object; every entry is dropped
  when the network index (`networks.index_networks`: CUDNs + RouteAdvertisements + Namespaces) changes in any way.
  A claim's VM also depends on the launcher pods' claim references (`claims.claim_references`): the pods with a
  claim reference are indexed by the claim they reference and by the VMI names they carry, and a claim is read
  again when a change of such a pod, or of a VMI one of them names, changes the VMs that reference it or the claims
  the VM its label names references (the claims are indexed by that VM).
- Per address: every candidate holding it and the conflict outcome (winner, `duplicate-address` and
  `outranked-address` refusals, by `vms.resolve_conflict`). Recomputed when a candidate of that address comes or
  goes.
- Per VMI a winner points at: its placement (`vms.placements`; in per-node mode from the instance's view, rule 6b).
  Recomputed when the VMI changes, and for VMIs whose placement reads launcher pods (`vms.needs_pods`) whenever a
  pod changes.
- Per winning address: its host route or its refusal (`no-node-address`, `invalid-node-address`,
  `covers-infrastructure`: `vms.host_route`, the function the cold planner calls per address). Recomputed when the
  winner, its VMI's placement, or the node it is placed on changes, and when a node address equal to it appears,
  disappears or changes node.
- The Layer3 host subnets as held (`host_subnets.HostSubnets`), which a launcher pod's Layer3 addresses are checked
  against: made again when what they are made of (`host_subnets.inputs`: the Layer3 networks' ranges, the nodes'
  ages and host subnets) changed with the node index; then every launcher pod entry is read again.
- Node and infrastructure space (`space.infrastructure_space`): rebuilt when a Node changes; when it comes out
  different, the network index is recomputed too (a network over node space is refused).
- The node index (`nodes.index_nodes`, whose next hops depend on the advertised subnets), subnet routes and the CUDN
  refusals: recomputed whenever a CUDN, RouteAdvertisements or Node object changes; so is the plan's context
  (`Plan.context`), whose mappings are kept (the same objects) when they come out equal, so the guard keeps its
  context. `Plan.context.handovers`: the host routes that moved to another node in this call (step 4).

The delta (`last_delta`): the routes the last call removed and added compared with the call before (a
`RouteDelta`, in the node's view in per-node mode), gathered from the addresses whose output changed and from the
subnet routes (compared as multisets when recomputed); None when the call could not tell (the first call, every host
cache rebuilt, a failed call). The controller feeds it to the guard, the hold and the speaker, so that one change
costs the size of the change (`bgpadv.runtime.controller`).

Order: `Plan.build` sorts with a stable sort, so elements with equal sort keys keep the cold planner's insertion order.
Host routes have distinct keys (one winner per address) and subnet routes precede host routes of the same key, so the
route order is exact. When equal-keyed refusals differ, or a conflict has two candidates of the same rank and age
(the cold planner keeps the first it read), the insertion order would matter: then this planner returns
`plan(state, config)` itself (its caches stay valid), so the result is always exact.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, insort
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from bgpadv.config import Config
from bgpadv.core.model import (
    Handover,
    Plan,
    PlanContext,
    PlannedNetwork,
    Refusal,
    Route,
    RouteDelta,
    RouteKind,
    route_order,
)
from bgpadv.core.prefix import Address
from bgpadv.core.sorted_routes import SortedRoutes
from bgpadv.core.space import EMPTY_SPACE, InfrastructureSpace
from bgpadv.core.state import ClusterState
from bgpadv.core.views import Claim, LauncherPod, Vmi
from bgpadv.planner import cyclic_gc_paused, plan_context
from bgpadv.planner import plan as cold_plan
from bgpadv.planner.candidates import Candidate, Collector
from bgpadv.planner.claims import (
    NetworkResolver,
    Referenced,
    References,
    add_reference,
    read_claim,
    referenced_claims,
    referencing_vm,
    referencing_vms,
)
from bgpadv.planner.conflicts import resolve_conflict
from bgpadv.planner.guest_reports import namespace_networks, read_vmi_interfaces
from bgpadv.planner.host_subnets import HostSubnets, Inputs
from bgpadv.planner.host_subnets import inputs as host_subnet_inputs
from bgpadv.planner.networks import Networks, advertised_subnets, index_networks, subnet_routes
from bgpadv.planner.nodes import NodeInfo, index_nodes, node_address_keys, node_refusals
from bgpadv.planner.placement import LauncherPods, needs_pods, placements
from bgpadv.planner.pod_networks import claim_links_of, primary_networks, read_vmi_pods, vmi_pods
from bgpadv.planner.policy import Policies, host_attributes
from bgpadv.planner.space import infrastructure_space, next_hop_exclusions
from bgpadv.planner.vms import host_route

__all__ = ["IncrementalPlanner"]

_MISSING = object()
_BULK_MIN = 1024  # more changed host outputs than this and than an eighth of the routes: rebuild the sorted list
_V6 = 1 << 128


class _Entry(NamedTuple):
    """What one object contributes: the view read, its refusals, its candidates (`Collector.take`)."""

    obj: object
    refusals: tuple[Refusal, ...]
    candidates: tuple[Candidate, ...]


class _Won(NamedTuple):
    """The outcome of one address's conflict: the winning candidate and the others' refusals (a shared empty tuple
    for an address with one holder, nearly all of them)."""

    candidate: Candidate
    refusals: tuple[Refusal, ...] | list[Refusal]


class _Output(NamedTuple):
    """What one winning address gives: the node it is placed on (None: not running) and its route or refusal."""

    node: str | None
    result: Route | Refusal | None


class _Placement(NamedTuple):
    """Where one VMI runs, and the view it was read from (compared by identity)."""

    vmi: object
    node: str | None


def _refusal_key(r: Refusal) -> tuple[str, str, str]:
    return (str(r.source), r.value, r.reason)  # Plan.build's sort key


class _Refusals:
    """A multiset of refusals kept in Plan.build's order: groups by sort key, the keys sorted lazily."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str, str], list[Refusal]] = {}
        self._keys: list[tuple[str, str, str]] = []
        self._added: set[tuple[str, str, str]] = set()
        self._removed: set[tuple[str, str, str]] = set()
        self._ordered: tuple[Refusal, ...] | None = ()  # ordered()'s answer while no refusal came or went
        self._dirty = False

    def add(self, r: Refusal) -> None:
        self._dirty = True
        k = _refusal_key(r)
        group = self._groups.get(k)
        if group is None:
            self._groups[k] = [r]
            if k in self._removed:
                self._removed.discard(k)
            else:
                self._added.add(k)
        else:
            group.append(r)

    def remove(self, r: Refusal) -> None:
        self._dirty = True
        k = _refusal_key(r)
        group = self._groups[k]
        for i, x in enumerate(group):
            if x is r:
                del group[i]
                break
        else:
            raise KeyError(r)
        if not group:
            del self._groups[k]
            if k in self._added:
                self._added.discard(k)
            else:
                self._removed.add(k)

    def ordered(self) -> tuple[Refusal, ...] | None:
        """Every refusal in Plan.build's order; None when two unequal refusals share a sort key (order ambiguous).
        The same tuple as last time while no refusal came or went (observers compare it by identity: a change
        costs nothing per refusal)."""
        if not self._dirty:
            return self._ordered
        self._ordered = self._order()
        self._dirty = False
        return self._ordered

    def _order(self) -> tuple[Refusal, ...] | None:
        keys = self._keys
        if len(self._added) + len(self._removed) > len(keys) // 8:
            keys = self._keys = sorted(self._groups)
        else:
            for k in self._removed:
                del keys[bisect_left(keys, k)]
            for k in self._added:
                insort(keys, k)
        self._added.clear()
        self._removed.clear()
        groups = self._groups
        out: list[Refusal] = []
        for k in keys:
            group = groups[k]
            if len(group) > 1:
                first = group[0]
                if any(x != first for x in group):
                    return None
            out.extend(group)
        return tuple(out)


def _update(
    table: dict[tuple[str, str], tuple[str, ...]],
    key: tuple[str, str],
    value: tuple[str, ...],
    before: dict[tuple[str, str], tuple[str, ...]],
) -> None:
    """Set `table[key]` to `value` (an empty value: no entry); when that changes it, note its old value in `before`."""
    old = table.get(key, ())
    if value == old:
        return
    before[key] = old
    if value:
        table[key] = value
    else:
        del table[key]


def _put(index: dict[Any, Any], at: Any, key: tuple[str, str], view: Any) -> None:
    """Index the pod `view` (stored under `key`) at `at`: the one view itself (most places: a dict per place would
    cost 232 B), or a dict by pod key when several pods are there."""
    bucket = index.get(at)
    if bucket is None and view.key == key:
        index[at] = view
    elif bucket is None:
        index[at] = {key: view}
    elif isinstance(bucket, dict):
        bucket[key] = view
    else:
        index[at] = {bucket.key: bucket, key: view}


def _drop(index: dict[Any, Any], at: Any, key: tuple[str, str]) -> None:
    """Remove the pod stored under `key` from `at` (`_put`)."""
    bucket = index.get(at)
    if isinstance(bucket, dict):
        bucket.pop(key, None)
        if not bucket:
            del index[at]
    elif bucket is not None and bucket.key == key:
        del index[at]


def _bucket(index: dict[Any, Any], at: Any) -> Mapping[tuple[str, str], Any]:
    """The pods indexed at `at` (`_put`), by pod key."""
    bucket = index.get(at)
    if bucket is None:
        return {}
    return bucket if isinstance(bucket, dict) else {bucket.key: bucket}


def _replace(
    table: dict[tuple[str, str], tuple[str, ...]],
    fresh: dict[tuple[str, str], tuple[str, ...]],
    before: dict[tuple[str, str], tuple[str, ...]],
) -> None:
    """Make `table` (kept: `References` holds it) equal to `fresh`; note the old value of each key that changed."""
    for key, old in table.items():
        if fresh.get(key) != old:
            before[key] = old
    for key in fresh:
        if key not in table:
            before[key] = ()
    table.clear()
    table.update(fresh)


def _same_items(previous: list[tuple[object, object]] | None, current: Mapping[Any, Any]) -> bool:
    """True when `current` holds the same keys, in the same order, bound to the very same objects."""
    if previous is None or len(previous) != len(current):
        return False
    return all(k == pk and v is pv for (k, v), (pk, pv) in zip(current.items(), previous, strict=True))


def _in_view(route: Route, view: str) -> bool:
    """The route is part of node `view`'s plan (`Plan.for_node`)."""
    return route.node == view or (route.node is None and route.kind is RouteKind.SUBNET)


def _delta(removed: list[Route], added: list[Route], view: str | None) -> RouteDelta:
    """The delta of one call (in `view`'s plan when given), a route both removed and added (the same object) left
    out."""
    if view:
        removed = [r for r in removed if _in_view(r, view)]
        added = [r for r in added if _in_view(r, view)]
    if removed and added:
        both = {id(r) for r in removed} & {id(r) for r in added}
        if both:
            removed = [r for r in removed if id(r) not in both]
            added = [r for r in added if id(r) not in both]
    return RouteDelta(tuple(removed), tuple(added))


class IncrementalPlanner:
    """`plan(state, changed)` == `bgpadv.planner.plan(state, config)`, at the cost of what changed (see the module).

    One instance follows one evolving `ClusterState` (another state object means a full comparison). If a call
    raises, every cache is dropped and the next call starts afresh. The plan's context also carries the handovers:
    the host routes whose node changed since the previous call.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self._policies = Policies(config)
        self._attributes_of = host_attributes(ClusterState(), self._policies)
        self.fallbacks = 0  # how many plans were ambiguous in order and delegated to the cold planner
        self.last_delta: RouteDelta | None = None  # what the last call changed (see the module); None: unknown
        self._removed: list[Route] = []
        self._added: list[Route] = []
        self._delta_known = False
        self._reset()

    # -- state -----------------------------------------------------------------------------------------------------
    def _reset(self) -> None:
        self._delta_known = False
        self._state: ClusterState | None = None
        self._seen: dict[str, list[tuple[object, object]] | None] = {
            "cudns": None,
            "ras": None,
            "nodes": None,
            "namespaces": None,
        }
        self._networks: Networks | None = None  # the index the host caches were built with
        self._nodes: dict[str, NodeInfo] = {}
        self._node_keys: frozenset[int] = frozenset()  # every node address (nodes.node_address_keys)
        self._host_subnets = HostSubnets((), ())  # the Layer3 host subnets as held (pod_networks reads them)
        self._subnet_inputs: Inputs | None = None  # what they were made of (`host_subnets.inputs`)
        self._subnets_moved = False  # `_host_subnets` changed in this call
        self._global: list[Refusal] = []  # CUDN, node and subnet refusals
        self._subnet_routes: list[Route] = []
        self._subnets_of: list[Route] | None = None  # the `_subnet_routes` list `_subnet_view` was made of
        self._subnet_view: tuple[Route, ...] = ()
        self._context = PlanContext()
        self._space: InfrastructureSpace = EMPTY_SPACE
        self._exclusions = next_hop_exclusions(self.config)
        self._reset_hosts()

    def _reset_hosts(self) -> None:
        self._delta_known = False
        self._claims: dict[object, _Entry] = {}
        self._vmi_records: dict[object, _Entry] = {}
        # address key -> its holder, or a list of them when several (one Candidate almost always: no list per address)
        self._holders: dict[int, Candidate | list[Candidate]] = {}
        self._winner: dict[int, _Won] = {}
        self._tied: set[int] = set()
        self._out: dict[int, _Output] = {}
        self._by_vmi: dict[tuple[str, str], tuple[int, ...]] = {}  # VMI -> its winning addresses (few: a tuple)
        self._by_node: dict[str, set[int]] = {}
        self._placed: dict[tuple[str, str], _Placement] = {}
        self._needs_pods: set[tuple[str, str]] = set()
        self._unplaced: set[tuple[str, str]] = set()
        self._routes = SortedRoutes()  # the host routes in the plan (in per-node mode: the node's), by address key
        self._handovers: list[Handover] = []
        self._pod_entries: dict[tuple[str, str], _Entry] = {}  # per VMI: its addresses from launcher pods
        # (ns, VMI name or uid) -> the pods that name it: the one pod's view (most keys: 100,000 one-entry dicts were
        # 12 MiB at 20,000 VMs), or a dict by pod key when several do
        self._pod_index: dict[tuple[str, str], Any] = {}
        self._pod_seen: dict[tuple[str, str], Any] = {}  # pod key -> the view indexed
        self._uid_vmi: dict[tuple[str, str], tuple[str, str]] = {}  # (ns, VMI uid) -> VMI key
        self._vmi_uid: dict[tuple[str, str], str] = {}
        # (ns, VM) -> the CUDN of each claim linking it (a multiset as a tuple: one entry almost always)
        self._claimed: dict[tuple[str, str], tuple[str, ...]] = {}
        # claim references (`claims.claim_references`): (ns, claim) -> the VMs referencing it (non-empty only); the
        # pods with a reference by the claim they reference and by each VMI name they carry; pod key -> view indexed
        self._claim_refs: dict[tuple[str, str], tuple[str, ...]] = {}
        self._vm_refs: dict[tuple[str, str], tuple[str, ...]] = {}  # (ns, VM) -> the claims its pods reference
        self._references = References(self._claim_refs, self._vm_refs)
        self._ref_pods: dict[tuple[str, str], Any] = {}  # a pod's view, or a dict by pod key (`_put`)
        self._ref_named: dict[tuple[str, str], Any] = {}
        self._ref_seen: dict[tuple[str, str], LauncherPod] = {}
        self._labelled: dict[tuple[str, str], tuple[Any, ...]] = {}  # (ns, VM) -> the claims its label names
        self._refusals = _Refusals()
        for r in getattr(self, "_global", ()):
            self._refusals.add(r)

    # -- entry point -----------------------------------------------------------------------------------------------
    def plan(self, state: ClusterState, changed: Iterable[tuple[str, object]] | None = None) -> Plan:
        """The plan of `state`, equal to `plan(state, config)`. `changed`: (field, key) pairs changed since the
        previous call (None: anything may have changed)."""
        if state is not self._state:
            changed = None
        self._removed, self._added = [], []
        self._delta_known = self._state is not None
        self.last_delta = None
        try:
            with cyclic_gc_paused():
                result = self._plan(state, changed)
        except BaseException:
            self._reset()
            raise
        view = self.config.node_name
        if self._delta_known:
            self.last_delta = _delta(self._removed, self._added, view)
        self._removed, self._added = [], []
        if result is None:
            self.fallbacks += 1
            cold = cold_plan(state, self.config)
            result = Plan(cold.routes, cold.rejected, self._context)
        return result  # in per-node mode, already the node's (see `_place_route`, `_assemble`; cold_plan's own)

    def _plan(self, state: ClusterState, changed: Iterable[tuple[str, object]] | None) -> Plan | None:
        self._state = state
        hinted: dict[str, set[object]] | None = None
        if changed is not None:
            hinted = {}
            for fld, key in changed:
                hinted.setdefault(fld, set()).add(key)
        old_namespaces = self._seen["namespaces"]
        self._subnets_moved = False
        rebuild_hosts, changed_nodes, changed_keys = self._networks_and_nodes(state)
        if rebuild_hosts:
            self._reset_hosts()
        self._handovers = []
        self._attributes_of = host_attributes(state, self._policies)
        relabelled = self._relabelled_namespaces(old_namespaces, state) if not rebuild_hosts else set()
        if self.config.networks.host_routes:
            self._hosts(
                state, hinted if not rebuild_hosts else None, rebuild_hosts, changed_nodes, changed_keys, relabelled
            )
        ctx = self._context
        if self._handovers or ctx.handovers:
            ctx = self._context = dataclasses.replace(ctx, handovers=tuple(self._handovers))
        return self._assemble()

    def _relabelled_namespaces(self, old: list[tuple[object, object]] | None, state: ClusterState) -> set[str]:
        """The namespaces whose labels changed, when a policy reads them (their VMs' host routes get new
        attributes)."""
        if not self._policies.uses_namespace_labels or old is None:
            return set()
        before = {str(k): v for k, v in old}
        names = before.keys() | state.namespaces.keys()
        out = set()
        for name in names:
            a, b = before.get(name), state.namespaces.get(name)
            if a is not b and getattr(a, "labels", None) != getattr(b, "labels", None):
                out.add(str(name))
        return out

    def _networks_and_nodes(self, state: ClusterState) -> tuple[bool, set[str], set[int]]:
        """Networks, nodes, subnet routes and the CUDN refusals: few objects, always compared by identity.
        Returns (whether every host cache must be rebuilt, the nodes that changed, the node addresses that appeared,
        disappeared or changed holder)."""
        config = self.config
        networks_moved = (
            not _same_items(self._seen["cudns"], state.cudns)
            or not _same_items(self._seen["ras"], state.route_advertisements)
            or not _same_items(self._seen["namespaces"], state.namespaces)
        )
        nodes_moved = not _same_items(self._seen["nodes"], state.nodes)
        rebuild_hosts = self._networks is None
        networks = self._networks
        space = self._space
        if nodes_moved or networks is None:  # the networks over node space are refused: they depend on the nodes
            space = infrastructure_space(state.nodes, config)
            networks_moved = networks_moved or space != self._space
            self._space = space
        if networks_moved or networks is None:
            fresh = index_networks(state, config, space)
            if networks is None or not (
                fresh.advertised == networks.advertised
                and fresh.claim_refusals == networks.claim_refusals
                and fresh.withdrawn == networks.withdrawn
            ):
                rebuild_hosts = True
            # kept even when equal where the host caches are concerned: its CUDN refusals (`refusals`) may differ
            # (a CUDN moving from one invalid form to another), and a later node change reads them from here
            networks = self._networks = fresh
        changed_nodes: set[str] = set()
        changed_keys: set[int] = set()
        if nodes_moved or networks_moved:  # a node address inside an advertised subnet is no next hop
            nodes = index_nodes(state.nodes, advertised_subnets(networks), *self._exclusions, config.node_name)
            old_nodes = self._nodes
            changed_nodes = {n for n in old_nodes.keys() | nodes.keys() if old_nodes.get(n) != nodes.get(n)}
            for n in changed_nodes:
                for info in (old_nodes.get(n), nodes.get(n)):
                    if info is not None:
                        changed_keys |= info.keys
            self._nodes = nodes
            self._node_keys = node_address_keys(nodes)
            primary = primary_networks(networks).values()
            made_of = host_subnet_inputs(state.nodes, primary)
            if made_of != self._subnet_inputs:  # every launcher pod entry is read again (`_refresh_pod_networks`)
                self._subnet_inputs = made_of
                self._host_subnets = HostSubnets(state.nodes.values(), primary)
                self._subnets_moved = True
            s_routes, s_refusals = subnet_routes(state, config, networks, nodes, self._policies)
            for r in self._global:
                self._refusals.remove(r)
            self._global = [*networks.refusals, *node_refusals(nodes), *s_refusals]
            for r in self._global:
                self._refusals.add(r)
            self._subnet_routes = self._subnet_delta(sorted(s_routes, key=route_order))
            self._context = self._new_context(state, networks, nodes)
        self._seen = {
            "cudns": list(state.cudns.items()),
            "ras": list(state.route_advertisements.items()),
            "nodes": list(state.nodes.items()),
            "namespaces": list(state.namespaces.items()),
        }
        return rebuild_hosts, changed_nodes, changed_keys

    def _subnet_delta(self, fresh: list[Route]) -> list[Route]:
        """Note the subnet routes that came and went (as multisets: equal routes are the same route); the equal ones
        keep their previous objects (the guard caches its verdicts per object).

        Both lists are in `route_order` (prefix key): one merge walk compares the routes of each prefix, so a node
        change costs one equality test per route, never a hash of every route (80,000 Layer3 host subnets at 200
        networks × 200 nodes: hashing both sets cost about a second)."""
        old = self._subnet_routes
        if len(old) == len(fresh) and all(a is b or a == b for a, b in zip(old, fresh, strict=True)):
            return old
        out: list[Route] = []
        i = j = 0
        n_old, n_new = len(old), len(fresh)
        while i < n_old or j < n_new:
            if j == n_new or (i < n_old and old[i].prefix.key < fresh[j].prefix.key):
                self._removed.append(old[i])
                i += 1
                continue
            key = fresh[j].prefix.key
            if i == n_old or key < old[i].prefix.key:
                self._added.append(fresh[j])
                out.append(fresh[j])
                j += 1
                continue
            i0, j0 = i, j  # the routes of one prefix, in both lists
            while i < n_old and old[i].prefix.key == key:
                i += 1
            while j < n_new and fresh[j].prefix.key == key:
                j += 1
            left = old[i0:i]
            for r in fresh[j0:j]:
                match = next((k for k, o in enumerate(left) if o == r), None)
                if match is None:
                    self._added.append(r)
                    out.append(r)
                else:
                    out.append(left.pop(match))
            self._removed.extend(left)
        return out

    def _new_context(self, state: ClusterState, networks: Networks, nodes: dict[str, NodeInfo]) -> PlanContext:
        """The plan's context, keeping the previous one's mappings where they are equal (consumers cache by
        identity)."""
        fresh = plan_context(state, networks, nodes, space=self._space)
        old = self._context
        keep_networks: Mapping[str, PlannedNetwork] = old.networks if old.networks == fresh.networks else fresh.networks
        keep_hops: Mapping[str, Mapping[int, Address]] = (
            old.next_hops if old.next_hops == fresh.next_hops else fresh.next_hops
        )
        keep_addresses = old.node_addresses if old.node_addresses == fresh.node_addresses else fresh.node_addresses
        keep_space = old.space if old.space == fresh.space else fresh.space
        keep_ages = old.node_ages if old.node_ages == fresh.node_ages else fresh.node_ages
        return PlanContext(keep_networks, keep_hops, keep_addresses, space=keep_space, node_ages=keep_ages)

    def _refresh(
        self,
        objects: Mapping[Any, Any],
        cache: dict[Any, Any],
        hinted: dict[str, set[object]] | None,
        field: str,
        reader: Callable[[Any, Any, Collector], None],
        dirty: set[int],
        replaced: dict[Any, Any] | None = None,
        force: Iterable[Any] = (),
    ) -> None:
        """Re-read the objects of one kind (`field` of ClusterState) that changed since their cached entry: those
        hinted, or, without hints, every object whose view is not the cached one (and every cached one now gone).
        `reader(key, view, out)` reads one object into `out`. `replaced`: where to note the view each re-read key
        had before (None: it had none). `force`: keys read again even when their view is the cached one (what else
        their reading depends on changed)."""
        if hinted is None:
            keys: Iterable[Any] = [k for k, v in objects.items() if (e := cache.get(k)) is None or e.obj is not v]
            keys = [*keys, *(k for k in cache if k not in objects)]
        else:
            keys = hinted.get(field, ())
        forced = set(force)
        if forced:
            listed = set(keys)
            keys = [*keys, *(k for k in forced if k not in listed)]
        out = Collector()  # one for every object read: `take` empties it
        for key in keys:
            obj = objects.get(key, _MISSING)
            old = cache.get(key)
            if old is not None and old.obj is obj and key not in forced:
                continue
            if replaced is not None:
                replaced[key] = old.obj if old is not None else None
            if old is not None:
                self._drop_entry(cache.pop(key), dirty)
            if obj is not _MISSING:
                reader(key, obj, out)
                entry = _Entry(obj, *out.take())
                cache[key] = entry
                self._add_entry(entry, dirty)

    # -- host routes -----------------------------------------------------------------------------------------------
    def _hosts(
        self,
        state: ClusterState,
        hinted: dict[str, set[object]] | None,
        rebuild: bool,
        changed_nodes: set[str],
        changed_keys: set[int],
        relabelled: set[str] = frozenset(),  # type: ignore[assignment]
    ) -> None:
        networks = self._networks
        assert networks is not None
        dirty: set[int] = set()
        # 1. objects that carry addresses
        resolver = NetworkResolver(networks)  # per network name, for every claim read

        def claim(_key: object, view: Claim, out: Collector) -> None:
            read_claim(view, resolver, out, self._references.of(view))

        def vmi(key: tuple[str, str], view: Vmi, out: Collector) -> None:
            read_vmi_interfaces({key: view}, networks, out)

        # the claims whose references changed, and the references as they were
        forced, refs_before = self._refresh_claim_refs(state, hinted)
        # the claims re-read, as they were (their old claim links); a full build relinks every claim instead
        claims_before: dict[tuple[str, str], Claim | None] = {}
        self._refresh(state.ipam_claims, self._claims, hinted, "ipam_claims", claim, dirty, claims_before, forced)
        self._label_claims(state, claims_before if hinted is not None else None)
        if namespace_networks(networks):
            self._refresh(state.vmis, self._vmi_records, hinted, "vmis", vmi, dirty)
        if self.config.networks.pod_network_addresses:
            primary = primary_networks(networks)
            if primary:
                before = claims_before if hinted is not None else None
                self._refresh_pod_networks(state, hinted, primary, dirty, before, refs_before)
        # 2. conflicts of the addresses whose holders changed
        out_dirty = self._conflicts(dirty)
        # 3. placements of the VMIs the winners point at
        self._placements(state, hinted, out_dirty)
        for node_name in changed_nodes:
            out_dirty.update(self._by_node.get(node_name, ()))
        winners = self._winner
        out_dirty.update(k for k in changed_keys if k in winners)
        if relabelled:  # a policy reads namespace labels: the host routes of their VMs
            for vmi_key, linked in self._by_vmi.items():
                if vmi_key[0] in relabelled:
                    out_dirty.update(linked)
        # 4. the host route (or refusal) of every address whose inputs changed
        self._outputs(state, out_dirty)

    # -- addresses from launcher pods (planner.pod_networks) ---------------------------------------------------------
    def _index_pod(self, key: tuple[str, str], pod: Any, affected: set[tuple[str, str]] | None) -> None:
        """Move one pod's entry in the pod index to its current view (None: gone); note the VMIs it may concern."""
        old = self._pod_seen.pop(key, None)
        for view in (old, pod):
            if view is None or view.namespace is None:
                continue
            ns = view.namespace
            for k in dict.fromkeys([*view.names, *((view.created_by,) if view.created_by else ())]):
                if view is old:
                    self._unindex_pod((ns, k), key)
                else:
                    self._index_pod_at((ns, k), key, view)
                if affected is not None:
                    affected.add((ns, k))
                    vmi_key = self._uid_vmi.get((ns, k))
                    if vmi_key is not None:
                        affected.add(vmi_key)
        if pod is not None:
            self._pod_seen[key] = pod

    def _index_pod_at(self, at: tuple[str, str], key: tuple[str, str], view: Any) -> None:
        _put(self._pod_index, at, key, view)

    def _unindex_pod(self, at: tuple[str, str], key: tuple[str, str]) -> None:
        _drop(self._pod_index, at, key)

    def _indexed_pods(self, at: tuple[str, str]) -> Mapping[tuple[str, str], Any]:
        return _bucket(self._pod_index, at)

    def _link_claim(
        self, before: Claim | None, was: Referenced, claim: Claim | None, affected: set[tuple[str, str]]
    ) -> None:
        """A claim changed from `before` (what the pods said of it then: `was`) to `claim` (None: absent): move its VMs'
        links (`_claimed`); the links are read from the views themselves (the claims cache holds every claim's) and
        the claim references, so none is kept per claim."""
        old = claim_links_of(before, was) if before is not None else ()
        new = claim_links_of(claim, self._references.of(claim)) if claim is not None else ()
        if old == new:
            return
        claimed = self._claimed
        for link in old:
            vm = link[:2]
            nets = list(claimed[vm])
            nets.remove(link[2])
            if nets:
                claimed[vm] = tuple(nets)
            else:
                del claimed[vm]
        for link in new:
            vm = link[:2]
            claimed[vm] = (*claimed.get(vm, ()), link[2])
        affected.update(link[:2] for link in (*old, *new))

    def _label_claims(self, state: ClusterState, before: Mapping[tuple[str, str], Claim | None] | None) -> None:
        """Keep the claims indexed by the VM their label or ownerReference names (`_labelled`): those re-read
        (`before`: as they were), or every claim anew (None)."""
        labelled = self._labelled
        if before is None:
            labelled.clear()
            for key, claim in state.ipam_claims.items():
                if claim.vm is not None:
                    at = (claim.key[0], claim.vm)
                    labelled[at] = (*labelled.get(at, ()), key)
            return
        for key, old in before.items():
            new = state.ipam_claims.get(key)
            was = (old.key[0], old.vm) if old is not None and old.vm is not None else None
            now = (new.key[0], new.vm) if new is not None and new.vm is not None else None
            if was == now:
                continue
            if was is not None:
                rest = tuple(k for k in labelled.get(was, ()) if k != key)
                if rest:
                    labelled[was] = rest
                else:
                    labelled.pop(was, None)
            if now is not None:
                labelled[now] = (*labelled.get(now, ()), key)

    def _refresh_claim_refs(
        self, state: ClusterState, hinted: dict[str, set[object]] | None
    ) -> tuple[set[Any], References]:
        """Follow the claim references of the launcher pods (`claims.claim_references`): the claims to read again
        (what the pods say of them changed), and the references as they were. Without hints every pod is indexed
        anew."""
        vmis = state.vmis
        claims_before: dict[tuple[str, str], tuple[str, ...]] = {}
        vms_before: dict[tuple[str, str], tuple[str, ...]] = {}
        if hinted is None:  # one pass, as `claims.claim_references` makes them, then what differs
            self._ref_pods, self._ref_named, self._ref_seen = {}, {}, {}
            by_claim: dict[tuple[str, str], tuple[str, ...]] = {}
            by_vm: dict[tuple[str, str], tuple[str, ...]] = {}
            for key, pod in state.pods.items():
                ref = pod.claim_ref
                if ref is None:
                    continue
                self._index_ref(key, pod, None, None)
                vm = referencing_vm(pod, vmis)
                if vm is not None:
                    ns: str = pod.namespace  # type: ignore[assignment]  # set: a VM was found
                    add_reference(by_claim, (ns, ref), vm)
                    add_reference(by_vm, (ns, vm), ref)
            _replace(self._claim_refs, by_claim, claims_before)
            _replace(self._vm_refs, by_vm, vms_before)
        else:
            claim_keys: set[tuple[str, str]] = set()
            vm_keys: set[tuple[str, str]] = set()
            for hint in hinted.get("pods", ()):
                pkey: Any = hint
                self._index_ref(pkey, state.pods.get(pkey), claim_keys, vm_keys)
            for hint in hinted.get("vmis", ()):
                vkey: Any = hint
                vm_keys.add(vkey)
                for pod in _bucket(self._ref_named, vkey).values():
                    claim_keys.add((pod.namespace, pod.claim_ref))
            for ckey in claim_keys:
                pods = _bucket(self._ref_pods, ckey)
                vms = referencing_vms(pods.values(), vmis) if pods else ()
                _update(self._claim_refs, ckey, vms, claims_before)
            for vkey in vm_keys:
                pods = _bucket(self._ref_named, vkey)
                names = referenced_claims(vkey[1], pods.values(), vmis) if pods else ()
                _update(self._vm_refs, vkey, names, vms_before)
        forced: set[Any] = set(claims_before)
        for vkey in vms_before:
            forced.update(self._labelled.get(vkey, ()))
        return forced, References(ChainMap(claims_before, self._claim_refs), ChainMap(vms_before, self._vm_refs))

    def _index_ref(
        self,
        key: tuple[str, str],
        pod: LauncherPod | None,
        claim_keys: set[tuple[str, str]] | None,
        vm_keys: set[tuple[str, str]] | None,
    ) -> None:
        """Move one pod's entries in the claim-reference indexes to its current view (None: gone); note the claims
        and VMI names it referenced and references."""
        old = self._ref_seen.pop(key, None)
        for view in (old, pod):
            if view is None or view.claim_ref is None or view.namespace is None:
                continue
            ns = view.namespace
            at = (ns, view.claim_ref)
            named = [(ns, n) for n in view.names]
            for index, place in [(self._ref_pods, at), *((self._ref_named, n) for n in named)]:
                if view is old:
                    _drop(index, place, key)
                else:
                    _put(index, place, key, view)
            if claim_keys is not None and vm_keys is not None:
                claim_keys.add(at)
                vm_keys.update(named)
        if pod is not None and pod.claim_ref is not None and pod.namespace is not None:
            self._ref_seen[key] = pod

    def _note_vmi(self, key: tuple[str, str], vmi: Any) -> None:
        old_uid = self._vmi_uid.pop(key, None)
        if old_uid:
            self._uid_vmi.pop((key[0], old_uid), None)
        if vmi is not None and vmi.uid:
            self._vmi_uid[key] = vmi.uid
            self._uid_vmi[(key[0], vmi.uid)] = key

    def _refresh_pod_networks(
        self,
        state: ClusterState,
        hinted: dict[str, set[object]] | None,
        primary: Mapping[str, Any],
        dirty: set[int],
        claims_before: Mapping[tuple[str, str], Claim | None] | None,
        refs_before: References,
    ) -> None:
        """Re-read the pod-assigned addresses of the VMIs whose view, launcher pods or claims changed
        (`claims_before`: the claims re-read this call, as they were; `refs_before`: the claim references as they
        were)."""
        affected: set[tuple[str, str]] | None
        if hinted is None:  # every index anew, in one pass each (what `_note_vmi` and `_link_claim` keep after)
            affected = None
            self._pod_index, self._pod_seen = {}, {}
            self._vmi_uid = {key: vmi.uid for key, vmi in state.vmis.items() if vmi.uid}
            self._uid_vmi = {(key[0], uid): key for key, uid in self._vmi_uid.items()}
            for key, pod in state.pods.items():
                self._index_pod(key, pod, None)
            claimed: dict[tuple[str, str], tuple[str, ...]] = {}
            self._claimed = claimed
            refs = self._references
            for claim in state.ipam_claims.values():
                for link in claim_links_of(claim, refs.of(claim)):
                    vm = link[:2]
                    claimed[vm] = (*claimed.get(vm, ()), link[2])
            keys: Iterable[tuple[str, str]] = [*state.vmis, *(k for k in self._pod_entries if k not in state.vmis)]
        else:
            affected = set()
            for hint in hinted.get("vmis", ()):
                vkey: Any = hint
                self._note_vmi(vkey, state.vmis.get(vkey))
                affected.add(vkey)
            for hint in hinted.get("pods", ()):
                pkey: Any = hint
                self._index_pod(pkey, state.pods.get(pkey), affected)
            assert claims_before is not None  # noted by `_refresh` whenever there are hints
            for ckey, before in claims_before.items():
                was = refs_before.of(before) if before is not None else ((), ())
                self._link_claim(before, was, state.ipam_claims.get(ckey), affected)
            if self._subnets_moved:  # a Layer3 address's node check reads them: every entry read is read again
                affected.update(self._pod_entries)
            keys = affected
        for key in keys:
            self._reread_pod_entry(state, key, primary, dirty)

    def _reread_pod_entry(
        self, state: ClusterState, key: tuple[str, str], primary: Mapping[str, Any], dirty: set[int]
    ) -> None:
        vmi = state.vmis.get(key)
        old = self._pod_entries.get(key)
        if vmi is None or not vmi.uid:
            signature: tuple[Any, ...] | None = None
        else:
            nets = self._claimed.get(key, ())
            pods: tuple[Any, ...] = ()
            if not any(c in primary for c in nets):  # a claim holds the VM's address: its pods are not read
                found: dict[tuple[str, str], Any] = {}
                for k in (vmi.key[1], vmi.uid):
                    found.update(self._indexed_pods((vmi.key[0], k)))
                pods = vmi_pods(vmi, LauncherPods(found))
            if old is None and not pods:
                return  # nothing to contribute, nothing kept (most VMs: a claim holds their address)
            signature = (vmi, pods, frozenset(nets), self._host_subnets)
        if old is not None and signature is not None:
            previous: Any = old.obj
            o_vmi, o_pods, o_claimed, o_subnets = previous
            if (
                o_vmi is signature[0]
                and len(o_pods) == len(signature[1])
                and all(a is b for a, b in zip(o_pods, signature[1], strict=True))
                and o_claimed == signature[2]
                and o_subnets is signature[3]
            ):
                return
        if old is not None:
            self._drop_entry(self._pod_entries.pop(key), dirty)
        if signature is None or not signature[1]:
            return  # no launcher pod to read (or a claim holds the address): nothing to contribute, nothing to keep
        out = Collector()
        claimed_links = {(key[0], key[1], c) for c in signature[2]}
        per_node = self.config.node_name is not None
        read_vmi_pods(vmi, signature[1], primary, claimed_links, out, self._host_subnets, per_node)  # type: ignore[arg-type]
        entry = _Entry(signature, *out.take())
        self._pod_entries[key] = entry
        self._add_entry(entry, dirty)

    def _conflicts(self, dirty: set[int]) -> set[int]:
        """Resolve the conflicts of the addresses whose holders changed; the addresses whose winner changed."""
        out_dirty: set[int] = set()
        refusals = self._refusals
        for k in dirty:
            old_w = self._winner.pop(k, None)
            if old_w is not None:
                for r in old_w.refusals:
                    refusals.remove(r)
            self._tied.discard(k)
            group = self._holders.get(k)
            winner: Candidate | None
            if group is None:
                winner = None
            elif not isinstance(group, list):
                winner = group
                self._winner[k] = _Won(winner, ())
            else:
                winner, lost, tied = resolve_conflict(list(group))
                if tied:
                    self._tied.add(k)  # the cold planner keeps whichever it read first
                self._winner[k] = _Won(winner, lost)
                for r in lost:
                    refusals.add(r)
            old_c = old_w.candidate if old_w is not None else None
            if winner is not old_c:
                out_dirty.add(k)
                if old_c is not None:
                    self._unlink_vmi(old_c.vmi, k)
                if winner is not None:
                    self._link_vmi(winner.vmi, k)
        return out_dirty

    def _link_vmi(self, vmi_key: tuple[str, str], k: int) -> None:
        linked = self._by_vmi.get(vmi_key)
        if linked is None:
            self._by_vmi[vmi_key] = (k,)
            if vmi_key not in self._placed:
                self._unplaced.add(vmi_key)
        elif k not in linked:
            self._by_vmi[vmi_key] = (*linked, k)

    def _placements(self, state: ClusterState, hinted: dict[str, set[object]] | None, out_dirty: set[int]) -> None:
        """Place again the VMIs winners point at whose placement may have changed: new ones, changed ones (hinted,
        or compared by identity), and, when a pod changed, those whose placement reads launcher pods."""
        vmis = state.vmis
        placed = self._placed
        replace: set[tuple[str, str]] = self._unplaced  # linked by a winner, never placed
        self._unplaced = set()
        if hinted is None:
            replace.update(v for v, p in placed.items() if vmis.get(v, _MISSING) is not p.vmi)
            replace.update(self._needs_pods)
        else:
            replace.update(v for v in hinted.get("vmis", ()) if v in placed)
            if hinted.get("pods"):
                replace.update(self._needs_pods)
        if not replace:
            return
        where = placements(replace, state, self.config.node_name)
        for v in replace:
            vmi = vmis.get(v)
            old_p = placed.get(v)
            node = where[v]
            placed[v] = _Placement(vmi if vmi is not None else _MISSING, node)
            if vmi is not None and needs_pods(vmi):
                self._needs_pods.add(v)
            else:
                self._needs_pods.discard(v)
            if old_p is None or old_p.node != node:
                out_dirty.update(self._by_vmi.get(v, ()))
            elif self._policies.uses_vm_labels and getattr(old_p.vmi, "labels", None) != getattr(vmi, "labels", None):
                out_dirty.update(self._by_vmi.get(v, ()))  # a policy reads VMI labels: new attributes

    def _outputs(self, state: ClusterState, out_dirty: set[int]) -> None:
        """The host route (or refusal) of every address in `out_dirty`, kept in the sorted route list; a route that
        moved to another node is a handover."""
        bulk = len(out_dirty) > max(_BULK_MIN, len(self._routes) // 8)  # the first plan: always
        refusals = self._refusals
        for k in out_dirty:
            old_route = self._drop_output(k)
            result = self._output(k)
            new_route = result if result.__class__ is Route else None
            if old_route is not None and new_route is not None and old_route.node != new_route.node:
                self._handover(state, k, old_route, new_route)
            if result.__class__ is Refusal:
                refusals.add(result)
            if old_route is not new_route:
                if old_route is not None:
                    self._removed.append(old_route)
                if new_route is not None:
                    self._added.append(new_route)
            if not bulk:
                self._place_route(k, old_route, new_route)
        if bulk:
            out, view = self._out, self.config.node_name
            keys = sorted(
                k for k, o in out.items() if o.result.__class__ is Route and (view is None or o.result.node == view)
            )
            self._routes = SortedRoutes(keys, [out[k].result for k in keys])  # type: ignore[misc]

    def _drop_output(self, k: int) -> Route | None:
        """Forget the output of address `k`; its route, if it had one."""
        old_o = self._out.pop(k, None)
        if old_o is None:
            return None
        if old_o.node is not None:
            self._by_node[old_o.node].discard(k)
        if old_o.result.__class__ is Refusal:
            self._refusals.remove(old_o.result)
            return None
        return old_o.result  # type: ignore[return-value]

    def _output(self, k: int) -> Route | Refusal | None:
        """The output of address `k` now (`vms.host_route`), recorded."""
        w = self._winner.get(k)
        if w is None:
            return None
        candidate = w.candidate
        node_name = self._placed[candidate.vmi].node
        result = host_route(k, candidate, node_name, self._nodes, self._node_keys, self.config, self._attributes_of)
        self._out[k] = _Output(node_name, result)
        if node_name is not None:
            self._by_node.setdefault(node_name, set()).add(k)
        return result

    def _handover(self, state: ClusterState, k: int, old: Route, route: Route) -> None:
        vmi_key = self._winner[k].candidate.vmi
        vmi = state.vmis.get(vmi_key)
        ready = vmi.migration.target_ready_at if vmi is not None and vmi.migration is not None else None
        self._handovers.append(Handover(route.prefix, vmi_key, route.node or "", ready, old.node))

    def _place_route(self, k: int, old_route: Route | None, new_route: Route | None) -> None:
        """Keep the sorted host routes (by address key) in step with one address's change; in per-node mode only
        the node's routes (a host route placed on no node is nobody's)."""
        view = self.config.node_name
        if view is not None:
            old_route = old_route if old_route is not None and old_route.node == view else None
            new_route = new_route if new_route is not None and new_route.node == view else None
        if old_route is not None or new_route is not None:
            self._routes.set(k, new_route)

    def _add_entry(self, entry: _Entry, dirty: set[int]) -> None:
        for r in entry.refusals:
            self._refusals.add(r)
        holders = self._holders
        for c in entry.candidates:
            k = c.key
            group = holders.get(k)
            if group is None:
                holders[k] = c
            elif isinstance(group, list):
                group.append(c)
            else:
                holders[k] = [group, c]
            dirty.add(k)

    def _drop_entry(self, entry: _Entry, dirty: set[int]) -> None:
        for r in entry.refusals:
            self._refusals.remove(r)
        holders = self._holders
        for c in entry.candidates:
            k = c.key
            group = holders[k]
            if not isinstance(group, list):
                if group is c:
                    del holders[k]
            else:
                for i, x in enumerate(group):
                    if x is c:
                        del group[i]
                        break
                if len(group) == 1:
                    holders[k] = group[0]
            dirty.add(k)

    def _unlink_vmi(self, vmi_key: tuple[str, str], k: int) -> None:
        linked = self._by_vmi.get(vmi_key)
        if linked is None or k not in linked:
            return
        linked = self._by_vmi[vmi_key] = tuple(x for x in linked if x != k)
        if not linked:
            del self._by_vmi[vmi_key]
            self._unplaced.discard(vmi_key)
            self._placed.pop(vmi_key, None)
            self._needs_pods.discard(vmi_key)

    # -- the plan --------------------------------------------------------------------------------------------------
    def _assemble(self) -> Plan | None:
        """The plan: the host routes' snapshot (O(chunks), see `bgpadv.core.sorted_routes`) with the subnet routes
        (in per-node mode the node's), the refusals and the context."""
        if self._tied:
            return None
        rejected = self._refusals.ordered()
        if rejected is None:
            return None
        subnets = self._subnet_routes
        if self._subnets_of is not subnets:
            view = self.config.node_name
            self._subnets_of = subnets
            self._subnet_view = tuple(r for r in subnets if view is None or _in_view(r, view))
        return Plan(routes=self._routes.snapshot(self._subnet_view), rejected=rejected, context=self._context)
