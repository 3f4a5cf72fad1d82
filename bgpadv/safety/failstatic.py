"""Fail static bookkeeping: which LISTs are half delivered, when each resource's latest LIST began, and when held
withdrawals may be confirmed.

The controller's loop feeds it every LIST event (`list_event`) and hands it each plan's desired routes
(`withhold`); it answers whether a plan may be made now (`relisting`), what the speaker gets (the decision of
`bgpadv.safety.hold.WithdrawalHold`, held withdrawals added again), and, while withdrawals are held, what the loop
must do to confirm them (`confirmation`): ask every resource for a fresh LIST once the hold's deadline passed, then
replan in full once a LIST of every resource begun after the deadline completed. Pure: no I/O, the clock is
injected; the loop carries out what it answers.

Mass deletions by ordinary watch events: deleting a CRD makes the apiserver set a deletionTimestamp on every object
of the kind first (MODIFIED events; the objects stay while their finalizers do), then send DELETED events, and only
then answer 404 — so the reflector's 404 hold never sees it, and the planner, which drops a deleting object, would
withdraw every route at once. The loop therefore reports every ordinary event that deletes an object (`deletion`):
DELETED, or an object carrying a deletionTimestamp. When, within `MASS_DELETION_WINDOW` seconds, at least
`MASS_DELETION_MIN` objects of one resource and more than `safety.maxWithdrawFraction` of its objects (those in the
store plus those deleted in the window) started deleting, the resource is in a mass deletion until the window passes
without another deletion: every plan with its deletion events is a bulk plan for the hold (origin "mass deletion of
<plural>"), so that, if it would withdraw more than the fraction of a peer's routes, the withdrawals (those the first
events already made included) are held and carried out only when a full LIST of every resource begun
`safety.holdSeconds` later still does not have the routes: the same confirmation as for a relist. A deletion of one
VM stays an ordinary event; so does the deletion of many VMs of a large cluster one by one.

A per-node instance's VMI watches select by node label: a VMI that migrates leaves a watch as a DELETED without a
deletionTimestamp. That is no deletion: it never counts towards a mass deletion (a node drained is not a CRD
deleted), and a VMI that migrated away is withdrawn at once, as a VMI whose node changed. One that leaves the watch of
VMIs migrating to the node (`moved`) lets its withdrawals settle like a deletion's, so that a migration completing
here, which the node's own watch may deliver a moment later, is never withdrawn in between. A VMI really deleted
carries a deletionTimestamp first (KubeVirt's finalizers), so deletions through a scoped watch are still counted.

Every plan with deletion events lets its withdrawals settle first (`bgpadv.safety.hold`): they go out once deletion
events paused for `safety.deletionSettleSeconds` (default 1 s; at most `MASS_DELETION_WINDOW` after the first). A
mass deletion is recognised on its `MASS_DELETION_MIN`th object, so without that its first withdrawals would already
have reached the fabric, to be announced again when the rule trips (the flap the real apiserver showed); with it a
burst is seen whole before any of it is withdrawn. `settled(desired)` is what the loop calls once
`settle_deadline()` passed, with its last plan's routes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Literal

from bgpadv.core.model import Route
from bgpadv.core.resources import Resource
from bgpadv.safety.hold import MASS_DELETION, SETTLE_SECONDS, HoldDecision, HoldDelta, PrefixKey, WithdrawalHold

log = logging.getLogger(__name__)

Confirmation = Literal["replan", "relist"]

MASS_DELETION_WINDOW = 10.0
"""Seconds within which deletions of one resource's objects count together (`FailStatic.deletion`)."""
MASS_DELETION_MIN = 3
"""Fewer objects than this starting to be deleted within the window is never a mass deletion: one VM, or two,
deleted together always withdraw at once."""


class FailStatic:
    """LIST tracking and the withdrawal hold of one controller, for the `watched` resources, on `clock`."""

    def __init__(
        self,
        watched: Sequence[Resource],
        max_fraction: float,
        hold_seconds: float,
        clock: Callable[[], float],
        settle_seconds: float = SETTLE_SECONDS,
        *,
        on_mass_deletion: Callable[[Resource, bool], None] | None = None,
    ) -> None:
        self.watched = tuple(watched)
        self.clock = clock
        self.hold = WithdrawalHold(max_fraction, hold_seconds, clock, MASS_DELETION_WINDOW, settle_seconds)
        self._bulk = False  # the unplanned changes include events of a (re)LIST
        self._relisting: set[Resource] = set()  # a LIST's events arrived, its SYNCED not yet
        self._listed: dict[Resource, float] = {}  # when each resource's latest completed LIST began
        self._relist_asked_at: float | None = None
        self._deleting: dict[Resource, dict[object, tuple[float, bool]]] = {}  # key -> (first seen, gone from store)
        self._mass_until: dict[Resource, float] = {}  # a resource in a mass deletion, until (monotonic seconds)
        self._deletions = False  # the unplanned changes include deletion events
        self._mass_origin: str | None = None  # ... of a resource in a mass deletion
        self.on_mass_deletion = on_mass_deletion  # a resource's mass deletion started (True) / ended (False)

    # -- what the loop feeds it --------------------------------------------------------------------------------------
    def list_event(
        self, resource: Resource, *, synced: bool, from_list: bool, listed_at: float | None, received_at: float
    ) -> None:
        """Follow (re)LISTs: a plan that includes a LIST's events is bulk, none is made while a LIST is half
        delivered, and the start of each resource's latest completed LIST is kept (`listed_since`). `synced`: the
        event is the resource's SYNCED; `from_list`: it was found by diffing a LIST against the cache."""
        if synced:
            self._relisting.discard(resource)
            self._listed[resource] = listed_at if listed_at is not None else received_at
        elif from_list:
            self._relisting.add(resource)
            self._bulk = True

    def deletion(self, resource: Resource, key: object, *, removed: bool, objects: int, received_at: float) -> None:
        """An ordinary watch event deleting an object: DELETED (`removed`) or a deletionTimestamp on it. `objects`:
        how many objects of the resource the store holds after the event. Detects a mass deletion (see the
        module)."""
        now = received_at
        recent = self._deleting.setdefault(resource, {})
        for k in [k for k, (t, _) in recent.items() if now - t >= MASS_DELETION_WINDOW]:
            del recent[k]
        first = recent.get(key)
        recent[key] = (first[0] if first is not None else now, removed or (first is not None and first[1]))
        self._deletions = True
        until = self._mass_until.get(resource)
        if until is not None and now < until:
            self._mass_until[resource] = now + MASS_DELETION_WINDOW
            self._mass_origin = f"{MASS_DELETION} of {resource.plural}"
            return
        gone = sum(1 for _, was_removed in recent.values() if was_removed)
        total = objects + gone
        if len(recent) >= MASS_DELETION_MIN and len(recent) > self.hold.max_fraction * total:
            self._mass_until[resource] = now + MASS_DELETION_WINDOW
            self._mass_origin = f"{MASS_DELETION} of {resource.plural}"
            log.warning(
                "mass deletion of %s: %d of its %d objects started being deleted within %.0fs (a CRD deleted?); "
                "the routes they withdraw are held for a confirming LIST (fail static)",
                resource.plural,
                len(recent),
                total,
                MASS_DELETION_WINDOW,
            )
            if self.on_mass_deletion is not None:
                self.on_mass_deletion(resource, True)

    def moved(self) -> None:
        """A VMI left the watch of VMIs migrating to this node without being deleted (the migration is over): its
        withdrawals settle like a deletion's, so that when the node's own watch delivers it a moment later (the
        migration completed) it was never withdrawn; it never counts towards a mass deletion."""
        self._deletions = True

    def mass_deletions(self) -> tuple[Resource, ...]:
        """The resources in a mass deletion now (ending those whose window passed without a deletion)."""
        now = self.clock()
        for resource in [r for r, until in self._mass_until.items() if now >= until]:
            del self._mass_until[resource]
            log.info("mass deletion of %s: no deletion for %.0fs, over", resource.plural, MASS_DELETION_WINDOW)
            if self.on_mass_deletion is not None:
                self.on_mass_deletion(resource, False)
        return tuple(self._mass_until)

    def set_peers(self, peers: Collection[str]) -> None:
        """The configured peers changed: the hold forgets the removed ones (`WithdrawalHold.set_peers`)."""
        self.hold.set_peers(peers)

    def reconfigure(self, max_fraction: float, hold_seconds: float, settle_seconds: float = SETTLE_SECONDS) -> None:
        """New `safety` limits (a live configuration change): a new hold when the fraction or the hold time differ,
        the LIST bookkeeping stays; a new settle time applies to the hold as it is (from the next deletion on)."""
        if (self.hold.max_fraction, self.hold.hold_seconds) != (max_fraction, hold_seconds):
            self.hold = WithdrawalHold(max_fraction, hold_seconds, self.clock, MASS_DELETION_WINDOW, settle_seconds)
        self.hold.settle_after(settle_seconds)

    # -- what it answers -------------------------------------------------------------------------------------------
    @property
    def relisting(self) -> bool:
        """Some resource's LIST is half delivered: no plan may be made from this view."""
        return bool(self._relisting)

    @property
    def holding(self) -> bool:
        """Some withdrawal is held for some peer."""
        return self.hold.active

    def held_counts(self) -> dict[str, int]:
        """Routes held per peer (peers seen so far, zeros included)."""
        return self.hold.held_counts()

    def settle_deadline(self) -> float | None:
        """When the withdrawals of deletion events go out, if no other deletion comes first (None: none waits)."""
        return self.hold.settle_deadline()

    def settle_due(self) -> bool:
        """Withdrawals of deletion events may go out now (`settled`)."""
        return self.hold.settle_due()

    def settled(self, desired: Mapping[str, Sequence[Route]]) -> HoldDecision:
        """The hold's decision on the last plan's routes once the deletions paused: the settled withdrawals go out.
        Leaves the unplanned changes' marks (LIST events, deletions) to the next plan."""
        return self.hold.apply(desired, bulk=False, listed_since=self.listed_since(), deletions=False)

    def listed_since(self) -> float | None:
        """When the oldest of the latest LISTs of every watched resource began; None if one never completed."""
        times = [self._listed.get(r) for r in self.watched]
        return None if None in times else min(t for t in times if t is not None)

    def withhold(self, desired: Mapping[str, Sequence[Route]], *, full: bool) -> HoldDecision:
        """The hold's decision on a plan's desired routes per peer: bulk when the plan is `full` (start-up, resync,
        confirmation) or includes LIST events since the previous plan; its withdrawals settle when it includes
        deletion events."""
        mass, deletions = self._mass_origin, self._deletions
        self._mass_origin, self._deletions = None, False
        self.mass_deletions()
        bulk = full or self._bulk or mass is not None
        origin = "relist" if self._bulk else mass if mass is not None else "full replan"
        self._bulk = False
        return self.hold.apply(desired, bulk=bulk, listed_since=self.listed_since(), origin=origin, deletions=deletions)

    @property
    def wants_whole(self) -> bool:
        """The unplanned changes make a bulk plan (LIST events, a mass deletion): `withhold` the whole plan, there
        is no delta form of the fraction rule."""
        return self._bulk or self._mass_origin is not None

    def withhold_delta(self, changes: Mapping[str, Mapping[PrefixKey, Route | None]]) -> HoldDelta:
        """`withhold` of an ordinary plan (not `wants_whole`, not full) given as each peer's change of guarded
        routes: the hold's decision as per-peer changes (`WithdrawalHold.apply_delta`)."""
        if self.wants_whole:
            raise ValueError("a bulk plan has no delta form: withhold() the whole plan")
        deletions = self._deletions
        self._deletions = False
        self.mass_deletions()
        return self.hold.apply_delta(changes, deletions=deletions)

    def settled_delta(self) -> HoldDelta:
        """`settled` as a delta: the settled withdrawals, per peer (nothing else changes)."""
        return self.hold.apply_delta({}, deletions=False)

    def confirmation(self) -> Confirmation | None:
        """While withdrawals are held: "replan" (in full) when a LIST of every resource begun after the deadline
        has completed (the plan withdraws what it still withdraws); "relist" once the deadline passed, to ask every
        resource for that LIST (again after `hold_seconds` without one); else None. Ask only while the view is
        complete and the speaker ready."""
        hold = self.hold
        if not hold.active:
            return None
        if hold.confirmable(self.listed_since()):
            return "replan"
        deadline, now, asked = hold.deadline(), self.clock(), self._relist_asked_at
        if hold.relist_due() and (
            asked is None or (deadline is not None and asked < deadline) or now - asked >= hold.hold_seconds
        ):
            log.warning("held withdrawals are past their deadline: asking every resource for a confirming LIST")
            self._relist_asked_at = now
            return "relist"
        return None
