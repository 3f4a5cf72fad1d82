"""Per-node mode's scoped VMI watches: two watches of one kind, one view, and fail static kept per watch.

Scope: a per-node instance watches VMIs twice, by label (`resources.for_node`): those on its node
(`kubevirt.io/nodeName`, ON) and those migrating to it (`kubevirt.io/migrationTargetNodeName`, TO). The store keeps
an object while either watch holds it, with the newest version either delivered; a DELETED from one while the other
holds it changes nothing. Driven through the controller (events on its queue, `step()`, a fake clock, the real store
and planner, a recording speaker): a VMI that leaves a watch without a deletionTimestamp moved (a node drained is no
mass deletion, its VMs are withdrawn at once), a VMI deleted through a scoped watch is still a deletion (a
mass one is held), a scoped LIST that is empty because the node has no VMs is a complete view, an empty relist of a
node that had VMs is held like any other, and a migration ending in either order of the two watches' events never
withdraws the VM.
"""

from __future__ import annotations

import time

import pytest

from bgpadv.config import Config, parse
from bgpadv.core import resources
from bgpadv.runtime.controller import watched_resources
from bgpadv.sources.reflector import WatchEvent
from bgpadv.sources.store import Store
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.doubles import ManualClock
from tests.unit.runtime.fed import FedController

NODE = "worker-1"
PEER = "10.0.0.1"
NET = "cluster_udn_vmnet-a"
SUBNET = "192.168.100.0/24"
RAW = {
    "localASN": 64513,
    "nodeName": NODE,
    "peers": [{"address": PEER, "asn": 64512}],
    "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
    "safety": {"maxWithdrawFraction": 0.5, "holdSeconds": 120},
}


def config() -> Config:
    """RAW parsed, afresh for each caller."""
    return parse(RAW)


WATCHED = watched_resources(config())
(ON,) = (r for r in WATCHED if r.label_selector == f"kubevirt.io/nodeName={NODE}")
(TO,) = (r for r in WATCHED if r.label_selector == f"kubevirt.io/migrationTargetNodeName={NODE}")
(CLAIMS,) = (r for r in WATCHED if r.field == "ipam_claims")
SETTLE = config().safety.deletion_settle_seconds


def vmi(i: int, version: int = 1, *, migrating_here: bool = False, deleting: bool = False) -> dict:
    """VM `i` running on worker-1 at resourceVersion `version`; `migrating_here`: it also carries the target label
    (a migration to worker-1 that completed, its label not yet removed); `deleting`: a deletionTimestamp."""
    obj = k8s.vmi(NS, f"vm-{i}", NODE)
    if migrating_here:
        obj["metadata"]["labels"][resources.MIGRATION_TARGET_LABEL] = NODE
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2025-03-01T11:00:00Z"
    obj["metadata"]["resourceVersion"] = str(version)
    return obj


def claim(i: int) -> dict:
    return k8s.ipam_claim(NS, f"vm-{i}.default", f"vm-{i}", NET, [f"192.168.100.{i}/24"])


def host(i: int) -> str:
    return f"192.168.100.{i}/32"


def event(res: resources.Resource, kind: str, obj: dict | None, *, from_list: bool = False, key=None) -> WatchEvent:
    return WatchEvent(res, kind, obj, time.monotonic(), None, from_list, key=key)


# --- the store: two watches, one view -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "version"),
    [
        pytest.param([(ON, "ADDED", 1)], "1", id="seen-on-the-node"),
        pytest.param([(TO, "ADDED", 1)], "1", id="seen-migrating-here"),
        pytest.param([(ON, "ADDED", 1), (ON, "DELETED", 2)], None, id="left-its-only-watch"),
        pytest.param([(TO, "ADDED", 1), (ON, "ADDED", 2), (TO, "DELETED", 3)], "2", id="migration-completed"),
        pytest.param([(TO, "ADDED", 1), (TO, "DELETED", 2)], None, id="migration-failed-or-cancelled"),
        pytest.param([(ON, "ADDED", 1), (TO, "ADDED", 2), (ON, "DELETED", 3)], "2", id="left-one-kept-by-other"),
        pytest.param([(ON, "ADDED", 5), (TO, "ADDED", 4)], "5", id="lagging-watch-never-turns-back"),
        pytest.param([(ON, "ADDED", 4), (TO, "ADDED", 5), (ON, "MODIFIED", 6)], "6", id="newest-either-delivered"),
        pytest.param([(TO, "DELETED", 1)], None, id="deleted-unknown"),
    ],
)
def test_an_object_seen_through_either_watch_is_present(events, version) -> None:
    store = Store(WATCHED)
    for res, kind, rv in events:
        store.apply(event(res, kind, vmi(1, rv)))
    held = store.state.vmis.get((NS, "vm-1"))
    assert (held.resource_version if held is not None else None) == version


def test_a_relist_of_one_watch_missing_an_object_the_other_holds_keeps_it() -> None:
    store = Store(WATCHED)
    store.apply(event(ON, "ADDED", vmi(1, 1)))
    store.apply(event(TO, "ADDED", vmi(1, 2)))
    assert not store.apply(event(ON, "DELETED", None, from_list=True, key=(NS, "vm-1")))
    assert (NS, "vm-1") in store.state.vmis
    assert store.apply(event(TO, "DELETED", None, from_list=True, key=(NS, "vm-1")))
    assert store.state.vmis == {}


def test_the_store_is_synced_once_both_scoped_watches_listed() -> None:
    store = Store(WATCHED)
    for res in WATCHED:
        if res is not TO:
            store.apply(event(res, "SYNCED", None))
    assert not store.synced
    store.apply(event(TO, "SYNCED", None))
    assert store.synced


# --- the controller: fail static per scoped watch ---------------------------------------------------------------------


class Instance(FedController):
    """The controller of worker-1's instance, fed by hand; `vms`: the VMs running on worker-1 at its first LIST."""

    def __init__(self, clock: ManualClock, vms: range) -> None:
        super().__init__(config(), clock, PEER, resync_interval=3600.0)
        objs = [k8s.node(NODE, "10.0.0.11"), k8s.cudn_layer2("vmnet-a", [SUBNET], labels=k8s.ADVERTISED)]
        for obj in [*objs, *(claim(i) for i in vms)]:
            res = resources.resource_for(obj)
            assert res is not None
            res = next(w for w in WATCHED if w.field == res.field)  # the watch as scoped (claims: the node's VMs')
            self.c.queue.put(event(res, "ADDED", obj, from_list=True))
        for i in vms:
            self.c.queue.put(event(ON, "ADDED", vmi(i), from_list=True))
        for res in WATCHED:
            self.synced(res)
        self.step()

    def watch(self, res: resources.Resource, kind: str, *objs: dict) -> None:
        for obj in objs:
            self.c.queue.put(event(res, kind, obj))
        self.step()


FOUR = sorted([SUBNET, *(host(i) for i in range(10, 14))])


@pytest.fixture
def four(clock: ManualClock) -> Instance:
    instance = Instance(clock, range(10, 14))
    assert instance.handed == FOUR
    return instance


def test_a_node_drained_is_not_a_mass_deletion_its_vms_are_withdrawn_at_once(four: Instance, clock: ManualClock):
    """Every VM of the node migrates away within a second: each leaves the node's watch as a DELETED without a
    deletionTimestamp, as a VM whose node changed: withdrawn at once, nothing held."""
    four.watch(ON, "DELETED", *(vmi(i, 2) for i in range(10, 14)))
    assert four.handed == [SUBNET]
    clock.now += SETTLE
    four.step()
    assert four.handed == [SUBNET]
    assert four.observer.held[-1] == {PEER: 0}


def test_the_claims_of_vms_that_left_go_as_moved_and_count_towards_no_mass_deletion(four: Instance, clock: ManualClock):
    """The instance keeps only its VMs' IPAMClaims (`bgpadv.sources.claims`): when VMs leave, their claims leave the
    view too, as DELETED without a deletionTimestamp of the claims' scoped watch. They count towards no mass
    deletion: the two claims really deleted next (their VMs still on the node) are withdrawn at once, not held as
    they would be if four claims of four had been deleted."""
    four.watch(ON, "DELETED", *(vmi(i, 2) for i in range(10, 12)))
    four.watch(CLAIMS, "DELETED", *(claim(i) for i in range(10, 12)))
    deleted = [claim(i) for i in range(12, 14)]
    for obj in deleted:
        obj["metadata"]["deletionTimestamp"] = "2025-03-01T11:00:00Z"
    four.watch(CLAIMS, "DELETED", *deleted)
    clock.now += SETTLE
    four.step()
    assert four.handed == [SUBNET]
    assert four.observer.held[-1] == {PEER: 0}
    assert four.c.store.state.ipam_claims == {}


def test_vms_deleted_through_a_scoped_watch_are_still_a_mass_deletion(four: Instance, clock: ManualClock):
    """KubeVirt's finalizers: a deleted VMI (or every VMI of a deleted CRD) carries a deletionTimestamp first."""
    four.watch(ON, "MODIFIED", *(vmi(i, 2, deleting=True) for i in range(10, 14)))
    clock.now += SETTLE
    four.step()
    assert four.handed == FOUR
    assert four.observer.held[-1] == {PEER: 4}


def test_an_empty_scoped_list_of_a_node_without_vms_is_a_complete_view(clock: ManualClock):
    empty = Instance(clock, range(0))
    assert empty.handed == [SUBNET]
    empty.c.queue.put(event(TO, "ADDED", vmi(10, 2, migrating_here=True)))  # the first VM to arrive: planned
    empty.c.queue.put(event(resources.IPAM_CLAIM, "ADDED", claim(10)))
    empty.step()
    assert empty.handed == sorted([SUBNET, host(10)])
    assert empty.observer.held[-1] == {PEER: 0}


def test_an_empty_relist_of_a_node_that_had_vms_is_held(four: Instance):
    for i in range(10, 14):
        four.c.queue.put(event(ON, "DELETED", None, from_list=True, key=(NS, f"vm-{i}")))
    four.synced(ON)
    four.step()
    assert four.handed == FOUR
    assert four.observer.held[-1] == {PEER: 4}


@pytest.mark.parametrize(
    "order",
    [
        pytest.param([(ON, "ADDED"), (TO, "DELETED")], id="node-label-first-as-kubevirt-writes-them"),
        pytest.param([(TO, "DELETED"), (ON, "ADDED")], id="target-label-removal-delivered-first"),
    ],
)
def test_a_migration_completing_here_never_withdraws_the_vm(clock: ManualClock, order) -> None:
    """vm-20 migrated to worker-1 and runs there: KubeVirt moves its node label (ON sees it arrive), then removes its
    target label (TO sees it leave). The two watches' events may reach the loop in either order."""
    instance = Instance(clock, range(0))
    instance.c.queue.put(event(resources.IPAM_CLAIM, "ADDED", claim(20)))
    instance.watch(TO, "ADDED", vmi(20, 2, migrating_here=True))
    start = len(instance.history)
    assert instance.handed == sorted([SUBNET, host(20)])
    for n, (res, kind) in enumerate(order):
        instance.watch(res, kind, vmi(20, 3 + n, migrating_here=kind == "DELETED"))
    clock.now += SETTLE
    instance.step()
    assert all(handed == sorted([SUBNET, host(20)]) for handed in instance.history[start:])
