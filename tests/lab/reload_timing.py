"""Live configuration reload and two active speakers, timed at the FRR ToR (the fixtures of tests/lab/test_reload.py
and tests/lab/test_two_replicas.py, driven once with finer polling).

- reload: after each kubelet-style swap of the configuration file, how long until the ToR shows the change (a
  community on every route; a new peer Established and holding every route; a removed peer's session down), and
  the untouched session's (state, established, dropped) and uptime;
- two: two speakers (worker-1, worker-2) and one ToR without graceful restart; `kill -9` of worker-1's for good
  while the host behind the ToR pings a VM every 50 ms: when the ToR saw the session end and was left with
  worker-2's paths, pings answered/lost, FIB samples missing a route.

Run: `.venv/bin/python -m tests.lab.reload_timing [reload|two]` from the checkout (root). Not a test (nothing is
asserted); it lives beside the tests because it drives their fixtures (bench/ never imports the tests).
"""

from __future__ import annotations

import sys
import time

from bgpadv_lab.netns import sh
from bgpadv_lab.watch import ContinuousPing
from tests.lab import test_reload as reload_test
from tests.lab import test_two_replicas as two_test


def reload() -> None:
    t = reload_test
    fixture = t.running.__wrapped__()
    bgpadv, volume = next(fixture)
    frr = bgpadv.frr

    def untouched() -> str:
        return f"{t.sessions(frr, t.W1)} up {frr.neighbor(t.W1).get('bgpTimerUpMsec')} ms"

    print("before:", untouched())
    start = time.monotonic()
    t.publish(bgpadv, volume, attributes={"communities": [t.COMMUNITY]})
    frr.wait_for(lambda: t.with_community(frr, t.COMMUNITY) == t.NET_A | t.NET_B, 20, "the community", every=0.02)
    print(f"community on every route after {time.monotonic() - start:.2f}s;", untouched())
    start = time.monotonic()
    t.publish(bgpadv, volume, peers=[t.PEER_1, t.PEER_2])
    frr.wait_for(lambda: frr.neighbor_state(t.W1_2) == "Established", 30, "the new session", every=0.02)
    established = time.monotonic() - start
    frr.wait_for(lambda: t.received_from(frr, t.W1_2) == t.routes(frr), 20, "its routes", every=0.02)
    print(
        f"new peer Established after {established:.2f}s, every route after {time.monotonic() - start:.2f}s;",
        untouched(),
    )
    start = time.monotonic()
    t.publish(bgpadv, volume, peers=[t.PEER_1])
    frr.wait_for(lambda: frr.neighbor_state(t.W1_2) != "Established", 30, "the session to end", every=0.02)
    print(f"removed peer's session down after {time.monotonic() - start:.2f}s;", untouched())
    next(fixture, None)


def two() -> None:
    t = two_test
    fixture = t.two_speakers.__wrapped__()
    lab, first, _ = next(fixture)
    frr = first.frr
    frr.wait_for(lambda: t.paths(frr) == t.BOTH, 60, "two paths for every prefix")
    lab.add_vm("w1", t.VM_IP, "192.168.100.1")
    sh(["ping", "-c", "2", "-W", "2", t.VM_IP], netns=lab.ns("ext"), check=False)
    with ContinuousPing(lab, t.VM_IP) as ping, t.FibWatch(frr) as fib:
        time.sleep(1.0)
        assert first.proc is not None
        start = time.monotonic()
        first.proc.kill()
        first.proc.wait(5)
        frr.wait_for(lambda: frr.neighbor_state(t.W1) != "Established", 10, "the session to end", every=0.02)
        print(f"the ToR saw worker-1's session end after {time.monotonic() - start:.2f}s")
        frr.wait_for(lambda: t.paths(frr) == t.SECOND_ONLY, 5, "worker-2's paths alone", every=0.02)
        print(f"worker-2's paths alone after {time.monotonic() - start:.2f}s")
        time.sleep(2.0)
    print(
        f"pings answered {len(ping.answered)}, lost {len(ping.lost)}; FIB samples {fib.samples}, gaps {len(fib.gaps)}"
    )
    next(fixture, None)


if __name__ == "__main__":
    which = sys.argv[1:] or ["reload", "two"]
    for name in which:
        {"reload": reload, "two": two}[name]()
