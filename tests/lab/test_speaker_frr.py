"""The real Speaker driving a real ExaBGP against a real FRR ToR, asserted on FRR's RIB and the ToR kernel's FIB.

ExaBGP runs in worker-1 with bgpadv_lab/speaker_driver.py as its API process (the Speaker in a minimal controller);
the test rewrites the driver's desired-set file and waits on FRR. Tests in this module run in order and share one
ExaBGP session: bulk load, IPv6, a ToR's route refresh, next-hop move, withdrawal, then the controller is killed and
respawned.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.speaker_lab import W1, W1_6, W2, Speaker, v4_hosts

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def speaker(lab, tmp_path_factory):
    s = Speaker(lab, tmp_path_factory.mktemp("exabgp"))
    try:
        lab.frr.wait_for(lambda: lab.frr.neighbor_state(W1) == "Established", 30, "BGP session from worker-1")
        yield s
    finally:
        lab.net.kill(s.proc)
        s.log.close()


class FibWatch:
    """Samples the ToR's FIB in the background: the fewest of `watched` prefixes present at any sample."""

    def __init__(self, frr: FrrRouter, watched: set[str]) -> None:
        self.frr, self.watched, self.minimum, self.samples = frr, watched, len(watched), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            present = len(self.watched & set(self.frr.fib_routes()))
            self.minimum = min(self.minimum, present)
            self.samples += 1

    def __enter__(self) -> FibWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


BULK = v4_hosts(0, 1000)
V6 = "fd00:10::5/128"


def test_bulk_announcement_of_1000_routes_and_an_ipv6_host_reaches_rib_and_fib(lab, speaker):
    gen = speaker.set([(p, W1) for p in BULK] + [(V6, W1_6)])
    frr = lab.frr
    frr.wait_for(lambda: len(frr.fib_routes()) == 1000, 30, "1000 routes in the ToR FIB")
    assert frr.bgp_routes("ipv4") == {p: [W1] for p in BULK}
    frr.wait_for(lambda: V6 in frr.fib_routes(6), 10, "the IPv6 host route in the FIB")
    assert frr.bgp_routes("ipv6") == {V6: [W1_6]}
    assert frr.fib_routes(6)[V6] == [W1_6]
    status = FrrRouter.wait_for(lambda: (s := speaker.wait_idle(gen))["announced_sent"] >= 1001 and s, 10, "echoes")
    assert status["errors"] == 0


def test_end_of_rib_was_sent_and_graceful_restart_negotiated(lab, speaker):
    frr = lab.frr
    gr = frr.wait_for(
        lambda: (
            (g := frr.graceful_restart(W1))
            and g.get("ipv4Unicast", {}).get("endOfRibStatus", {}).get("endOfRibRecv")
            and g
        ),
        15,
        "End-of-RIB received from worker-1",
    )
    assert gr["remoteGrMode"] == "Restart"


V6_BULK = [f"fd00:10::1:{i:x}/128" for i in range(300)]


def updates_received(frr: FrrRouter) -> int:
    return int(frr.neighbor(W1)["messageStats"]["updatesRecv"])


def settled_updates_received(frr: FrrRouter) -> int:
    """FRR's count of UPDATEs from worker-1 once it stopped moving (the same over 0.5 s)."""
    last = updates_received(frr)
    while True:
        time.sleep(0.5)
        if (now := updates_received(frr)) == last:
            return now
        last = now


def test_ipv6_hosts_share_updates_and_a_route_refresh_is_answered_whole_in_few_updates(lab, speaker):
    """ExaBGP sends one UPDATE per IPv6 route and per re-sent route of a refresh answer; bgpadv's ExaBGP packs them
    (`exabgp_boot`: 300 /128s of one next hop fit 2 messages of 4 KiB), and enhanced refresh's BoRR/EoRR still
    bracket the answer: FRR marks the session's routes stale at BoRR and drops what is still stale at EoRR, so a
    route sent outside the brackets would leave the ToR."""
    frr = lab.frr
    assert frr.neighbor(W1)["neighborCapabilities"]["enhancedRouteRefresh"] == "advertisedAndReceived"
    before = updates_received(frr)
    speaker.wait_idle(speaker.set([(p, W1) for p in BULK] + [(V6, W1_6)] + [(p, W1_6) for p in V6_BULK]))
    frr.wait_for(lambda: len(frr.bgp_routes("ipv6")) == 301, 20, "301 IPv6 routes in the ToR's RIB")
    assert settled_updates_received(frr) - before <= 30  # ExaBGP's own stream: 300 (the speaker sends batches)

    for afi in ("ipv4", "ipv6"):
        before = updates_received(frr)
        frr.vtysh(f"clear bgp {afi} unicast {W1} soft in")  # FRR asks worker-1 for a ROUTE-REFRESH
        frr.wait_for(lambda n=before: updates_received(frr) > n, 10, f"worker-1's {afi} refresh answer")
        assert settled_updates_received(frr) - before <= 10  # ExaBGP's own answer: one per route, 1,000 or 301
    # FRR reads EoRR the moment it arrives; a route left stale by it would be gone by now
    assert frr.bgp_routes("ipv4") == {p: [W1] for p in BULK}
    assert frr.bgp_routes("ipv6") == {V6: [W1_6]} | {p: [W1_6] for p in V6_BULK}
    assert set(frr.fib_routes(6)) >= {V6, *V6_BULK}

    before = updates_received(frr)
    speaker.wait_idle(speaker.set([(p, W1) for p in BULK] + [(V6, W1_6)]))  # the 300 withdrawn: MP_UNREACH_NLRI
    frr.wait_for(lambda: set(frr.bgp_routes("ipv6")) == {V6}, 20, "the 300 IPv6 hosts withdrawn")
    assert settled_updates_received(frr) - before <= 30


def test_next_hop_move_replaces_the_path_without_a_withdrawal(lab, speaker):
    moved = BULK[:100]
    before = speaker.status()["withdrawn_sent"]
    with FibWatch(lab.frr, set(BULK)) as watch:
        gen = speaker.set([(p, W2) for p in moved] + [(p, W1) for p in BULK[100:]] + [(V6, W1_6)])
        lab.frr.wait_for(lambda: all(lab.frr.fib_routes().get(p) == [W2] for p in moved), 20, "moved next hops")
    assert watch.samples > 0 and watch.minimum == 1000, "a moved route disappeared from the FIB"
    assert speaker.wait_idle(gen)["withdrawn_sent"] == before
    assert lab.frr.bgp_routes()[moved[0]] == [W2]


def test_withdrawal_removes_routes_from_rib_and_fib(lab, speaker):
    gen = speaker.set([(p, W1) for p in BULK[:500]])
    frr = lab.frr
    frr.wait_for(lambda: len(frr.fib_routes()) == 500, 20, "500 routes left in the FIB")
    assert set(frr.bgp_routes()) == set(BULK[:500])
    frr.wait_for(lambda: not frr.bgp_routes("ipv6"), 10, "IPv6 route withdrawn")
    assert speaker.wait_idle(gen)["errors"] == 0


def test_killed_controller_is_respawned_keeps_routes_and_withdraws_stale_ones(lab, speaker):
    kept, stale, new = BULK[:400], BULK[400:500], v4_hosts(5000, 50)
    old_pid = speaker.status()["pid"]
    with FibWatch(lab.frr, set(kept)) as watch:
        os.kill(old_pid, signal.SIGKILL)
        gen = speaker.set([(p, W1) for p in kept + new])
        FrrRouter.wait_for(
            lambda: (s := speaker.status()).get("pid") != old_pid and s.get("ready"), 20, "a respawned controller"
        )
        speaker.wait_idle(gen)
        lab.frr.wait_for(lambda: set(lab.frr.fib_routes()) == set(kept + new), 20, "FIB = kept + new")
    assert watch.minimum == len(kept), "a route that stayed desired left the FIB during the controller restart"
    status = FrrRouter.wait_for(lambda: (s := speaker.status())["withdrawn_sent"] >= len(stale) and s, 10, "echoes")
    assert set(status["withdrawn"]) == set(stale)  # what ExaBGP put on the wire: only the stale routes
    assert status["peer_states"] == {"10.0.0.1": "up"}
    assert set(lab.frr.bgp_routes()) == set(kept + new)
    assert not set(stale) & set(lab.frr.fib_routes())
    assert lab.frr.neighbor_state(W1) == "Established"
