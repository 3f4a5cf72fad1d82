"""Node and infrastructure space: the address ranges no VM network may overlap, as one pure lookup.

The planner builds it from the configuration and the Node views (`bgpadv.planner.space.infrastructure_space`), refuses
every selected network one of whose subnets meets it (`bgpadv.planner.networks`), and hands it to the guard in the
plan's context (`PlanContext.space`), which applies the same `conflict` to every route as a last line. One bad
network therefore never touches another: it is refused whole, and node addresses stay valid next hops.

Ranges are grouped by reason code, checked in the order given (the first group that meets a range gives the
reason): each group is sorted by first address with the running maximum of last addresses, so one query costs a
bisection per group whatever the number of nodes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

Entry = tuple[int, int, int, str]
"""(version, first, last, what) of one range of infrastructure space; `what` is a phrase for people."""


@dataclass(frozen=True, slots=True)
class _Group:
    reason: str
    firsts: tuple[int, ...]
    reach: tuple[tuple[int, int], ...]  # per position: (largest last so far, index of the range that has it)
    what: tuple[str, ...]

    @staticmethod
    def of(reason: str, entries: Iterable[tuple[int, int, str]]) -> _Group:
        ordered = sorted(set(entries))
        reach: list[tuple[int, int]] = []
        best = (-1, -1)
        for i, (_first, last, _what) in enumerate(ordered):
            if last > best[0]:
                best = (last, i)
            reach.append(best)
        return _Group(reason, tuple(e[0] for e in ordered), tuple(reach), tuple(e[2] for e in ordered))

    def meets(self, first: int, last: int) -> str | None:
        i = bisect_right(self.firsts, last)
        if i == 0:
            return None
        reach, index = self.reach[i - 1]
        return self.what[index] if reach >= first else None


@dataclass(frozen=True, slots=True)
class InfrastructureSpace:
    """Per IP version, the groups of ranges (by reason code, in priority order) no network subnet may meet."""

    groups: tuple[tuple[int, tuple[_Group, ...]], ...] = ()

    @staticmethod
    def of(by_reason: Iterable[tuple[str, Iterable[Entry]]]) -> InfrastructureSpace:
        """From (reason, entries) pairs in priority order."""
        per_version: dict[int, list[_Group]] = {4: [], 6: []}
        for reason, entries in by_reason:
            split: dict[int, list[tuple[int, int, str]]] = {4: [], 6: []}
            for version, first, last, what in entries:
                split[version].append((first, last, what))
            for version, ranges in split.items():
                if ranges:
                    per_version[version].append(_Group.of(reason, ranges))
        return InfrastructureSpace(tuple((v, tuple(g)) for v, g in per_version.items() if g))

    def conflict(self, version: int, first: int, last: int) -> tuple[str, str] | None:
        """(reason code, what it meets) when the range first..last meets infrastructure space, else None."""
        for v, groups in self.groups:
            if v == version:
                for group in groups:
                    what = group.meets(first, last)
                    if what is not None:
                        return group.reason, what
        return None


EMPTY_SPACE = InfrastructureSpace()
