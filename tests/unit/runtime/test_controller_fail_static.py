"""The controller's fail static: what it hands the speaker when a relist or a full replan would withdraw in bulk.

Driven synchronously through the controller's public surface (events put on its queue, `step()` with nothing to
wait for, `held`), with the real store and planner, a recording speaker and sources, and a fake clock for the
timers and the hold. The rules:
- a relist (events marked `from_list`) is planned only once its SYNCED arrived, and it is a bulk plan: withdrawing
  more than half of the peer's routes withdraws none; its announcements go out at once;
- ordinary watch DELETEs of a few objects are applied whatever they withdraw, once deletion events paused for
  `safety.deletionSettleSeconds` (the loop hands its last plan again then, the cause still the deletion event);
  a route desired again meanwhile goes out at once; a mass deletion by watch events (a deletionTimestamp or
  DELETED on at least MASS_DELETION_MIN objects and more than the fraction of one resource's objects within
  MASS_DELETION_WINDOW: a CRD deleted) is a bulk plan like a relist, the first events' withdrawals included, and
  since they were still settling the speaker never lost a route;
- once the hold's deadline passed the controller asks every resource for a LIST; when a LIST of every resource begun
  after the deadline completed, a full replan withdraws what is still gone; objects that came back end the hold.
"""

from __future__ import annotations

import time

import pytest

from bgpadv.config import Config, parse
from bgpadv.core import resources
from bgpadv.runtime.controller import watched_resources
from bgpadv.safety.failstatic import MASS_DELETION_WINDOW
from bgpadv.sources.reflector import WatchEvent
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.doubles import ManualClock
from tests.unit.runtime.fed import FedController

H = 120.0
RESYNC = 30.0  # shorter than the hold: the periodic resync comes first
NET = "cluster_udn_vmnet-a"
PEER = "10.0.0.1"
RAW = {
    "localASN": 64513,
    "peers": [{"address": PEER, "asn": 64512}],
    "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
    "safety": {"maxWithdrawFraction": 0.5, "holdSeconds": H},
}


def config() -> Config:
    """RAW parsed, afresh for each caller."""
    return parse(RAW)


SUBNET = "192.168.100.0/24"


def claim(i: int) -> dict:
    return k8s.ipam_claim(NS, f"vm-{i}.default", f"vm-{i}", NET, [f"192.168.100.{i}/24"])


def vmi(i: int) -> dict:
    return k8s.vmi(NS, f"vm-{i}", "worker-1")


def host(i: int) -> str:
    return f"192.168.100.{i}/32"


class Cluster(FedController):
    """worker-1's VMs 10 to 13 listed: `watch` delivers ordinary events, `relist` a reflector's relist diff, `synced` a
    completed LIST; `step` runs one iteration of the loop over what was delivered (and the timers)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(config(), clock, PEER, RESYNC)
        objs = [k8s.node("worker-1", "10.0.0.11"), k8s.cudn_layer2("vmnet-a", [SUBNET], labels=ADVERTISED)]
        objs += [o for i in range(10, 14) for o in (claim(i), vmi(i))]
        for obj in objs:
            self.c.queue.put(self.event("ADDED", obj, from_list=True))
        self.synced_all()
        self.step()

    @staticmethod
    def event(kind: str, obj: dict, *, from_list: bool = False) -> WatchEvent:
        res = resources.resource_for(obj)
        assert res is not None
        return WatchEvent(res, kind, obj, time.monotonic(), None, from_list)

    def synced_all(self, listed_at: float | None = None) -> None:
        for res in watched_resources(config()):
            self.synced(res, listed_at)

    def watch(self, kind: str, *objs: dict) -> None:
        for obj in objs:
            self.c.queue.put(self.event(kind, obj))
        self.step()

    def relist(self, res: resources.Resource, changes: list[tuple[str, dict]], *, complete: bool = True) -> None:
        for kind, obj in changes:
            self.c.queue.put(self.event(kind, obj, from_list=True))
        if complete:
            self.synced(res)
        self.step()

    @property
    def relists(self) -> int:
        return self.c.sources.relists


ADVERTISED = {"bgpadv.io/advertise": "true"}
SETTLE = config().safety.deletion_settle_seconds
ALL = sorted([SUBNET, host(10), host(11), host(12), host(13)])


@pytest.fixture
def cluster(clock: ManualClock) -> Cluster:
    cluster = Cluster(clock)
    assert cluster.handed == ALL
    return cluster


def claims_gone(*ids: int) -> list[tuple[str, dict]]:
    return [("DELETED", claim(i)) for i in ids]


def test_an_empty_relist_withdraws_nothing_and_the_routes_are_counted_as_held(cluster: Cluster) -> None:
    cluster.relist(resources.IPAM_CLAIM, claims_gone(10, 11, 12, 13))
    assert cluster.handed == ALL
    assert cluster.observer.held[-1] == cluster.c.held == {PEER: 4}
    assert len(cluster.c.store.state.ipam_claims) == 0  # the store follows the cluster; only the speaker waits


def test_a_relist_is_not_planned_before_its_synced(cluster: Cluster) -> None:
    plans = len(cluster.c.speaker.desired)
    cluster.relist(resources.IPAM_CLAIM, claims_gone(10, 11), complete=False)
    assert len(cluster.c.speaker.desired) == plans
    cluster.relist(resources.IPAM_CLAIM, claims_gone(12, 13))
    assert len(cluster.c.speaker.desired) == plans + 1
    assert cluster.handed == ALL  # all four, as one relist: not two halves of two


def test_a_relist_withdrawing_at_most_half_is_applied(cluster: Cluster) -> None:
    cluster.relist(resources.IPAM_CLAIM, claims_gone(10, 11))  # 2 of 5
    assert cluster.handed == sorted([SUBNET, host(12), host(13)])
    assert cluster.observer.held[-1] == {PEER: 0}


def test_ordinary_delete_events_are_applied_whatever_they_withdraw(cluster: Cluster, clock: ManualClock) -> None:
    """Two VMs deleted together, and later two more: never a mass deletion (fewer than MASS_DELETION_MIN objects
    within the window), so each withdrawal goes out once settled, although the last two leave the peer one route."""
    cluster.watch("DELETED", claim(10), claim(11))
    assert cluster.handed == ALL
    clock.now += SETTLE
    cluster.step()
    assert cluster.handed == sorted([SUBNET, host(12), host(13)])
    clock.now += MASS_DELETION_WINDOW
    cluster.watch("DELETED", claim(12), claim(13))
    clock.now += SETTLE
    cluster.step()
    assert cluster.handed == [SUBNET]
    assert cluster.observer.held[-1] == {PEER: 0}


def deleting(i: int) -> dict:
    """Claim `i` with a deletionTimestamp (its finalizer keeps it), as a new version of the object."""
    obj = k8s.ipam_claim(NS, f"vm-{i}.default", f"vm-{i}", NET, [f"192.168.100.{i}/24"], deleting=True)
    obj["metadata"]["resourceVersion"] = f"{obj['metadata']['resourceVersion']}1"
    return obj


def test_one_vm_deleted_withdraws_once_the_deletions_paused_measured_from_its_event(
    cluster: Cluster, clock: ManualClock
) -> None:
    cluster.watch("MODIFIED", deleting(10))
    assert cluster.handed == ALL
    event = cluster.c.speaker.causes[-1]
    clock.now += SETTLE / 2
    cluster.watch("DELETED", claim(10))  # the same VM's next deletion event: the pause starts again
    clock.now += SETTLE / 2
    cluster.step()
    assert cluster.handed == ALL
    clock.now += SETTLE / 2
    cluster.step()
    assert cluster.handed == sorted([SUBNET, host(11), host(12), host(13)])
    assert cluster.c.speaker.causes[-1] is event, "the convergence of the withdrawal counts from its first event"
    assert cluster.observer.held[-1] == {PEER: 0}
    plans = len(cluster.c.speaker.desired)
    clock.now += SETTLE
    cluster.step()
    assert len(cluster.c.speaker.desired) == plans, "settled once"


def test_a_vm_back_while_its_withdrawal_settles_never_leaves_the_fabric(cluster: Cluster, clock: ManualClock) -> None:
    cluster.watch("DELETED", claim(10))
    cluster.watch("ADDED", claim(10))
    clock.now += SETTLE
    cluster.step()
    assert all(handed == ALL for handed in cluster.c.speaker.desired)


@pytest.mark.parametrize(
    "batches",
    [
        pytest.param([[10, 11, 12, 13]], id="every-claim-in-one-plan"),
        pytest.param([[10], [11], [12], [13]], id="one-claim-a-plan"),
        pytest.param([[10, 11], [12, 13]], id="two-plans"),
    ],
)
def test_a_crd_deleted_marks_every_claim_deleting_and_the_routes_are_held(
    cluster: Cluster, clock: ManualClock, batches: list[list[int]]
) -> None:
    """The IPAMClaim CRD deleted on a real apiserver: every claim gets a deletionTimestamp (ordinary MODIFIED
    events, in as many plans as the loop happens to make), then DELETED. From the third claim on it is a mass
    deletion; the routes the first two would withdraw were still settling: every claim's route is held, and no set
    handed to the speaker ever lacked one."""
    start = len(cluster.c.speaker.desired)
    for batch in batches:
        cluster.watch("MODIFIED", *(deleting(i) for i in batch))
        clock.now += 0.01
    assert cluster.handed == ALL
    assert cluster.observer.held[-1] == {PEER: 4}
    assert ("ipamclaims", True) in cluster.observer.resources_held
    cluster.watch("DELETED", *(claim(i) for i in (10, 11, 12, 13)))
    clock.now += MASS_DELETION_WINDOW
    cluster.step()
    assert cluster.handed == ALL, "the DELETED events of a mass deletion are held too"
    assert all(handed == ALL for handed in cluster.c.speaker.desired[start:]), "never withdrawn, never a flap"


def test_a_mass_deletion_is_carried_out_when_a_list_after_the_hold_confirms_it(
    cluster: Cluster, clock: ManualClock
) -> None:
    held_at = clock.now
    cluster.watch("MODIFIED", *(deleting(i) for i in (10, 11, 12, 13)))
    assert cluster.handed == ALL
    clock.now = held_at + H - 1
    cluster.step()
    assert cluster.handed == ALL and cluster.relists == 0
    clock.now = held_at + H
    cluster.step()
    assert cluster.relists == 1  # the confirming LIST asked of every resource
    cluster.synced_all(listed_at=held_at + H)  # it still has the claims, deleting
    cluster.step()
    assert cluster.handed == [SUBNET]
    assert cluster.observer.held[-1] == {PEER: 0}
    assert ("ipamclaims", False) in cluster.observer.resources_held


def test_claims_recreated_during_a_mass_deletion_end_the_hold(cluster: Cluster, clock: ManualClock) -> None:
    cluster.watch("MODIFIED", *(deleting(i) for i in (10, 11, 12, 13)))
    cluster.watch("DELETED", *(claim(i) for i in (10, 11, 12, 13)))
    cluster.watch("ADDED", *(claim(i) for i in (10, 11, 12, 13)))  # the CRD and the claims applied again
    assert cluster.handed == ALL
    assert cluster.observer.held[-1] == {PEER: 0}


def test_announcements_in_a_held_relist_go_out_at_once(cluster: Cluster) -> None:
    cluster.watch("ADDED", vmi(20))  # a VM without its claim yet: no route
    cluster.relist(resources.IPAM_CLAIM, [*claims_gone(10, 11, 12, 13), ("ADDED", claim(20))])
    assert cluster.handed == sorted([*ALL, host(20)])
    assert cluster.observer.held[-1] == {PEER: 4}


def test_held_routes_go_when_a_list_of_every_resource_begun_after_the_hold_still_agrees(
    cluster: Cluster, clock: ManualClock
) -> None:
    held_at = clock.now
    cluster.relist(resources.IPAM_CLAIM, claims_gone(10, 11, 12, 13))
    clock.now = held_at + H - 1
    cluster.step()
    assert cluster.relists == 0
    clock.now = held_at + H
    cluster.step()
    assert cluster.relists == 1  # the controller asks every reflector for a confirming LIST
    cluster.step()
    assert cluster.relists == 1  # once
    assert cluster.handed == ALL

    for res in watched_resources(config())[:-1]:  # all but one resource listed again: not yet
        cluster.synced(res, listed_at=held_at + H)
    cluster.step()
    assert cluster.handed == ALL
    cluster.synced(watched_resources(config())[-1], listed_at=held_at + H)
    cluster.step()
    assert cluster.handed == [SUBNET]
    assert cluster.observer.held[-1] == {PEER: 0}


def test_a_list_begun_before_the_deadline_confirms_nothing(cluster: Cluster, clock: ManualClock) -> None:
    held_at = clock.now
    cluster.relist(resources.IPAM_CLAIM, claims_gone(10, 11, 12, 13))
    clock.now = held_at + H + 5
    cluster.synced_all(listed_at=held_at + H - 1)  # completed late, but begun too early
    cluster.step()
    assert cluster.handed == ALL


def test_objects_back_before_the_deadline_end_the_hold_without_a_withdrawal(
    cluster: Cluster, clock: ManualClock
) -> None:
    cluster.relist(resources.IPAM_CLAIM, claims_gone(10, 11, 12, 13))
    cluster.relist(resources.IPAM_CLAIM, [("ADDED", claim(i)) for i in (10, 11, 12, 13)])
    assert cluster.handed == ALL
    assert cluster.observer.held[-1] == {PEER: 0}
    clock.now += 2 * H
    cluster.step()
    assert cluster.relists == 0


def test_the_periodic_full_resync_keeps_held_routes(cluster: Cluster) -> None:
    cluster.relist(resources.IPAM_CLAIM, claims_gone(10, 11, 12, 13))
    plans = len(cluster.observer.plans)
    cluster.clock.now += RESYNC
    cluster.c.step()
    assert len(cluster.observer.plans) == plans + 1
    assert cluster.handed == ALL
    assert cluster.observer.held[-1] == {PEER: 4}
