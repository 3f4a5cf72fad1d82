"""Fail static for mass withdrawals: a relist or full replan that would withdraw most of a peer's routes waits.

An empty relist (a LIST that comes back with nothing after a 410, a misbehaving apiserver, a cache bug) looks exactly
like "every VM was deleted". Carried out, it withdraws every route; held, it costs stale routes for VMs that really
went away while the watch was blind, for `hold_seconds` plus one LIST of every resource. `WithdrawalHold` sits
between the planner and the speaker and decides, per peer, which withdrawals go out now and which are held.

The rules (`safety.maxWithdrawFraction`, default 0.5; `safety.holdSeconds`, default 120 s):

- Withdrawals caused by deletions *settle* first: a plan that includes deletion events (DELETED, or a
  deletionTimestamp set) keeps what it withdraws in the desired set (`settling`) until deletion events pause for
  `settle_seconds` (`safety.deletionSettleSeconds`, default 1 s), and at most `recent_seconds` (10 s, the mass-deletion
  window of `bgpadv.safety.failstatic`) after the first of them; then they go out together. So a burst of deletions
  (a CRD deleted: the apiserver marks every object deleting, one watch event each) is seen whole before anything of
  it is withdrawn, and a mass deletion detected on its third event finds the first two withdrawals still here: they
  are held with the rest, never withdrawn and announced again (a flap). The cost: one VM stopped reaches the ToR
  `settle_seconds` later (0 withdraws at once). Announcements and next-hop changes never settle: a route desired
  again (a VM restarted, its address taken by a new VM) replaces the settling one at once.
- Only *bulk* plans are checked against the fraction: a full replan (start-up, periodic resync, a confirmation), a
  plan that includes events of a (re)LIST, or a plan that includes deletion events of a *mass deletion*
  (`bgpadv.safety.failstatic`: a large share of one resource's objects starting to be deleted within a few seconds,
  as when its CRD is deleted). Any other plan is applied as it is once settled, whatever it withdraws: an individual
  deletion waits for the settle window only.
- What settled withdrawals took out in the last `recent_seconds` still counts towards a mass deletion's fraction
  (a burst slower than the settle window); it is never announced again.
- A bulk plan that would withdraw more than `max_fraction` of the routes last handed to the speaker for a peer
  (held ones included) withdraws nothing for that peer: every route it would withdraw stays in the desired set,
  unchanged, and is counted as held (the settling ones join it). Announcements and next-hop changes in the same
  plan go out at once. Under the fraction, a bulk plan with deletion events lets its withdrawals settle; one without
  (a relist, a resync) carries them out at once, the routes still settling keep settling.
- A held route is released (withdrawn) only by a bulk plan that still withdraws it and that is built from a full LIST
  of every resource begun at least `hold_seconds` after the route was held (`listed_since`: the oldest start among
  the latest LIST of each resource). The controller asks the reflectors for that LIST once the deadline passed.
  What the confirming plan would withdraw beyond the confirmed routes is checked again as a fresh bulk plan.
- A held route leaves the held set only in two ways: a plan (of any kind) desires its prefix again, and the plan's
  route wins; or a confirming plan as above withdraws it. A later bulk plan under the threshold withdraws what it
  withdraws *besides* the held routes; those keep waiting for their own confirmation. While routes are held, the
  threshold counts them: more withdrawals in a later bulk plan join the hold when the total exceeds it.
- The first plan of a controller process is never held: it has nothing handed before to compare with. (A
  restarted controller learns ExaBGP's routes without their attributes, so it could not keep them unchanged; a
  controller restarted *during* a hold therefore carries out what a fresh LIST says.)

The controller carries settled withdrawals out on time: `settle_deadline()` says when, `apply` of its last plan
(nothing new, `bulk=False`, `deletions=False`) then withdraws them. The hold is in-memory and single-threaded (the
controller's loop); `clock` is injectable for tests. A controller restarted while withdrawals settle or are held
carries out what its first plan says (see above).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from bgpadv.core.model import Route

log = logging.getLogger(__name__)


PrefixKey = tuple[int, int, int]  # `Prefix.key`: (IP version, network value, prefix length)
MASS_DELETION = "mass deletion"  # the origin of a bulk plan made of the deletion events of a mass deletion
SETTLE_SECONDS = 1.0
"""The default of `safety.deletionSettleSeconds`: how long deletion events must pause before the withdrawals they
caused go out. The CRD deletions measured on a real apiserver deliver every claim's event within a few
milliseconds; one second is far above that and costs a stopped VM one second of a route to a VM that is gone."""


@dataclass(slots=True)
class _PeerHold:
    # what the speaker was last told to hold for this peer (held, settling included), by prefix key
    handed: dict[PrefixKey, Route] = field(default_factory=dict)
    held: dict[PrefixKey, tuple[Route, float]] = field(default_factory=dict)  # key -> (route, held since)
    settling: dict[PrefixKey, Route] = field(default_factory=dict)  # withdrawals by deletion events, not yet out
    # settled withdrawals carried out within `recent_seconds`: key -> withdrawn at (counted, never announced again)
    recent: dict[PrefixKey, float] = field(default_factory=dict)

    def oldest(self) -> float | None:
        return min((since for _, since in self.held.values()), default=None)


@dataclass(frozen=True, slots=True)
class PeerOutcome:
    """What one decision did for one peer (counts of routes)."""

    held: int = 0  # held after this decision
    newly_held: int = 0  # withdrawals this decision held that were not held before
    confirmed: int = 0  # held routes withdrawn now, confirmed by a LIST at least hold_seconds later
    released: int = 0  # held routes no longer held without a confirmation (desired again, or under the threshold)
    planned_withdrawals: int = 0  # what this bulk plan would have withdrawn (0 for ordinary plans)
    base: int = 0  # routes handed before this decision
    settling: int = 0  # withdrawals by deletion events kept until the deletions pause, after this decision
    settled: int = 0  # settling withdrawals carried out by this decision


class _PeerCounts:
    """The per-peer counts of a hold's outcome (`peers`), shared by `HoldDecision` and `HoldDelta`."""

    __slots__ = ()
    peers: dict[str, PeerOutcome]

    @property
    def held(self) -> dict[str, int]:
        return {peer: o.held for peer, o in self.peers.items()}

    @property
    def settling(self) -> dict[str, int]:
        return {peer: o.settling for peer, o in self.peers.items()}


@dataclass(frozen=True, slots=True)
class HoldDecision(_PeerCounts):
    desired: dict[str, tuple[Route, ...]]
    """What to hand the speaker: the plan's routes plus every held and settling route, per peer."""
    peers: dict[str, PeerOutcome]


@dataclass(frozen=True, slots=True)
class HoldDelta(_PeerCounts):
    """`HoldDecision` of a delta (`WithdrawalHold.apply_delta`): per peer, prefix key -> the route the speaker holds
    now (None: none), for every key that may have changed."""

    changes: dict[str, Mapping[PrefixKey, Route | None]]
    peers: dict[str, PeerOutcome]


class WithdrawalHold:
    """Decides, per peer and per plan, which withdrawals are carried out, which settle and which are held (see the
    module)."""

    def __init__(
        self,
        max_fraction: float,
        hold_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        recent_seconds: float = 10.0,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        if not 0.0 <= max_fraction <= 1.0:
            raise ValueError("max_fraction must lie in [0, 1]")
        if hold_seconds < 0:
            raise ValueError("hold_seconds must not be negative")
        if not 0.0 <= settle_seconds <= recent_seconds:
            raise ValueError("settle_seconds must lie in [0, recent_seconds]")
        self.max_fraction = max_fraction
        self.hold_seconds = hold_seconds
        self.clock = clock
        # how long withdrawals by deletion events count towards a mass deletion; the longest a withdrawal settles
        self.recent_seconds = recent_seconds
        self.settle_seconds = settle_seconds  # deletion events must pause this long before their withdrawals go out
        self._peers: dict[str, _PeerHold] = {}
        self._oldest: float | None = None  # when the longest-held route was held (cached: the loop asks every turn)
        self._settle_first: float | None = None  # the first deletion plan since nothing settled
        self._settle_last: float | None = None  # the latest deletion plan while withdrawals settle

    def settle_after(self, settle_seconds: float) -> None:
        """A new settle time (a live configuration change), from the next deletion on; within [0, recent_seconds]
        as at construction."""
        if not 0.0 <= settle_seconds <= self.recent_seconds:
            raise ValueError("settle_seconds must lie in [0, recent_seconds]")
        self.settle_seconds = settle_seconds

    # -- queries --------------------------------------------------------------------------------------------------
    def held_counts(self) -> dict[str, int]:
        """Routes held per peer (peers seen so far, zeros included)."""
        return {peer: len(st.held) for peer, st in self._peers.items()}

    @property
    def active(self) -> bool:
        """Some route is held for some peer."""
        return self._oldest is not None

    def deadline(self) -> float | None:
        """The earliest time a LIST must begin at (or after) to confirm a held route; None when nothing is held."""
        return None if self._oldest is None else self._oldest + self.hold_seconds

    def relist_due(self) -> bool:
        """A held route's deadline has passed: time to ask for a confirming LIST of every resource."""
        deadline = self.deadline()
        return deadline is not None and self.clock() >= deadline

    def confirmable(self, listed_since: float | None) -> bool:
        """A LIST of every resource begun at `listed_since` is late enough to confirm some held route: the next
        bulk plan will withdraw it (if it still does)."""
        deadline = self.deadline()
        return deadline is not None and listed_since is not None and listed_since >= deadline

    @property
    def settling(self) -> bool:
        """Some withdrawal by deletion events waits for the deletions to pause."""
        return self._settle_first is not None

    def settle_deadline(self) -> float | None:
        """When the settling withdrawals go out (if no deletion event comes first); None when nothing settles."""
        first, last = self._settle_first, self._settle_last
        if first is None or last is None:
            return None
        return min(last + self.settle_seconds, first + self.recent_seconds)

    def settle_due(self) -> bool:
        """The settling withdrawals may go out now: apply the last plan again."""
        deadline = self.settle_deadline()
        return deadline is not None and self.clock() >= deadline

    def set_peers(self, peers: Collection[str]) -> list[str]:
        """The configured peers changed (a live peer move): a removed peer's held, settling and handed routes are
        dropped, not held (its routes were withdrawn before ExaBGP dropped it; nothing would ever confirm them, and
        every plan would hand them to a speaker without that peer). Returns the peers dropped."""
        gone = sorted(p for p in self._peers if p not in peers)
        for p in gone:
            st = self._peers.pop(p)
            if st.held or st.settling:
                log.info("peer removed: its held and settling withdrawals are dropped", extra={"peer": p})
        if gone:
            self._after_plan()
        return gone

    # -- the decision ---------------------------------------------------------------------------------------------
    def apply(
        self,
        desired: Mapping[str, Sequence[Route]],
        *,
        bulk: bool,
        listed_since: float | None = None,
        origin: str = "relist",
        deletions: bool = False,
    ) -> HoldDecision:
        """Take the planner's desired routes per peer; return what the speaker gets, held and settling routes
        included.

        `bulk`: the plan is a full replan, includes (re)LIST events, or is part of a mass deletion. `listed_since`:
        the oldest start time among the latest completed LIST of each watched resource (None: not every resource
        listed). `origin` names the bulk plan's cause in log lines ("relist", "full replan", "mass deletion of
        ipamclaims"). `deletions`: the plan includes deletion events (DELETED, or a deletionTimestamp set): what it
        withdraws settles (see the module), and the deletions' pause starts again."""
        now = self.clock()
        if deletions:
            if self._settle_first is None:
                self._settle_first = now
            self._settle_last = now
        due = self.settle_due()
        mass = bulk and origin.startswith(MASS_DELETION)
        out: dict[str, tuple[Route, ...]] = {}
        outcomes: dict[str, PeerOutcome] = {}
        # Peers usually get the very same tuple (and were handed the same one): compute its keys once per call.
        memo: dict[int, tuple[tuple[Route, ...], list[PrefixKey], set[PrefixKey] | None]] = {}

        def keys(routes: tuple[Route, ...]) -> list[PrefixKey]:
            hit = memo.get(id(routes))
            if hit is None or hit[0] is not routes:
                hit = memo[id(routes)] = (routes, [r.prefix.key for r in routes], None)
            return hit[1]

        def key_set(routes: tuple[Route, ...]) -> set[PrefixKey]:
            listed = keys(routes)
            _, _, known = memo[id(routes)]
            if known is None:
                known = set(listed)
                memo[id(routes)] = (routes, listed, known)
            return known

        for peer in sorted(set(self._peers) | set(desired)):
            st = self._peers.setdefault(peer, _PeerHold())
            routes = tuple(desired.get(peer, ()))
            if st.recent:
                st.recent = {k: t for k, t in st.recent.items() if now - t < self.recent_seconds}
            if not bulk and not st.held and not st.settling and not deletions:  # the common case: nothing to add
                outcome = PeerOutcome(base=len(st.handed))
            elif not bulk:
                wanted = key_set(routes)
                gone = {k: r for k, r in st.handed.items() if k not in wanted}
                outcome = self._ordinary(st, wanted, gone, now, settle=deletions, due=due)
            else:
                wanted = key_set(routes)
                gone = {k: r for k, r in st.handed.items() if k not in wanted}
                earlier = sum(1 for k in st.recent if k not in wanted and k not in gone) if mass else 0
                outcome = self._bulk(peer, st, gone, now, listed_since, origin, earlier, settle=deletions, due=due)
            if st.held or st.settling:
                routes = routes + tuple(route for route, _ in st.held.values()) + tuple(st.settling.values())
                memo.pop(id(routes), None)
            st.handed = dict(zip(keys(routes), routes, strict=True))
            out[peer] = routes
            outcomes[peer] = outcome
        self._after_plan()
        return HoldDecision(out, outcomes)

    def apply_delta(
        self, changes: Mapping[str, Mapping[PrefixKey, Route | None]], *, deletions: bool = False
    ) -> HoldDelta:
        """`apply` of an ordinary plan (`bulk=False`) given as the change of each peer's guarded routes since the
        last plan (prefix key -> the route the peer gets now, None: none; keys absent: unchanged): the same decision,
        as per-peer changes of what the speaker holds, at the cost of the change (and of what is held or settling).
        A bulk plan (full, a relist, a mass deletion) has no delta form: `apply` it whole."""
        now = self.clock()
        if deletions:
            if self._settle_first is None:
                self._settle_first = now
            self._settle_last = now
        due = self.settle_due()
        out: dict[str, Mapping[PrefixKey, Route | None]] = {}
        outcomes: dict[str, PeerOutcome] = {}
        for peer in sorted(set(self._peers) | set(changes)):
            st = self._peers.setdefault(peer, _PeerHold())
            change = changes.get(peer, {})
            if st.recent:
                st.recent = {k: t for k, t in st.recent.items() if now - t < self.recent_seconds}
            handed = st.handed
            base = len(handed)
            if not st.held and not st.settling and not deletions:  # the common case: the plan's change as it is
                for k, r in change.items():
                    if r is None:
                        handed.pop(k, None)
                    else:
                        handed[k] = r
                out[peer] = change
                outcomes[peer] = PeerOutcome(base=base)
                continue
            out[peer], outcomes[peer] = self._ordinary_delta(st, change, now, deletions=deletions, due=due)
        self._after_plan()
        return HoldDelta(out, outcomes)

    def _ordinary_delta(
        self, st: _PeerHold, change: Mapping[PrefixKey, Route | None], now: float, *, deletions: bool, due: bool
    ) -> tuple[dict[PrefixKey, Route | None], PeerOutcome]:
        """`_ordinary` for one peer's change while something is held or settles (or the plan has deletions)."""
        handed = st.handed
        base = len(handed)
        held_before = len(st.held)
        for k, r in change.items():
            if r is not None:  # desired again: the plan's route wins
                st.held.pop(k, None)
                st.settling.pop(k, None)
        if deletions:  # what the plan withdraws now (not held) settles
            for k, r in change.items():
                if r is None and k not in st.held and (old := handed.get(k)) is not None:
                    st.settling[k] = old
        touched = list(change)
        settled = 0
        if due and st.settling:
            settled = len(st.settling)
            st.recent.update((k, now) for k in st.settling)
            touched.extend(st.settling)
            for k in st.settling:
                handed.pop(k, None)
            st.settling = {}
        for k, r in change.items():
            if r is not None:
                handed[k] = r
            elif k in st.held:
                handed[k] = st.held[k][0]
            elif k in st.settling:
                handed[k] = st.settling[k]
            else:
                handed.pop(k, None)
        return {k: handed.get(k) for k in touched}, PeerOutcome(
            held=len(st.held),
            released=held_before - len(st.held),
            base=base,
            settling=len(st.settling),
            settled=settled,
        )

    def _after_plan(self) -> None:
        """The oldest held withdrawal, and the end of a settling spell, once every peer is decided."""
        oldest = [t for st in self._peers.values() if (t := st.oldest()) is not None]
        self._oldest = min(oldest) if oldest else None
        if not any(st.settling for st in self._peers.values()):
            self._settle_first = self._settle_last = None

    def handed(self) -> dict[str, Collection[Route]]:
        """What the speaker was last told to hold, per peer (live views, no copies)."""
        return {peer: st.handed.values() for peer, st in self._peers.items()}

    def _settle(self, st: _PeerHold, gone: dict[PrefixKey, Route], now: float, *, settle: bool, due: bool) -> int:
        """The withdrawals `gone` (not held) of a plan: they settle when the plan has deletion events; the settling
        ones (all of them when `due`) go out, remembered in `recent`. How many settling withdrawals went out."""
        st.settling = {k: r for k, r in st.settling.items() if k in gone}  # desired again: the plan's route wins
        if settle:
            st.settling.update((k, r) for k, r in gone.items() if k not in st.held)
        if not due or not st.settling:
            return 0
        settled = len(st.settling)
        st.recent.update((k, now) for k in st.settling)
        st.settling = {}
        return settled

    def _ordinary(
        self,
        st: _PeerHold,
        wanted: set[PrefixKey],
        gone: dict[PrefixKey, Route],
        now: float,
        *,
        settle: bool,
        due: bool,
    ) -> PeerOutcome:
        """Ordinary watch events: their withdrawals settle (deletion events) or go out; a held route the plan desires
        again is no longer held."""
        before = len(st.held)
        st.held = {k: v for k, v in st.held.items() if k not in wanted}
        settled = self._settle(st, gone, now, settle=settle, due=due)
        released = before - len(st.held)
        return PeerOutcome(
            held=len(st.held), released=released, base=len(st.handed), settling=len(st.settling), settled=settled
        )

    def _bulk(
        self,
        peer: str,
        st: _PeerHold,
        gone: dict[PrefixKey, Route],
        now: float,
        listed_since: float | None,
        origin: str,
        earlier: int,
        *,
        settle: bool,
        due: bool,
    ) -> PeerOutcome:
        """A relist, full replan or mass deletion whose plan no longer has `gone` (key -> route handed before; held
        and settling ones included; `earlier`: how many more the first events of a mass deletion already withdrew):
        confirm what a late enough LIST confirms, hold a mass withdrawal (the settling ones with it), let the rest
        settle or go out."""
        handed = len(st.handed) + earlier
        held = {k: v for k, v in st.held.items() if k in gone}  # a held route desired again is no longer held
        released = len(st.held) - len(held)
        confirmed = 0
        if held and listed_since is not None:
            sure = [k for k, (_, since) in held.items() if listed_since >= since + self.hold_seconds]
            for k in sure:
                del gone[k], held[k]
            confirmed = len(sure)
            if confirmed:
                log.warning(
                    "withdrawing %d held routes for peer %s: a full LIST of every resource begun at least %.0fs "
                    "after they were held still does not have them",
                    confirmed,
                    peer,
                    self.hold_seconds,
                )
        base = handed - confirmed
        newly = 0
        settled = 0
        withdrawing = len(gone) + earlier
        if gone and withdrawing > self.max_fraction * base:
            fresh = {k: (r, now) for k, r in gone.items() if k not in held}
            newly = len(fresh)
            held.update(fresh)
            st.settling = {}  # they are held now
            if newly:
                log.warning(
                    "holding %d withdrawals for peer %s (fail static): a %s would withdraw %d of its %d routes, more "
                    "than safety.maxWithdrawFraction %.2f; they stay announced until a full LIST of every resource "
                    "begun %.0fs from now still agrees",
                    newly,
                    peer,
                    origin,
                    withdrawing,
                    base,
                    self.max_fraction,
                    self.hold_seconds,
                )
        else:
            # the withdrawals not held before settle (deletion events) or go out now (the settling ones keep
            # settling); routes held before wait for their own confirmation
            st.held = held
            settled = self._settle(st, {k: r for k, r in gone.items() if k not in held}, now, settle=settle, due=due)
        if released:
            log.info("%d held routes for peer %s are desired again: no longer held", released, peer)
        st.held = held
        return PeerOutcome(
            len(held), newly, confirmed, released, withdrawing + confirmed, handed, len(st.settling), settled
        )
