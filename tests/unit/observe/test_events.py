"""EventRecorder against the fake apiserver, through the official client: refusals become Warning Events.

Scope: the Event's shape (reason, message, involvedObject with uid, namespace for cluster-scoped objects),
deduplication and the once-per-interval count bump, re-creation after the apiserver expired an Event, the bounded
queue, the token bucket, and that API failures never reach the caller.
"""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from bgpadv.core.model import ObjectRef, Outcome, Plan, Refusal
from bgpadv.observe.events import EventRecorder, TokenBucket, event_reason
from bgpadv_lab.fakeapi import FakeApiServer
from tests.doubles import ManualClock

CLAIM_A = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms", "0b6a4c1e-2f4d-4b8e-9c1a-7d2e3f4a5b6c")
CLAIM_B = ObjectRef("IPAMClaim", "vm-b.default", "imported-vms", "8d3e1f2a-5b6c-4d7e-8f9a-0b1c2d3e4f5a")
CUDN_A = ObjectRef("ClusterUserDefinedNetwork", "vmnet-a", uid="6f1c2a9e-0d6b-4d1e-9a52-1f7f0c2b8a01")
NODE_3 = ObjectRef("Node", "worker-3", uid="c1d2e3f4-a5b6-4c7d-8e9f-a0b1c2d3e4f5")

GATEWAY = Refusal(CLAIM_A, "192.168.100.1/24", "default-gateway-address", "the network's default gateway IP", "vmnet-a")
OUTSIDE = Refusal(CLAIM_B, "10.9.9.9/24", "outside-network-subnets", "not inside 192.168.100.0/24", "vmnet-a")
SUBNET_CONFLICT = Refusal(
    CUDN_A, "10.0.0.0/8", "network-not-advertisable", "Localnet networks cannot be advertised", "vmnet-a"
)
NO_ADDRESS = Refusal(NODE_3, "", "no-node-address", "the node has no InternalIP of this family")


@pytest.fixture
def api():
    with FakeApiServer() as server:
        yield server


@pytest.fixture
def api_client(api: FakeApiServer):
    conf = k8s.Configuration(host=api.url)
    with k8s.ApiClient(conf) as c:
        yield c


@pytest.fixture
def recorder(api_client, clock: ManualClock):
    rec = EventRecorder(api_client, host="bgpadv-7d9f8-x2k4q", interval=300.0, clock=clock).start()
    yield rec
    rec.stop()


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        pytest.param("outside-network-subnets", "OutsideNetworkSubnets", id="kebab"),
        pytest.param("link-local", "LinkLocal", id="two-words"),
        pytest.param("malformed_address", "MalformedAddress", id="snake"),
        pytest.param("", "Refused", id="empty"),
    ],
)
def test_refusal_codes_become_camel_case_reasons(code: str, reason: str) -> None:
    assert event_reason(code) == reason


def test_a_refusal_becomes_a_warning_event_on_its_object(recorder: EventRecorder, api: FakeApiServer) -> None:
    recorder.planned(Outcome.of(Plan.build([], [GATEWAY])), None, 0.001, False)
    assert recorder.flush()
    (event,) = api.events()
    assert event["type"] == "Warning"
    assert event["reason"] == "DefaultGatewayAddress"
    assert event["message"] == ("not announcing 192.168.100.1/24: the network's default gateway IP (network vmnet-a)")
    assert event["metadata"]["namespace"] == "imported-vms"
    assert event["metadata"]["name"].startswith("vm-a.default.")
    assert event["involvedObject"] == {
        "apiVersion": "k8s.cni.cncf.io/v1alpha1",
        "kind": "IPAMClaim",
        "name": "vm-a.default",
        "namespace": "imported-vms",
        "uid": CLAIM_A.uid,
    }
    assert event["source"] == {"component": "bgpadv", "host": "bgpadv-7d9f8-x2k4q"}
    assert event["reportingComponent"] == "bgpadv"
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"]
    assert recorder.counts["created"] == 1


@pytest.mark.parametrize(
    ("refusal", "api_version"),
    [
        pytest.param(SUBNET_CONFLICT, "k8s.ovn.org/v1", id="cudn"),
        pytest.param(NO_ADDRESS, "v1", id="node"),
    ],
)
def test_cluster_scoped_objects_get_their_event_in_default(
    recorder: EventRecorder, api: FakeApiServer, refusal: Refusal, api_version: str
) -> None:
    recorder.record([refusal])
    assert recorder.flush()
    (event,) = api.events()
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
    assert event["involvedObject"]["apiVersion"] == api_version
    assert event["involvedObject"]["uid"] == refusal.source.uid


def test_the_same_refusal_on_every_replan_makes_one_event(recorder: EventRecorder, api: FakeApiServer) -> None:
    for _ in range(20):
        recorder.record([GATEWAY, OUTSIDE])
    assert recorder.flush()
    assert sorted(e["reason"] for e in api.events()) == ["DefaultGatewayAddress", "OutsideNetworkSubnets"]
    assert all(e["count"] == 1 for e in api.events())


def test_a_persisting_refusal_bumps_the_count_once_per_interval(
    recorder: EventRecorder, api: FakeApiServer, clock: ManualClock
) -> None:
    recorder.record([GATEWAY])
    clock.now += 299.0
    recorder.record([GATEWAY])
    assert recorder.flush()
    assert api.events()[0]["count"] == 1
    clock.now += 2.0  # past the interval
    recorder.record([GATEWAY])
    recorder.record([GATEWAY])
    assert recorder.flush()
    (event,) = api.events()
    assert event["count"] == 2
    assert recorder.counts == {"created": 1, "updated": 1, "dropped": 0, "failed": 0}


def test_the_same_refusal_tuple_is_passed_over_until_a_reminder_is_due_and_still_gets_it(
    recorder: EventRecorder, api: FakeApiServer, clock: ManualClock
) -> None:
    refusals = (GATEWAY, OUTSIDE)  # what a plan hands while no refusal came or went: the very same tuple
    recorder.record(refusals)
    for _ in range(50):
        clock.now += 1.0
        recorder.record(refusals)
    assert recorder.flush()
    assert [e["count"] for e in api.events()] == [1, 1]
    clock.now += 300.0
    recorder.record(refusals)
    assert recorder.flush()
    assert [e["count"] for e in api.events()] == [2, 2]
    recorder.record((GATEWAY,))  # another set: looked at at once
    recorder.record((GATEWAY, OUTSIDE))
    assert recorder.flush()
    assert len(api.events()) == 3  # OUTSIDE went away and came back: a new Event


def test_a_refusal_that_goes_away_and_comes_back_gets_a_new_event(recorder: EventRecorder, api: FakeApiServer) -> None:
    recorder.record([GATEWAY])
    recorder.record([])
    recorder.record([GATEWAY])
    assert recorder.flush()
    assert len(api.events()) == 2


def test_an_event_the_apiserver_expired_is_created_again(
    recorder: EventRecorder, api: FakeApiServer, clock: ManualClock
) -> None:
    recorder.record([OUTSIDE])
    assert recorder.flush()
    (first,) = api.events()
    api.delete("v1", "Event", first["metadata"]["name"], "imported-vms")  # the event TTL ran out
    clock.now += 301.0
    recorder.record([OUTSIDE])
    assert recorder.flush()
    (again,) = api.events()
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["count"] == 2
    assert recorder.counts["created"] == 2


def test_api_failures_are_counted_never_raised(recorder: EventRecorder, api: FakeApiServer) -> None:
    api.fail_next(1, 500, verb="create", plural="events")
    recorder.record([GATEWAY])
    assert recorder.flush()
    assert api.events() == []
    assert recorder.counts["failed"] == 1


def test_an_unreachable_apiserver_is_counted_never_raised(clock: ManualClock) -> None:
    conf = k8s.Configuration(host="http://127.0.0.1:9")
    conf.retries = 0
    with k8s.ApiClient(conf) as c:
        rec = EventRecorder(c, clock=clock).start()
        rec.record([GATEWAY])
        assert rec.flush()
        rec.stop()
    assert rec.counts["failed"] == 1


def test_a_full_queue_drops_and_counts_and_retries_on_the_next_plan(api_client, api: FakeApiServer) -> None:
    rec = EventRecorder(api_client, queue_size=1)  # not started: nothing drains the queue yet
    rec.record([GATEWAY, OUTSIDE, SUBNET_CONFLICT])
    assert rec.counts["dropped"] == 2
    rec.start()
    assert rec.flush()
    same = (GATEWAY, OUTSIDE, SUBNET_CONFLICT)
    rec.record(same)  # the dropped ones are tried again, even when the plan hands the same tuple
    assert rec.flush()
    rec.record(same)
    assert rec.flush()
    rec.stop()
    assert len(api.events()) == 3


def test_the_token_bucket_paces_api_calls(api_client, api: FakeApiServer) -> None:
    rec = EventRecorder(api_client, rate=0.001, burst=2).start()
    rec.record([GATEWAY, OUTSIDE, SUBNET_CONFLICT, NO_ADDRESS])
    assert not rec.flush(timeout=0.5)  # two calls wait for tokens that come every 1000 s
    assert len(api.events()) == 2
    rec.stop()
    assert rec.counts["dropped"] == 2


def test_token_bucket_refills_at_its_rate(clock: ManualClock) -> None:
    bucket = TokenBucket(rate=2.0, burst=3, clock=clock)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.5)
    clock.now += 0.5
    assert bucket.take() == 0.0
    clock.now += 100.0
    assert [bucket.take() for _ in range(4)] == [0.0, 0.0, 0.0, pytest.approx(0.5)]


# out of scope is quiet: objects on networks bgpadv does not serve (the ipam-extensions README's NAD network
# `tenantblue`; an OpenShift Virtualization namespaced UDN `<namespace>_<name>`; a CUDN bgpadv does not select)
OUT_OF_SCOPE = [
    Refusal(CLAIM_A, "tenantblue", "foreign-network", "not the network name of a ClusterUserDefinedNetwork"),
    Refusal(CLAIM_B, "imported-vms_tenantnet", "namespaced-udn-not-advertisable", "RouteAdvertisements cannot select"),
    Refusal(CLAIM_B, "cluster_udn_vmnet-lab", "network-not-selected", "CUDN vmnet-lab is not selected"),
]


def test_out_of_scope_refusals_make_no_warning_only_a_debug_line(
    recorder: EventRecorder, api: FakeApiServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("DEBUG", logger="bgpadv.observe.events"):
        for _ in range(3):
            recorder.record([*OUT_OF_SCOPE, GATEWAY])
    assert recorder.flush()
    assert [e["reason"] for e in api.events()] == ["DefaultGatewayAddress"]  # a served network keeps its Warning
    quiet = [r for r in caplog.records if r.getMessage() == "out of scope, no Event"]
    assert sorted(r.reason for r in quiet) == ["foreign-network", "namespaced-udn-not-advertisable",
                                               "network-not-selected"]  # fmt: skip
