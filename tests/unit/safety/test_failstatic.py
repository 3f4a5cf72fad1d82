"""Fail static's bookkeeping (`bgpadv.safety.failstatic.FailStatic`), pure, on a fake clock: LIST tracking and the
confirmation of held withdrawals. The hold's own decision is tested in tests/unit/safety/test_hold.py, the controller
carrying it out in tests/unit/runtime/test_controller_fail_static.py.

The rules under test:
- a LIST's events (`from_list`) mark their resource as relisting until its SYNCED: no plan is made meanwhile, and
  the next plan is bulk (only the next one);
- `listed_since` is the oldest start among the latest completed LIST of every watched resource, None until each
  completed one (a SYNCED without a LIST start counts from its arrival);
- while withdrawals are held: nothing to do before the deadline; once it passed, ask for a confirming LIST once (and
  again after `hold_seconds` without a confirmation); a LIST of every resource begun at or after the deadline asks
  for a full replan, one begun before it does not;
- new `safety` limits replace the hold; the same limits keep it and what it holds; a new settle time keeps it;
- a plan with deletion events settles its withdrawals (`settle_deadline`); `settled` carries them out once due and
  leaves the marks of unplanned changes (LIST events, deletions) to the next plan; the IPAMClaim CRD deleted, one
  claim deleting per plan, reaches the speaker as no withdrawal at all: the rule trips on the third claim and holds
  the first two with it.
"""

from __future__ import annotations

import pytest

from bgpadv.core import resources
from bgpadv.safety.failstatic import MASS_DELETION_MIN, FailStatic
from tests.doubles import ManualClock
from tests.unit.safety.withdrawals import H, hosts, octets

WATCHED = (resources.CUDN, resources.IPAM_CLAIM, resources.VMI)
PEER = "10.0.0.1"


def failstatic(clock: ManualClock) -> FailStatic:
    return FailStatic(WATCHED, 0.5, H, clock)


def listed(fs: FailStatic, res: resources.Resource, at: float | None, received_at: float = 0.0) -> None:
    fs.list_event(res, synced=True, from_list=False, listed_at=at, received_at=received_at)


def from_list(fs: FailStatic, res: resources.Resource) -> None:
    fs.list_event(res, synced=False, from_list=True, listed_at=None, received_at=0.0)


def holding(clock: ManualClock) -> FailStatic:
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


def test_a_list_half_delivered_blocks_planning_until_its_synced(clock):
    fs = failstatic(clock)
    assert not fs.relisting
    from_list(fs, resources.VMI)
    assert fs.relisting
    listed(fs, resources.CUDN, 1.0)
    assert fs.relisting, "another resource's SYNCED does not complete this LIST"
    listed(fs, resources.VMI, 1.0)
    assert not fs.relisting


def test_list_events_make_the_next_plan_bulk_and_only_the_next(clock):
    fs = failstatic(clock)
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
def test_listed_since_is_the_oldest_start_of_the_latest_list_of_every_resource(lists, since, clock):
    fs = failstatic(clock)
    for res, at in lists.items():
        listed(fs, res, at, received_at=4.0)
    assert fs.listed_since() == since


def test_nothing_is_asked_while_nothing_is_held_or_before_the_deadline(clock):
    assert failstatic(clock).confirmation() is None
    fs = holding(clock)
    clock.now += H - 1
    assert fs.confirmation() is None


def test_past_the_deadline_a_confirming_list_is_asked_once_then_again_after_hold_seconds(clock):
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
def test_a_list_of_every_resource_begun_after_the_deadline_asks_for_a_full_replan(begun_after_hold, wanted, clock):
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
def test_new_limits_replace_the_hold(fraction, hold_seconds, kept, clock):
    fs = holding(clock)
    fs.reconfigure(fraction, hold_seconds)
    assert (fs.hold.max_fraction, fs.hold.hold_seconds) == (fraction, hold_seconds)
    assert fs.held_counts() == kept


def test_a_new_settle_time_keeps_the_hold_and_what_it_holds(clock):
    fs = holding(clock)
    fs.reconfigure(0.5, H, 3.0)
    assert fs.hold.settle_seconds == 3.0
    assert fs.held_counts() == {PEER: 4}


@pytest.mark.parametrize("settle", [pytest.param(-0.5, id="negative"), pytest.param(10.5, id="above-the-window")])
def test_a_settle_time_outside_the_mass_deletion_window_is_refused_as_at_construction(settle, clock):
    fs = holding(clock)
    with pytest.raises(ValueError, match="settle_seconds must lie in"):
        fs.reconfigure(0.5, H, settle)
    assert fs.hold.settle_seconds != settle


def test_a_plan_with_deletion_events_settles_and_settled_carries_it_out_later(clock):
    fs = failstatic(clock)
    fs.withhold({PEER: hosts(10, 11, 12, 13)}, full=True)
    fs.deletion(resources.IPAM_CLAIM, ("ns", "vm-13"), removed=False, objects=4, received_at=clock.now)
    stopped = fs.withhold({PEER: hosts(10, 11, 12)}, full=False)
    assert octets(stopped.desired[PEER]) == [10, 11, 12, 13]
    assert fs.settle_deadline() == clock.now + 1.0 and not fs.settle_due()

    clock.now += 1.0
    from_list(fs, resources.VMI)  # a relist under way: its mark belongs to the next plan
    assert fs.settle_due()
    settled = fs.settled({PEER: hosts(10, 11, 12)})
    assert octets(settled.desired[PEER]) == [10, 11, 12]
    assert fs.settle_deadline() is None
    listed(fs, resources.VMI, clock.now)
    assert fs.withhold({PEER: ()}, full=False).held == {PEER: 3}, "the relist's plan is still bulk"


def test_the_ipamclaim_crd_deleted_one_claim_a_plan_withdraws_nothing_and_holds_every_claim(clock):
    fs = failstatic(clock)
    for res in WATCHED:
        listed(fs, res, clock.now)
    claims = list(range(10, 13))
    subnet_and_claims = hosts(1, *claims)  # "1" stands for the network's subnet route
    fs.withhold({PEER: subnet_and_claims}, full=True)
    handed = []
    for n, gone in enumerate(claims, start=1):
        clock.now += 0.02
        fs.deletion(resources.IPAM_CLAIM, ("ns", f"vm-{gone}"), removed=False, objects=3, received_at=clock.now)
        assert bool(fs.mass_deletions()) == (n >= MASS_DELETION_MIN)
        decision = fs.withhold({PEER: hosts(1, *claims[n:])}, full=False)
        handed.append(octets(decision.desired[PEER]))
    assert handed == [[1, *claims]] * len(claims), "no claim's route left the speaker's desired set"
    assert decision.held == {PEER: 3}
    clock.now += 30.0
    assert not fs.settle_due()
    assert octets(fs.withhold({PEER: hosts(1)}, full=False).desired[PEER]) == [1, *claims]
