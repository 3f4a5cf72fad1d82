"""BGPSessionState: the object built from a session's status, and the writer against the fake apiserver.

Scope: a status model fed the way the speaker feeds it (a session up, UPDATEs acknowledged, a NOTIFICATION received,
the session down) gives the object `kubectl get bgpsessionstates` shows (peer, ASN, node, state, uptime, routes,
BFD, last error and NOTIFICATION); the writer creates one object per served peer with an ownerReference to its pod,
writes a state change at once and counters at most every interval, and deletes the object of a peer no longer
served; `bgpadv status --all` reads them back.
"""

from __future__ import annotations

import io

import pytest
from kubernetes import client

from bgpadv.commands import status as status_command
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver, StatusParts
from bgpadv.observe.sessionstate import API_VERSION, KIND, object_name, session_object
from bgpadv.sources.sessionstate import Identity, SessionStateWriter, list_session_states
from bgpadv_lab.fakeapi import FakeApiServer

PEER = "10.0.0.1"
IDENT = Identity("bgpadv-7d9f8-x2k4p", "bgpadv", "0f5e2a3c-8d1b-4e7a-9c3d-5b6a7e8f9a01")
INFO = {PEER: {"asn": 64512, "address": PEER, "localASN": 64513, "node": "worker-1"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def observed():
    wall = Clock()
    wall.now = 1_796_000_000.0
    m = MetricsObserver(
        Metrics(process_collectors=False), wall_clock=wall, status_parts=StatusParts(sessions=lambda: INFO)
    )
    m.set_peers([PEER])
    return m, wall


def test_the_object_says_what_status_says_of_the_session(observed):
    m, wall = observed
    m.peer_state(PEER, "up", 0.0)
    wall.now += 125
    m.notification(PEER, "receive", 6, 2, "maintenance", 0.0)
    m.peer_state(PEER, "down", 0.0)
    peer = m.status()["peers"][PEER]
    obj = session_object(IDENT.instance, IDENT.namespace, PEER, peer, wall.now, IDENT.owner)
    assert obj["apiVersion"] == API_VERSION and obj["kind"] == KIND
    assert obj["metadata"]["name"] == "bgpadv-7d9f8-x2k4p.10.0.0.1"
    assert obj["metadata"]["ownerReferences"][0]["uid"] == IDENT.pod_uid
    assert obj["spec"] == {
        "instance": IDENT.instance,
        "peer": PEER,
        "peerAddress": PEER,
        "peerASN": 64512,
        "localASN": 64513,
        "node": "worker-1",
    }
    st = obj["status"]
    assert st["state"] == "down" and "establishedTime" not in st
    assert st["bfd"] == "disabled"
    assert st["lastNotification"] == {
        "time": "2026-11-30T00:55:25Z",
        "direction": "receive",
        "code": 6,
        "subcode": 2,
        "message": "maintenance",
    }
    assert st["lastError"]["message"] == "NOTIFICATION received: 6/2 Cease (Administrative Shutdown): maintenance"
    assert st["routes"] == {"sent": 0}  # received/refused: unknown without importRoutes


@pytest.mark.parametrize(
    ("peer", "name"),
    [
        pytest.param("10.0.0.1", "pod-a.10.0.0.1", id="ipv4"),
        pytest.param("fd00:10::1", "pod-a.fd00-10-1-", id="ipv6-hashed"),
    ],
)
def test_names_are_valid_object_names_and_never_shared(peer, name):
    assert object_name("pod-a", peer).startswith(name)
    assert object_name("pod-a", "fd00:10::1") != object_name("pod-a", "fd00-10--1")


def test_the_writer_creates_updates_rate_limits_and_deletes(observed):
    m, wall = observed
    mono = Clock()
    with FakeApiServer() as api:
        api_client = client.ApiClient(client.Configuration(host=api.url))
        # the status's wall clock and the writer's are one, as in the service: the establishment time the writer
        # derives (its now less the status's uptime) then stays put between passes, however slow the machine
        writer = SessionStateWriter(api_client, IDENT, m.status, interval=30.0, clock=mono, wall_clock=wall)
        writer.sync()
        (obj,) = api.list(API_VERSION, KIND, "bgpadv")
        assert obj["status"]["state"] == "idle"
        assert obj["metadata"]["ownerReferences"][0]["name"] == IDENT.instance

        m.peer_state(PEER, "up", 0.0)  # a state change: written at once
        mono.now += 1
        writer.sync()
        (obj,) = api.list(API_VERSION, KIND, "bgpadv")
        assert obj["status"]["state"] == "up" and obj["status"]["establishedTime"]
        writes = writer.counts["updated"]

        m.model._route_counts[(PEER, "vmnet-a", "ipv4", "host")] = 3  # counters: not before the interval
        mono.now += 5
        writer.sync()
        assert writer.counts["updated"] == writes
        mono.now += 30
        writer.sync()
        (obj,) = api.list(API_VERSION, KIND, "bgpadv")
        assert obj["status"]["routes"]["sent"] == 3

        out = io.StringIO()
        table = status_command.render_all(list_session_states(api_client), mono.now)
        out.write(table)
        assert "bgpadv-7d9f8-x2k4p  10.0.0.1  64512  worker-1  up" in table

        m.set_peers([])  # the peer is no longer served: its object goes
        writer.sync()
        assert api.list(API_VERSION, KIND, "bgpadv") == []
        assert writer.counts == {"created": 1, "updated": writer.counts["updated"], "deleted": 1, "failed": 0}


def test_a_missing_crd_is_retried_never_raised(observed):
    m, _ = observed
    with FakeApiServer() as api:
        api.set_installed("bgpadv.io", False)
        writer = SessionStateWriter(client.ApiClient(client.Configuration(host=api.url)), IDENT, m.status)
        writer.sync()
        assert writer.counts["failed"] == 1 and api.list(API_VERSION, KIND, "bgpadv") == []
