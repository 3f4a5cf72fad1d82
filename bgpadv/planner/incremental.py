"""Incremental planning: after a small change, the same `Plan` as `plan(state, config)`, without replanning everything.

`IncrementalPlanner(config).plan(state, changed)` returns exactly `plan(state, config)` (routes and refusals, in
order). `changed` is the set of `(ClusterState field, key)` that may have changed since the previous call on the same
`state` object, or None: then every IPAMClaim and every VMI the plan depends on is compared by identity with what was
cached (the store replaces an object's dict when it changes and never mutates a stored dict in place; the cache holds
a reference to every dict it read, so an id is never reused while it is compared). CUDNs, RouteAdvertisements,
Nodes and Namespaces (read for IPAM-less secondary networks) are few: they are always compared by identity, whatever
`changed` says; a pod change is taken from `changed` (None: every pod may have changed).

What is cached, and what invalidates it:

- Per IPAMClaim (and per VMI, on IPAM-less secondary networks, whose addresses come from VMIs): the refusals and the
  validated candidates the cold planner derives from that object alone (`vms.read_claims`, `vms.read_vmi_interfaces`
  into a `vms.Collector`, then `Collector.entry()`). Invalidated by a change of that object; every entry is dropped
  when the network index (`networks.index_networks`: CUDNs + RouteAdvertisements + Namespaces) changes in any way.
- Per address: every candidate holding it and the conflict outcome (winner, `duplicate-address` refusals, by
  `vms.resolve_conflict`). Recomputed when a candidate of that address comes or goes.
- Per VMI a winner points at: its placement (`vms.placements`; in per-node mode from the instance's view, rule 6b).
  Recomputed when the VMI changes, and for VMIs whose placement reads launcher pods (`vms.needs_pods`) whenever a
  pod changes.
- Per winning address: its host route or its refusal (`no-node-address`, `invalid-node-address`,
  `covers-infrastructure`: `vms.host_route`, the function the cold planner calls per address). Recomputed when the
  winner, its VMI's placement, or the node it is placed on changes, and when a node address equal to it appears,
  disappears or changes node.
- The node index (`nodes.index_nodes`, whose next hops depend on the advertised subnets), subnet routes and the CUDN
  refusals: recomputed whenever a CUDN, RouteAdvertisements or Node object changes.

Order: `Plan.build` sorts with a stable sort, so elements with equal sort keys keep the cold planner's insertion order.
Host routes have distinct keys (one winner per address) and subnet routes precede host routes of the same key, so the
route order is exact. When equal-keyed refusals differ, or a conflict has two candidates of the same age (the cold
planner keeps the first it read), the insertion order would matter: then this planner returns `plan(state, config)`
itself (its caches stay valid), so the result is always exact.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Mapping

from bgpadv.config import Config
from bgpadv.core.model import Plan, Refusal, Route, route_order
from bgpadv.core.state import ClusterState
from bgpadv.planner import cyclic_gc_paused
from bgpadv.planner import plan as cold_plan
from bgpadv.planner.networks import Networks, advertised_subnets, index_networks, subnet_routes
from bgpadv.planner.nodes import NodeInfo, index_nodes, node_address_keys
from bgpadv.planner.vms import (
    Candidate,
    Collector,
    address_key,
    host_route,
    namespace_networks,
    needs_pods,
    placements,
    read_claims,
    read_vmi_interfaces,
    resolve_conflict,
)

__all__ = ["IncrementalPlanner"]

_MISSING = object()
_BULK = 20000  # more changed host outputs than this: rebuild the sorted route list instead of bisecting


_Entry = tuple[object, list[Refusal], list[tuple[int, Candidate]]]
"""What one object contributes: (the object read, its refusals, its candidates as (address key, candidate))."""


def _refusal_key(r: Refusal) -> tuple[str, str, str]:
    return (str(r.source), r.value, r.reason)  # Plan.build's sort key


class _Refusals:
    """A multiset of refusals kept in Plan.build's order: groups by sort key, the keys sorted lazily."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str, str], list[Refusal]] = {}
        self._keys: list[tuple[str, str, str]] = []
        self._added: set[tuple[str, str, str]] = set()
        self._removed: set[tuple[str, str, str]] = set()

    def add(self, r: Refusal) -> None:
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
        """Every refusal in Plan.build's order; None when two unequal refusals share a sort key (order ambiguous)."""
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


def _same_items(previous: list[tuple[object, object]] | None, current: Mapping) -> bool:
    """True when `current` holds the same keys, in the same order, bound to the very same objects."""
    if previous is None or len(previous) != len(current):
        return False
    return all(k == pk and v is pv for (k, v), (pk, pv) in zip(current.items(), previous, strict=True))


class IncrementalPlanner:
    """`plan(state, changed)` == `bgpadv.planner.plan(state, config)`, at the cost of what changed (see the module).

    One instance follows one evolving `ClusterState` (another state object means a full comparison). If a call
    raises, every cache is dropped and the next call starts afresh.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self.fallbacks = 0  # how many plans were ambiguous in order and delegated to the cold planner
        self._reset()

    # -- state -----------------------------------------------------------------------------------------------------
    def _reset(self) -> None:
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
        self._global: list[Refusal] = []  # CUDN refusals and subnet refusals
        self._subnet_routes: list[Route] = []
        self._reset_hosts()

    def _reset_hosts(self) -> None:
        self._claims: dict[object, _Entry] = {}
        self._vmi_records: dict[object, _Entry] = {}
        self._holders: dict[int, list[Candidate]] = {}
        self._winner: dict[int, tuple[Candidate, list[Refusal]]] = {}
        self._tied: set[int] = set()
        self._out: dict[int, tuple[str | None, Route | Refusal | None]] = {}
        self._by_vmi: dict[tuple[str, str], set[int]] = {}
        self._by_node: dict[str, set[int]] = {}
        self._placed: dict[tuple[str, str], tuple[object, str | None]] = {}
        self._needs_pods: set[tuple[str, str]] = set()
        self._unplaced: set[tuple[str, str]] = set()
        self._route_keys: list[int] = []
        self._route_list: list[Route] = []
        self._refusals = _Refusals()
        for r in getattr(self, "_global", ()):
            self._refusals.add(r)

    # -- entry point -----------------------------------------------------------------------------------------------
    def plan(self, state: ClusterState, changed: Iterable[tuple[str, object]] | None = None) -> Plan:
        """The plan of `state`, equal to `plan(state, config)`. `changed`: (field, key) pairs changed since the
        previous call (None: anything may have changed)."""
        if state is not self._state:
            changed = None
        try:
            with cyclic_gc_paused():
                result = self._plan(state, changed)
        except BaseException:
            self._reset()
            raise
        if result is None:
            self.fallbacks += 1
            return cold_plan(state, self.config)
        view = self.config.node_name
        return result.for_node(view) if view else result

    def _plan(self, state: ClusterState, changed: Iterable[tuple[str, object]] | None) -> Plan | None:
        config = self.config
        self._state = state
        hinted: dict[str, set] | None = None
        if changed is not None:
            hinted = {}
            for fld, key in changed:
                hinted.setdefault(fld, set()).add(key)

        # networks, nodes, subnet routes: few objects, always compared
        networks_moved = (
            not _same_items(self._seen["cudns"], state.cudns)
            or not _same_items(self._seen["ras"], state.route_advertisements)
            or not _same_items(self._seen["namespaces"], state.namespaces)
        )
        nodes_moved = not _same_items(self._seen["nodes"], state.nodes)
        rebuild_hosts = self._networks is None
        networks = self._networks
        if networks_moved or networks is None:
            fresh = index_networks(state, config)
            if networks is None or not (
                fresh.advertised == networks.advertised
                and fresh.claim_refusals == networks.claim_refusals
                and fresh.withdrawn == networks.withdrawn
            ):
                rebuild_hosts = True
                self._networks = fresh
            networks = fresh  # equal to the cached index where the host caches are concerned
        changed_nodes: set[str] = set()
        changed_keys: set[int] = set()  # node addresses that appeared, disappeared or changed holder
        if nodes_moved or networks_moved:  # a node address inside an advertised subnet is no next hop
            nodes = index_nodes(state.nodes, advertised_subnets(networks))
            old_nodes = self._nodes
            changed_nodes = {n for n in old_nodes.keys() | nodes.keys() if old_nodes.get(n) != nodes.get(n)}
            for n in changed_nodes:
                for info in (old_nodes.get(n), nodes.get(n)):
                    if info is not None:
                        changed_keys |= info.keys
            self._nodes = nodes
            self._node_keys = node_address_keys(nodes)
        nodes = self._nodes
        if networks_moved or nodes_moved:
            s_routes, s_refusals = subnet_routes(state, config, networks, nodes)
            for r in self._global:
                self._refusals.remove(r)
            self._global = [*networks.refusals, *s_refusals]
            for r in self._global:
                self._refusals.add(r)
            self._subnet_routes = sorted(s_routes, key=route_order)
        self._seen = {
            "cudns": list(state.cudns.items()),
            "ras": list(state.route_advertisements.items()),
            "nodes": list(state.nodes.items()),
            "namespaces": list(state.namespaces.items()),
        }
        if rebuild_hosts:
            self._reset_hosts()
        if config.networks.host_routes:
            self._hosts(state, hinted if not rebuild_hosts else None, rebuild_hosts, changed_nodes, changed_keys)
        return self._assemble()

    def _refresh(
        self,
        objects: Mapping,
        cache: dict,
        hinted: dict[str, set] | None,
        field: str,
        reader: Callable[..., None],
        networks: Networks,
        dirty: set[int],
    ) -> None:
        """Re-read the objects of one kind (`field` of ClusterState) that changed since their cached entry: those
        hinted, or, without hints, every object whose dict is not the cached one (and every cached one now gone)."""
        if hinted is None:
            keys: Iterable = [k for k, v in objects.items() if (e := cache.get(k)) is None or e[0] is not v]
            keys = [*keys, *(k for k in cache if k not in objects)]
        else:
            keys = hinted.get(field, ())
        for key in keys:
            obj = objects.get(key, _MISSING)
            old = cache.get(key)
            if old is not None and old[0] is obj:
                continue
            if old is not None:
                self._drop_entry(cache.pop(key), dirty)
            if obj is not _MISSING:
                out = Collector()
                reader({key: obj}, networks, out)
                entry: _Entry = (obj, *out.entry())
                cache[key] = entry
                self._add_entry(entry, dirty)

    # -- host routes -----------------------------------------------------------------------------------------------
    def _hosts(
        self,
        state: ClusterState,
        hinted: dict[str, set] | None,
        rebuild: bool,
        changed_nodes: set[str],
        changed_keys: set[int],
    ) -> None:
        networks = self._networks
        assert networks is not None
        config = self.config
        dirty: set[int] = set()

        # 1. objects that carry addresses
        self._refresh(state.ipam_claims, self._claims, hinted, "ipam_claims", read_claims, networks, dirty)
        vmis = state.vmis
        if namespace_networks(networks):
            self._refresh(vmis, self._vmi_records, hinted, "vmis", read_vmi_interfaces, networks, dirty)

        # 2. conflicts of the addresses whose holders changed
        out_dirty: set[int] = set()
        refusals = self._refusals
        for k in dirty:
            old_w = self._winner.pop(k, None)
            if old_w is not None:
                for r in old_w[1]:
                    refusals.remove(r)
            self._tied.discard(k)
            group = self._holders.get(k)
            if not group:
                winner = None
            elif len(group) == 1:
                winner = group[0]
                self._winner[k] = (winner, [])
            else:
                winner, lost, tied = resolve_conflict(list(group))
                if tied:
                    self._tied.add(k)  # the cold planner keeps whichever it read first
                self._winner[k] = (winner, lost)
                for r in lost:
                    refusals.add(r)
            old_c = old_w[0] if old_w is not None else None
            if winner is not old_c:
                out_dirty.add(k)
                if old_c is not None:
                    self._unlink_vmi(old_c[3], k)
                if winner is not None:
                    linked = self._by_vmi.get(winner[3])
                    if linked is None:
                        linked = self._by_vmi[winner[3]] = set()
                        if winner[3] not in self._placed:
                            self._unplaced.add(winner[3])
                    linked.add(k)

        # 3. placements of the VMIs the winners point at
        by_vmi = self._by_vmi
        placed = self._placed
        replace: set[tuple[str, str]] = self._unplaced  # linked by a winner, never placed
        self._unplaced = set()
        if hinted is None:
            replace.update(v for v, (obj, _node) in placed.items() if vmis.get(v, _MISSING) is not obj)
            replace.update(self._needs_pods)
        else:
            replace.update(v for v in hinted.get("vmis", ()) if v in placed)
            if hinted.get("pods"):
                replace.update(self._needs_pods)
        if replace:
            where = placements(replace, state, config.node_name)
            for v in replace:
                vmi = vmis.get(v, _MISSING)
                old_p = placed.get(v)
                node = where[v]
                placed[v] = (vmi, node)
                if isinstance(vmi, dict) and needs_pods(vmi):
                    self._needs_pods.add(v)
                else:
                    self._needs_pods.discard(v)
                if old_p is None or old_p[1] != node:
                    out_dirty.update(by_vmi.get(v, ()))
        for node_name in changed_nodes:
            out_dirty.update(self._by_node.get(node_name, ()))
        winners = self._winner
        out_dirty.update(k for k in changed_keys if k in winners)

        # 4. the host route (or refusal) of every address whose inputs changed
        bulk = len(out_dirty) > _BULK
        route_keys, route_list = self._route_keys, self._route_list
        for k in out_dirty:
            old_o = self._out.pop(k, None)
            old_route = None
            if old_o is not None:
                node_name, result = old_o
                if node_name is not None:
                    self._by_node[node_name].discard(k)
                if result.__class__ is Refusal:
                    refusals.remove(result)
                elif result is not None:
                    old_route = result
            w = self._winner.get(k)
            result = None
            if w is not None:
                candidate = w[0]
                node_name = placed[candidate[3]][1]
                result = host_route(k, candidate, node_name, self._nodes, self._node_keys, config)
                self._out[k] = (node_name, result)
                if node_name is not None:
                    self._by_node.setdefault(node_name, set()).add(k)
                if result.__class__ is Refusal:
                    refusals.add(result)
            if bulk:
                continue
            new_route = result if result.__class__ is Route else None
            if old_route is None and new_route is None:
                continue
            i = bisect_left(route_keys, k)
            if old_route is not None and new_route is not None:
                route_list[i] = new_route  # same key, same place
            elif old_route is not None:
                del route_keys[i]
                del route_list[i]
            else:
                route_keys.insert(i, k)
                route_list.insert(i, new_route)
        if bulk:
            out = self._out
            self._route_keys = sorted(k for k, (_n, r) in out.items() if r.__class__ is Route)
            self._route_list = [out[k][1] for k in self._route_keys]  # type: ignore[misc]

    def _add_entry(self, entry: _Entry, dirty: set[int]) -> None:
        for r in entry[1]:
            self._refusals.add(r)
        holders = self._holders
        for k, c in entry[2]:
            holders.setdefault(k, []).append(c)
            dirty.add(k)

    def _drop_entry(self, entry: _Entry, dirty: set[int]) -> None:
        for r in entry[1]:
            self._refusals.remove(r)
        holders = self._holders
        for k, c in entry[2]:
            group = holders[k]
            for i, x in enumerate(group):
                if x is c:
                    del group[i]
                    break
            if not group:
                del holders[k]
            dirty.add(k)

    def _unlink_vmi(self, vmi_key: tuple[str, str], k: int) -> None:
        linked = self._by_vmi.get(vmi_key)
        if linked is None:
            return
        linked.discard(k)
        if not linked:
            del self._by_vmi[vmi_key]
            self._unplaced.discard(vmi_key)
            self._placed.pop(vmi_key, None)
            self._needs_pods.discard(vmi_key)

    # -- the plan --------------------------------------------------------------------------------------------------
    def _assemble(self) -> Plan | None:
        if self._tied:
            return None
        rejected = self._refusals.ordered()
        if rejected is None:
            return None
        hosts = self._route_list
        subnets = self._subnet_routes
        if not subnets:
            return Plan(routes=tuple(hosts), rejected=rejected)
        # a subnet route precedes the host routes of an equal sort key (plan() lists subnet routes first)
        routes: list[Route] = []
        start = 0
        keys = self._route_keys
        for s in subnets:
            p = s.prefix
            at = bisect_left(keys, address_key(p.version, p.value), lo=start)
            routes.extend(hosts[start:at])
            routes.append(s)
            start = at
        routes.extend(hosts[start:])
        return Plan(routes=tuple(routes), rejected=rejected)
