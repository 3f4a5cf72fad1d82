"""One address, several claimants (rule 4 of `vms`): the oldest keeps it, the others are refused."""

from __future__ import annotations

from bgpadv.core.model import Refusal
from bgpadv.planner import checks
from bgpadv.planner.candidates import Candidate, Collector


def resolve_conflict(group: list[Candidate]) -> tuple[Candidate, list[Refusal], bool]:
    """One address held by several candidates: (the winner, the others' `duplicate-address` refusals, tied).

    Sorts `group` in place, oldest first (`Candidate.age`: creationTimestamp, namespace, name); the sort is stable,
    so of two candidates of the same age the one read first wins, and `tied` says so (the outcome then depends on
    reading order).
    """
    group.sort(key=lambda c: c.age)
    winner = group[0]
    refusals = []
    for loser in group[1:]:
        message = f"also claimed by {winner.ref}, which is older and keeps it"
        refusals.append(Refusal(loser.ref, loser.text, checks.DUPLICATE_ADDRESS, message, loser.network.name))
    return winner, refusals, group[0].age == group[1].age


def resolve_conflicts(out: Collector) -> None:
    """Keep one claimant per contested address of `out` (the oldest); refuse the others as duplicate-address."""
    owner = out.owner
    for key, group in out.contested.items():
        owner[key], refusals, _tied = resolve_conflict(group)
        out.refusals.extend(refusals)
