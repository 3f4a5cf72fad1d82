"""One address, several claimants (rule 4 of `vms`): the most trusted source keeps it, then the oldest.

Across trust ranks (`candidates.CLAIM` > `POD_NETWORKS` > `GUEST_REPORT`) the higher rank always wins, whatever the
ages: an address an IPAMClaim holds is never taken by an older VM whose launcher pod annotation a tenant edited, nor
by a guest's report. The losers of a higher rank are refused `outranked-address`, naming the winner and both ranks.
Within one rank the oldest wins (`Candidate.age`: creationTimestamp, namespace, name); the others are refused
`duplicate-address`.
"""

from __future__ import annotations

from bgpadv.core import reasons
from bgpadv.core.model import Refusal
from bgpadv.planner import checks
from bgpadv.planner.candidates import SOURCES, Candidate, Collector


def _order(c: Candidate) -> tuple[int, tuple[str, str, str]]:
    return c.rank, c.age


def _refusal(loser: Candidate, winner: Candidate) -> Refusal:
    if winner.rank == loser.rank:
        reason, message = checks.DUPLICATE_ADDRESS, f"also claimed by {winner.ref}, which is older and keeps it"
    else:
        reason = reasons.OUTRANKED_ADDRESS
        message = (
            f"also held by {winner.ref} from {SOURCES[winner.rank]} (trust rank {winner.rank}), which outranks "
            f"{SOURCES[loser.rank]} (trust rank {loser.rank}) whatever their ages and keeps it"
        )
    return Refusal(loser.ref, loser.text, reason, message, loser.network.name)


def resolve_conflict(group: list[Candidate]) -> tuple[Candidate, list[Refusal], bool]:
    """One address held by several candidates: (the winner, the others' refusals, tied).

    Sorts `group` in place, most trusted then oldest first (`Candidate.rank`, then `Candidate.age`); the sort is
    stable, so of two candidates of the same rank and age the one read first wins, and `tied` says so (the outcome
    then depends on reading order).
    """
    group.sort(key=_order)
    winner = group[0]
    refusals = [_refusal(loser, winner) for loser in group[1:]]
    return winner, refusals, _order(group[0]) == _order(group[1])


def resolve_conflicts(out: Collector) -> None:
    """Keep one claimant per contested address of `out` (see the module); refuse the others."""
    owner = out.owner
    for key, group in out.contested.items():
        owner[key], refusals, _tied = resolve_conflict(group)
        out.refusals.extend(refusals)
