"""When each peer was last sent each prefix: the speaker's send log (bgpadv.speaker.sent), the listener's /sent,
and `bgpadv explain --status-url` printing it.

Scope: a send is recorded when ExaBGP acknowledges it (`done`), never when it is written or refused (`error`); a
withdrawal replaces the announcement; the withdrawals kept are bounded, oldest dropped first; the monotonic times
of the ack and of the cause become wall-clock times; /sent answers per prefix and peer, refuses bad or too many
prefixes with 400; explain prints "sent to PEER at TIME (announce)" for the route it explains.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bgpadv.commands import explain
from bgpadv.config import PeerConfig
from bgpadv.core.model import Cause, ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.observe.health import MAX_SENT_QUERY, HealthServer
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver, StatusParts
from bgpadv.speaker.sent import ANNOUNCE, SendLog, utc
from bgpadv.speaker.session import Speaker

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config" / "bgpadv.yaml"
EXAMPLES = ROOT / "config" / "examples"

TOR_A = PeerConfig(address=Address.parse("10.0.0.1"), asn=64512)  # a peer is named by its address
TOR_B = PeerConfig(address=Address.parse("10.0.0.2"), asn=64512)
W1 = Address.parse("192.0.2.11")
CLAIM = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms", "0b6a4c1e-2f4d-4b8e-9c1a-7d2e3f4a5b6c")
WALL_AT_MONO_0 = 1_796_212_800.0  # 2026-12-02T12:00:00Z is wall clock at monotonic 0 in these tests


def vm_route(prefix: str = "192.168.100.205/32") -> Route:
    return Route(Prefix.parse(prefix), W1, "vmnet-a", RouteKind.HOST, CLAIM, node="worker-1")


class Clocks:
    """A wall clock and a monotonic clock a fixed offset apart (the send log converts between them)."""

    def __init__(self) -> None:
        self.mono = 100.0

    def monotonic(self) -> float:
        return self.mono

    def wall(self) -> float:
        return WALL_AT_MONO_0 + self.mono


def ready_speaker(clocks: Clocks, peers=(TOR_A, TOR_B)) -> tuple[Speaker, list[str]]:
    written: list[str] = []
    sent = SendLog([p.name for p in peers], wall=clocks.wall, monotonic=clocks.monotonic)
    speaker = Speaker(list(peers), written.append, local_asn=64513, sent=sent)
    speaker.start()
    speaker.handle_line(json.dumps([{"state": "up", "peer": {"address": str(p.address)}} for p in peers]), at=1.0)
    speaker.handle_line("done", at=1.0)  # show neighbor
    speaker.handle_line("done", at=1.0)  # show adj-rib out
    assert speaker.ready
    written.clear()
    return speaker, written


def answer(speaker: Speaker, written: list[str], reply: str, at: float) -> None:
    for _ in range(speaker.inflight):
        speaker.handle_line(reply, at=at)
    written.clear()


def test_a_send_is_recorded_when_exabgp_acknowledges_it_not_when_it_is_written():
    clocks = Clocks()
    speaker, written = ready_speaker(clocks)
    route = vm_route()
    speaker.set_desired({TOR_A.name: [route], TOR_B.name: [route]}, Cause(received_at=110.0, planned_at=110.5))
    assert written and speaker.sent.last(route.prefix.key) == {}
    answer(speaker, written, "done", at=111.0)
    last = speaker.sent.last(route.prefix.key)
    assert sorted(last) == ["10.0.0.1", "10.0.0.2"]
    assert last[TOR_A.name].as_json() == {
        "action": "announce",
        "at": "2026-12-02T12:01:51.000Z",
        "causeReceivedAt": "2026-12-02T12:01:50.000Z",
        "causePlannedAt": "2026-12-02T12:01:50.500Z",
    }


def test_a_withdrawal_replaces_the_announcement_and_a_refused_command_records_nothing():
    clocks = Clocks()
    speaker, written = ready_speaker(clocks, peers=(TOR_A,))
    kept, gone = vm_route("192.168.100.10/32"), vm_route("192.168.100.205/32")
    speaker.set_desired({TOR_A.name: [kept, gone]})
    answer(speaker, written, "done", at=120.0)
    speaker.set_desired({TOR_A.name: [kept]})
    answer(speaker, written, "done", at=130.0)
    assert speaker.sent.last(gone.prefix.key)[TOR_A.name].action == "withdraw"
    assert speaker.sent.last(gone.prefix.key)[TOR_A.name].at == WALL_AT_MONO_0 + 130.0
    assert speaker.sent.last(gone.prefix.key)[TOR_A.name].received_at is None  # no cause given
    assert speaker.sent.last(kept.prefix.key)[TOR_A.name].action == "announce"

    speaker.set_desired({TOR_A.name: [kept, gone]})
    answer(speaker, written, "error", at=140.0)  # ExaBGP refused the re-announcement
    assert speaker.sent.last(gone.prefix.key)[TOR_A.name].action == "withdraw", "an error is not a send"


def test_withdrawals_kept_are_bounded_the_oldest_dropped_first():
    clocks = Clocks()
    log = SendLog(["tor-a"], keep_withdrawn=3, wall=clocks.wall, monotonic=clocks.monotonic)
    keys = [Prefix.parse(f"192.168.100.{i}/32").key for i in range(6)]
    log.acked("tor-a", "announce", keys, None, at=1.0)
    for i, key in enumerate(keys):
        log.acked("tor-a", "withdraw", [key], None, at=2.0 + i)
    assert log.sizes() == {"tor-a": 4}  # over 3 + 3 // 2: cut back to the newest 3 (the last withdrawal made 4)
    assert [bool(log.last(k)) for k in keys] == [False, False, True, True, True, True]
    log.acked("tor-a", "announce", [keys[3]], None, at=10.0)  # announced again after its withdrawal: the newer wins
    assert log.last(keys[3])["tor-a"].action == "announce"
    log.acked("unknown-peer", "announce", keys, None, at=11.0)  # not a configured peer: ignored
    assert "unknown-peer" not in log.last(keys[0])


def test_utc_prints_milliseconds_and_a_z():
    assert utc(WALL_AT_MONO_0 + 0.25) == "2026-12-02T12:00:00.250Z"


@pytest.fixture
def sending_server():
    """A listener whose observer serves a send log holding 192.168.100.205/32 announced to tor-a."""
    clocks = Clocks()
    log = SendLog(["tor-a", "tor-b"], wall=clocks.wall, monotonic=clocks.monotonic)
    log.acked("tor-a", "announce", [vm_route().prefix.key], Cause(99.0, 99.5), at=100.0)
    observer = MetricsObserver(Metrics(), status_parts=StatusParts(sent=log.report))
    with HealthServer(("127.0.0.1", 0), observer) as server:
        yield server


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_sent_answers_per_prefix_and_peer(sending_server: HealthServer):
    code, body = get(sending_server.url + "/sent?prefix=192.168.100.205/32&prefix=192.168.100.9")
    assert code == 200
    assert json.loads(body) == {
        "prefixes": {
            "192.168.100.205/32": {
                "tor-a": {
                    "action": "announce",
                    "at": "2026-12-02T12:01:40.000Z",
                    "causeReceivedAt": "2026-12-02T12:01:39.000Z",
                    "causePlannedAt": "2026-12-02T12:01:39.500Z",
                }
            },
            "192.168.100.9/32": {},
        }
    }


@pytest.mark.parametrize(
    ("query", "message"),
    [
        pytest.param("", "give ?prefix=", id="none"),
        pytest.param("prefix=10.0.0.300", "10.0.0.300", id="bad-address"),
        pytest.param("prefix=" + "%0a" * 10, "prefix", id="control-characters"),
        pytest.param("&".join(["prefix=10.0.0.1"] * (MAX_SENT_QUERY + 1)), "at most", id="too-many"),
    ],
)
def test_sent_refuses_bad_queries_with_400(sending_server: HealthServer, query: str, message: str):
    code, body = get(sending_server.url + "/sent?" + query)
    assert code == 400
    assert message in body


def test_sent_is_404_on_an_instance_without_a_send_log():
    with HealthServer(("127.0.0.1", 0), MetricsObserver(Metrics())) as server:
        assert get(server.url + "/sent?prefix=10.0.0.1")[0] == 404


def test_explain_prints_when_each_peer_was_sent_the_route(sending_server: HealthServer, capsys):
    code = explain.main("192.168.100.205", str(CONFIG), [str(EXAMPLES)], status_urls=[sending_server.url])
    out = capsys.readouterr().out
    assert code == 0
    assert (
        "    192.168.100.205/32: sent to tor-a at 2026-12-02T12:01:40.000Z (announce), "
        "change seen 2026-12-02T12:01:39.000Z\n"
    ) in out
    assert "    192.168.100.0/24: never sent to any peer by this instance\n" in out  # the subnet holding it


def test_explain_json_carries_the_sends(sending_server: HealthServer, capsys):
    assert (
        explain.main("192.168.100.205", str(CONFIG), [str(EXAMPLES)], status_urls=[sending_server.url], output="json")
        == 0
    )
    (instance,) = json.loads(capsys.readouterr().out)["instances"]
    assert instance["sent"]["192.168.100.205/32"]["tor-a"]["action"] == "announce"


def test_a_peer_added_live_gets_a_record_and_a_removed_one_loses_it() -> None:
    log = SendLog(["10.0.0.1"], wall=lambda: 1000.0, monotonic=lambda: 0.0)
    key = Prefix.parse("192.168.100.205/32").key
    log.acked("10.0.0.1", ANNOUNCE, [key], None, 1.0)
    log.set_peers(["10.0.0.1", "10.0.0.2"])
    log.acked("10.0.0.2", ANNOUNCE, [key], None, 1.0)
    assert sorted(log.last(key)) == ["10.0.0.1", "10.0.0.2"]
    log.set_peers(["10.0.0.2"])
    assert sorted(log.last(key)) == ["10.0.0.2"]
