"""Fail static's bookkeeping (`bgpadv.safety.failstatic.FailStatic`), pure, on a fake clock: LIST tracking and the
confirmation of held withdrawals. The hold's own decision is tested in tests/unit/test_hold.py, the controller
carrying it out in tests/unit/test_service_fail_static.py.

The rules under test:
- a LIST's events (`from_list`) mark their resource as relisting until its SYNCED: no plan is made meanwhile, and
  the next plan is bulk (only the next one);
- `listed_since` is the oldest start among the latest completed LIST of every watched resource, None until each
  completed one (a SYNCED without a LIST start counts from its arrival);
- while withdrawals are held: nothing to do before the deadline; once it passed, ask for a confirming LIST once (and
  again after `hold_seconds` without a confirmation); a LIST of every resource begun at or after the deadline asks
  for a full replan, one begun before it does not;
- new `safety` limits replace the hold; the same limits keep it and what it holds.
"""

from __future__ import annotations

import pytest

from bgpadv.core import resources
from bgpadv.safety.failstatic import FailStatic
from tests.unit.test_hold import Clock, H, hosts

WATCHED = (resources.CUDN, resources.IPAM_CLAIM, resources.VMI)
PEER = "10.0.0.1"


def failstatic(clock: Clock) -> FailStatic:
    return FailStatic(WATCHED, 0.5, H, clock)


def listed(fs: FailStatic, res: resources.Resource, at: float | None, received_at: float = 0.0) -> None:
    fs.list_event(res, synced=True, from_list=False, listed_at=at, received_at=received_at)


def from_list(fs: FailStatic, res: resources.Resource) -> None:
    fs.list_event(res, synced=False, from_list=True, listed_at=None, received_at=0.0)


def holding(clock: Clock) -> FailStatic:
    """Every resource listed at the clock's time, four routes handed, then a relist that withdraws them all: held."""
    fs = failstatic(clock)
    for res in WATCHED:
        listed(fs, res, clock.now)
    fs.withhold({PEER: hosts(10, 11, 12, 13)}, full=True)
    from_list(fs, resources.IPAM_CLAIM)
    listed(fs, resources.IPAM_CLAIM, clock.now)
    decision = fs.withhold({PEER: ()}, full=False)
    assert decision.held == fs.held_counts() == {PEER: 4}
    return fs


def test_a_list_half_delivered_blocks_planning_until_its_synced():
    fs = failstatic(Clock())
    assert not fs.relisting
    from_list(fs, resources.VMI)
    assert fs.relisting
    listed(fs, resources.CUDN, 1.0)
    assert fs.relisting, "another resource's SYNCED does not complete this LIST"
    listed(fs, resources.VMI, 1.0)
    assert not fs.relisting


def test_list_events_make_the_next_plan_bulk_and_only_the_next():
    fs = failstatic(Clock())
    fs.withhold({PEER: hosts(10, 11, 12, 13)}, full=True)
    fs.withhold({PEER: hosts(10, 11, 12, 13)}, full=False)
    from_list(fs, resources.IPAM_CLAIM)
    assert fs.withhold({PEER: ()}, full=False).held == {PEER: 4}  # bulk: held
    fs.withhold({PEER: hosts(10, 11, 12, 13)}, full=False)  # desired again: no longer held
    assert fs.withhold({PEER: ()}, full=False).held == {PEER: 0}  # ordinary: applied whatever it withdraws


@pytest.mark.parametrize(
    ("lists", "since"),
    [
        pytest.param({}, None, id="nothing-listed"),
        pytest.param({resources.CUDN: 5.0, resources.IPAM_CLAIM: 3.0}, None, id="one-resource-never-listed"),
        pytest.param({resources.CUDN: 5.0, resources.IPAM_CLAIM: 3.0, resources.VMI: 7.0}, 3.0, id="oldest-start"),
        pytest.param(
            {resources.CUDN: 5.0, resources.IPAM_CLAIM: 8.0, resources.VMI: None}, 4.0, id="no-start-counts-arrival"
        ),
    ],
)
def test_listed_since_is_the_oldest_start_of_the_latest_list_of_every_resource(lists, since):
    fs = failstatic(Clock())
    for res, at in lists.items():
        listed(fs, res, at, received_at=4.0)
    assert fs.listed_since() == since


def test_nothing_is_asked_while_nothing_is_held_or_before_the_deadline():
    clock = Clock()
    assert failstatic(clock).confirmation() is None
    fs = holding(clock)
    clock.now += H - 1
    assert fs.confirmation() is None


def test_past_the_deadline_a_confirming_list_is_asked_once_then_again_after_hold_seconds():
    clock = Clock()
    fs = holding(clock)
    clock.now += H
    assert fs.confirmation() == "relist"
    assert fs.confirmation() is None
    clock.now += H - 1
    assert fs.confirmation() is None
    clock.now += 1
    assert fs.confirmation() == "relist"


@pytest.mark.parametrize(
    ("begun_after_hold", "wanted"),
    [
        pytest.param(H, "replan", id="begun-at-the-deadline"),
        pytest.param(H - 1, "relist", id="begun-before-the-deadline"),
    ],
)
def test_a_list_of_every_resource_begun_after_the_deadline_asks_for_a_full_replan(begun_after_hold, wanted):
    clock = Clock()
    held_at = clock.now
    fs = holding(clock)
    clock.now += H + 5
    for res in WATCHED:
        listed(fs, res, held_at + begun_after_hold)
    assert fs.confirmation() == wanted


@pytest.mark.parametrize(
    ("fraction", "hold_seconds", "kept"),
    [
        pytest.param(0.5, H, {PEER: 4}, id="same-limits-keep-the-hold"),
        pytest.param(0.25, H, {}, id="new-fraction-new-hold"),
        pytest.param(0.5, 2 * H, {}, id="new-hold-seconds-new-hold"),
    ],
)
def test_new_limits_replace_the_hold(fraction, hold_seconds, kept):
    fs = holding(Clock())
    fs.reconfigure(fraction, hold_seconds)
    assert (fs.hold.max_fraction, fs.hold.hold_seconds) == (fraction, hold_seconds)
    assert fs.held_counts() == kept
