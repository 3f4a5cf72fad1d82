"""Re-advertisement after a ToR session flap: N host routes held by `bgpadv run`, the session cleared from FRR's side.

Builds the lab (FRR ToR, workers), runs `bgpadv run` in worker-1 against the fake API with N running VMs (one /32
each), waits until FRR holds all N, then FLAPS times: `clear bgp <worker-1>` on the ToR (a hard reset: FRR sends a
NOTIFICATION Cease and drops the routes), and times, from just before the clear:
  - down:        FRR's count of routes from worker-1 fell to 0;
  - established: the session is back (ExaBGP reconnects by itself);
  - first:       the first route is back;
  - all:         all N routes are back in FRR's BGP table (polled through bgpd's vty socket every 10 ms);
  - fib:         all N routes are back in the ToR kernel's FIB (`ip route show proto bgp`, polled every 100 ms).
ExaBGP re-sends its adj-rib-out by itself after the OPEN; bgpadv only adds End-of-RIB (`manual-eor`) on `up`.

Run: `.venv/bin/python bench/flap.py [--routes N] [--flaps K]` (root; default 10,000 routes, 3 flaps).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab
from bgpadv_lab.frr import FrrRouter, VtyClient
from bgpadv_lab.topology import Lab

NS = "imported-vms"
W1 = "10.0.0.11"


def received(vty: VtyClient) -> tuple[str, int]:
    """(session state, prefixes FRR accepted from worker-1), from the cheap IPv4 summary."""
    peers = vty.json("show bgp ipv4 unicast summary json").get("peers") or {}
    peer = peers.get(W1) or {}
    return str(peer.get("state", "")), int(peer.get("pfxRcd") or 0)


def fib_count(ns: str) -> int:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "ip", "-4", "route", "show", "proto", "bgp"], capture_output=True, text=True
    ).stdout
    return out.count("\n")


def flap_once(frr: FrrRouter, vty: VtyClient, total: int, timeout: float = 120.0) -> dict[str, float]:
    tor_ns = frr.ns
    marks: dict[str, float] = {}
    t0 = time.monotonic()
    frr.vtysh(f"clear bgp {W1}")  # an enable-mode command: vtysh, not the view-only vty socket
    next_fib = t0
    while time.monotonic() - t0 < timeout:
        state, count = received(vty)
        now = time.monotonic() - t0
        if count == 0 and "down" not in marks:
            marks["down"] = now
        if "down" in marks:
            if state == "Established" and "established" not in marks:
                marks["established"] = now
            if count > 0 and "first" not in marks:
                marks["first"] = now
            if count >= total and "all" not in marks:
                marks["all"] = now
        if "all" in marks and time.monotonic() >= next_fib:
            next_fib = time.monotonic() + 0.1
            if fib_count(tor_ns) >= total:
                marks["fib"] = time.monotonic() - t0
                return marks
        time.sleep(0.01)
    raise TimeoutError(f"flap not recovered in {timeout}s: {marks}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", type=int, default=10_000)
    parser.add_argument("--flaps", type=int, default=3)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the lab is torn down
    total = args.routes + 1  # the /16 subnet too
    with Lab("bgpflap") as lab, BgpadvInLab(lab, k8s.vms_on_one_node(args.routes, W1, NS)) as chain:
        frr = chain.frr
        with frr.vty() as vty:
            started = time.monotonic()
            frr.wait_for(lambda: received(vty)[1] >= total, 600, "the initial load", every=0.2)
            print(f"initial load: {total} routes in FRR's table {time.monotonic() - started:.1f} s after the session")
            frr.wait_for(lambda: fib_count(lab.ns("tor")) >= total, 120, "the initial FIB", every=0.2)
            time.sleep(2.0)
            for n in range(args.flaps):
                marks = flap_once(frr, vty, total)
                shown = "  ".join(f"{k} {v:6.2f} s" for k, v in marks.items())
                print(f"flap {n + 1}: {shown}")
                time.sleep(3.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
