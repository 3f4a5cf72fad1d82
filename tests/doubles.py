"""Test doubles for the controller's seams (bgpadv.runtime.seams, bgpadv.observe.observers).

Each implements its whole Protocol, so the controller accepts it; `tests/unit/runtime/test_seams.py` checks that
they and the real classes do, and that a double lacking a method is refused.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence

from bgpadv.config import PeerConfig
from bgpadv.core.model import Cause, Outcome, Route
from bgpadv.observe.observers import NullObserver

PrefixKey = tuple[int, int, int]


class RecordingSpeaker:
    """Records every desired set, ExaBGP line and drain; `ready`, `closed`, `needs_retry` and `no_extended_next_hop`
    are set by the test."""

    def __init__(self) -> None:
        self.ready = True
        self.closed = False
        self.needs_retry = False
        self.no_extended_next_hop: frozenset[str] = frozenset()  # set by the test (the speaker's, from ExaBGP)
        self.started = False
        self.desired: list[dict[str, tuple[Route, ...]]] = []
        self.lines: list[str] = []
        self.drains = 0
        self.resyncs = 0
        self.deltas = 0  # hands by apply_delta
        self.tables: dict[str, dict[PrefixKey, Route]] = {}  # the desired set per peer, by prefix key
        self.peer_sets: list[list[str]] = []  # set_peers calls, peer names

    def held(self, peer: str) -> Collection[object]:
        return ()

    def start(self) -> None:
        self.started = True

    def set_desired(self, desired: Mapping[str, Iterable[Route]], cause: Cause | None = None) -> None:
        whole = {peer: tuple(routes) for peer, routes in desired.items()}
        self.tables = {peer: {r.prefix.key: r for r in routes} for peer, routes in whole.items()}
        self.desired.append(whole)

    def apply_delta(self, changes: Mapping[str, Mapping[PrefixKey, Route | None]], cause: Cause | None = None) -> None:
        """Recorded as the whole set the change leads to (`set_desired`), so tests read every hand alike."""
        tables = self.tables
        for peer, change in changes.items():
            table = tables.setdefault(peer, {})
            for key, route in change.items():
                if route is None:
                    table.pop(key, None)
                else:
                    table[key] = route
        self.deltas += 1
        self.set_desired({peer: tuple(table.values()) for peer, table in tables.items()}, cause)

    def set_peers(self, peers: Sequence[PeerConfig]) -> None:
        self.peer_sets.append([p.name for p in peers])

    def handle_line(self, line: str, at: float | None = None) -> None:
        self.lines.append(line)

    def resync(self) -> None:
        self.resyncs += 1

    def drain(self) -> None:
        self.drains += 1


class OnePeerSpeaker(RecordingSpeaker):
    """A `RecordingSpeaker` that keeps only the sorted prefixes desired for one `peer`, and each set's cause."""

    def __init__(self, peer: str) -> None:
        super().__init__()
        self.peer = peer
        self.causes: list = []

    def set_desired(self, desired, cause=None) -> None:
        super().set_desired(desired, cause)
        self.desired[-1] = sorted(str(r.prefix) for r in self.desired[-1][self.peer])
        self.causes.append(cause)


class ManualClock:
    """A monotonic clock the test moves by hand (`now`), starting at `start` or else at the real clock's reading.

    Read as the callable the controller and the event recorder take, or as `monotonic` and `wall` (1.7e9 s ahead),
    the pair the metrics observer takes.
    """

    def __init__(self, start: float | None = None) -> None:
        self.now = time.monotonic() if start is None else start

    def __call__(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.now + 1_700_000_000.0


class RecordingSources:
    """Sources that deliver nothing by themselves: the test puts events on the controller's queue. Counts relists."""

    def __init__(self) -> None:
        self.synced = True
        self.started = False
        self.relists = 0

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        pass

    def relist(self) -> None:
        self.relists += 1


class RecordingObserver(NullObserver):
    """Keeps the plans, held counts and handover starts it is told about; ignores the rest."""

    def __init__(self) -> None:
        self.plans: list[Outcome] = []
        self.held: list[dict[str, int]] = []
        self.handovers: list[tuple[str, float]] = []
        self.resources_held: list[tuple[str, bool]] = []
        self.heartbeats = 0

    def planned(self, outcome: Outcome, cause: Cause | None, seconds: float, full_resync: bool) -> None:
        self.plans.append(outcome)

    def routes_held(self, held: Mapping[str, int]) -> None:
        self.held.append(dict(held))

    def migration_handover_started(self, prefix: str, ready_wall: float) -> None:
        self.handovers.append((prefix, ready_wall))

    def resource_held(self, resource: str, held: bool) -> None:
        self.resources_held.append((resource, held))

    def heartbeat(self) -> None:
        self.heartbeats += 1
