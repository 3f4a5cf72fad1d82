"""The controller's delta chain hands the speaker what its whole-set path hands it.

Two controllers see the same watch events on the same fake clock: one as shipped (an ordinary watch event runs
planner delta -> `Guard.check_delta` -> `FailStatic.withhold_delta` -> `Speaker.apply_delta`), one held on the
whole-set path as it was before the delta chain (the guard declines every delta, so each plan runs
`desired_per_peer` -> `FailStatic.withhold` -> `Speaker.set_desired`, and a settling deadline hands
`FailStatic.settled` of the last guarded plan). After any random sequence of changes - VMs (claim and VMI) added
and deleted, migrated to the other node, a claim readdressed (perhaps to another VM's address), a LIST of every
resource completed again (confirming held withdrawals past their deadline), the network deleted and created again,
a node's address changed, a node cloned from another's image (reporting its address: the older keeps it), a
claimless VM whose edited launcher pod annotation lists a claimed address (the claim outranks it), a VM's
launcher pod referencing another VM's claim (the claim then is the referencing VM's), a burst of
deletions that the withdrawal hold takes for a mass deletion, the clock moved past `deletionSettleSeconds`, the
mass-deletion window or the hold's deadline - every peer's desired set on the recording speaker is the same on both,
and so are the counts of routes held.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from itertools import count

from hypothesis import given, settings
from hypothesis import strategies as st

from bgpadv.config import Config, parse
from bgpadv.core import resources
from bgpadv.core.model import Route
from bgpadv.runtime.controller import Controller, LoopSettings, watched_resources
from bgpadv.safety.failstatic import MASS_DELETION_WINDOW
from bgpadv.safety.hold import HoldDelta
from bgpadv.sources.reflector import WatchEvent
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import ADVERTISED
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.doubles import ManualClock, RecordingObserver, RecordingSources, RecordingSpeaker

NET = "cluster_udn_vmnet-a"
SUBNET = "192.168.100.0/24"
RAW = {
    "localASN": 64513,
    "peers": [{"address": "10.0.0.1", "asn": 64512}, {"address": "10.0.0.2", "asn": 64512}],
    "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
    "safety": {"maxWithdrawFraction": 0.5, "holdSeconds": 120.0},
}


def config() -> Config:
    """RAW parsed, afresh for each caller."""
    return parse(RAW)


SETTLE = config().safety.deletion_settle_seconds
HOLD = RAW["safety"]["holdSeconds"]
NODES = {"worker-1": "10.0.0.11", "worker-2": "10.0.0.12"}
VMS = range(10, 18)


def controller(clock: ManualClock) -> Controller:
    return Controller(
        config(),
        speaker=RecordingSpeaker(),
        sources=RecordingSources(),
        observer=RecordingObserver(),
        settings=LoopSettings(coalesce_window=0.0, resync_interval=1e9),  # no periodic full replan in the way
        clock=clock,
    )


def whole_set_only(c: Controller) -> Controller:
    """The controller as it planned before the delta chain: every plan guarded and held as a whole, and a settling
    deadline hands `FailStatic.settled` of the last plan's guarded routes, as a whole set."""
    last_guarded: list[Mapping[str, Sequence[Route]]] = [{}]
    withhold = c.failstatic.withhold

    def withhold_recorded(desired: Mapping[str, Sequence[Route]], *, full: bool):
        last_guarded[0] = desired
        return withhold(desired, full=full)

    def settled_as_whole() -> HoldDelta:
        decision = c.failstatic.settled(last_guarded[0])
        tables = c.speaker.tables  # type: ignore[attr-defined]
        changes = {
            peer: {**dict.fromkeys(tables.get(peer, {})), **{r.prefix.key: r for r in routes}}
            for peer, routes in decision.desired.items()
        }
        return HoldDelta(changes, decision.peers)

    c.guard.check_delta = lambda *args, **kwargs: None  # type: ignore[method-assign]
    c.failstatic.withhold = withhold_recorded  # type: ignore[method-assign]
    c.failstatic.settled_delta = settled_as_whole  # type: ignore[method-assign]
    return c


class Cluster:
    """What the cluster holds, and the events that change it, delivered to both controllers alike."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.delta = controller(self.clock)
        self.whole = whole_set_only(controller(self.clock))
        self.versions = count(200000)
        self.vms: dict[int, str] = {}  # VM -> its node
        self.addresses = {i: i for i in VMS}  # VM -> the last octet of its claimed address
        self.network = True
        self.node_addresses = dict(NODES)
        self.squatting = False
        self.borrowed: set[int] = set()  # VMs with a launcher pod (which references a claim)
        listed = [self.node(name) for name in NODES] + [self.cudn()]
        for i in VMS[:5]:
            self.vms[i] = "worker-1"
            listed += [self.claim(i), self.vmi(i)]
        for c in (self.delta, self.whole):
            for obj in listed:
                c.queue.put(self.event("ADDED", obj, from_list=True))
            for res in watched_resources(config()):
                c.queue.put(WatchEvent(res, "SYNCED", None, self.clock.now, None, listed_at=self.clock.now))
        self.step()

    def versioned(self, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(next(self.versions))
        return obj

    def node(self, name: str) -> dict:
        return self.versioned(k8s.node(name, self.node_addresses[name]))

    def cudn(self) -> dict:
        return self.versioned(k8s.cudn_layer2("vmnet-a", [SUBNET], labels=ADVERTISED))

    def claim(self, i: int) -> dict:
        address = f"192.168.100.{self.addresses[i]}/24"
        return self.versioned(k8s.ipam_claim(NS, f"vm-{i}.default", f"vm-{i}", NET, [address]))

    def vmi(self, i: int) -> dict:
        return self.versioned(k8s.vmi(NS, f"vm-{i}", self.vms[i]))

    @staticmethod
    def event(kind: str, obj: dict, *, from_list: bool = False) -> WatchEvent:
        res = resources.resource_for(obj)
        assert res is not None
        return WatchEvent(res, kind, obj, time.monotonic(), None, from_list)

    def watch(self, *events: tuple[str, dict]) -> None:
        for c in (self.delta, self.whole):
            for kind, obj in events:
                c.queue.put(self.event(kind, obj))
        self.step()

    def step(self) -> None:
        assert self.delta.step()
        assert self.whole.step()

    # the changes

    def add(self, i: int, node: str) -> None:
        if i in self.vms:
            return
        self.vms[i] = node
        self.watch(("ADDED", self.claim(i)), ("ADDED", self.vmi(i)))

    def remove(self, i: int) -> None:
        if i not in self.vms:
            return
        events = [("DELETED", self.claim(i)), ("DELETED", self.vmi(i))]
        del self.vms[i]
        self.watch(*events)

    def migrate(self, i: int) -> None:
        if i not in self.vms:
            return
        self.vms[i] = "worker-2" if self.vms[i] == "worker-1" else "worker-1"
        self.watch(("MODIFIED", self.vmi(i)))

    def readdress(self, i: int, octet: int) -> None:
        """VM i's claim now holds another address, perhaps another VM's (two claims of one address)."""
        if i not in self.vms:
            return
        self.addresses[i] = octet
        self.watch(("MODIFIED", self.claim(i)))

    def relist(self) -> None:
        """Every resource's LIST completes again (nothing changed meanwhile): a plan without a known delta, and the
        confirmation of held withdrawals once their deadline passed."""
        for c in (self.delta, self.whole):
            for res in watched_resources(config()):
                c.queue.put(WatchEvent(res, "SYNCED", None, self.clock.now, None, listed_at=self.clock.now))
        self.step()

    def toggle_network(self) -> None:
        self.network = not self.network
        self.watch(("ADDED" if self.network else "DELETED", self.cudn()))

    def move_node(self) -> None:
        old = self.node_addresses["worker-2"]
        self.node_addresses["worker-2"] = "10.0.0.22" if old == "10.0.0.12" else "10.0.0.12"
        self.watch(("MODIFIED", self.node("worker-2")))

    def clone_node(self) -> None:
        """worker-2 reports worker-1's address (a cloned image), or its own again: worker-1, older, keeps it."""
        old = self.node_addresses["worker-2"]
        self.node_addresses["worker-2"] = NODES["worker-2"] if old == NODES["worker-1"] else NODES["worker-1"]
        self.watch(("MODIFIED", self.node("worker-2")))

    def squat(self, i: int) -> None:
        """A claimless VM (older than every claim) appears on worker-2 with its launcher pod's pod-networks listing
        VM i's address, or goes: the claim outranks it whatever the ages."""
        vmi = self.versioned(k8s.vmi(NS, "squatter", "worker-2", created="2024-01-01T00:00:00Z"))
        pod = self.versioned(
            k8s.launcher_pod(NS, "squatter", "worker-2", ips=[f"192.168.100.{self.addresses[i]}/24"], nad="vmnet-a")
        )
        kind = "DELETED" if self.squatting else "ADDED"
        self.squatting = not self.squatting
        self.watch((kind, vmi), (kind, pod))

    def borrow(self, i: int, j: int) -> None:
        """VM i's launcher pod now references VM j's claim (`vm-j.default`, labelled for VM j; its own when i == j):
        OVN-K gives the pod that claim's address, so the claim is VM i's, announced via VM i's node."""
        if i not in self.vms:
            return
        pod = k8s.launcher_pod(
            NS, f"vm-{i}", self.vms[i], claim=f"vm-{j}.default", claim_via=k8s.DEFAULT_NETWORK_ANNOTATION
        )
        kind = "MODIFIED" if i in self.borrowed else "ADDED"
        self.borrowed.add(i)
        self.watch((kind, self.versioned(pod)))

    def burst(self) -> None:
        """Every VM's claim deleted at once: a mass deletion once at least three of them go."""
        gone = sorted(self.vms)
        events = [("DELETED", self.claim(i)) for i in gone] + [("DELETED", self.vmi(i)) for i in gone]
        self.vms.clear()
        self.watch(*events)

    def tick(self, seconds: float) -> None:
        self.clock.now += seconds
        self.step()

    def tables(self, c: Controller) -> dict[str, dict]:
        """Each peer's desired set (peers with none left out: a whole set names every peer, a delta those changed)."""
        tables = c.speaker.tables  # type: ignore[attr-defined]
        return {peer: dict(table) for peer, table in tables.items() if table}


vm = st.sampled_from(list(VMS))
change = st.one_of(
    st.tuples(st.just("add"), vm, st.sampled_from(sorted(NODES))),
    st.tuples(st.just("remove"), vm),
    st.tuples(st.just("migrate"), vm),
    st.tuples(st.just("readdress"), vm, vm),
    st.tuples(st.just("relist")),
    st.tuples(st.just("toggle_network")),
    st.tuples(st.just("move_node")),
    st.tuples(st.just("clone_node")),
    st.tuples(st.just("squat"), vm),
    st.tuples(st.just("borrow"), vm, vm),
    st.tuples(st.just("burst")),
    st.tuples(st.just("tick"), st.sampled_from([SETTLE / 2, SETTLE, MASS_DELETION_WINDOW, HOLD])),
)


@settings(max_examples=50, deadline=None)
@given(st.lists(change, min_size=1, max_size=25))
def test_the_delta_chain_hands_every_peer_what_the_whole_set_path_hands(changes):
    cluster = Cluster()
    assert cluster.tables(cluster.delta) == cluster.tables(cluster.whole)
    assert cluster.tables(cluster.delta)  # the seeded VMs are advertised
    for name, *args in changes:
        getattr(cluster, name)(*args)
        assert cluster.tables(cluster.delta) == cluster.tables(cluster.whole), (name, *args)
        assert cluster.delta.held == cluster.whole.held, (name, *args)


def test_an_ordinary_watch_event_takes_the_delta_chain_and_the_reference_the_whole_set_path():
    cluster = Cluster()
    cluster.add(15, "worker-2")
    assert cluster.delta.speaker.deltas == 1  # type: ignore[attr-defined]
    assert cluster.whole.speaker.deltas == 0  # type: ignore[attr-defined]
    assert cluster.tables(cluster.delta) == cluster.tables(cluster.whole)
