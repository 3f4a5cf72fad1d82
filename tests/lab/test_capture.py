"""UpdateCapture decodes the UPDATEs a real ExaBGP sends to a real FRR, captured in the ToR's namespace.

Scope: a lab (bgpadv_lab.topology, prefix "bgpmx") with FRR as the ToR and ExaBGP in worker-1, whose API process
copies lines from a FIFO the test writes; tcpdump runs on the ToR's side of worker-1's veth. Checked: IPv4 NLRI and
withdrawals, IPv6 through MP_REACH/MP_UNREACH, next hops, a 500-prefix batch spread over several TCP segments, and
that capture times are monotonic-clock values falling between the command's write and FRR having the route.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bgpadv.config import load
from bgpadv.speaker.exabgp_config import exabgp_argv, exabgp_environment, render_exabgp_config
from bgpadv_lab.capture import UpdateCapture
from bgpadv_lab.frr import FrrRouter, prefixes
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

W1, W1_6, TOR = "10.0.0.11", "fd00::11", "10.0.0.1"

# ExaBGP's API process: copy command lines from a FIFO to stdout; read (and drop) ExaBGP's replies.
FIFO_PIPE = """
import os, sys, threading
threading.Thread(target=lambda: [None for _ in sys.stdin], daemon=True).start()
with os.fdopen(os.open(sys.argv[1], os.O_RDWR), "r") as fifo:
    for line in fifo:
        sys.stdout.write(line)
        sys.stdout.flush()
"""


class Exabgp:
    """ExaBGP in worker-1; `send(line)` hands a command to its API process."""

    def __init__(self, lab: Lab, workdir: Path) -> None:
        self.fifo = workdir / "commands.fifo"
        os.mkfifo(self.fifo)
        self._writer = os.open(self.fifo, os.O_RDWR)
        pipe = workdir / "fifo_pipe.py"
        pipe.write_text(FIFO_PIPE)
        cfg = {
            "localASN": 64513,
            "routerID": W1,
            "peers": [{"address": TOR, "asn": 64512, "localAddress": W1, "holdTime": 9, "gracefulRestart": False}],
        }
        (workdir / "bgpadv.yaml").write_text(yaml.safe_dump(cfg))
        config = load(workdir / "bgpadv.yaml")
        (workdir / "exabgp.conf").write_text(render_exabgp_config(config, [sys.executable, str(pipe), str(self.fifo)]))
        env = {**os.environ, **exabgp_environment(config, workdir)}
        self.log = (workdir / "exabgp.log").open("ab")
        self.proc = lab.net.spawn(
            lab.ns("w1"), exabgp_argv(workdir / "exabgp.conf"), env=env, stdout=self.log, stderr=subprocess.STDOUT
        )

    def send(self, line: str) -> float:
        """Write one command; returns the monotonic time just before the write."""
        at = time.monotonic()
        os.write(self._writer, (line + "\n").encode())
        return at

    def close(self, lab: Lab) -> None:
        lab.net.kill(self.proc)
        os.close(self._writer)
        self.log.close()


@pytest.fixture(scope="module")
def mxlab(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with Lab("bgpmx") as running:
        speaker = Exabgp(running, tmp_path_factory.mktemp("bgpmx-exabgp"))
        try:
            running.frr.wait_for(lambda: running.frr.neighbor_state(W1) == "Established", 30, "session from w1")
            yield running, speaker
        finally:
            speaker.close(running)


def hosts(third: int, count: int) -> list[str]:
    return [f"10.77.{third}.{i}/32" for i in range(1, count + 1)]


def test_ipv4_announce_and_withdraw_are_decoded_with_their_next_hop(mxlab) -> None:
    lab, speaker = mxlab
    batch = hosts(1, 20)
    with UpdateCapture(lab.ns("tor"), "w1", src=W1) as cap:
        written = speaker.send(f"announce attributes next-hop {W1} nlri {' '.join(batch)}")
        seen = cap.wait_for(batch, timeout=10, op="announce")
        lab.frr.wait_for(lambda: set(batch) <= prefixes(lab.frr.bgp_routes()), 10, "routes in FRR")
        in_rib = time.monotonic()
        assert all(written < t < in_rib for t in seen.values())
        update = next(u for u in cap.updates() if batch[0] in u.announced)
        assert update.next_hops == (W1,)
        assert update.src == f"{W1}:{update.src.rsplit(':', 1)[1]}" and update.dst.startswith(f"{TOR}:")

        gone_at = speaker.send(f"withdraw attributes next-hop {W1} nlri {' '.join(batch)}")
        withdrawn = cap.wait_for(batch, timeout=10, op="withdraw", since=gone_at)
        assert all(t > gone_at for t in withdrawn.values())
        lab.frr.wait_for(lambda: not set(batch) & prefixes(lab.frr.bgp_routes()), 10, "routes gone from FRR")


def test_ipv6_routes_travel_in_mp_reach_and_mp_unreach(mxlab) -> None:
    lab, speaker = mxlab
    v6 = ["fd00:77::5/128", "fd00:77::6/128"]
    with UpdateCapture(lab.ns("tor"), "w1", src=W1) as cap:
        for p in v6:
            speaker.send(f"announce route {p} next-hop {W1_6}")
        cap.wait_for(v6, timeout=10, op="announce")
        update = next(u for u in cap.updates() if v6[0] in u.announced)
        assert W1_6 in update.next_hops
        since = speaker.send(f"withdraw route {v6[0]} next-hop {W1_6}")
        cap.wait_for(v6[:1], timeout=10, op="withdraw", since=since)
        speaker.send(f"withdraw route {v6[1]} next-hop {W1_6}")
        cap.wait_for(v6[1:], timeout=10, op="withdraw", since=since)


def test_a_large_batch_spanning_many_segments_is_decoded_whole(mxlab) -> None:
    lab, speaker = mxlab
    batch = [f"10.78.{i // 250}.{i % 250 + 1}/32" for i in range(500)]
    with UpdateCapture(lab.ns("tor"), "w1", src=W1) as cap:
        speaker.send(f"announce attributes next-hop {W1} nlri {' '.join(batch)}")
        seen = cap.wait_for(batch, timeout=20, op="announce")
        assert len(seen) == 500
        announced = [p for u in cap.updates() for p in u.announced]
        assert sorted(set(announced)) == sorted(batch)  # nothing invented, nothing lost
        assert not any(p for u in cap.updates() for p in u.withdrawn)
        since = speaker.send(f"withdraw attributes next-hop {W1} nlri {' '.join(batch)}")
        cap.wait_for(batch, timeout=20, op="withdraw", since=since)


def test_a_missing_prefix_times_out_naming_it(mxlab) -> None:
    lab, _ = mxlab
    with UpdateCapture(lab.ns("tor"), "w1") as cap, pytest.raises(TimeoutError, match=r"10\.99\.0\.1/32"):
        cap.wait_for(["10.99.0.1/32"], timeout=0.5)


def test_capture_clock_matches_frr_install_order(mxlab) -> None:
    """FRR cannot have a route before the UPDATE carrying it reached its interface."""
    lab, speaker = mxlab
    prefix = "10.79.0.1/32"
    with UpdateCapture(lab.ns("tor"), "w1", src=W1) as cap:
        speaker.send(f"announce route {prefix} next-hop {W1}")
        t_wire = cap.wait_for([prefix], timeout=10)[prefix]
        FrrRouter.wait_for(lambda: prefix in prefixes(lab.frr.bgp_routes()), 10, "route in FRR", every=0.001)
        assert time.monotonic() > t_wire
        speaker.send(f"withdraw route {prefix} next-hop {W1}")
