"""Fail static for mass withdrawals (`bgpadv.safety.hold.WithdrawalHold`), with a fake clock.

The rules under test:
- a plan of ordinary watch events is applied whatever it withdraws (a DELETE is never delayed);
- a bulk plan (relist or full replan) that withdraws more than `max_fraction` of a peer's handed routes withdraws
  nothing: those routes stay desired, unchanged, and are counted as held; its announcements and next-hop changes go
  out at once; at or under the fraction it is applied;
- a held route is withdrawn only by a bulk plan built from a LIST of every resource begun at least `hold_seconds`
  after it was held, and only if that plan still withdraws it; a plan that desires it again ends its hold;
- peers are decided independently; the first plan has nothing to compare with and is never held;
- withdrawals of a plan with deletion events settle: they stay desired until deletion events paused for
  `settle_seconds`, at most `recent_seconds` after the first, then go out together; announcements and next-hop
  changes never wait; a mass deletion found meanwhile holds the settling withdrawals with the rest, so nothing is
  withdrawn and announced again; what settled before a mass deletion counts towards its fraction, and stays
  withdrawn.
"""

from __future__ import annotations

import logging

import pytest

from bgpadv.core.model import Route
from bgpadv.safety.hold import MASS_DELETION, WithdrawalHold
from tests.doubles import ManualClock
from tests.unit.safety.withdrawals import W2, H, host, hosts, octets


def hold_with(handed: tuple[Route, ...], *, fraction: float = 0.5, clock: ManualClock | None = None) -> WithdrawalHold:
    """A hold whose peer "tor" was last handed `handed` (by an ordinary plan)."""
    hold = WithdrawalHold(fraction, H, clock or ManualClock(1000.0))
    hold.apply({"tor": handed}, bulk=False)
    return hold


# -- one decision ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "fraction", "bulk", "desired", "handed_to_speaker", "held"),
    [
        ("an ordinary plan withdrawing everything is applied", 0.5, False, (), [], 0),
        ("an ordinary plan withdrawing three of four is applied", 0.5, False, (1,), [1], 0),
        ("a bulk plan withdrawing exactly the fraction is applied", 0.5, True, (1, 2), [1, 2], 0),
        ("a bulk plan withdrawing more than the fraction is held", 0.5, True, (1,), [1, 2, 3, 4], 3),
        ("an empty relist is held", 0.5, True, (), [1, 2, 3, 4], 4),
        ("a bulk plan that only announces is applied", 0.5, True, (1, 2, 3, 4, 5), [1, 2, 3, 4, 5], 0),
        ("fraction 1.0 never holds", 1.0, True, (), [], 0),
        ("fraction 0.0 holds any bulk withdrawal", 0.0, True, (1, 2, 3), [1, 2, 3, 4], 1),
    ],
)
def test_one_decision(rule: str, fraction: float, bulk: bool, desired, handed_to_speaker, held) -> None:
    hold = hold_with(hosts(1, 2, 3, 4), fraction=fraction)
    decision = hold.apply({"tor": hosts(*desired)}, bulk=bulk)
    assert octets(decision.desired["tor"]) == handed_to_speaker, rule
    assert decision.held == {"tor": held}, rule
    assert hold.held_counts() == {"tor": held}


def test_held_routes_are_handed_unchanged_and_announcements_and_next_hop_changes_go_out_at_once() -> None:
    hold = hold_with(hosts(1, 2, 3, 4))
    moved = host(1, W2)
    decision = hold.apply({"tor": (moved, host(9))}, bulk=True)  # 2, 3, 4 gone (3 of 4); 1 moves; 9 is new
    routes = {r.prefix.key: r for r in decision.desired["tor"]}
    assert routes[moved.prefix.key] is moved  # the new next hop, not the held old one
    assert routes[host(9).prefix.key] == host(9)
    assert [routes[host(o).prefix.key] for o in (2, 3, 4)] == list(hosts(2, 3, 4))  # exactly as handed
    assert len(routes) == 5
    assert decision.peers["tor"].newly_held == 3
    assert decision.peers["tor"].planned_withdrawals == 3


def test_the_first_plan_is_never_held(clock) -> None:
    hold = WithdrawalHold(0.5, H, clock)
    decision = hold.apply({"tor": ()}, bulk=True)
    assert decision.desired == {"tor": ()}
    assert decision.held == {"tor": 0}
    assert not hold.active


# -- over time ------------------------------------------------------------------------------------------------------
def test_held_routes_are_withdrawn_only_by_a_list_begun_hold_seconds_later_that_still_agrees(clock) -> None:
    hold = hold_with(hosts(1, 2, 3, 4), clock=clock)
    held_at = clock.now
    hold.apply({"tor": hosts(1)}, bulk=True)
    assert hold.deadline() == held_at + H

    clock.now = held_at + H - 1
    assert not hold.relist_due()
    early = hold.apply({"tor": hosts(1)}, bulk=True, listed_since=held_at + H - 1)  # a LIST one second too early
    assert octets(early.desired["tor"]) == [1, 2, 3, 4]
    assert early.peers["tor"].confirmed == 0

    clock.now = held_at + H
    assert hold.relist_due()
    assert not hold.confirmable(held_at + H - 0.001)
    assert hold.confirmable(held_at + H)
    clock.now = held_at + H + 0.5
    confirmed = hold.apply({"tor": hosts(1)}, bulk=True, listed_since=held_at + H)
    assert octets(confirmed.desired["tor"]) == [1]
    assert confirmed.peers["tor"].confirmed == 3
    assert confirmed.held == {"tor": 0}
    assert hold.deadline() is None and not hold.active


def test_a_late_list_does_not_confirm_through_an_ordinary_plan(clock) -> None:
    hold = hold_with(hosts(1, 2, 3, 4), clock=clock)
    hold.apply({"tor": hosts(1)}, bulk=True)
    clock.now += 10 * H
    decision = hold.apply({"tor": hosts(1)}, bulk=False, listed_since=clock.now)
    assert octets(decision.desired["tor"]) == [1, 2, 3, 4]


def test_a_confirming_list_that_shows_the_routes_again_ends_the_hold_without_a_withdrawal(clock) -> None:
    hold = hold_with(hosts(1, 2, 3, 4), clock=clock)
    hold.apply({"tor": ()}, bulk=True)
    clock.now += H
    decision = hold.apply({"tor": hosts(1, 2, 3, 4)}, bulk=True, listed_since=clock.now)
    assert octets(decision.desired["tor"]) == [1, 2, 3, 4]
    assert decision.peers["tor"].released == 4
    assert decision.peers["tor"].confirmed == 0
    assert not hold.active


def test_an_ordinary_delete_during_a_hold_goes_out_and_the_held_routes_stay() -> None:
    hold = hold_with(hosts(1, 2, 3, 4, 5, 6))
    hold.apply({"tor": hosts(1, 2)}, bulk=True)  # 3, 4, 5, 6 held
    decision = hold.apply({"tor": hosts(2)}, bulk=False)  # VM 1 deleted by a watch event
    assert octets(decision.desired["tor"]) == [2, 3, 4, 5, 6]
    assert decision.held == {"tor": 4}


def test_a_held_route_desired_again_by_an_ordinary_plan_is_no_longer_held() -> None:
    hold = hold_with(hosts(1, 2, 3, 4))
    hold.apply({"tor": ()}, bulk=True)
    back = host(3, W2)
    decision = hold.apply({"tor": (back,)}, bulk=False)
    assert decision.held == {"tor": 3}
    assert decision.peers["tor"].released == 1
    assert back in decision.desired["tor"] and host(3) not in decision.desired["tor"]


def test_held_routes_wait_for_their_confirmation_even_when_a_later_bulk_plan_is_under_the_threshold(clock) -> None:
    hold = hold_with(hosts(1, 2, 3, 4), clock=clock)
    hold.apply({"tor": hosts(1)}, bulk=True)  # 2, 3, 4 held
    hold.apply({"tor": hosts(1, *range(10, 20))}, bulk=False)  # ten new VMs: 14 handed, 3 of them held
    clock.now += 1
    decision = hold.apply({"tor": hosts(*range(10, 20))}, bulk=True)  # a resync: 1 and the held 3 gone, 4 of 14
    assert octets(decision.desired["tor"]) == [2, 3, 4, *range(10, 20)]  # 1 withdrawn, 2-4 still held
    assert decision.held == {"tor": 3}


def test_withdrawals_that_join_a_hold_are_confirmed_on_their_own_deadline(clock) -> None:
    hold = hold_with(hosts(1, 2, 3, 4), clock=clock)
    first = clock.now
    hold.apply({"tor": hosts(1)}, bulk=True)  # 2, 3, 4 held at `first`
    clock.now = first + 50
    hold.apply({"tor": ()}, bulk=True)  # 1 joins the hold at first + 50
    assert hold.deadline() == first + H

    clock.now = first + H
    decision = hold.apply({"tor": ()}, bulk=True, listed_since=first + H)
    assert octets(decision.desired["tor"]) == [1]
    assert decision.peers["tor"].confirmed == 3
    assert hold.deadline() == first + 50 + H

    clock.now = first + 50 + H
    decision = hold.apply({"tor": ()}, bulk=True, listed_since=first + 50 + H)
    assert decision.desired["tor"] == ()
    assert not hold.active


def test_peers_are_decided_independently(clock) -> None:
    hold = WithdrawalHold(0.5, H, clock)
    hold.apply({"small": hosts(1, 2), "large": hosts(1, 2, *range(10, 20))}, bulk=False)
    decision = hold.apply({"small": (), "large": hosts(*range(10, 20))}, bulk=True)
    assert decision.held == {"small": 2, "large": 0}
    assert octets(decision.desired["small"]) == [1, 2]
    assert octets(decision.desired["large"]) == list(range(10, 20))


def test_a_removed_peers_held_routes_are_dropped_not_held_until_a_confirmation(clock) -> None:
    hold = WithdrawalHold(0.5, H, clock)
    hold.apply({"leaving": hosts(1, 2, 3), "staying": hosts(1, 2, 3)}, bulk=False)
    assert hold.apply({"leaving": (), "staying": hosts(1, 2, 3)}, bulk=True).held == {"leaving": 3, "staying": 0}
    assert hold.active
    assert hold.set_peers({"staying"}) == ["leaving"]  # a live peer move took it away
    assert (hold.active, hold.deadline(), hold.held_counts()) == (False, None, {"staying": 0})
    decision = hold.apply({"staying": hosts(1, 2, 3)}, bulk=True)
    assert set(decision.desired) == {"staying"}, "nothing is handed for a peer the speaker no longer has"
    assert hold.set_peers({"staying"}) == []


def test_a_hold_and_a_confirmation_are_logged_as_warnings_with_their_cause(
    caplog: pytest.LogCaptureFixture, clock
) -> None:
    hold = hold_with(hosts(1, 2, 3, 4), clock=clock)
    with caplog.at_level(logging.WARNING, logger="bgpadv.safety.hold"):
        hold.apply({"tor": ()}, bulk=True, origin="relist")
        clock.now += H
        hold.apply({"tor": ()}, bulk=True, listed_since=clock.now)
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert messages == [
        "holding 4 withdrawals for peer tor (fail static): a relist would withdraw 4 of its 4 routes, more than "
        "safety.maxWithdrawFraction 0.50; they stay announced until a full LIST of every resource begun 120s from "
        "now still agrees",
        "withdrawing 4 held routes for peer tor: a full LIST of every resource begun at least 120s after they were "
        "held still does not have them",
    ]


@pytest.mark.parametrize(
    ("fraction", "seconds", "settle"),
    [
        pytest.param(-0.1, 120.0, 1.0, id="negative-fraction"),
        pytest.param(1.5, 120.0, 1.0, id="fraction-above-one"),
        pytest.param(0.5, -1.0, 1.0, id="negative-hold"),
        pytest.param(0.5, 120.0, -0.5, id="negative-settle"),
        pytest.param(0.5, 120.0, 11.0, id="settle-beyond-the-mass-deletion-window"),
    ],
)
def test_invalid_limits_are_refused(fraction: float, seconds: float, settle: float) -> None:
    with pytest.raises(ValueError):
        WithdrawalHold(fraction, seconds, settle_seconds=settle)


# -- withdrawals of deletion events settle ----------------------------------------------------------------------------
S = 1.0  # settle_seconds
MASS = f"{MASS_DELETION} of ipamclaims"


def settling_hold(handed: tuple[Route, ...], clock: ManualClock, *, settle: float = S) -> WithdrawalHold:
    hold = WithdrawalHold(0.5, H, clock, settle_seconds=settle)
    hold.apply({"tor": handed}, bulk=False)
    return hold


def test_a_deletion_withdraws_only_once_the_deletions_paused_for_the_settle_time(clock) -> None:
    hold = settling_hold(hosts(1, 2, 3, 4), clock)
    stopped = hold.apply({"tor": hosts(1, 2, 3)}, bulk=False, deletions=True)  # VM 4 stopped
    assert octets(stopped.desired["tor"]) == [1, 2, 3, 4]
    assert stopped.settling == {"tor": 1} and stopped.held == {"tor": 0}
    assert hold.settle_deadline() == clock.now + S

    clock.now += S - 0.01
    assert not hold.settle_due()
    assert octets(hold.apply({"tor": hosts(1, 2, 3)}, bulk=False).desired["tor"]) == [1, 2, 3, 4]
    clock.now += 0.01
    assert hold.settle_due()
    settled = hold.apply({"tor": hosts(1, 2, 3)}, bulk=False)  # the controller hands its last plan again
    assert octets(settled.desired["tor"]) == [1, 2, 3]
    assert settled.peers["tor"].settled == 1 and settled.settling == {"tor": 0}
    assert hold.settle_deadline() is None and not hold.active


@pytest.mark.parametrize(
    ("rule", "deletions_at", "released_at"),
    [
        ("one deletion goes the settle time later (a plan without deletion events does not delay it)", [0.0], S),
        ("a deletion within the settle time starts it again", [0.0, 0.6, 1.5], 2.5),
        ("deletions that never pause for it go at the latest 10 s after the first", [i * 0.9 for i in range(12)], 10.0),
    ],
)
def test_settling_withdrawals_go_out_together_when_the_deletions_pause(
    rule: str, deletions_at: list[float], released_at: float, clock
) -> None:
    start = clock.now
    hold = settling_hold(hosts(*range(1, 41)), clock)
    for i, at in enumerate(deletions_at):
        clock.now = start + at
        hold.apply({"tor": hosts(*range(i + 2, 41))}, bulk=False, deletions=True)  # VM i + 1 stopped
        hold.apply({"tor": hosts(*range(i + 2, 41))}, bulk=False)  # something else changed meanwhile
    assert hold.settle_deadline() == pytest.approx(start + released_at), rule
    clock.now = start + released_at
    decision = hold.apply({"tor": hosts(*range(len(deletions_at) + 1, 41))}, bulk=False)
    assert decision.peers["tor"].settled == len(deletions_at), rule
    assert octets(decision.desired["tor"]) == list(range(len(deletions_at) + 1, 41)), rule


def test_a_settle_time_of_zero_withdraws_at_once(clock) -> None:
    hold = settling_hold(hosts(1, 2, 3, 4), clock, settle=0.0)
    decision = hold.apply({"tor": hosts(1, 2, 3)}, bulk=False, deletions=True)
    assert octets(decision.desired["tor"]) == [1, 2, 3]
    assert hold.settle_deadline() is None


def test_announcements_and_next_hop_changes_never_settle(clock) -> None:
    hold = settling_hold(hosts(1, 2, 3, 4), clock)
    hold.apply({"tor": hosts(1, 2, 3)}, bulk=False, deletions=True)  # VM 4 stopped: settling
    moved, new = host(1, W2), host(9)
    decision = hold.apply({"tor": (moved, host(2), host(3), new)}, bulk=False, deletions=True)  # a migration, a VM
    routes = {r.prefix.key: r for r in decision.desired["tor"]}
    assert routes[moved.prefix.key] is moved and routes[new.prefix.key] is new
    assert octets(decision.desired["tor"]) == [1, 2, 3, 4, 9]


def test_a_route_desired_again_while_it_settles_is_the_plans_at_once_and_no_longer_settles(clock) -> None:
    hold = settling_hold(hosts(1, 2, 3, 4), clock)
    hold.apply({"tor": hosts(1, 2, 3)}, bulk=False, deletions=True)
    again = host(4, W2)  # its address taken at once by a VM on another node
    decision = hold.apply({"tor": (*hosts(1, 2, 3), again)}, bulk=False)
    assert again in decision.desired["tor"] and host(4) not in decision.desired["tor"]
    assert decision.settling == {"tor": 0} and hold.settle_deadline() is None


@pytest.mark.parametrize(
    "batches",
    [
        pytest.param([[1], [2], [3]], id="one-claim-a-plan"),
        pytest.param([[1, 2], [3]], id="two-then-one"),
    ],
)
def test_a_mass_deletion_holds_what_still_settles_and_nothing_is_withdrawn_meanwhile(batches, clock) -> None:
    """The CRD deleted: the first plans are ordinary deletions (the rule trips on the third claim); their
    withdrawals still settle when it trips, so they are held with the rest: the speaker never lost a route."""
    hold = settling_hold(hosts(1, 2, 3, 4), clock)
    remaining = {1, 2, 3, 4}
    handed = []
    for n, batch in enumerate(batches):
        remaining -= set(batch)
        last = n == len(batches) - 1  # the failstatic rule trips with the third claim
        decision = hold.apply(
            {"tor": hosts(*sorted(remaining))}, bulk=last, origin=MASS if last else "relist", deletions=True
        )
        handed.append(octets(decision.desired["tor"]))
        clock.now += 0.05
    assert handed == [[1, 2, 3, 4]] * len(batches), "no withdrawal reached the speaker"
    assert decision.held == {"tor": 3} and decision.settling == {"tor": 0}
    assert decision.peers["tor"].newly_held == 3
    clock.now += 10 * S
    assert not hold.settle_due() and hold.deadline() is not None


def test_withdrawals_settled_before_a_slow_mass_deletion_count_towards_it_and_stay_withdrawn(clock) -> None:
    """A burst slower than the settle time: what went out stays out (no flap); it still counts in the fraction."""
    hold = settling_hold(hosts(1, 2, 3, 4), clock)
    hold.apply({"tor": hosts(2, 3, 4)}, bulk=False, deletions=True)
    clock.now += S
    assert octets(hold.apply({"tor": hosts(2, 3, 4)}, bulk=False).desired["tor"]) == [2, 3, 4]  # 1 went out
    clock.now += 2.0
    decision = hold.apply({"tor": hosts(4)}, bulk=True, origin=MASS, deletions=True)  # 2 and 3: 3 of 4 in 10 s
    assert octets(decision.desired["tor"]) == [2, 3, 4], "1 is not announced again; 2 and 3 are held"
    assert decision.held == {"tor": 2}
    assert decision.peers["tor"].planned_withdrawals == 3


def test_a_bulk_plan_under_the_fraction_lets_deletions_settle_and_carries_out_the_rest(clock) -> None:
    hold = settling_hold(hosts(*range(1, 11)), clock)
    hold.apply({"tor": hosts(*range(2, 11))}, bulk=False, deletions=True)  # VM 1 stopped: settling
    resync = hold.apply({"tor": hosts(*range(3, 11))}, bulk=True, origin="full replan")  # 2 gone behind the watch
    assert octets(resync.desired["tor"]) == [1, *range(3, 11)], "2 goes at once, 1 keeps settling"
    mass = hold.apply({"tor": hosts(*range(4, 11))}, bulk=True, origin=MASS, deletions=True)  # 3 deleted
    assert octets(mass.desired["tor"]) == [1, 3, *range(4, 11)], "under the fraction: the deletion settles too"
    assert mass.held == {"tor": 0} and mass.settling == {"tor": 2}


# -- observability --------------------------------------------------------------------------------------------------
def test_held_routes_and_held_resources_are_gauges_and_appear_in_status() -> None:
    from bgpadv.commands.status import render
    from bgpadv.observe.metrics_observer import MetricsObserver

    observer = MetricsObserver()
    registry = observer.metrics.registry
    observer.routes_held({"10.0.0.1": 4, "fd00::1": 0})
    observer.resource_held("ipamclaims", True)
    assert registry.get_sample_value("bgpadv_routes_held", {"peer": "10.0.0.1"}) == 4
    assert registry.get_sample_value("bgpadv_routes_held", {"peer": "fd00::1"}) == 0
    assert registry.get_sample_value("bgpadv_resource_held", {"resource": "ipamclaims"}) == 1
    status = observer.status()
    assert status["held"] == {"routes": {"10.0.0.1": 4, "fd00::1": 0}, "resources": ["ipamclaims"]}
    assert "held (fail static): withdrawals 4 for 10.0.0.1; unreadable resources ipamclaims" in render(status)

    observer.routes_held({"10.0.0.1": 0, "fd00::1": 0})
    observer.resource_held("ipamclaims", False)
    assert registry.get_sample_value("bgpadv_resource_held", {"resource": "ipamclaims"}) == 0
    assert observer.status()["held"] == {"routes": {"10.0.0.1": 0, "fd00::1": 0}, "resources": []}
    assert "held (fail static)" not in render(observer.status())


# -- no way around the hold floor in the shipped service ---------------------------------------------------------
SHORT_HOLD_VARIABLES = ("BGPADV_TEST_HOLD_SECONDS", "BGPADV_HOLD_SECONDS", "BGPADV_SAFETY_HOLD_SECONDS")
"""Environment variables a test bench might be tempted to read: the service reads none of them."""


def test_the_shipped_controller_ignores_any_environment_variable_that_would_shorten_the_hold(
    tmp_path, monkeypatch
) -> None:
    from bgpadv.core.runfiles import controller_argv
    from bgpadv.runtime.reload import Reloader

    path = tmp_path / "bgpadv.yaml"
    path.write_text("localASN: 64513\npeers: [{address: 10.0.0.1, asn: 64512}]\n")
    for name in SHORT_HOLD_VARIABLES:
        monkeypatch.setenv(name, "2.5")
    reloader = Reloader(str(path), controller_argv(path), tmp_path)
    first = reloader.start_config()
    assert first is not None and first.safety.hold_seconds == 120.0
    path.write_text("localASN: 64513\npeers: [{address: 10.0.0.1, asn: 64512}]\nsafety: {holdSeconds: 60}\n")
    again = reloader.load()  # a live reload reads the file, and only the file
    assert again is not None and again.safety.hold_seconds == 60.0
    path.write_text("localASN: 64513\npeers: [{address: 10.0.0.1, asn: 64512}]\nsafety: {holdSeconds: 2.5}\n")
    assert reloader.load() is None  # below the floor: refused, whatever the environment says
    assert controller_argv(path)[1:3] == ["-m", "bgpadv"]


def test_no_module_of_the_service_reads_a_hold_from_the_environment() -> None:
    """A source-level guard: no environment variable name of bgpadv's mentions the hold."""
    import re
    from pathlib import Path

    import bgpadv

    root = Path(bgpadv.__file__).parent
    found = [
        f"{p.relative_to(root)}: {m.group(0)}"
        for p in root.rglob("*.py")
        for m in re.finditer(r"BGPADV_[A-Z_]*HOLD[A-Z_]*", p.read_text())
    ]
    assert found == []


def test_an_embedding_program_sets_a_short_hold_as_a_constructor_argument(tmp_path) -> None:
    from bgpadv.runtime.reload import Reloader

    path = tmp_path / "bgpadv.yaml"
    path.write_text("localASN: 64513\npeers: [{address: 10.0.0.1, asn: 64512}]\n")
    config = Reloader(str(path), hold_seconds=2.5).load()
    assert config is not None and config.safety.hold_seconds == 2.5


@pytest.mark.parametrize("bad", ["-1", "soon", "nan", "inf"])
def test_the_lab_entry_point_refuses_a_hold_that_is_no_number_of_seconds(bad: str, capsys) -> None:
    from bgpadv_lab.short_hold import main

    assert main([bad, "check-config", "--schema"]) == 2
    assert "must be a number of seconds" in capsys.readouterr().err


def test_the_lab_entry_point_makes_every_child_run_it_again_with_the_same_hold(monkeypatch) -> None:
    """The lab's entry point hands its own entry point to bgpadv's command line, which starts every child with it;
    bgpadv's own default stays `python -m bgpadv`."""
    from bgpadv.commands import cli
    from bgpadv.core import runfiles
    from bgpadv_lab.short_hold import main

    given: list[tuple[list[str], object]] = []
    monkeypatch.setattr(cli, "main", lambda argv, *, entry_point=None: given.append((list(argv), entry_point)) or 0)
    assert main(["3", "run", "--config", "/etc/bgpadv.yaml"]) == 0
    ((argv, entry_point),) = given
    assert argv == ["run", "--config", "/etc/bgpadv.yaml"]
    assert isinstance(entry_point, tuple)
    assert runfiles.controller_argv("/etc/bgpadv.yaml")[1:3] == ["-m", "bgpadv"]
    assert runfiles.controller_argv("/etc/bgpadv.yaml", no_shim=True, entry_point=entry_point)[1:] == [
        "-m",
        "bgpadv_lab.short_hold",
        "3",
        "controller",
        "--config",
        "/etc/bgpadv.yaml",
        "--no-shim",
    ]


@pytest.mark.parametrize(
    ("argv", "module", "function"),
    [
        pytest.param(["controller", "--config", "/etc/bgpadv.yaml"], "bgpadv.runtime.shim", "shim_main", id="shim"),
        pytest.param(
            ["controller", "--config", "/etc/bgpadv.yaml", "--no-shim"],
            "bgpadv.runtime.wiring",
            "controller_main",
            id="controller",
        ),
    ],
)
def test_the_command_line_hands_an_embedding_programs_entry_point_to_the_process_that_starts_children(
    argv: list[str], module: str, function: str, monkeypatch
) -> None:
    import gc
    import importlib

    from bgpadv.commands import cli

    entry = ("-m", "bgpadv_lab.short_hold", "3")
    given: list[object] = []
    monkeypatch.setattr(importlib.import_module(module), function, lambda path, **kw: given.append(kw["entry_point"]))
    monkeypatch.setattr(gc, "disable", lambda: None)  # `controller --no-shim` turns the collector off until its plan
    cli.main(argv, entry_point=entry)
    cli.main(argv)
    assert given == [entry, ("-m", "bgpadv")]
