"""A ToR session flap with 10,000 routes: the ToR has them all again within a few seconds, and End-of-RIB follows.

Rule (a session flap costs seconds, not a reconvergence): a flap re-advertises 10k routes within 2 s. ExaBGP re-sends
its adj-rib-out by itself right after the OPEN, without the controller re-announcing anything; bgpadv adds End-of-RIB on
the peer's `up` (`manual-eor`). Measured on a 2-core machine (bench/flap.py): 0.45-0.75 s from `clear bgp` to all 10,001
routes in FRR's table, 0.9-1.2 s to the ToR's FIB. The bound asserted here is a generous 5 s, for a loaded machine; the
bench prints the figures.
"""

from __future__ import annotations

import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab
from bgpadv_lab.frr import FrrRouter, VtyClient
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

W1 = "10.0.0.11"
VMS = 10_000
TOTAL = VMS + 1  # and the network's /16
BOUND = 5.0


def received(vty: VtyClient) -> int:
    peers = vty.json("show bgp ipv4 unicast summary json").get("peers") or {}
    return int((peers.get(W1) or {}).get("pfxRcd") or 0)


def end_of_rib_received(frr: FrrRouter) -> bool:
    gr = frr.graceful_restart(W1)
    return bool(((gr.get("ipv4Unicast") or {}).get("endOfRibStatus") or {}).get("endOfRibRecv"))


@pytest.fixture(scope="module")
def loaded():
    with Lab("bgpflap") as lab, BgpadvInLab(lab, k8s.vms_on_one_node(VMS, W1, NS)) as running, running.frr.vty() as vty:
        running.frr.wait_for(lambda: received(vty) == TOTAL, 120, f"{TOTAL} routes at the ToR", every=0.2)
        yield running, vty


def test_a_cleared_session_has_all_10k_routes_back_within_the_bound_followed_by_end_of_rib(loaded):
    running, vty = loaded
    frr = running.frr
    t0 = time.monotonic()
    frr.vtysh(f"clear bgp {W1}")  # hard reset from the ToR's side: NOTIFICATION Cease, routes dropped
    frr.wait_for(lambda: received(vty) < TOTAL, 5, "the ToR to drop the routes", every=0.01)
    frr.wait_for(lambda: received(vty) == TOTAL, 60, f"{TOTAL} routes back", every=0.01)
    took = time.monotonic() - t0
    assert took < BOUND, f"{TOTAL} routes took {took:.2f}s to come back"
    frr.wait_for(lambda: end_of_rib_received(frr), 10, "End-of-RIB from bgpadv after the flap")
