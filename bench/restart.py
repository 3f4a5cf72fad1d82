"""What the fabric sees when `bgpadv run` stops, dies or loses its controller: pings lost, routes at the ToR.

Builds the lab, runs `bgpadv run` in worker-1 (drain 3 s, graceful restart 60 s) against the fake API with N running
VMs (one /32 each, plus the network's /16), puts a VM namespace behind worker-1 and pings it from the host behind
the ToR every 20 ms throughout. While a scenario runs, a thread samples the paths FRR holds from worker-1 (bgpd's
vty: `prefix-counts`, stale paths included) and the ToR kernel's BGP routes (`ip route show proto bgp`) and keeps the
minimum of each. Freshness is polled every 20 ms the same cheap way (bgpd counts; no JSON dump of every route, which
at 10k routes loaded the 2 cores the restart runs on and made the poll ~0.1 s coarse).
Scenarios:
  - sigterm: SIGTERM, wait for `bgpadv run` to exit, start it again;
  - kill9:   SIGKILL `bgpadv run` (the kernel kills ExaBGP with it), start it again;
  - crashes: SIGKILL the controller 10 times, each as soon as the shim has started a new one.
For each: pings sent/lost, the minimum route counts, how long until the ToR held a fresh set again (every route, no
stale path, no GRACEFUL_SHUTDOWN) or, for crashes, whether ExaBGP is the same process; for sigterm also how long
until every route carried GRACEFUL_SHUTDOWN at the ToR (it must be well inside the drain).

Run: `.venv/bin/python bench/restart.py [--vms N] [--drain S]` (root; default 1,000 VMs, drain 3 s).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from figures import figure

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.frr import FrrRouter, VtyClient
from bgpadv_lab.topology import Lab
from bgpadv_lab.watch import ContinuousPing, Periodic

NS = "imported-vms"
W1 = "10.0.0.11"
VM_IP = "192.168.100.10"
DRAIN = 3.0


def fib_count(ns: str) -> int:
    argv = ["ip", "netns", "exec", ns, "ip", "-4", "route", "show", "proto", "bgp"]
    return subprocess.run(argv, capture_output=True, text=True).stdout.count("\n")


def counts(vty: VtyClient) -> dict[str, int]:
    """bgpd's walk of its table for worker-1's paths (`All RIB`, `Stale`, ...): counted in bgpd, so a poll costs
    little beside the load it measures (a JSON dump of every route costs bgpd and this process ~0.1 s at 10k); {}
    while bgpd knows no such peer."""
    try:
        data = vty.json(f"show bgp ipv4 unicast neighbors {W1} prefix-counts json")
    except RuntimeError:
        return {}
    return data.get("ribTableWalkCounters") or {}


def fresh(vty: VtyClient, total: int) -> bool:
    """Every route from worker-1 at the ToR, none of them a stale (graceful-restart) path, none carrying
    GRACEFUL_SHUTDOWN."""
    c = counts(vty)
    if c.get("All RIB", 0) < total or c.get("Stale", 1) != 0:
        return False
    return gshut_count(vty) == 0


def gshut_count(vty: VtyClient) -> int:
    text = vty.command("show bgp ipv4 unicast community graceful-shutdown")
    found = re.search(r"Displayed\s+(\d+) routes", text)
    return int(found.group(1)) if found else 0


def open_vty(frr: FrrRouter) -> VtyClient:
    vty = frr.vty()
    vty.command("enable")  # prefix-counts is an enable-node command
    return vty


class Marking:
    """Polls (in a thread, through bgpd's vty socket) how many routes carry GRACEFUL_SHUTDOWN; `stop()` returns
    when all `total` did, in seconds since `t0`, or None."""

    def __init__(self, frr: FrrRouter, total: int, t0: float) -> None:
        self.vty = frr.vty()
        self.total = total
        self.t0 = t0
        self.at: float | None = None
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and self.at is None:
            count = gshut_count(self.vty)
            self.most = max(self.most, count)
            if count >= self.total:
                self.at = time.monotonic() - self.t0
            self._stop.wait(0.05)

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join(30)
        self.vty.close()
        return self.at


class Sampler(Periodic):
    """Minimum routes FRR holds from worker-1, and in the ToR's FIB, while it runs."""

    def __init__(self, frr: FrrRouter) -> None:
        super().__init__(0.1, "sampler")
        self.frr = frr
        self.vty = open_vty(frr)
        self.rib_min = self.fib_min = 1 << 30

    def sample(self) -> None:
        # every path from worker-1 in bgpd's table, stale ones included (a session that is down shows no pfxRcd)
        self.rib_min = min(self.rib_min, counts(self.vty).get("All RIB", 0))
        self.fib_min = min(self.fib_min, fib_count(self.frr.ns))

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self.vty.close()


def restart(chain: BgpadvInLab, vty: VtyClient, total: int) -> float:
    """Start `bgpadv run` again; seconds until the ToR holds a fresh set (polled every 20 ms)."""
    t0 = time.monotonic()
    chain.spawn()
    chain.frr.wait_for(lambda: fresh(vty, total), 300, "a fresh set at the ToR", every=0.02)
    return time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--drain", type=float, default=DRAIN, help="safety.drainSeconds")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the lab is torn down
    total = args.vms + 1
    with Lab("bgprstb") as lab:
        chain = BgpadvInLab(lab, k8s.vms_on_one_node(args.vms, W1, NS))
        chain.config = lab_config(chain.dir / "kubeconfig", safety={"drainSeconds": args.drain})
        with chain:
            frr = chain.frr
            vty = open_vty(frr)
            frr.wait_for(lambda: fresh(vty, total), 300, "the initial load", every=0.2)
            lab.add_vm("w1", VM_IP, "192.168.100.1", prefixlen=16)
            time.sleep(1.0)
            print(f"{total} routes at the ToR; drain {args.drain:g} s, graceful restart 60 s, ping every 20 ms")

            with ContinuousPing(lab, VM_IP, interval=0.02) as ping, Sampler(frr) as sample:
                time.sleep(1.0)
                t0 = time.monotonic()
                chain.proc.send_signal(signal.SIGTERM)
                marking = Marking(frr, total, t0)
                code = chain.proc.wait(120)
                exited = time.monotonic() - t0
                marked = marking.stop()
                time.sleep(1.0)
                back = restart(chain, vty, total)
                time.sleep(1.0)
            drained = f"{marked:.2f} s" if marked is not None else f"never (at most {marking.most})"
            print(
                f"sigterm: every route carried 65535:0 at the ToR after {drained}; exit {code} after {exited:.2f} s; "
                f"restarted, fresh set after {back:.2f} s; "
                f"pings {ping.sent} sent, {len(ping.lost)} lost; min routes FRR {sample.rib_min}, FIB {sample.fib_min} "
                f"({sample.samples} samples)"
            )

            with ContinuousPing(lab, VM_IP, interval=0.02) as ping, Sampler(frr) as sample:
                time.sleep(1.0)
                chain.proc.kill()
                chain.proc.wait(10)
                time.sleep(1.0)
                back = restart(chain, vty, total)
                time.sleep(1.0)
            figure(f"kill -9 of bgpadv run → every route fresh again ({args.vms} VMs)", back, "s", goal="≤ 3 s")
            print(
                f"kill9:   restarted, fresh set after {back:.2f} s; pings {ping.sent} sent, {len(ping.lost)} lost; "
                f"min routes FRR {sample.rib_min}, FIB {sample.fib_min} ({sample.samples} samples)"
            )

            exabgp = chain.exabgp_pids()
            killed: list[int] = []
            with ContinuousPing(lab, VM_IP, interval=0.02) as ping, Sampler(frr) as sample:
                t0 = time.monotonic()
                while len(killed) < 10:
                    pids = frr.wait_for(lambda: [p for p in chain.controller_pids() if p not in killed], 30, "ctl")
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                took = time.monotonic() - t0
                t1 = time.monotonic()
                chain.frr.wait_for(lambda: chain.get_ok("/readyz"), 60, "a ready controller", every=0.1)
                ready = time.monotonic() - t1
                time.sleep(1.0)
            print(
                f"crashes: 10 controller kills in {took:.1f} s, a ready controller {ready:.1f} s after the last; "
                f"ExaBGP {'the same process' if chain.exabgp_pids() == exabgp else 'REPLACED'} "
                f"(state {frr.neighbor_state(W1)}); pings {ping.sent} sent, {len(ping.lost)} lost; "
                f"min routes FRR {sample.rib_min}, FIB {sample.fib_min}"
            )
            vty.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
