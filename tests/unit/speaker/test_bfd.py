"""BFD per peer: the `peers[].bfd` keys, bfdd's control protocol, the per-peer states, the client
keeping bfdd's sessions (against a fake bfdd on a unix socket), and the importer taking a peer's routes out of the
VRF tables on a BFD failure. The real bfdd and a real FRR ToR: tests/lab/test_bfd.py.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path

import pytest

from bgpadv.config import ConfigError, parse
from bgpadv.importer.reconciler import Importer
from bgpadv.observe.metrics import Metrics
from bgpadv.speaker import bfd
from bgpadv.speaker.protocol import PeerState
from tests.unit.importer.kernel import DEFAULT, FABRIC, TOR, VIA_TOR, FakeKernel, config, update
from tests.unit.importer.kernel import started as started_importer


def peers(*entries: dict) -> dict:
    return {"localASN": 64513, "peers": list(entries)}


TOR_A = {"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11"}
TOR_B = {"address": "10.0.1.1", "asn": 64512}


# -- configuration ----------------------------------------------------------------------------------------------------


def test_bfd_is_off_by_default_and_its_defaults_are_300_ms_times_3():
    p = parse(peers({**TOR_A, "bfd": {"enabled": True}})).peers[0]
    assert (p.bfd.enabled, p.bfd.min_rx, p.bfd.min_tx, p.bfd.multiplier) == (True, 300, 300, 3)
    assert parse(peers(TOR_A)).peers[0].bfd.enabled is False


@pytest.mark.parametrize(
    ("bfd_keys", "extra", "expected"),
    [
        pytest.param({"minRx": 5}, {}, "peers[0].bfd.minRx: must be between 10 and 60000", id="min-rx-too-small"),
        pytest.param({"multiplier": 1}, {}, "peers[0].bfd.multiplier: must be between 2 and 255", id="multiplier"),
        pytest.param({"enabled": "yes"}, {}, "peers[0].bfd.enabled", id="not-a-bool"),
        pytest.param({"minrx": 100}, {}, "peers[0].bfd.minrx: unknown field", id="unknown-key"),
        pytest.param(
            {"enabled": True}, {"ebgpMultihop": 3}, "peers[0].bfd.enabled: is single-hop BFD", id="multihop-peer"
        ),
    ],
)
def test_bad_bfd_keys_are_field_errors(bfd_keys, extra, expected):
    with pytest.raises(ConfigError) as e:
        parse(peers({**TOR_A, **extra, "bfd": bfd_keys}))
    assert any(line.startswith(expected) for line in str(e.value).splitlines()), str(e.value)


def test_one_session_per_bfd_peer_with_its_timers():
    config = parse(peers({**TOR_A, "bfd": {"enabled": True, "minRx": 100, "minTx": 200, "multiplier": 5}}, TOR_B))
    assert bfd.sessions_of(config.peers) == {
        "10.0.0.1": bfd.BfdSession("10.0.0.1", "10.0.0.1", "10.0.0.11", 100, 200, 5)
    }


# -- protocol ---------------------------------------------------------------------------------------------------------


def test_a_request_is_a_header_and_json_keyed_by_family():
    s = bfd.BfdSession("10.0.0.1", "10.0.0.1", "10.0.0.11", 100, 200, 5)
    data = bfd.request(bfd.REQUEST_ADD, 7, [s])
    length, rid, kind, version = bfd.HEADER.unpack_from(data)
    assert (rid, kind, version, length) == (7, bfd.REQUEST_ADD, 1, len(data) - bfd.HEADER.size)
    assert json.loads(data[bfd.HEADER.size :]) == {
        "ipv4": [
            {
                "peer-address": "10.0.0.1",
                "multihop": False,
                "local-address": "10.0.0.11",
                "receive-interval": 100,
                "transmit-interval": 200,
                "detect-multiplier": 5,
            }
        ]
    }


def test_the_decoder_splits_a_stream_at_any_boundary_and_drops_what_is_not_json():
    stream = bfd.encode(bfd.NOTIFY, 0, b'{"op":"status","state":"up"}') + bfd.encode(bfd.NOTIFY, 0, b"[1]")
    stream += bfd.encode(bfd.RESPONSE, 3, b'{"status":"ok"}')
    d = bfd.Decoder()
    messages = [m for i in range(len(stream)) for m in d.feed(stream[i : i + 1])]
    assert [(m.request_id, m.kind, m.data) for m in messages] == [
        (0, bfd.NOTIFY, {"op": "status", "state": "up"}),
        (3, bfd.RESPONSE, {"status": "ok"}),
    ]
    assert d.malformed == 1


# -- states -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transitions", "failed"),
    [
        pytest.param(["down", "init"], False, id="never-up-is-no-failure"),
        pytest.param(["up", "down"], True, id="down-after-up"),
        pytest.param(["up", "down", "init"], True, id="still-failed-while-coming-back"),
        pytest.param(["up", "down", "up"], False, id="recovered"),
        pytest.param(["up", "adm-down"], False, id="admin-down-is-no-failure"),
    ],
)
def test_a_failure_is_a_down_after_up(transitions, failed):
    states = bfd.BfdStates()
    states.set_peers(["10.0.0.1"])
    for i, state in enumerate(transitions):
        states.update("10.0.0.1", state, 1 if state == "down" else 0, float(i))
    assert states.failed("10.0.0.1") is failed


def test_bfdd_unreachable_makes_every_state_unknown_and_no_failure():
    states = bfd.BfdStates()
    states.set_peers(["10.0.0.1"])
    states.update("10.0.0.1", "up", 0, 1.0)
    states.update("10.0.0.1", "down", 1, 2.0)
    assert states.unreachable(3.0) == ["10.0.0.1"]
    assert states.snapshot()["10.0.0.1"] == bfd.BfdPeerState("unknown", 0, 3.0, False)


# -- the client against a fake bfdd ------------------------------------------------------------------------------------


class FakeBfdd:
    """A unix socket speaking bfdd's control protocol: records requests, answers ok, sends what the test says."""

    def __init__(self, path: Path) -> None:
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(1)
        self.conn: socket.socket | None = None
        self.requests: list[tuple[int, dict]] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.conn, _ = self.server.accept()
        with contextlib.suppress(OSError):  # the client closed with an answer unread: a reset, as bfdd would see
            self._read(self.conn)

    def _read(self, conn: socket.socket) -> None:
        buffer = b""
        while chunk := conn.recv(65536):
            buffer += chunk
            while len(buffer) >= bfd.HEADER.size:
                length, rid, kind, _ = bfd.HEADER.unpack_from(buffer)
                if len(buffer) < bfd.HEADER.size + length:
                    break
                payload, buffer = buffer[bfd.HEADER.size : bfd.HEADER.size + length], buffer[bfd.HEADER.size + length :]
                conn.sendall(bfd.encode(bfd.RESPONSE, rid, b'{"status":"ok"}'))
                data = {} if kind == bfd.NOTIFY else json.loads(payload)  # NOTIFY: 8 bytes of flags, not JSON
                with self.changed:
                    self.requests.append((kind, data))
                    self.changed.notify_all()

    def wait_requests(self, n: int) -> list[tuple[int, dict]]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.requests) >= n, 5), self.requests
            return list(self.requests)

    def notify(self, **data: object) -> None:
        assert self.conn is not None
        self.conn.sendall(bfd.encode(bfd.NOTIFY, 0, json.dumps({"op": "status", **data}).encode()))


def session(address: str, rx: int = 300) -> bfd.BfdSession:
    return bfd.BfdSession(address, address, None, rx, 300, 3)


def test_the_client_subscribes_adds_its_sessions_reports_states_and_sends_only_changes(tmp_path):
    fake = FakeBfdd(tmp_path / "bfdd.sock")
    states = bfd.BfdStates()
    seen: list[tuple[str, str, bool]] = []
    control = bfd.BfdControl(tmp_path / "bfdd.sock", states, lambda p, s: seen.append((p, s.state, s.failed)))
    control.set_desired({"10.0.0.1": session("10.0.0.1"), "10.0.1.1": session("10.0.1.1")})
    control.start()
    try:
        kinds = [k for k, _ in fake.wait_requests(2)]
        assert kinds == [bfd.NOTIFY, bfd.REQUEST_ADD]
        assert [p["peer-address"] for p in fake.requests[1][1]["ipv4"]] == ["10.0.0.1", "10.0.1.1"]
        # a reload: 10.0.1.1 leaves, 10.0.0.1 changes its timers, 10.0.2.1 comes; nothing else is sent
        control.set_desired({"10.0.0.1": session("10.0.0.1", rx=100), "10.0.2.1": session("10.0.2.1")})
        (_, deleted), (_, added) = fake.wait_requests(4)[2:]
        assert [p["peer-address"] for p in deleted["ipv4"]] == ["10.0.1.1"]
        assert [(p["peer-address"], p["receive-interval"]) for p in added["ipv4"]] == [
            ("10.0.0.1", 100),
            ("10.0.2.1", 300),
        ]
        fake.notify(**{"peer-address": "10.0.0.1", "state": "up", "diagnostics": 0})
        fake.notify(**{"peer-address": "10.0.0.1", "state": "down", "diagnostics": 1})
        fake.notify(**{"peer-address": "192.0.2.9", "state": "up", "local-address": "10.0.0.11"})  # nobody's
        (_, stray) = fake.wait_requests(5)[4]
        assert stray == {"ipv4": [{"peer-address": "192.0.2.9", "multihop": False, "local-address": "10.0.0.11"}]}
        assert seen == [("10.0.0.1", "up", False), ("10.0.0.1", "down", True)]
        assert states.failed("10.0.0.1") and not states.failed("10.0.2.1")
    finally:
        control.stop()


# -- the importer ------------------------------------------------------------------------------------------------------


def test_a_bfd_failure_takes_the_peers_routes_out_of_the_tables_at_once_and_they_come_back_with_it():
    kernel = FakeKernel()
    imp = started_importer(kernel, config(gr=120))
    imp.handle(update(DEFAULT, FABRIC), 1.0)
    imp.bfd_failed(TOR, True, 2.0)  # no graceful-restart wait: BFD says the path is gone
    assert kernel.tables[1001] == {}
    imp.handle(update(withdrawn=[FABRIC]), 2.5)  # still learned while BFD is down
    imp.bfd_failed(TOR, False, 3.0)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}


def test_a_bfd_failure_then_the_session_down_keeps_nothing_installed_until_both_are_back():
    kernel = FakeKernel()
    imp: Importer = started_importer(kernel, config(gr=120))
    imp.handle(update(DEFAULT), 1.0)
    imp.bfd_failed(TOR, True, 2.0)
    imp.handle(PeerState(TOR, "down"), 2.1)
    assert kernel.tables[1001] == {}
    imp.handle(PeerState(TOR, "up"), 5.0)
    imp.handle(update(DEFAULT), 5.1)
    assert kernel.tables[1001] == {}
    imp.bfd_failed(TOR, False, 5.2)
    assert kernel.tables[1001] == {DEFAULT: VIA_TOR}


def test_the_bfd_gauge_has_a_series_per_bfd_peer_only():
    from bgpadv.observe.metrics_observer import MetricsObserver

    m = MetricsObserver(Metrics(process_collectors=False))
    m.bfd_peers(["10.0.0.1"])
    m.bfd_state("10.0.0.1", True)
    m.bfd_state("10.0.1.1", True)  # no BFD there: no series
    assert m.metrics.registry.get_sample_value("bgpadv_bfd_session_up", {"peer": "10.0.0.1"}) == 1
    m.bfd_peers([])
    assert not [s for s in m.metrics.bfd_up.collect()[0].samples]


# -- the peer reported down while BFD is failed ---------------------------------------------------------------------

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


class BfdObserved:
    """A `MetricsObserver` serving one BFD peer, as `bgpadv.runtime.wiring` wires it: `bfd` is what bfdd says
    (`/status`'s `bfd` section), `change` what the controller's loop hands on (`bfd_changed`)."""

    def __init__(self) -> None:
        from bgpadv.core.model import Outcome
        from bgpadv.observe.metrics_observer import MetricsObserver, StatusParts

        self.bfd = "up"
        parts = StatusParts(
            bfd=lambda: {"10.0.0.1": {"state": self.bfd, "diagnostic": 1, "since": NOW, "failed": True}},
            sessions=lambda: {"10.0.0.1": {"asn": 64512, "address": "10.0.0.1", "localASN": 64513, "node": "w1"}},
        )
        self.m = m = MetricsObserver(Metrics(process_collectors=False), wall_clock=lambda: NOW, status_parts=parts)
        m.set_peers(["10.0.0.1"])
        m.planned(Outcome(), None, 0.0, True)

    def change(self, state: str, failed: bool, diagnostic: int = 0) -> None:
        self.bfd = state
        self.m.bfd_changed("10.0.0.1", state, failed, diagnostic, 0.0)

    @property
    def peer_up(self) -> float:
        return self.m.metrics.registry.get_sample_value("bgpadv_peer_up", {"peer": "10.0.0.1"})

    @property
    def transitions(self) -> float:
        return self.m.metrics.registry.get_sample_value("bgpadv_peer_transitions_total", {"peer": "10.0.0.1"})

    @property
    def peer(self) -> dict:
        return self.m.status()["peers"]["10.0.0.1"]


def test_a_bfd_failure_reports_the_peer_down_everywhere_with_bfd_as_the_reason_while_bgp_is_still_up():
    o = BfdObserved()
    o.m.peer_state("10.0.0.1", "up", 1.0)
    assert (o.peer_up, o.m.ready()) == (1, (True, "ok"))
    o.change("down", True, 1)  # control detection time expired; ExaBGP's session is still up
    assert (o.peer_up, o.transitions) == (0, 2)
    assert o.m.ready() == (False, "no BGP peer established (BFD down: 10.0.0.1)")
    peer = o.peer
    assert (peer["state"], peer["bgp_state"], peer["bfd"], peer["uptime_seconds"]) == ("down", "up", "down", None)
    assert peer["last_error"]["message"] == (
        "BFD down: control detection time expired (the BGP session is still up: the peer is taken as down, its "
        "routes are not imported)"
    )


def test_the_session_state_object_and_bgpadv_status_say_down_with_bfd_down_and_why():
    from bgpadv.commands.status import render_sessions
    from bgpadv.observe.sessionstate import session_object

    o = BfdObserved()
    o.m.peer_state("10.0.0.1", "up", 1.0)
    o.change("down", True, 1)
    peers = o.m.status()["peers"]
    obj = session_object("bgpadv-x", "bgpadv", "10.0.0.1", peers["10.0.0.1"], NOW)
    assert (obj["status"]["state"], obj["status"]["bfd"]) == ("down", "down")
    assert obj["status"]["lastError"]["message"].startswith("BFD down: control detection time expired")
    header, row, *notes = render_sessions(peers)
    assert dict(zip(header.split(), row.split(), strict=True)) == {
        "PEER": "10.0.0.1",
        "ASN": "64512",
        "NODE": "w1",
        "STATE": "down",
        "UPTIME": "-",
        "SENT": "0",
        "RECEIVED": "-",
        "REFUSED": "-",
        "BFD": "down",
    }
    assert notes[0].startswith("  10.0.0.1 last error (2027-01-15T08:00:00Z): BFD down: control detection time")


def test_bfd_back_up_gives_the_peer_back_to_bgps_state():
    o = BfdObserved()
    o.m.peer_state("10.0.0.1", "up", 1.0)
    o.change("down", True, 1)
    o.change("init", True)  # coming back: still failed, nothing moves
    assert (o.peer_up, o.transitions) == (0, 2)
    o.change("up", False)
    assert (o.peer_up, o.transitions, o.m.ready(), o.peer["state"]) == (1, 3, (True, "ok"), "up")


def test_bgp_coming_back_before_bfd_does_not_report_the_peer_up():
    o = BfdObserved()
    o.m.peer_state("10.0.0.1", "up", 1.0)
    o.change("down", True, 1)
    o.m.peer_state("10.0.0.1", "down", 2.1)  # the ToR's bgpd follows its own BFD: a Cease
    o.m.peer_state("10.0.0.1", "up", 4.0)
    assert (o.peer_up, o.peer["state"], o.m.ready()[0]) == (0, "down", False)
    o.change("up", False)
    assert o.peer_up == 1


def test_a_bfd_session_that_was_never_up_takes_nothing_down():
    o = BfdObserved()
    o.m.peer_state("10.0.0.1", "up", 1.0)
    o.change("down", False)  # down from the start (the ToR has no `neighbor X bfd`): no failure
    assert (o.peer_up, o.peer["state"], o.peer["last_error"]) == (1, "up", None)


class RecordingBfdImporter:
    """The controller's side of the importer for BFD: the failures it is told about."""

    def __init__(self) -> None:
        self.failed: list[tuple[str, bool]] = []

    def tick(self, now: float) -> None:
        pass

    def bfd_failed(self, peer: str, failed: bool, at: float) -> None:
        self.failed.append((peer, failed))


def test_the_controller_hands_a_bfd_change_to_the_importer_and_the_observers():
    from bgpadv.runtime.controller import Controller, LoopSettings
    from tests.doubles import RecordingObserver, RecordingSources, RecordingSpeaker

    class Seen(RecordingObserver):
        def __init__(self) -> None:
            super().__init__()
            self.bfd: list[tuple[str, str, bool, int]] = []

        def bfd_changed(self, peer: str, state: str, failed: bool, diagnostic: int, at: float) -> None:
            self.bfd.append((peer, state, failed, diagnostic))

    observer = Seen()
    importer = RecordingBfdImporter()
    c = Controller(
        parse(peers({**TOR_A, "bfd": {"enabled": True}})),
        speaker=RecordingSpeaker(),
        sources=RecordingSources(),
        observer=observer,
        settings=LoopSettings(coalesce_window=0.0),
        importer=importer,  # type: ignore[arg-type]
    )
    c.bfd_changed("10.0.0.1", True, "down", 1)  # from the BFD client's thread
    c.step()
    assert importer.failed == [("10.0.0.1", True)]
    assert observer.bfd == [("10.0.0.1", "down", True, 1)]


def test_the_session_state_writer_writes_at_once_on_a_bfd_change():
    from bgpadv.sources.sessionstate import Identity, SessionStateWriter

    writer = SessionStateWriter(None, Identity("bgpadv-x", "bgpadv"), dict)
    writer.bfd_changed("10.0.0.1", "down", True, 1, 2.0)
    assert writer._wake.is_set()  # woken, not waiting for its interval: the write itself needs the apiserver
