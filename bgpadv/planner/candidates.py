"""Candidates: the validated VM addresses that wait for conflict resolution and placement (rules 3-4 of `vms`).

`claims` and `guest_reports` read objects into a `Collector` as `Record`s (one object's addresses on one network);
`Collector.validate` checks each address against its network (`Network.check`) and keeps the valid ones as
`Candidate`s under their address key (`views.address_key`), noting every address held by several.
"""

from __future__ import annotations

from typing import NamedTuple

from bgpadv.core.model import ObjectRef, Refusal
from bgpadv.core.views import Problem, VmAddress, address_key
from bgpadv.planner import checks
from bgpadv.planner.networks import Network

__all__ = ["Candidate", "Collector", "ObjectEntry", "Record", "address_key"]

_V6 = 1 << 128


class Record(NamedTuple):
    """One object's addresses to validate on one network: each address once (malformed ones kept, refused alone),
    or `refused`, the problem that refuses the object's addresses whole."""

    addresses: tuple[VmAddress, ...]
    network: Network
    ref: ObjectRef
    vmi: tuple[str, str]  # (namespace, VMI name): where the addresses run
    age: tuple[str, str, str]  # of the source object: the smallest wins a conflict
    refused: Problem | None = None


class Candidate(NamedTuple):
    """One validated address waiting for conflict resolution and placement, stored under its address key."""

    text: str  # as written (bounded), for refusals
    network: Network
    ref: ObjectRef
    vmi: tuple[str, str]
    age: tuple[str, str, str]


ObjectEntry = tuple[list[Refusal], list[tuple[int, Candidate]]]
"""What one object contributes to the plan before conflicts: its refusals, and its validated addresses as
(address key, candidate) (`Collector.entry`)."""


class Collector:
    """Accumulates candidates (by address key) and refusals while claims and VMIs are read."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.owner: dict[int, Candidate] = {}  # address key -> first claimant seen
        self.contested: dict[int, list[Candidate]] = {}  # address key -> every claimant, when several
        self.refusals: list[Refusal] = []

    def refuse(self, ref: ObjectRef, value: str, reason: str, message: str, network: str = "") -> None:
        """A refusal; `value` is already the bounded text (`describe`)."""
        self.refusals.append(Refusal(ref, value, reason, message, network))

    def validate(self) -> None:
        """Validate every address of every record; valid ones become candidates.

        One loop over every address of the cluster: the addresses were parsed once, by the decoder, so this is an
        integer check per address (`Network.check`) and a dictionary insert.
        """
        owner = self.owner
        contested = self.contested
        refusals = self.refusals
        for record in self.records:
            network = record.network
            name = network.name
            ref = record.ref
            if record.refused is not None:
                p = record.refused
                refusals.append(Refusal(ref, p.value, p.reason, p.message, name))
                continue
            check = network.check
            for text, address, key in record.addresses:
                if address is None:
                    refusals.append(Refusal(ref, text, checks.MALFORMED_ADDRESS, "not an IP address or CIDR", name))
                    continue
                reason = check(address.version, address.value)
                if reason is not None:
                    refusals.append(Refusal(ref, text, reason, checks.explain(reason, name), name))
                    continue
                candidate = Candidate(text, network, ref, record.vmi, record.age)
                holder = owner.setdefault(key, candidate)
                if holder is not candidate:
                    contested.setdefault(key, [holder]).append(candidate)

    def entry(self) -> ObjectEntry:
        """Validate what was read and return it as one entry: (refusals, candidates as (address key, candidate)),
        every candidate of an address listed, the first read first (conflicts are resolved by the caller)."""
        self.validate()
        candidates = list(self.owner.items())
        candidates.extend((k, c) for k, group in self.contested.items() for c in group[1:])
        return self.refusals, candidates
