"""Candidates: the validated VM addresses that wait for conflict resolution and placement (rules 3-4 of `vms`).

`claims` and `guest_reports` read objects into a `Collector` as `Record`s (one object's addresses on one network);
`Collector.validate` checks each address against its network (`Network.check`) and keeps the valid ones as
`Candidate`s under their address key (`views.address_key`), noting every address held by several.

Each record carries the trust rank of its source (`CLAIM` < `POD_NETWORKS` < `GUEST_REPORT`, the smallest the most
trusted; `SOURCES` names them): who can write the address decides who keeps it in a conflict (`conflicts`), before
any age.
"""

from __future__ import annotations

from typing import NamedTuple

from bgpadv.core.model import ObjectRef, Refusal
from bgpadv.core.views import Problem, VmAddress, address_key
from bgpadv.planner import checks
from bgpadv.planner.advertised import Network

__all__ = [
    "CLAIM",
    "GUEST_REPORT",
    "POD_NETWORKS",
    "SOURCES",
    "Candidate",
    "Collector",
    "ObjectEntry",
    "Record",
    "address_key",
]

_V6 = 1 << 128

CLAIM = 1
"""An IPAMClaim's `status.ips`: written by OVN-K's allocator through the status subresource, which tenants cannot
write. The most trusted source."""
POD_NETWORKS = 2
"""The `k8s.ovn.org/pod-networks` annotation of a VM's launcher pod: written by OVN-K, but a tenant who may patch
its pods may edit it."""
GUEST_REPORT = 3
"""An address the guest reports (guest agent, VMI `status.interfaces`): whatever the guest says. The least trusted."""
SOURCES = {
    CLAIM: "an IPAMClaim's status",
    POD_NETWORKS: "a launcher pod's k8s.ovn.org/pod-networks annotation",
    GUEST_REPORT: "a guest report",
}
"""Each trust rank as a refusal names it."""


class Record(NamedTuple):
    """One object's addresses to validate on one network: each address once (malformed ones kept, refused alone),
    or `refused`, the problem that refuses the object's addresses whole."""

    addresses: tuple[VmAddress, ...]
    network: Network
    ref: ObjectRef
    vmi: tuple[str, str]  # (namespace, VMI name): where the addresses run
    age: tuple[str, str, str]  # of the source object: the smallest wins a conflict within a trust rank
    rank: int  # the source's trust rank (`CLAIM`, `POD_NETWORKS`, `GUEST_REPORT`): the smallest wins a conflict
    refused: Problem | None = None


class Candidate(NamedTuple):
    """One validated address waiting for conflict resolution and placement, stored under its address key (`key`,
    which it also carries: an entry lists its candidates without a (key, candidate) pair each)."""

    text: str  # as written (bounded), for refusals
    network: Network
    ref: ObjectRef
    vmi: tuple[str, str]
    age: tuple[str, str, str]
    key: int  # `views.address_key` of the address
    rank: int  # the record's trust rank


ObjectEntry = tuple[tuple[Refusal, ...], tuple[Candidate, ...]]
"""What one object contributes to the plan before conflicts: its refusals, and its validated addresses
(`Collector.take`). Tuples: the incremental planner keeps one entry per object (an empty tuple is shared)."""


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
                candidate = Candidate(text, network, ref, record.vmi, record.age, key, record.rank)
                holder = owner.setdefault(key, candidate)
                if holder is not candidate:
                    contested.setdefault(key, [holder]).append(candidate)

    def take(self) -> ObjectEntry:
        """Validate what was read and return it as one entry: (refusals, candidates), every candidate of an address
        listed, the first read first (conflicts are resolved by the caller); the collector is then empty again, for
        the next object."""
        self.validate()
        candidates = tuple(self.owner.values())
        if self.contested:
            candidates += tuple(c for group in self.contested.values() for c in group[1:])
        entry = tuple(self.refusals), candidates
        self.records.clear()
        self.refusals.clear()
        self.owner.clear()
        self.contested.clear()
        return entry
