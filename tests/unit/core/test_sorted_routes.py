"""The planner's host routes in chunks (`bgpadv.core.sorted_routes`).

Rules: a snapshot is the routes in key order at the moment it was taken, whatever is written afterwards (copy on
write); it splices subnet routes in exactly where `Plan.build` sorts them (before the host routes of their network
address); it equals the tuple of the same routes (both ways round) and hashes like it; writes after a snapshot copy
one chunk, never the routes of the others.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgpadv.core import sorted_routes
from bgpadv.core.model import ObjectRef, Plan, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.sorted_routes import RouteSnapshot, SortedRoutes
from bgpadv.core.views import address_key

CUDN = ObjectRef("ClusterUserDefinedNetwork", "vmnet-a")
HOPS = {"worker-1": Address.parse("10.0.0.11"), "worker-2": Address.parse("10.0.0.12")}


def vm_route(n: int, node: str = "worker-1") -> Route:
    """VM `n`'s /32 in 10.128.0.0/14, from its VMI, pointing at `node`."""
    prefix = Prefix.parse(f"10.{128 + (n >> 16)}.{(n >> 8) & 255}.{n & 255}/32")
    vmi = ObjectRef("VirtualMachineInstance", f"vm-{n}", "imported-vms")
    return Route(prefix, HOPS[node], "vmnet-a", RouteKind.HOST, vmi, node)


def subnet_route(cidr: str) -> Route:
    return Route(Prefix.parse(cidr), None, "vmnet-a", RouteKind.SUBNET, CUDN)


def key(route: Route) -> int:
    return address_key(route.prefix.version, route.prefix.value)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 4 routes, so a few dozen routes split and merge chunks."""
    monkeypatch.setattr(sorted_routes, "CHUNK", 4)


def test_a_snapshot_keeps_what_it_saw_while_the_routes_change() -> None:
    routes = [vm_route(n) for n in range(40)]
    held = SortedRoutes([key(r) for r in routes], routes)
    before = held.snapshot()
    moved = vm_route(7, "worker-2")
    held.set(key(moved), moved)  # a migration
    held.set(key(routes[3]), None)  # a VM stopped
    added = vm_route(100)
    held.set(key(added), added)  # a new VM
    after = held.snapshot()

    assert before == tuple(routes)
    assert list(after) == [*routes[:3], *routes[4:7], moved, *routes[8:], added]
    assert len(after) == 40 == len(held)


def test_subnet_routes_precede_the_host_routes_of_their_address_as_plan_build_sorts_them() -> None:
    hosts = [vm_route(n) for n in (0, 1, 255, 256, 300)]  # 10.128.0.0, .0.1, .0.255, .1.0, .1.44
    subnets = (subnet_route("10.128.0.0/24"), subnet_route("10.128.1.0/24"), subnet_route("10.200.0.0/16"))
    held = SortedRoutes([key(r) for r in hosts], hosts)

    snap = held.snapshot(subnets)

    assert snap == Plan.build([*hosts, *subnets], []).routes
    assert snap[0] is subnets[0] and snap[4] is subnets[1] and snap[-1] is subnets[2]
    assert len(snap) == 8


def test_a_snapshot_equals_and_hashes_like_the_tuple_of_its_routes() -> None:
    routes = [vm_route(n) for n in range(10)]
    snap = SortedRoutes([key(r) for r in routes], routes).snapshot()

    assert snap == tuple(routes) and tuple(routes) == snap
    assert snap != tuple(routes[:-1]) and snap != "not routes"
    assert hash(snap) == hash(tuple(routes))
    assert Plan(routes=snap) == Plan(routes=tuple(routes))
    assert snap[2:4] == (routes[2], routes[3])


def test_a_write_after_a_snapshot_copies_one_chunk_and_shares_the_rest() -> None:
    routes = [vm_route(n) for n in range(40)]  # 10 chunks of 4
    held = SortedRoutes([key(r) for r in routes], routes)
    first = held.snapshot()
    moved = vm_route(21, "worker-2")
    held.set(key(moved), moved)
    second = held.snapshot()

    # which chunks two snapshots share is memory layout: no public reading shows it
    shared = [a is b for a, b in zip(first._chunks, second._chunks, strict=True)]
    assert shared.count(False) == 1


def test_an_empty_set_grows_and_empties_again() -> None:
    held = SortedRoutes()
    assert held.snapshot() == ()
    for n in (5, 3, 9):
        held.set(key(vm_route(n)), vm_route(n))
    assert list(held.snapshot()) == [vm_route(3), vm_route(5), vm_route(9)]
    for n in (3, 5, 9, 42):  # 42 was never there: nothing to drop
        held.set(key(vm_route(n)), None)
    assert held.snapshot() == () and len(held) == 0


# one step: (VM number, None to drop its route or the node its route points at now, whether to snapshot after it)
steps = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from([None, "worker-1", "worker-2"]), st.booleans()), max_size=120
)


@settings(max_examples=200, deadline=None)
@given(initial=st.sets(st.integers(0, 60)), steps=steps)
def test_any_sequence_of_changes_leaves_every_snapshot_as_the_routes_were(initial: set[int], steps: list) -> None:
    model = {key(vm_route(n)): vm_route(n) for n in sorted(initial)}
    held = SortedRoutes(list(model), list(model.values()))
    taken: list[tuple[RouteSnapshot, tuple[Route, ...]]] = [(held.snapshot(), tuple(model.values()))]
    for n, node, snap in steps:
        route = vm_route(n, node) if node is not None else None
        held.set(key(vm_route(n)), route)
        if route is None:
            model.pop(key(vm_route(n)), None)
        else:
            model[key(route)] = route
        if snap:
            taken.append((held.snapshot(), tuple(model[k] for k in sorted(model))))
    taken.append((held.snapshot(), tuple(model[k] for k in sorted(model))))

    for snapshot, expected in taken:
        assert snapshot == expected
        assert len(snapshot) == len(expected)
    assert len(held) == len(model)
