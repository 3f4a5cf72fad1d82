"""Fail static bookkeeping: which LISTs are half delivered, when each resource's latest LIST began, and when held
withdrawals may be confirmed.

The controller's loop feeds it every LIST event (`list_event`) and hands it each plan's desired routes
(`withhold`); it answers whether a plan may be made now (`relisting`), what the speaker gets (the decision of
`bgpadv.safety.hold.WithdrawalHold`, held withdrawals added again), and, while withdrawals are held, what the loop
must do to confirm them (`confirmation`): ask every resource for a fresh LIST once the hold's deadline passed, then
replan in full once a LIST of every resource begun after the deadline completed. Pure: no I/O, the clock is
injected; the loop carries out what it answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from bgpadv.core.model import Route
from bgpadv.core.resources import Resource
from bgpadv.safety.hold import HoldDecision, WithdrawalHold

log = logging.getLogger("bgpadv.hold")

Confirmation = Literal["replan", "relist"]


class FailStatic:
    """LIST tracking and the withdrawal hold of one controller, for the `watched` resources, on `clock`."""

    def __init__(
        self, watched: Sequence[Resource], max_fraction: float, hold_seconds: float, clock: Callable[[], float]
    ) -> None:
        self.watched = tuple(watched)
        self.clock = clock
        self.hold = WithdrawalHold(max_fraction, hold_seconds, clock)
        self._bulk = False  # the unplanned changes include events of a (re)LIST
        self._relisting: set[Resource] = set()  # a LIST's events arrived, its SYNCED not yet
        self._listed: dict[Resource, float] = {}  # when each resource's latest completed LIST began
        self._relist_asked_at: float | None = None

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

    def reconfigure(self, max_fraction: float, hold_seconds: float) -> None:
        """New `safety` limits (a live configuration change): a new hold when they differ, the LIST bookkeeping
        stays."""
        if (self.hold.max_fraction, self.hold.hold_seconds) != (max_fraction, hold_seconds):
            self.hold = WithdrawalHold(max_fraction, hold_seconds, self.clock)

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

    def listed_since(self) -> float | None:
        """When the oldest of the latest LISTs of every watched resource began; None if one never completed."""
        times = [self._listed.get(r) for r in self.watched]
        return None if None in times else min(t for t in times if t is not None)

    def withhold(self, desired: Mapping[str, Sequence[Route]], *, full: bool) -> HoldDecision:
        """The hold's decision on a plan's desired routes per peer: bulk when the plan is `full` (start-up, resync,
        confirmation) or includes LIST events since the previous plan."""
        bulk, origin = full or self._bulk, "relist" if self._bulk else "full replan"
        self._bulk = False
        return self.hold.apply(desired, bulk=bulk, listed_since=self.listed_since(), origin=origin)

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
