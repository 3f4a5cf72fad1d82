"""The controller loop: when it plans, what it hands the speaker, and how it survives failures.

The speaker, the sources and the observer are recorders (tests/doubles.py); the store, the planner and the guard
are the real ones. Each test drives the loop with `Controller.step()`: events are put on its queue, one step takes
everything queued, applies it, plans if due and runs the timers on the test's clock, so nothing waits.
"""

from __future__ import annotations

import gc
import queue
import threading
import time

import pytest

from bgpadv.config import Config, parse
from bgpadv.core import resources
from bgpadv.core.model import Plan
from bgpadv.planner import checks
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.runtime.controller import Controller, LoopSettings, desired_per_peer, watched_resources
from bgpadv.safety.guard import Guard
from bgpadv.sources.reflector import WatchEvent
from tests.doubles import ManualClock, RecordingObserver, RecordingSources, RecordingSpeaker

RAW = {
    "localASN": 64513,
    "peers": [{"address": "10.0.0.1", "asn": 64512}, {"address": "fd00::1", "asn": 64512}],
    "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
}


def config() -> Config:
    """RAW parsed, afresh for each caller."""
    return parse(RAW)


CUDN = {
    "apiVersion": "k8s.ovn.org/v1",
    "kind": "ClusterUserDefinedNetwork",
    "metadata": {"name": "vmnet-a", "labels": {"bgpadv.io/advertise": "true"}, "resourceVersion": "10"},
    "spec": {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "imported-vms"}},
        "network": {
            "topology": "Layer2",
            "layer2": {
                "role": "Primary",
                "subnets": ["192.168.100.0/24"],
                "defaultGatewayIPs": ["192.168.100.1"],
                "ipam": {"mode": "Enabled", "lifecycle": "Persistent"},
            },
        },
    },
    "status": {
        "conditions": [{"type": "NetworkCreated", "status": "True", "reason": "NetworkAttachmentDefinitionCreated"}]
    },
}


def event(res: resources.Resource, kind: str, obj: dict | None) -> WatchEvent:
    return WatchEvent(resource=res, type=kind, obj=obj, received_at=time.monotonic(), object_wall_time=None)


def synced_all(c: Controller) -> None:
    for res in watched_resources(config()):
        c.queue.put(event(res, "SYNCED", None))


def cudn(version: int) -> dict:
    return {**CUDN, "metadata": {**CUDN["metadata"], "resourceVersion": str(version)}}


def prefixes(desired: dict) -> dict[str, list[str]]:
    return {peer: [str(r.prefix) for r in routes] for peer, routes in desired.items()}


def recording_loop(clock: ManualClock, settings: LoopSettings) -> Controller:
    """The real loop with recording doubles around it, on the test's clock."""
    return Controller(
        config(),
        speaker=RecordingSpeaker(),
        sources=RecordingSources(),
        observer=RecordingObserver(),
        settings=settings,
        clock=clock,
    )


@pytest.fixture
def controller(clock: ManualClock) -> Controller:
    return recording_loop(clock, LoopSettings(coalesce_window=0.0, resync_interval=300.0))


def test_route_advertisements_are_watched_only_when_followed():
    assert resources.ROUTE_ADVERTISEMENTS not in watched_resources(config())
    follow = parse({**_raw(), "networks": {"followRouteAdvertisements": True}})
    assert resources.ROUTE_ADVERTISEMENTS in watched_resources(follow)


def _raw() -> dict:
    return {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


def test_nothing_is_planned_before_every_resource_finished_its_first_list(controller):
    controller.queue.put(event(resources.CUDN, "ADDED", CUDN))
    assert controller.step()
    assert controller.speaker.desired == []
    synced_all(controller)
    assert controller.step()
    assert [prefixes(d) for d in controller.speaker.desired] == [
        {"10.0.0.1": ["192.168.100.0/24"], "fd00::1": ["192.168.100.0/24"]}
    ]


def test_an_empty_cluster_still_gets_a_plan_so_stale_routes_are_withdrawn(controller):
    synced_all(controller)
    controller.step()
    assert controller.speaker.desired == [{"10.0.0.1": (), "fd00::1": ()}]


def test_nothing_is_planned_until_the_speaker_knows_what_exabgp_advertises(controller):
    controller.speaker.ready = False
    synced_all(controller)
    controller.step()
    controller.step()
    assert controller.speaker.desired == []
    controller.speaker.ready = True
    controller.step()  # nothing queued: the timers plan the first time
    assert controller.speaker.desired == [{"10.0.0.1": (), "fd00::1": ()}]


def test_a_burst_of_events_is_planned_once(controller):
    synced_all(controller)
    controller.step()
    assert len(controller.observer.plans) == 1
    for i in range(50):
        controller.queue.put(event(resources.CUDN, "MODIFIED", cudn(100 + i)))
    controller.step()
    controller.step()
    assert len(controller.observer.plans) == 2
    assert len(controller.speaker.desired) == 2


def slow_loop(clock: ManualClock) -> Controller:
    """A loop whose coalescing window (0.5 s) is far longer than planning takes."""
    return recording_loop(clock, LoopSettings(coalesce_window=0.5, coalesce_limit=1.0, resync_interval=300.0))


def later(c: Controller, delay: float, item: WatchEvent) -> threading.Thread:
    t = threading.Timer(delay, c.queue.put, args=(item,))
    t.start()
    return t


def test_a_change_after_a_quiet_spell_is_planned_at_once_without_waiting_for_the_window(clock):
    c = slow_loop(clock)
    synced_all(c)
    c.step()
    time.sleep(0.5)  # quiet: no plan within the window
    c.queue.put(event(resources.CUDN, "MODIFIED", cudn(11)))
    follower = later(c, 0.4, event(resources.CUDN, "MODIFIED", cudn(12)))
    c.step()
    follower.join()
    assert len(c.observer.plans) == 2
    assert not c.queue.empty()  # planned before the follower arrived: it waits for the next turn


def test_changes_that_follow_a_plan_within_the_window_are_collected_into_one_plan(clock):
    c = slow_loop(clock)
    synced_all(c)
    c.step()
    c.queue.put(event(resources.CUDN, "MODIFIED", cudn(11)))  # right after a plan: the loop is busy
    follower = later(c, 0.05, event(resources.CUDN, "MODIFIED", cudn(12)))
    c.step()
    follower.join()
    assert len(c.observer.plans) == 2 and c.queue.empty()  # both changes in the second plan


def test_the_store_is_replanned_in_full_once_the_resync_interval_passed_without_events(controller, clock):
    synced_all(controller)
    controller.step()
    clock.now += 299.0
    controller.step()
    assert len(controller.observer.plans) == 1
    clock.now += 1.0
    controller.step()
    assert len(controller.observer.plans) == 2


def test_a_command_exabgp_refused_makes_the_speaker_diff_again_at_the_next_step(controller):
    controller.speaker.needs_retry = True
    controller.step()
    assert controller.speaker.resyncs == 1


def test_exabgp_lines_reach_the_speaker_in_order_and_the_loop_ends_when_exabgp_closes_its_pipe(controller):
    controller.feed_exabgp(_Lines(["done", "error", "done"])).join(5)
    assert controller.step() is False
    assert controller.speaker.lines == ["done", "error", "done"]


def test_the_loop_ends_when_exabgp_says_it_is_shutting_down(controller):
    controller.queue.put(event(resources.CUDN, "ADDED", CUDN))
    assert controller.step()
    controller.speaker.closed = True
    controller.queue.put(event(resources.CUDN, "MODIFIED", cudn(11)))
    assert controller.step() is False


def test_run_repeats_step_until_exabgp_closes_its_pipe(controller):
    controller.feed_exabgp(_Lines(["done"])).join(5)
    assert controller.run() == 0
    assert controller.speaker.started and controller.sources.started
    assert controller.speaker.lines == ["done"]


def test_a_planner_bug_keeps_the_current_advertisements(controller, monkeypatch):
    controller.queue.put(event(resources.CUDN, "ADDED", CUDN))
    synced_all(controller)
    controller.step()
    advertised = list(controller.speaker.desired)
    assert prefixes(advertised[-1]) == {"10.0.0.1": ["192.168.100.0/24"], "fd00::1": ["192.168.100.0/24"]}

    def broken(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(IncrementalPlanner, "plan", broken)
    controller.queue.put(event(resources.CUDN, "DELETED", CUDN))
    assert controller.step()
    assert controller.speaker.desired == advertised
    assert len(controller.observer.plans) == 1


def test_every_peer_gets_the_plan_through_the_guard():
    """desired_per_peer: the plan's routes that pass the guard, per peer; what fails it is a refusal."""
    from bgpadv_lab import objects as k8s

    state = k8s.state(
        k8s.node("worker-1", "10.0.0.11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels={"bgpadv.io/advertise": "true"}),
    )
    good, outside = _host("192.168.100.10/32", "worker-1"), _host("192.168.200.10/32", "worker-1")
    from bgpadv.planner import plan as cold_plan

    plan = Plan.build([good, outside], [], cold_plan(state, config()).context)  # the planner's context of `state`
    guarded = desired_per_peer(Guard(config()), plan, state)
    assert guarded.per_peer == {"10.0.0.1": (good,), "fd00::1": (good,)}
    assert [(r.value, r.reason) for r in guarded.rejected] == [("192.168.200.10/32", checks.OUTSIDE_SELECTED_NETWORKS)]


def test_whatever_the_planner_returns_the_speaker_gets_only_guarded_routes_and_observers_see_the_refusals(
    monkeypatch,
):
    """The guard sits between the planner and the speaker: a default route from a (buggy) planner never reaches the
    speaker, and its refusal reaches the observers (metrics, Events) with the planner's own refusals."""
    from bgpadv.core.model import Refusal, Route, RouteKind
    from bgpadv.core.prefix import Prefix
    from bgpadv_lab import objects as k8s

    cudn = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels={"bgpadv.io/advertise": "true"})
    good = _host("192.168.100.10/32", "worker-1")
    default = Route(Prefix.parse("0.0.0.0/0"), None, "vmnet-a", RouteKind.SUBNET, good.source)
    planner_refusal = Refusal(good.source, "192.168.100.1", checks.DEFAULT_GATEWAY_ADDRESS, "gateway", "vmnet-a")
    from bgpadv.planner import plan as cold_plan

    def buggy_plan(self, state, changed):  # its routes and refusals are wrong; its context is the planner's own
        return Plan.build([default, good], [planner_refusal], cold_plan(state, config()).context)

    monkeypatch.setattr(IncrementalPlanner, "plan", buggy_plan)
    recorder = RecordingObserver()
    c = Controller(
        config(), speaker=RecordingSpeaker(), sources=RecordingSources(), observer=recorder, settings=LoopSettings()
    )
    for obj in (k8s.node("worker-1", "10.0.0.11"), cudn):
        c.queue.put(event(resources.resource_for(obj), "ADDED", obj))
    for res in watched_resources(config()):
        c.queue.put(event(res, "SYNCED", None))
    c.step()
    assert c.speaker.desired == [{"10.0.0.1": (good,), "fd00::1": (good,)}]
    (observed,) = recorder.plans
    assert observed.announced == 1  # the good route only
    assert [(r.value, r.reason) for r in observed.rejected] == [
        ("192.168.100.1", checks.DEFAULT_GATEWAY_ADDRESS),
        ("0.0.0.0/0", checks.DEFAULT_ROUTE),
    ]


def test_a_self_route_a_session_cannot_express_is_refused_for_that_peer_only():
    """An IPv6 subnet with next-hop self: the IPv6 session gets it, the IPv4 session cannot express an IPv6 `self`
    (no nextHopSelf configured), so for that peer it is a `family-not-carried` refusal, not a silent skip."""
    from bgpadv_lab import objects as k8s

    recorder = RecordingObserver()
    c = Controller(
        config(), speaker=RecordingSpeaker(), sources=RecordingSources(), observer=recorder, settings=LoopSettings()
    )
    cudn = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels={"bgpadv.io/advertise": "true"})
    c.queue.put(event(resources.CUDN, "ADDED", cudn))
    for res in watched_resources(config()):
        c.queue.put(event(res, "SYNCED", None))
    c.step()
    (desired,) = c.speaker.desired
    assert [str(r.prefix) for r in desired["10.0.0.1"]] == ["192.168.100.0/24"]
    assert [str(r.prefix) for r in desired["fd00::1"]] == ["192.168.100.0/24", "fd10:100::/64"]
    (observed,) = recorder.plans
    assert [(str(r.source), r.value, r.reason) for r in observed.rejected] == [
        ("ClusterUserDefinedNetwork vmnet-a", "fd10:100::/64", checks.FAMILY_NOT_CARRIED)
    ]


def _host(prefix: str, node: str):
    from bgpadv.core.model import ObjectRef, Route, RouteKind
    from bgpadv.core.prefix import Address, Prefix

    ref = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms")
    return Route(Prefix.parse(prefix), Address.parse("10.0.0.11"), "vmnet-a", RouteKind.HOST, ref, node)


class _Lines:
    def __init__(self, lines: list[str]) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        for line in lines:
            self._q.put(line + "\n")

    def __iter__(self):
        while not self._q.empty():
            yield self._q.get()


@pytest.mark.parametrize(
    ("vm_label", "owner_kind"),
    [(True, "VirtualMachine"), (False, "VirtualMachine"), (True, None)],
    ids=["label-and-owner", "owner-reference-only", "label-only"],
)
def test_a_host_route_moved_by_a_ready_migration_starts_a_handover_measurement(vm_label, owner_kind):
    """The claim is linked to its VM by the planner's rule (label kubevirt.io/vm, else the VirtualMachine
    ownerReference): a claim without the label starts the measurement like a labelled one."""
    from bgpadv_lab import objects as k8s

    recorder = RecordingObserver()
    c = Controller(
        config(), speaker=RecordingSpeaker(), sources=RecordingSources(), observer=recorder, settings=LoopSettings()
    )
    cudn = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels={"bgpadv.io/advertise": "true"})
    claim = k8s.ipam_claim(
        "imported-vms",
        "vm-a.default",
        "vm-a",
        "cluster_udn_vmnet-a",
        ["192.168.100.10/24"],
        vm_label=vm_label,
        owner_kind=owner_kind,
    )
    objs = [k8s.node("worker-1", "10.0.0.11"), k8s.node("worker-2", "10.0.0.12"), cudn, claim]
    for obj in [*objs, k8s.vmi("imported-vms", "vm-a", "worker-1")]:
        res = resources.resource_for(obj)
        c.queue.put(event(res, "ADDED", obj))
    for res in watched_resources(config()):
        c.queue.put(event(res, "SYNCED", None))
    c.step()
    ready = k8s.migration_state("worker-1", "worker-2", target_ready="2026-11-30T12:00:00Z", vmi="vm-a")
    moved = k8s.vmi("imported-vms", "vm-a", "worker-1", migration_state=ready)
    moved["metadata"]["resourceVersion"] = "999999"
    c.queue.put(event(resources.VMI, "MODIFIED", moved))
    c.step()
    assert recorder.handovers == [("192.168.100.10/32", 1796040000.0)]


def test_a_flood_of_events_never_holds_back_the_plan_past_the_coalescing_limit(clock):
    """Coalescing stops at its limit: with far more queued events than one turn handles within `coalesce_limit`,
    the turn plans what it took and leaves the rest queued for the next turn (a flood never starves a change)."""
    c = recording_loop(
        clock, LoopSettings(coalesce_window=0.0, coalesce_limit=0.0, coalesce_min_items=10, resync_interval=300.0)
    )
    synced_all(c)
    c.step()
    assert len(c.observer.plans) == 1
    for i in range(200):
        c.queue.put(event(resources.CUDN, "MODIFIED", cudn(100 + i)))
    c.step()
    assert len(c.observer.plans) == 2, "the turn planned what it had taken"
    assert not c.queue.empty(), "the rest of the flood waits for the next turn"
    while not c.queue.empty():
        c.step()
    assert len(c.observer.plans) > 3


@pytest.fixture
def collector_off():
    """`bgpadv controller` starts with the cyclic garbage collector off (LoopSettings.startup_gc_pause)."""
    gc.disable()
    yield
    gc.unfreeze()
    gc.enable()


def test_the_garbage_collector_resumes_at_the_first_plan_with_the_listed_cluster_frozen(controller, collector_off):
    controller.queue.put(event(resources.CUDN, "ADDED", CUDN))
    controller.step()
    assert not gc.isenabled()  # still listing: nothing planned yet
    synced_all(controller)
    controller.step()
    assert controller.speaker.desired and gc.isenabled()
    assert gc.get_freeze_count() > 0  # what the start-up holds is out of the collector's sight


def test_the_garbage_collector_resumes_without_a_first_plan_once_the_pause_is_over(controller, clock, collector_off):
    controller.queue.put(event(resources.CUDN, "ADDED", CUDN))  # one resource listed, the others never
    controller.step()
    clock.now += LoopSettings().startup_gc_pause - 1
    controller.step()
    assert not gc.isenabled()
    clock.now += 1
    controller.step()
    assert gc.isenabled() and controller.plan is None


def test_a_change_that_leaves_the_refusals_alone_hands_the_observers_the_very_same_refusals(controller):
    """Readiness and the Event recorder tell an unchanged refusal set by identity: a migration in a cluster with
    many refused addresses costs nothing per refusal."""
    from bgpadv_lab import objects as k8s

    def vm(name: str, ip: str, node: str) -> list[dict]:
        claim = k8s.ipam_claim(k8s.VM_NAMESPACE, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/24"])
        return [claim, k8s.vmi(k8s.VM_NAMESPACE, name, node, interfaces=[k8s.interface([ip])])]

    objs = [k8s.node("worker-1", "10.0.0.11", None), k8s.node("worker-2", "10.0.0.12", None), CUDN]
    objs += [*vm("vm-ok", "192.168.100.10", "worker-1"), *vm("vm-outside", "10.66.0.1", "worker-1")]
    for obj in objs:
        controller.queue.put(event(resources.resource_for(obj), "ADDED", obj))
    synced_all(controller)
    controller.step()
    before = controller.observer.plans[-1]
    assert any(r.value.startswith("10.66.0.1") for r in before.rejected)
    moved = vm("vm-ok", "192.168.100.10", "worker-2")[1]
    moved["metadata"]["resourceVersion"] = str(int(moved["metadata"].get("resourceVersion") or 1) + 100)
    controller.queue.put(event(resources.VMI, "MODIFIED", moved))
    controller.step()
    after = controller.observer.plans[-1]
    assert len(controller.observer.plans) == 2 and controller.speaker.tables  # planned, through the delta path
    assert after.rejected is before.rejected
