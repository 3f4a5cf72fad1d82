"""MetricsObserver: what each observation does to the Prometheus metrics and to the status snapshot.

Scope: stage timings of route changes matched from write to ack to the UPDATE echo; bounded memory for changes whose
echo never comes; plan-derived gauges and refusal counting; peer label sets; object lag; migration handover;
readiness; the configuration reload outcomes and `bgpadv_config_stale`; no `_created` series. Times are synthetic
monotonic values, so every expected duration is exact.
"""

from __future__ import annotations

import importlib.metadata

import pytest
from prometheus_client import generate_latest

from bgpadv.core.model import Cause, ObjectRef, Outcome, Plan, Refusal, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.observe.convergence import percentile
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import LateStatusParts, MetricsObserver, StatusParts
from bgpadv.observe.observers import RouteChange
from tests.doubles import ManualClock

CUDN_A = ObjectRef("ClusterUserDefinedNetwork", "vmnet-a", uid="6f1c2a9e-0d6b-4d1e-9a52-1f7f0c2b8a01")
CLAIM_A = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms", "0b6a4c1e-2f4d-4b8e-9c1a-7d2e3f4a5b6c")
CLAIM_B = ObjectRef("IPAMClaim", "vm-b.default", "imported-vms", "8d3e1f2a-5b6c-4d7e-8f9a-0b1c2d3e4f5a")
PEER = "10.0.0.1"
PEER6 = "fd00::1"


def parsed(echo: list[str]) -> list[Prefix]:
    """An UPDATE echo's prefixes as the speaker hands them over (parsed once, `bgpadv.speaker.protocol`)."""
    return [Prefix.parse(p) for p in echo]


def host_route(ip: str, node: str, source: ObjectRef = CLAIM_A, network: str = "vmnet-a") -> Route:
    return Route(
        Address.parse(ip).prefix(),
        Address.parse("192.0.2.11" if node == "worker-1" else "192.0.2.12"),
        network,
        RouteKind.HOST,
        source,
        node=node,
    )


SUBNET = Route(Prefix.parse("192.168.100.0/24"), None, "vmnet-a", RouteKind.SUBNET, CUDN_A)
SUBNET6 = Route(Prefix.parse("fd10:100::/64"), None, "vmnet-a", RouteKind.SUBNET, CUDN_A)
VM_A = host_route("192.168.100.205", "worker-1")
VM_A6 = host_route("fd10:100::cd", "worker-1")
VM_B = host_route("192.168.100.206", "worker-2", CLAIM_B)


@pytest.fixture
def observer(clock: ManualClock) -> MetricsObserver:
    return MetricsObserver(Metrics(process_collectors=False), clock=clock.monotonic, wall_clock=clock.wall)


def sample(obs: MetricsObserver, name: str, **labels: str) -> float | None:
    return obs.metrics.registry.get_sample_value(name, labels)


def hist_count(obs: MetricsObserver, name: str, **labels: str) -> float:
    return sample(obs, f"{name}_count", **labels) or 0.0


def hist_sum(obs: MetricsObserver, name: str, **labels: str) -> float:
    return sample(obs, f"{name}_sum", **labels) or 0.0


def test_every_documented_metric_is_exposed_with_the_installed_version(
    observer: MetricsObserver,
) -> None:
    text = generate_latest(observer.metrics.registry).decode()
    for name in (
        "bgpadv_convergence_seconds",
        "bgpadv_object_lag_seconds",
        "bgpadv_migration_handover_seconds",
        "bgpadv_routes_advertised",
        "bgpadv_routes_rejected_total",
        "bgpadv_peer_up",
        "bgpadv_peer_transitions_total",
        "bgpadv_exabgp_commands_total",
        "bgpadv_watch_restarts_total",
        "bgpadv_full_resync_seconds",
        "bgpadv_last_sync_timestamp_seconds",
        "bgpadv_build_info",
    ):
        assert f"# TYPE {name} " in text, name
    assert f'bgpadv_build_info{{version="{importlib.metadata.version("bgpadv")}"}} 1.0' in text


def test_no_created_series_are_exported(observer: MetricsObserver) -> None:
    """`_created` doubles every counter and histogram and nothing reads it: disabled where the registry is built."""
    observer.metrics.routes_rejected.labels(reason="link-local").inc()
    observer.metrics.convergence.labels(stage="sent", op="announce", kind="host").observe(0.01)
    text = generate_latest(observer.metrics.registry).decode()
    assert "bgpadv_routes_rejected_total" in text
    assert "_created" not in text


@pytest.mark.parametrize(
    ("outcomes", "stale", "applied", "refused"),
    [
        pytest.param([], 0, 0, 0, id="a-controller-started-on-a-valid-file"),
        pytest.param(["refused"], 1, 0, 1, id="a-refused-change-leaves-an-older-configuration-running"),
        pytest.param(["refused", "refused"], 1, 0, 2, id="refused-again"),
        pytest.param(["refused", "applied"], 0, 1, 1, id="a-fixed-file-applied-live"),
        pytest.param(["refused", "unchanged"], 0, 0, 1, id="the-file-put-back-to-the-configuration-in-force"),
        pytest.param(["applied", "refused"], 1, 1, 1, id="a-good-change-then-a-bad-one"),
    ],
)
def test_config_stale_says_whether_the_file_is_the_configuration_in_force(
    observer: MetricsObserver, outcomes: list[str], stale: int, applied: int, refused: int
) -> None:
    for outcome in outcomes:
        observer.config_reload(outcome)
    observer.config_applied()  # a controller marks its start (on the file or the last good one): not a verdict
    assert sample(observer, "bgpadv_config_stale") == stale
    assert sample(observer, "bgpadv_config_reloads_total", result="applied") == applied
    assert sample(observer, "bgpadv_config_reloads_total", result="refused") == refused
    assert sample(observer, "bgpadv_config_reloads_total", result="unchanged") is None  # never a label value


def test_a_change_is_timed_at_every_stage_from_the_watch_event(observer: MetricsObserver) -> None:
    cause = Cause(received_at=100.000, planned_at=100.002)
    observer.commands_written(7, [RouteChange(PEER, "announce", VM_A)], cause, at=100.003)
    observer.command_acked(7, True, at=100.0045)
    observer.updates_sent(PEER, [Prefix.parse("192.168.100.205/32")], [], at=100.005)

    expected = {"planned": 0.002, "written": 0.003, "acked": 0.0045, "sent": 0.005}
    for stage, seconds in expected.items():
        labels = {"stage": stage, "op": "announce", "kind": "host"}
        assert hist_count(observer, "bgpadv_convergence_seconds", **labels) == 1, stage
        assert hist_sum(observer, "bgpadv_convergence_seconds", **labels) == pytest.approx(seconds), stage
    assert sample(observer, "bgpadv_exabgp_commands_total", result="done") == 1
    assert observer.pending_counts() == {"acked": 0, "sent": 0}


@pytest.mark.parametrize(
    ("changes", "echo_announced", "echo_withdrawn", "expected_sent"),
    [
        pytest.param(
            [RouteChange(PEER, "withdraw", VM_B)],
            [],
            ["192.168.100.206/32"],
            {("withdraw", "host"): 1},
            id="withdraw-matched-by-withdrawn-prefix",
        ),
        pytest.param(
            [RouteChange(PEER, "announce", SUBNET), RouteChange(PEER, "announce", VM_A)],
            ["192.168.100.0/24", "192.168.100.205/32"],
            [],
            {("announce", "subnet"): 1, ("announce", "host"): 1},
            id="kinds-labelled-per-route",
        ),
        pytest.param(
            [RouteChange(PEER6, "announce", VM_A6)],
            ["fd10:100:0:0:0:0:0:cd/128"],
            [],
            {("announce", "host"): 1},
            id="ipv6-echo-in-another-spelling-is-canonicalised",
        ),
        pytest.param(
            [RouteChange(PEER, "announce", VM_A)],
            [],
            ["192.168.100.205/32"],
            {},
            id="a-withdraw-echo-does-not-close-an-announce",
        ),
        pytest.param(
            [RouteChange(PEER, "announce", VM_A)],
            ["192.168.100.206/32"],
            [],
            {},
            id="another-prefix-does-not-match",
        ),
    ],
)
def test_updates_sent_matches_pending_changes_by_peer_prefix_and_op(
    observer: MetricsObserver,
    changes: list[RouteChange],
    echo_announced: list[str],
    echo_withdrawn: list[str],
    expected_sent: dict[tuple[str, str], int],
) -> None:
    cause = Cause(received_at=10.0, planned_at=10.001)
    observer.commands_written(1, changes, cause, at=10.002)
    observer.command_acked(1, True, at=10.003)
    observer.updates_sent(changes[0].peer, parsed(echo_announced), parsed(echo_withdrawn), at=10.010)
    for op in ("announce", "withdraw"):
        for kind in ("host", "subnet"):
            got = hist_count(observer, "bgpadv_convergence_seconds", stage="sent", op=op, kind=kind)
            assert got == expected_sent.get((op, kind), 0), (op, kind)


def test_the_echo_for_one_peer_does_not_close_the_other_peers_change(observer: MetricsObserver) -> None:
    cause = Cause(received_at=10.0, planned_at=10.001)
    observer.commands_written(
        1, [RouteChange(PEER, "announce", VM_A), RouteChange(PEER6, "announce", VM_A)], cause, 10.002
    )
    observer.updates_sent(PEER, [Prefix.parse("192.168.100.205/32")], [], at=10.004)
    assert observer.pending_counts()["sent"] == 1
    observer.updates_sent(PEER6, [Prefix.parse("192.168.100.205/32")], [], at=10.009)
    assert hist_count(observer, "bgpadv_convergence_seconds", stage="sent", op="announce", kind="host") == 2
    assert hist_sum(observer, "bgpadv_convergence_seconds", stage="sent", op="announce", kind="host") == pytest.approx(
        0.004 + 0.009
    )


def test_a_prefix_changed_again_in_flight_keeps_its_first_cause(observer: MetricsObserver) -> None:
    observer.commands_written(1, [RouteChange(PEER, "announce", VM_A)], Cause(10.0, 10.001), at=10.002)
    moved = host_route("192.168.100.205", "worker-2")
    observer.commands_written(2, [RouteChange(PEER, "announce", moved)], Cause(10.5, 10.501), at=10.502)
    observer.updates_sent(PEER, [Prefix.parse("192.168.100.205/32")], [], at=10.6)
    assert hist_sum(observer, "bgpadv_convergence_seconds", stage="sent", op="announce", kind="host") == pytest.approx(
        0.6
    )


def test_changes_without_a_cause_count_commands_but_take_no_samples(observer: MetricsObserver) -> None:
    observer.commands_written(3, [RouteChange(PEER, "announce", SUBNET)], None, at=5.0)
    observer.command_acked(3, False, at=5.001)
    observer.updates_sent(PEER, [Prefix.parse("192.168.100.0/24")], [], at=5.002)
    assert sample(observer, "bgpadv_exabgp_commands_total", result="error") == 1
    assert hist_count(observer, "bgpadv_convergence_seconds", stage="sent", op="announce", kind="subnet") == 0


def test_an_error_ack_takes_no_acked_sample(observer: MetricsObserver) -> None:
    observer.commands_written(4, [RouteChange(PEER, "announce", VM_A)], Cause(1.0, 1.001), at=1.002)
    observer.command_acked(4, False, at=1.003)
    assert hist_count(observer, "bgpadv_convergence_seconds", stage="acked", op="announce", kind="host") == 0
    assert sample(observer, "bgpadv_exabgp_commands_total", result="error") == 1


def test_pending_changes_are_forgotten_after_the_ttl_and_counted(observer: MetricsObserver, clock: ManualClock) -> None:
    routes = [host_route(f"192.168.100.{i}", "worker-1") for i in range(10, 20)]
    observer.commands_written(1, [RouteChange(PEER, "announce", r) for r in routes], Cause(0.0, 0.001), at=0.002)
    assert observer.pending_counts() == {"acked": 10, "sent": 10}
    # 61 s later another change arrives: the old ones expire (their echo and ack never came).
    observer.commands_written(2, [RouteChange(PEER, "announce", VM_B)], Cause(61.0, 61.001), at=61.002)
    assert observer.pending_counts() == {"acked": 1, "sent": 1}
    assert sample(observer, "bgpadv_convergence_unmatched_total", stage="sent") == 10
    assert sample(observer, "bgpadv_convergence_unmatched_total", stage="acked") == 10
    # A late echo of an expired change takes no sample.
    observer.updates_sent(PEER, [Prefix.parse("192.168.100.10/32")], [], at=61.5)
    assert hist_count(observer, "bgpadv_convergence_seconds", stage="sent", op="announce", kind="host") == 0


def test_pending_changes_are_capped_in_number(clock: ManualClock) -> None:
    obs = MetricsObserver(
        Metrics(process_collectors=False), max_pending=100, clock=clock.monotonic, wall_clock=clock.wall
    )
    routes = [host_route(f"192.168.{i // 250}.{i % 250 + 1}", "worker-1") for i in range(300)]
    obs.commands_written(1, [RouteChange(PEER, "announce", r) for r in routes], Cause(0.0, 0.001), at=0.002)
    assert obs.pending_counts()["sent"] <= 100
    assert sample(obs, "bgpadv_convergence_unmatched_total", stage="sent") == 200


def plan(*routes: Route, rejected: tuple[Refusal, ...] = ()) -> Outcome:
    """A guarded plan, as observers get it: every route reaches a peer."""
    return Outcome.of(Plan.build(routes, rejected))


def routes(obs: MetricsObserver, peer: str, family: str, kind: str) -> float | None:
    return sample(obs, "bgpadv_routes_advertised", peer=peer, network="vmnet-a", family=family, kind=kind)


def test_routes_advertised_count_what_exabgp_acknowledged_per_peer_not_the_plan(observer: MetricsObserver) -> None:
    observer.planned(plan(SUBNET, SUBNET6, VM_A, VM_A6, VM_B), None, 0.01, True)
    assert routes(observer, PEER, "ipv4", "host") is None  # planned, not yet held
    assert hist_count(observer, "bgpadv_full_resync_seconds") == 1

    observer.commands_written(1, [RouteChange(PEER, "announce", r) for r in (SUBNET, VM_A, VM_B)], None, at=1.0)
    observer.commands_written(2, [RouteChange(PEER6, "announce", r) for r in (SUBNET6, VM_A6)], None, at=1.0)
    assert routes(observer, PEER, "ipv4", "host") is None  # written, not acknowledged
    observer.command_acked(1, True, at=1.1)
    observer.command_acked(2, True, at=1.1)
    assert routes(observer, PEER, "ipv4", "host") == 2
    assert routes(observer, PEER, "ipv4", "subnet") == 1
    assert routes(observer, PEER6, "ipv6", "host") == 1
    assert routes(observer, PEER6, "ipv6", "subnet") == 1
    assert routes(observer, PEER, "ipv6", "host") is None

    observer.planned(plan(SUBNET, VM_A), Cause(1.0, 1.001), 0.001, False)
    observer.commands_written(3, [RouteChange(PEER, "withdraw", VM_B)], Cause(1.0, 1.001), at=2.0)
    observer.commands_written(4, [RouteChange(PEER6, "withdraw", r) for r in (SUBNET6, VM_A6)], None, at=2.0)
    observer.command_acked(3, True, at=2.1)
    observer.command_acked(4, True, at=2.1)
    assert routes(observer, PEER, "ipv4", "host") == 1
    assert routes(observer, PEER6, "ipv6", "host") is None  # an emptied label set goes away
    assert routes(observer, PEER6, "ipv6", "subnet") is None
    assert hist_count(observer, "bgpadv_full_resync_seconds") == 1


def test_a_reannounced_route_is_counted_once_and_follows_its_new_labels(observer: MetricsObserver) -> None:
    observer.commands_written(1, [RouteChange(PEER, "announce", VM_A)], None, at=1.0)
    observer.command_acked(1, True, at=1.1)
    moved = host_route("192.168.100.205", "worker-2", network="vmnet-b")
    observer.commands_written(2, [RouteChange(PEER, "announce", moved)], None, at=2.0)
    observer.command_acked(2, True, at=2.1)
    assert routes(observer, PEER, "ipv4", "host") is None
    assert sample(observer, "bgpadv_routes_advertised", peer=PEER, network="vmnet-b", family="ipv4", kind="host") == 1


def test_a_refused_command_leaves_its_routes_uncounted(observer: MetricsObserver) -> None:
    """ExaBGP answered `error`: the speaker no longer knows whether it holds those prefixes, nor do the gauges."""
    observer.commands_written(1, [RouteChange(PEER, "announce", r) for r in (VM_A, VM_B)], None, at=1.0)
    observer.command_acked(1, True, at=1.1)
    observer.commands_written(2, [RouteChange(PEER, "withdraw", VM_B)], None, at=2.0)
    observer.command_acked(2, False, at=2.1)
    assert routes(observer, PEER, "ipv4", "host") == 1


def test_a_removed_peer_loses_its_route_gauges(observer: MetricsObserver) -> None:
    observer.set_peers([PEER, PEER6])
    observer.commands_written(1, [RouteChange(PEER6, "announce", VM_A6)], None, at=1.0)
    observer.command_acked(1, True, at=1.1)
    observer.set_peers([PEER])
    assert routes(observer, PEER6, "ipv6", "host") is None
    assert observer.status()["routes"] == []


GATEWAY = Refusal(CLAIM_A, "192.168.100.1/24", "default-gateway-address", "the network's default gateway", "vmnet-a")
OUTSIDE = Refusal(CLAIM_B, "10.9.9.9/24", "outside-network-subnets", "not inside 192.168.100.0/24", "vmnet-a")


def test_each_refusal_is_counted_once_while_it_persists(observer: MetricsObserver) -> None:
    for _ in range(5):  # five replans with the same refusals
        observer.planned(plan(SUBNET, rejected=(GATEWAY, OUTSIDE)), None, 0.001, False)
    assert sample(observer, "bgpadv_routes_rejected_total", reason="default-gateway-address") == 1
    assert sample(observer, "bgpadv_routes_rejected_total", reason="outside-network-subnets") == 1
    observer.planned(plan(SUBNET, rejected=(OUTSIDE,)), None, 0.001, False)  # the gateway claim was fixed
    observer.planned(plan(SUBNET, rejected=(GATEWAY, OUTSIDE)), None, 0.001, False)  # ... and broken again
    assert sample(observer, "bgpadv_routes_rejected_total", reason="default-gateway-address") == 2
    assert sample(observer, "bgpadv_routes_rejected_total", reason="outside-network-subnets") == 1


def test_peer_state_sets_up_and_counts_transitions(observer: MetricsObserver) -> None:
    observer.set_peers([PEER, PEER6])
    assert sample(observer, "bgpadv_peer_up", peer=PEER) == 0
    for state in ("connected", "up", "up", "down", "connected", "up"):
        observer.peer_state(PEER, state, at=1.0)
    assert sample(observer, "bgpadv_peer_up", peer=PEER) == 1
    assert sample(observer, "bgpadv_peer_transitions_total", peer=PEER) == 3  # up, down, up


def test_removed_peers_lose_their_label_sets(observer: MetricsObserver) -> None:
    observer.set_peers([PEER, PEER6])
    observer.peer_state(PEER6, "up", at=1.0)
    observer.synced(PEER6, 42, at=2.0)
    observer.set_peers([PEER])
    text = generate_latest(observer.metrics.registry).decode()
    assert f'peer="{PEER6}"' not in text
    assert f'bgpadv_peer_up{{peer="{PEER}"}} 0.0' in text
    assert PEER6 not in observer.status()["peers"]


def test_synced_sets_last_sync_wall_time_and_peer_routes(observer: MetricsObserver, clock: ManualClock) -> None:
    clock.now = 2000.0
    observer.synced(PEER, 1234, at=1999.5)
    assert sample(observer, "bgpadv_last_sync_timestamp_seconds") == pytest.approx(1_700_001_999.5)
    assert sample(observer, "bgpadv_peer_routes_advertised", peer=PEER) == 1234


@pytest.mark.parametrize(
    ("synced_first", "event_type", "object_age", "expected"),
    [
        pytest.param(True, "MODIFIED", 2.5, 2.5, id="modified-after-initial-list"),
        pytest.param(True, "ADDED", 0.2, 0.2, id="added-after-initial-list"),
        pytest.param(False, "ADDED", 3600.0, None, id="initial-list-objects-are-not-lag"),
        pytest.param(True, "MODIFIED", -0.4, 0.0, id="clock-skew-clamps-to-zero"),
        pytest.param(True, "SYNCED", 1.0, None, id="synced-marker-ignored"),
    ],
)
def test_object_lag_is_measured_from_the_objects_timestamp(
    observer: MetricsObserver, clock: ManualClock, synced_first: bool, event_type: str, object_age: float, expected
) -> None:
    if synced_first:
        observer.initial_sync("virtualmachineinstances", at=clock.now)
    received = clock.now - 0.5  # delivered half a second ago, queued since
    observer.watch_event("virtualmachineinstances", event_type, received, clock.wall() - 0.5 - object_age)
    count = hist_count(observer, "bgpadv_object_lag_seconds", resource="virtualmachineinstances")
    if expected is None:
        assert count == 0
    else:
        assert count == 1
        assert hist_sum(observer, "bgpadv_object_lag_seconds", resource="virtualmachineinstances") == pytest.approx(
            expected
        )


def test_watch_restarts_are_counted_by_resource_and_reason(observer: MetricsObserver) -> None:
    observer.watch_restart("ipamclaims", "gone-410")
    observer.watch_restart("ipamclaims", "gone-410")
    observer.watch_restart("pods", "stream-ended")
    assert sample(observer, "bgpadv_watch_restarts_total", resource="ipamclaims", reason="gone-410") == 2
    assert sample(observer, "bgpadv_watch_restarts_total", resource="pods", reason="stream-ended") == 1


def test_migration_handover_runs_from_target_ready_to_the_announce_on_the_wire(
    observer: MetricsObserver, clock: ManualClock
) -> None:
    clock.now = 500.0
    ready_wall = clock.wall() - 1.2  # the VMI says the target domain was ready 1.2 s ago
    observer.migration_handover_started("192.168.100.205/32", ready_wall)
    moved = host_route("192.168.100.205", "worker-2")
    observer.commands_written(9, [RouteChange(PEER, "announce", moved)], Cause(499.9, 499.95), at=499.96)
    observer.updates_sent(PEER, [Prefix.parse("192.168.100.205/32")], [], at=500.01)
    assert hist_count(observer, "bgpadv_migration_handover_seconds") == 1
    assert hist_sum(observer, "bgpadv_migration_handover_seconds") == pytest.approx(1.21)
    observer.updates_sent(
        PEER6, [Prefix.parse("192.168.100.205/32")], [], at=500.02
    )  # a second peer: handover already closed
    assert hist_count(observer, "bgpadv_migration_handover_seconds") == 1


def test_readiness_needs_a_plan_and_an_established_peer(clock: ManualClock) -> None:
    obs = MetricsObserver(
        Metrics(process_collectors=False),
        expected_resources=["clusteruserdefinednetworks", "nodes"],
        clock=clock.monotonic,
        wall_clock=clock.wall,
    )
    assert obs.ready() == (False, "initial list not done for: clusteruserdefinednetworks, nodes")
    obs.initial_sync("clusteruserdefinednetworks", 1.0)
    obs.initial_sync("nodes", 1.0)
    assert obs.ready()[0] is False and "no plan" in obs.ready()[1]
    obs.planned(plan(SUBNET), None, 0.001, True)
    assert obs.ready() == (False, "no BGP peer established")
    obs.peer_state(PEER, "up", 2.0)
    assert obs.ready() == (True, "ok")
    obs.peer_state(PEER, "down", 3.0)
    assert obs.ready() == (False, "no BGP peer established")


def test_status_reports_percentiles_of_recent_samples(observer: MetricsObserver, clock: ManualClock) -> None:
    observer.peer_state(PEER, "up", 1.0)
    clock.now += 90
    for i in range(100):
        t0 = 100.0 + i
        route = host_route(f"192.168.100.{i + 2}", "worker-1")
        observer.commands_written(i, [RouteChange(PEER, "announce", route)], Cause(t0, t0 + 0.001), at=t0 + 0.002)
        observer.command_acked(i, True, at=t0 + 0.003)
        observer.updates_sent(PEER, [route.prefix], [], at=t0 + 0.001 * (i + 1))
    status = observer.status()
    sent = status["convergence"]["sent"]
    assert sent["samples"] == 100
    assert sent["p50"] == pytest.approx(0.050)
    assert sent["p99"] == pytest.approx(0.099)
    assert status["peers"][PEER]["state"] == "up"
    assert status["peers"][PEER]["uptime_seconds"] == pytest.approx(90)
    assert status["peers"][PEER]["prefixes_announced"] == 100


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        pytest.param([], 0.5, None, id="empty"),
        pytest.param([1.0], 0.99, 1.0, id="one"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 0.5, 2.0, id="median-nearest-rank"),
        pytest.param([float(i) for i in range(1, 101)], 0.99, 99.0, id="p99-of-100"),
    ],
)
def test_percentile_nearest_rank(values: list[float], q: float, expected: float | None) -> None:
    assert percentile(values, q) == expected


class Exploding:
    kind = "host"

    def __str__(self) -> str:
        raise RuntimeError("boom")


def test_observer_methods_never_raise(observer: MetricsObserver) -> None:
    bad = RouteChange(PEER, "announce", Exploding())  # type: ignore[arg-type]
    observer.commands_written(1, [bad], Cause(1.0, 1.1), at=1.2)
    observer.planned(None, None, 0.0, False)  # type: ignore[arg-type]
    observer.updates_sent(PEER, None, None, at=1.0)  # type: ignore[arg-type]


# out of scope is quiet: refusals of objects on networks bgpadv does not serve, as the planner writes them for the
# ipam-extensions README's NAD network `tenantblue`, an OpenShift Virtualization namespaced UDN and an unselected CUDN
NAD_CLAIM = Refusal(CLAIM_A, "tenantblue", "foreign-network", "not the network name of a ClusterUserDefinedNetwork")
UDN_CLAIM = Refusal(CLAIM_B, "imported-vms_tenantnet", "namespaced-udn-not-advertisable", "a UDN", "")


def test_out_of_scope_refusals_are_a_gauge_of_objects_not_rejected_routes(observer: MetricsObserver) -> None:
    for _ in range(3):
        observer.planned(plan(SUBNET, rejected=(GATEWAY, NAD_CLAIM, UDN_CLAIM)), None, 0.001, False)
    assert sample(observer, "bgpadv_out_of_scope_objects", reason="foreign-network") == 1
    assert sample(observer, "bgpadv_out_of_scope_objects", reason="namespaced-udn-not-advertisable") == 1
    assert sample(observer, "bgpadv_out_of_scope_objects", reason="network-not-selected") == 0
    assert sample(observer, "bgpadv_routes_rejected_total", reason="foreign-network") is None
    assert sample(observer, "bgpadv_routes_rejected_total", reason="default-gateway-address") == 1
    observer.planned(plan(SUBNET, rejected=(GATEWAY,)), None, 0.001, False)  # the claims were deleted
    assert sample(observer, "bgpadv_out_of_scope_objects", reason="foreign-network") == 0


def test_a_value_observed_for_many_route_changes_at_once_counts_as_that_many_observations():
    """The convergence histograms take one sample per route change; a batch of changes sharing a cause is observed
    in one step, and the histogram must read exactly as if each had been observed alone."""
    from prometheus_client import CollectorRegistry, Histogram

    from bgpadv.observe.convergence import _observe_n  # the batched step, compared with one observe() per change

    def samples(h: Histogram) -> dict:
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for m in h.collect()
            for s in m.samples
            if not s.name.endswith("_created")
        }

    bulk = Histogram("bulk", "b", ["stage"], registry=CollectorRegistry(), buckets=(0.001, 0.01, 0.1, 1.0))
    alone = Histogram("bulk", "b", ["stage"], registry=CollectorRegistry(), buckets=(0.001, 0.01, 0.1, 1.0))
    for value, n in ((0.004, 1000), (0.05, 3), (7.5, 2), (0.0, 1), (0.01, 10)):
        _observe_n(bulk.labels(stage="sent"), value, n)
        for _ in range(n):
            alone.labels(stage="sent").observe(value)
    assert samples(bulk) == pytest.approx(samples(alone))


# -- the parts of /status built after the observer (bgpadv.runtime.wiring) -------------------------------------------


def test_status_shows_the_late_parts_once_bound_and_they_bind_only_once(clock: ManualClock) -> None:
    """The controller, the speaker and the import report to the observer and are built after it: /status shows
    the observer's own model until their readers are bound, then what they say; a second binding is refused."""
    late = LateStatusParts()
    obs = MetricsObserver(
        Metrics(process_collectors=False), clock=clock.monotonic, wall_clock=clock.wall, status_parts=late
    )
    before = obs.status()
    assert not {"import", "placement", "bfd"} & set(before) and obs.sent_status is None
    late.bind(
        StatusParts(
            imported=lambda: {"networks": {}},
            placement=lambda: {"served": [PEER]},
            sent=lambda prefixes: {str(p): {} for p in prefixes},
        )
    )
    after = obs.status()
    assert (after["import"], after["placement"], "bfd" in after) == ({"networks": {}}, {"served": [PEER]}, False)
    assert obs.sent_status is not None and obs.sent_status([Prefix.parse("10.0.0.0/8")]) == {"10.0.0.0/8": {}}
    with pytest.raises(RuntimeError, match="bound already"):
        late.bind(StatusParts())
