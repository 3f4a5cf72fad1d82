"""The metrics listener over real HTTP on loopback, `bgpadv status` reading it, and the JSON log lines.

Scope: /metrics exposition (text and OpenMetrics), /healthz following the main loop's heartbeat, /readyz following
the initial sync and the peers, /status as JSON and as printed by `bgpadv.commands.status.main`.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import logging
import urllib.error
import urllib.request

import pytest

from bgpadv.commands import status as status_cli
from bgpadv.core.model import Cause, ObjectRef, Outcome, Plan, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.observe.health import HealthServer
from bgpadv.observe.logs import setup_logging
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.observe.observers import RouteChange
from tests.doubles import ManualClock

PEER = "10.0.0.1"
CLAIM = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms", "0b6a4c1e-2f4d-4b8e-9c1a-7d2e3f4a5b6c")
CUDN = ObjectRef("ClusterUserDefinedNetwork", "vmnet-a", uid="6f1c2a9e-0d6b-4d1e-9a52-1f7f0c2b8a01")
VM_A = Route(
    Prefix.parse("192.168.100.205/32"), Address.parse("192.0.2.11"), "vmnet-a", RouteKind.HOST, CLAIM, node="worker-1"
)
SUBNET = Route(Prefix.parse("192.168.100.0/24"), None, "vmnet-a", RouteKind.SUBNET, CUDN)


@pytest.fixture
def observer(clock: ManualClock) -> MetricsObserver:
    return MetricsObserver(Metrics(), clock=clock.monotonic)


@pytest.fixture
def server(observer: MetricsObserver):
    with HealthServer(("127.0.0.1", 0), observer.metrics.registry, observer, stale_after=10.0) as srv:
        yield srv


def get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def converge_one_change(observer: MetricsObserver) -> None:
    observer.peer_state(PEER, "up", 1.0)
    observer.planned(Outcome.of(Plan.build([SUBNET, VM_A], [])), Cause(10.0, 10.001), 0.001, True)
    announced = [RouteChange(PEER, "announce", SUBNET), RouteChange(PEER, "announce", VM_A)]
    observer.commands_written(1, announced, Cause(10.0, 10.001), at=10.002)
    observer.command_acked(1, True, at=10.003)
    observer.updates_sent(PEER, [Prefix.parse("192.168.100.205/32")], [], at=10.004)
    observer.synced(PEER, 2, at=10.005)


def test_metrics_endpoint_serves_the_registry_with_process_metrics(
    server: HealthServer, observer: MetricsObserver
) -> None:
    converge_one_change(observer)
    code, ctype, body = get(server.url + "/metrics")
    assert code == 200
    assert ctype.startswith("text/plain; version=0.0.4")
    assert 'bgpadv_convergence_seconds_bucket{kind="host",le="0.005",op="announce",stage="sent"} 1.0' in body
    assert 'bgpadv_routes_advertised{family="ipv4",kind="host",network="vmnet-a",peer="10.0.0.1"} 1.0' in body
    assert "process_cpu_seconds_total" in body
    assert "python_info" in body


def test_metrics_endpoint_speaks_openmetrics_when_asked(server: HealthServer) -> None:
    code, ctype, body = get(server.url + "/metrics", accept="application/openmetrics-text; version=1.0.0")
    assert code == 200
    assert ctype.startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF")


def test_healthz_follows_the_main_loop_heartbeat(server: HealthServer, clock: ManualClock) -> None:
    assert get(server.url + "/healthz")[0] == 200
    clock.now += 11.0  # the loop is stuck
    code, _, body = get(server.url + "/healthz")
    assert code == 503
    assert "main loop silent for 11.0s" in body
    server.heartbeat()
    assert get(server.url + "/healthz")[0] == 200


def test_readyz_waits_for_the_initial_sync_and_an_established_peer(
    server: HealthServer, observer: MetricsObserver
) -> None:
    code, _, body = get(server.url + "/readyz")
    assert (code, body.strip()) == (503, "initial sync not done (no plan yet)")
    observer.planned(Outcome.of(Plan.build([SUBNET], [])), None, 0.001, True)
    code, _, body = get(server.url + "/readyz")
    assert (code, body.strip()) == (503, "no BGP peer established")
    observer.peer_state(PEER, "up", 2.0)
    assert get(server.url + "/readyz")[:1] == (200,)


def test_status_is_json_with_peers_routes_and_convergence(server: HealthServer, observer: MetricsObserver) -> None:
    converge_one_change(observer)
    code, ctype, body = get(server.url + "/status")
    assert (code, ctype) == (200, "application/json")
    doc = json.loads(body)
    assert doc["peers"][PEER]["state"] == "up"
    assert doc["peers"][PEER]["routes_advertised"] == 2
    assert doc["routes"] == [  # what ExaBGP acknowledged holding, per peer
        {"peer": PEER, "network": "vmnet-a", "family": "ipv4", "kind": "host", "count": 1},
        {"peer": PEER, "network": "vmnet-a", "family": "ipv4", "kind": "subnet", "count": 1},
    ]
    assert doc["routes_planned"] == 2
    assert doc["convergence"]["sent"]["p50"] == pytest.approx(0.004)
    assert doc["ready"] == {"ok": True, "reason": "ok"}
    assert doc["alive"] == {"ok": True, "reason": "ok"}
    assert doc["version"] == importlib.metadata.version("bgpadv")


def test_unknown_paths_are_404(server: HealthServer) -> None:
    assert get(server.url + "/nope")[0] == 404


def test_the_observer_alone_is_enough_to_build_the_server(observer: MetricsObserver) -> None:
    with HealthServer(("127.0.0.1", 0), observer) as srv:
        assert srv.registry is observer.metrics.registry
        assert get(srv.url + "/metrics")[0] == 200


def test_bgpadv_status_prints_aligned_tables(server: HealthServer, observer: MetricsObserver) -> None:
    converge_one_change(observer)
    out = io.StringIO()
    assert status_cli.main(server.url, out=out) == 0
    text = out.getvalue()
    assert text.startswith(f"bgpadv {importlib.metadata.version('bgpadv')}  ready: yes  alive: yes\n")
    lines = text.splitlines()
    peer_header = next(i for i, line in enumerate(lines) if line.startswith("PEER"))
    header = ["PEER", "ASN", "NODE", "STATE", "UPTIME", "SENT", "RECEIVED", "REFUSED", "BFD"]
    assert lines[peer_header].split() == header
    row = lines[peer_header + 1].split()
    assert [row[0], row[3]] == [PEER, "up"] and row[5] == "2" and row[-1] == "disabled"
    assert lines[peer_header].index("SENT") + len("SENT") == lines[peer_header + 1].index(" 2 ") + 2
    assert any(line.split()[:5] == ["sent", "1", "4.0", "ms", "4.0"] for line in lines)
    assert "vmnet-a" in text and "total 2 routes held over all peers, 2 planned, 0 refused values" in text


def test_bgpadv_status_json_passthrough(server: HealthServer, observer: MetricsObserver) -> None:
    out = io.StringIO()
    assert status_cli.main(server.url, as_json=True, out=out) == 0
    assert json.loads(out.getvalue())["version"] == importlib.metadata.version("bgpadv")


def test_bgpadv_status_reports_an_unreachable_instance(capsys: pytest.CaptureFixture[str]) -> None:
    assert status_cli.main("http://127.0.0.1:9") == 1
    assert "cannot read http://127.0.0.1:9/status" in capsys.readouterr().err


def test_logs_are_one_json_object_per_line_with_extra_fields() -> None:
    stream = io.StringIO()
    handler = setup_logging("debug", json=True, stream=stream)
    try:
        logging.getLogger("bgpadv.speaker").info("peer %s up", PEER, extra={"peer": PEER, "routes": 12})
        try:
            raise ValueError("bad line")
        except ValueError:
            logging.getLogger("bgpadv.speaker").exception("parse failed")
    finally:
        logging.getLogger().removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["level"] == "info" and first["logger"] == "bgpadv.speaker" and first["msg"] == f"peer {PEER} up"
    assert first["peer"] == PEER and first["routes"] == 12
    assert first["ts"].endswith("Z") and "T" in first["ts"]
    assert second["level"] == "error" and "ValueError: bad line" in second["exc"]


def test_the_route_gauges_index_holds_one_label_tuple_per_label_set_and_forgets_a_withdrawn_one(
    observer: MetricsObserver,
) -> None:
    """At 100,000 routes the acknowledged-route index is per peer and shares one gauge-label tuple per label set
    (peer, network, family, kind): a label tuple, a family string and a key tuple per route cost 27 MiB at 100k
    routes, 5 MiB now (traced, one peer). Counts stay exact."""
    vms = [
        Route(Prefix.parse(f"192.168.100.{i}/32"), Address.parse("192.0.2.11"), "vmnet-a", RouteKind.HOST, CLAIM)
        for i in range(10, 20)
    ]
    observer.peer_state(PEER, "up", 1.0)
    observer.commands_written(1, [RouteChange(PEER, "announce", r) for r in vms], None, at=10.0)
    observer.command_acked(1, True, at=10.1)
    model = observer.model
    # the index's sharing and emptiness are memory, which no public reading shows (the counts are checked too)
    labels = {id(v) for v in model._held[PEER].values()}
    assert len(model._held[PEER]) == 10 and len(labels) == 1
    assert model.status({}, {})["peers"][PEER]["routes_sent"] == 10
    observer.commands_written(2, [RouteChange(PEER, "withdraw", r) for r in vms], None, at=11.0)
    observer.command_acked(2, True, at=11.1)
    assert model._held[PEER] == {} and model._label_sets == {}
    assert model.status({}, {})["peers"][PEER]["routes_sent"] == 0
    flap = [RouteChange(PEER, "announce", vms[1]), RouteChange(PEER, "withdraw", vms[1])]  # within one command
    observer.commands_written(3, flap, None, at=12.0)
    observer.command_acked(3, True, at=12.1)
    assert model._held[PEER] == {} and model._label_sets == {}
    observer.commands_written(4, [RouteChange(PEER, "announce", vms[0])], None, at=13.0)
    observer.command_acked(4, True, at=13.1)
    model.forget_peer(PEER)
    assert PEER not in model._held and model._label_sets == {}
