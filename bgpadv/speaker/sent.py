"""The last send of each prefix to each peer, for `bgpadv explain --status-url` ("sent to tor-a at ...Z (announce)").

Recorded when ExaBGP acknowledges the command (`Speaker._on_ack`, `done`), not when it is written: an acknowledged
command is in ExaBGP's adj-rib-out, on its way to the peer. A command answered `error` records nothing (the speaker
then treats its prefixes as unknown and retries; the next acknowledged send is recorded).

Cheap by construction, so it can stay on at 100,000 routes:
- one `Sent` per acknowledged command, shared by every prefix of it: recording is a `dict.update` over the command's
  keys (C speed, O(1) per prefix) for an announcement, one pop and insert per prefix for a withdrawal;
- per peer, `announced` maps each prefix key (`Prefix.key`, the same tuple object the speaker's tables hold) to its
  last announcement, so it is no larger than the adj-rib-out; withdrawals move a prefix to `withdrawn`, which keeps
  at least the most recent `keep_withdrawn` per peer (at most half as many again) and drops the oldest (insertion
  order = send order);
- times are converted from the monotonic clock of the acknowledgement to wall-clock seconds once per command.

Read from the metrics listener's thread (`lookup`): plain dict reads, no lock (the speaker's thread is the only
writer; a read sees the table before or after one update).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from bgpadv.core.model import Cause
from bgpadv.core.prefix import Prefix

ANNOUNCE = "announce"
WITHDRAW = "withdraw"
KEEP_WITHDRAWN = 10_000  # per peer: the most recent withdrawals remembered

_Key = tuple[int, int, int]  # `Prefix.key`


@dataclass(frozen=True, slots=True)
class Sent:
    """One acknowledged command's send: what, when ExaBGP acknowledged it, and when its cause was seen/planned
    (wall-clock seconds; None when the plan had no cause, e.g. a resync)."""

    action: str  # ANNOUNCE or WITHDRAW
    at: float
    received_at: float | None = None
    planned_at: float | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"action": self.action, "at": utc(self.at)}
        if self.received_at is not None:
            out["causeReceivedAt"] = utc(self.received_at)
        if self.planned_at is not None:
            out["causePlannedAt"] = utc(self.planned_at)
        return out


def utc(seconds: float) -> str:
    """Wall-clock seconds as RFC 3339 UTC with milliseconds: 2026-12-02T11:24:08.123Z."""
    whole = int(seconds)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((seconds - whole) * 1000):03d}Z"


class SendLog:
    """Per peer, each prefix's last acknowledged announcement or (recent) withdrawal."""

    def __init__(
        self,
        peers: Iterable[str],
        *,
        keep_withdrawn: int = KEEP_WITHDRAWN,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._announced: dict[str, dict[_Key, Sent]] = {p: {} for p in peers}
        self._withdrawn: dict[str, dict[_Key, Sent]] = {p: {} for p in self._announced}
        self._keep = keep_withdrawn
        self._wall = wall
        self._monotonic = monotonic

    def set_peers(self, peers: Iterable[str]) -> None:
        """The peer set changed live: a new peer starts with no record, a removed peer's record is dropped."""
        wanted = set(peers)
        for gone in [p for p in self._announced if p not in wanted]:
            del self._announced[gone], self._withdrawn[gone]
        for p in wanted - self._announced.keys():
            self._announced[p], self._withdrawn[p] = {}, {}

    def acked(self, peer: str, action: str, keys: Sequence[_Key], cause: Cause | None, at: float) -> None:
        """ExaBGP acknowledged `action` of `keys` for `peer` at monotonic time `at`."""
        announced = self._announced.get(peer)
        if announced is None:
            return
        offset = self._wall() - self._monotonic()  # monotonic -> wall clock, once per command
        sent = Sent(
            action,
            at + offset,
            None if cause is None else cause.received_at + offset,
            None if cause is None else cause.planned_at + offset,
        )
        withdrawn = self._withdrawn[peer]
        if action == ANNOUNCE:
            announced.update(dict.fromkeys(keys, sent))  # a stale entry in `withdrawn` is older: `last` compares
            return
        for key in keys:
            announced.pop(key, None)
            withdrawn.pop(key, None)  # re-inserted at the end: the dict stays in send order
            withdrawn[key] = sent
        if len(withdrawn) > self._keep + self._keep // 2:
            # drop the oldest in one rebuild (deleting a dict's first keys one by one leaves a scan of dead slots
            # behind): O(keep) every keep/2 withdrawals, O(1) per prefix
            newest = itertools.islice(withdrawn.items(), len(withdrawn) - self._keep, None)
            self._withdrawn[peer] = dict(newest)

    def last(self, key: _Key) -> dict[str, Sent]:
        """Peer -> the last recorded send of the prefix `key` (peers with none left out)."""
        out: dict[str, Sent] = {}
        for peer, announced in self._announced.items():
            a = announced.get(key)
            w = self._withdrawn[peer].get(key)
            latest = a if w is None else w if a is None or w.at > a.at else a
            if latest is not None:
                out[peer] = latest
        return out

    def lookup(self, keys: Iterable[_Key]) -> Mapping[_Key, dict[str, Sent]]:
        return {key: self.last(key) for key in keys}

    def report(self, prefixes: Iterable[Prefix]) -> dict[str, dict[str, dict[str, object]]]:
        """The JSON `/sent?prefix=...` serves: prefix -> peer -> its last send (a prefix never sent: empty)."""
        return {str(p): {peer: s.as_json() for peer, s in sorted(self.last(p.key).items())} for p in prefixes}

    def sizes(self) -> dict[str, int]:
        """Entries kept per peer (announced + withdrawn)."""
        return {p: len(a) + len(self._withdrawn[p]) for p, a in self._announced.items()}
