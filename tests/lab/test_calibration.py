"""Calibration: bgpadv's "on the wire" stage agrees with the time each UPDATE reaches the ToR, measured at the ToR.

Scope: ExaBGP in worker-1 runs tests/lab/calibration_driver.py (the real Speaker observed by the real
MetricsObserver, lines stamped by a reader thread as in the service). The test makes 120 single-route changes one
at a time (60 announcements, 60 withdrawals of /32s) and takes, for each, bgpadv's `sent` time (the echo of ExaBGP's
`send { update; }`) and the capture time of the UPDATE on the ToR's interface (UpdateCapture, tcpdump in the ToR's
namespace). Both are CLOCK_MONOTONIC readings on one machine. The median absolute difference must be within 5 ms.

The ToR's own install time (the UPDATE's capture to the route appearing in or leaving the kernel FIB, from
`ip monitor route` in the ToR's namespace) is reported, not asserted: it is FRR's batching, not bgpadv's.
Run with `-s` to see the figures.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bgpadv.config import load
from bgpadv.speaker.exabgp_config import exabgp_argv, exabgp_environment, render_exabgp_config
from bgpadv_lab.capture import UpdateCapture
from bgpadv_lab.fib import FibMonitor
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

DRIVER = Path(__file__).with_name("calibration_driver.py")
W1, TOR = "10.0.0.11", "10.0.0.1"
CHANGES = 120
AGREEMENT = 0.005


class CalibratedSpeaker:
    def __init__(self, lab: Lab, workdir: Path) -> None:
        self.fifo = workdir / "changes.fifo"
        os.mkfifo(self.fifo)
        self._writer = os.open(self.fifo, os.O_RDWR)
        self.sent_path = workdir / "sent.jsonl"
        self.sent_path.touch()
        self.status_path = workdir / "status.json"
        cfg = {
            "localASN": 64513,
            "routerID": W1,
            "peers": [{"address": TOR, "asn": 64512, "localAddress": W1, "holdTime": 9, "gracefulRestart": False}],
        }
        (workdir / "bgpadv.yaml").write_text(yaml.safe_dump(cfg))
        config = load(workdir / "bgpadv.yaml")
        api = [sys.executable, str(DRIVER), str(workdir / "bgpadv.yaml"), str(self.fifo)]
        api += [str(self.sent_path), str(self.status_path)]
        (workdir / "exabgp.conf").write_text(render_exabgp_config(config, api))
        env = {**os.environ, **exabgp_environment(config, workdir)}
        self.log = (workdir / "exabgp.log").open("ab")
        self.proc = lab.net.spawn(
            lab.ns("w1"), exabgp_argv(workdir / "exabgp.conf"), env=env, stdout=self.log, stderr=subprocess.STDOUT
        )

    def change(self, routes: list[str]) -> float:
        """Hand the driver a new desired set; returns the change's "watch event" time."""
        at = time.monotonic()
        line = json.dumps({"routes": [[p, W1] for p in routes], "received_at": at}) + "\n"
        os.write(self._writer, line.encode())
        return at

    def sent(self, prefix: str, op: str, since: float, timeout: float = 5.0) -> float:
        """bgpadv's `sent` time for `prefix` (announce|withdraw) at or after `since`."""
        key = "announced" if op == "announce" else "withdrawn"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.sent_path.read_text().splitlines():
                rec = json.loads(line)
                if rec["at"] >= since and prefix in rec[key]:
                    return rec["at"]
            time.sleep(0.002)
        raise TimeoutError(f"bgpadv reported no {op} of {prefix}")

    def close(self, lab: Lab) -> None:
        lab.net.kill(self.proc)
        os.close(self._writer)
        self.log.close()


@pytest.fixture(scope="module")
def calibration_lab(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with Lab("bgpmx") as lab:
        speaker = CalibratedSpeaker(lab, tmp_path_factory.mktemp("bgpmx-calibration"))
        monitor = FibMonitor(lab.net, lab.ns("tor"))
        try:
            lab.frr.wait_for(lambda: lab.frr.neighbor_state(W1) == "Established", 30, "session from w1")
            yield lab, speaker, monitor
        finally:
            lab.net.kill(monitor.proc)
            speaker.close(lab)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def test_sent_stage_agrees_with_the_tor_capture_within_5ms_at_p50(calibration_lab) -> None:
    lab, speaker, monitor = calibration_lab
    diffs: list[float] = []  # bgpadv's sent - the ToR's capture
    sent_stage: list[float] = []  # event -> bgpadv's sent
    wire: list[float] = []  # event -> the ToR's capture
    fib: list[float] = []  # the ToR's capture -> kernel FIB change
    desired: list[str] = []
    started = time.monotonic()
    with UpdateCapture(lab.ns("tor"), "w1", src=W1) as cap:
        for i in range(CHANGES):
            prefix = f"10.80.{i // 2 // 250}.{i // 2 % 250 + 1}/32"
            op = "announce" if i % 2 == 0 else "withdraw"
            desired = [*desired, prefix] if op == "announce" else [p for p in desired if p != prefix]
            event = speaker.change(desired)
            t_wire = cap.wait_for([prefix], timeout=5, op=op, since=event)[prefix]
            t_sent = speaker.sent(prefix, op, since=event)
            t_fib = monitor.wait(prefix, "add" if op == "announce" else "del", since=event)
            diffs.append(t_sent - t_wire)
            sent_stage.append(t_sent - event)
            wire.append(t_wire - event)
            if t_fib is not None:
                fib.append(t_fib - t_wire)
            time.sleep(0.02)

    print(f"\n{CHANGES} changes in {time.monotonic() - started:.1f}s")
    time.sleep(0.2)  # the driver writes its status after the last echo
    status = json.loads(speaker.status_path.read_text())
    ms = 1000.0
    print(
        f"\ncalibration over {len(diffs)} changes (ms): "
        f"bgpadv sent - ToR capture p50 {pct(diffs, 0.5) * ms:+.2f} "
        f"|p50| {statistics.median(abs(d) for d in diffs) * ms:.2f} "
        f"p1 {pct(diffs, 0.01) * ms:+.2f} p99 {pct(diffs, 0.99) * ms:+.2f}\n"
        f"  event -> bgpadv sent  p50 {pct(sent_stage, 0.5) * ms:.2f} p99 {pct(sent_stage, 0.99) * ms:.2f}\n"
        f"  event -> ToR capture  p50 {pct(wire, 0.5) * ms:.2f} p99 {pct(wire, 0.99) * ms:.2f}\n"
        f"  ToR capture -> ToR FIB ({len(fib)} seen) p50 {pct(fib, 0.5) * ms:.1f} p99 {pct(fib, 0.99) * ms:.1f}\n"
        f"  MetricsObserver sent window: {status['convergence']['sent']}"
    )
    assert len(diffs) == CHANGES
    assert statistics.median(abs(d) for d in diffs) <= AGREEMENT
    assert status["convergence"]["sent"]["samples"] == CHANGES
