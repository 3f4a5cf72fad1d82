"""Routes in address order, kept so that a plan's route sequence costs the change, not the plan.

The incremental planner holds its host routes in a `SortedRoutes`: sorted by an integer key (one per route, the
address key of `bgpadv.core.views.address_key`), stored in chunks of a few hundred. `snapshot()` hands out a
`RouteSnapshot`, an immutable `Sequence[Route]` that shares the chunks: it copies the list of chunks (N / 512
pointers), never the routes. A chunk a snapshot shares is copied before the next write to it (copy on write), so a
change after a snapshot costs one chunk copy and a snapshot stays what it was.

A snapshot also carries the plan's subnet routes. They are spliced into the host routes (a subnet route before the
host routes of its network address, as `Plan.build` sorts them) only when someone reads the sequence in order or
by index, once per snapshot; its length costs nothing. Most plans on the delta path are never read whole: the
guard, the hold and the speaker take the planner's delta.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, overload

from bgpadv.core.views import address_key

if TYPE_CHECKING:
    from bgpadv.core.model import Route

CHUNK = 512  # routes per chunk when built; a chunk splits at twice that, and merges into a neighbour below an eighth


class SortedRoutes:
    """The planner's host routes by key, one route per key; see the module. Not thread-safe: one writer."""

    __slots__ = ("_firsts", "_keys", "_len", "_owned", "_routes")

    def __init__(self, keys: Sequence[int] = (), routes: Sequence[Route] = ()) -> None:
        """From keys in ascending order, without repeats, and their routes."""
        if len(keys) != len(routes):
            raise ValueError("one route per key")
        self._keys: list[list[int]] = [list(keys[i : i + CHUNK]) for i in range(0, len(keys), CHUNK)]
        self._routes: list[list[Route]] = [list(routes[i : i + CHUNK]) for i in range(0, len(routes), CHUNK)]
        self._firsts: list[int] = [c[0] for c in self._keys]
        self._owned: set[int] = set()  # ids of the chunk lists no snapshot shares (writable in place)
        for c in (*self._keys, *self._routes):
            self._owned.add(id(c))
        self._len = len(keys)

    def __len__(self) -> int:
        return self._len

    def snapshot(self, subnets: tuple[Route, ...] = ()) -> RouteSnapshot:
        """The routes now, with `subnets` (in `Plan.build` order) to splice in: immutable, O(chunks)."""
        self._owned.clear()
        return RouteSnapshot(tuple(self._routes), tuple(self._keys), self._len, subnets)

    def set(self, key: int, route: Route | None) -> None:
        """`key`'s route is now `route` (None: it has none)."""
        c, i, found = self._find(key)
        if found:
            if route is None:
                self._delete(c, i)
            else:
                self._writable(self._routes, c)[i] = route
        elif route is not None:
            self._insert(c, i, key, route)

    def _find(self, key: int) -> tuple[int, int, bool]:
        """(chunk, index in it, whether `key` is there): where `key` is or would go."""
        if not self._keys:
            return 0, 0, False
        c = max(bisect_right(self._firsts, key) - 1, 0)
        keys = self._keys[c]
        i = bisect_left(keys, key)
        return c, i, i < len(keys) and keys[i] == key

    def _writable(self, chunks: list[list[Any]], c: int) -> list[Any]:
        chunk = chunks[c]
        if id(chunk) not in self._owned:
            chunk = chunks[c] = chunk.copy()
            self._owned.add(id(chunk))
        return chunk

    def _insert(self, c: int, i: int, key: int, route: Route) -> None:
        self._len += 1
        if not self._keys:
            self._place(0, 0, [key], [route])
            return
        keys, routes = self._writable(self._keys, c), self._writable(self._routes, c)
        keys.insert(i, key)
        routes.insert(i, route)
        if i == 0:
            self._firsts[c] = key
        if len(keys) > 2 * CHUNK:
            self._place(c, 1, keys, routes)  # split in two

    def _delete(self, c: int, i: int) -> None:
        self._len -= 1
        keys, routes = self._writable(self._keys, c), self._writable(self._routes, c)
        del keys[i]
        del routes[i]
        if not keys:
            self._place(c, 1)
        elif len(keys) < CHUNK // 8 and len(self._keys) > 1:  # merge into a neighbour (split again if too long)
            lo = c if c + 1 < len(self._keys) else c - 1
            self._place(lo, 2, self._keys[lo] + self._keys[lo + 1], self._routes[lo] + self._routes[lo + 1])
        elif i == 0:
            self._firsts[c] = keys[0]

    def _place(self, c: int, drop: int, keys: list[int] | None = None, routes: list[Route] | None = None) -> None:
        """Replace `drop` chunks at `c` by `keys` and `routes` (None: by nothing): one new chunk, or two halves when
        they are longer than twice CHUNK."""
        for chunk in (*self._keys[c : c + drop], *self._routes[c : c + drop]):
            self._owned.discard(id(chunk))
        new_keys: list[list[int]] = []
        new_routes: list[list[Route]] = []
        if keys is not None and routes is not None:
            if len(keys) > 2 * CHUNK:
                new_keys, new_routes = [keys[:CHUNK], keys[CHUNK:]], [routes[:CHUNK], routes[CHUNK:]]
            else:
                new_keys, new_routes = [keys], [routes]
        self._keys[c : c + drop] = new_keys
        self._routes[c : c + drop] = new_routes
        self._firsts[c : c + drop] = [k[0] for k in new_keys]
        for chunk in (*new_keys, *new_routes):
            self._owned.add(id(chunk))


class RouteSnapshot(Sequence["Route"]):
    """An immutable sequence of routes (a plan's): host routes in chunks with subnet routes to splice in; see the
    module. Equal to any sequence of the same routes in the same order (a tuple included)."""

    __slots__ = ("_chunks", "_flat", "_hosts", "_key_chunks", "_subnets")

    def __init__(
        self,
        chunks: tuple[list[Route], ...],
        key_chunks: tuple[list[int], ...],
        hosts: int,
        subnets: tuple[Route, ...] = (),
    ) -> None:
        self._chunks = chunks
        self._key_chunks = key_chunks
        self._hosts = hosts
        self._subnets = subnets
        self._flat: tuple[Route, ...] | None = None

    def __len__(self) -> int:
        return self._hosts + len(self._subnets)

    def __iter__(self) -> Iterator[Route]:
        if self._flat is None and not self._subnets:
            return chain.from_iterable(self._chunks)
        return iter(self.flat())

    @overload
    def __getitem__(self, index: int) -> Route: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Route, ...]: ...
    def __getitem__(self, index: int | slice) -> Route | tuple[Route, ...]:
        return self.flat()[index]

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and self.flat() == tuple(other)

    def __hash__(self) -> int:
        return hash(self.flat())

    def __repr__(self) -> str:
        return f"RouteSnapshot({self.flat()!r})"

    def flat(self) -> tuple[Route, ...]:
        """The routes as one tuple, made once."""
        if self._flat is None:
            hosts = list(chain.from_iterable(self._chunks))
            if self._subnets:
                keys = list(chain.from_iterable(self._key_chunks))
                for n, s in enumerate(self._subnets):  # before the host routes of an equal key (Plan.build's order)
                    p = s.prefix
                    hosts.insert(bisect_left(keys, address_key(p.version, p.value)) + n, s)
            self._flat = tuple(hosts)
        return self._flat
