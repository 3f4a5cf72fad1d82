"""Bench: N host routes through the real Speaker + ExaBGP into FRR's RIB (printed, never asserted).

Builds a lab (prefix bgpsp-bench), starts ExaBGP in worker-1 with bgpadv_lab/speaker_driver.py as its API process,
writes one desired set of N /32s, and times first write -> FRR RIB count == N, then the withdrawal of all of them.
Prints wall times and ExaBGP's CPU and peak RSS. Usage: .venv/bin/python bench/speaker.py [10000 100000]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgpadv_lab.frr import FrrRouter  # noqa: E402
from bgpadv_lab.speaker_lab import W1, Speaker, v4_hosts  # noqa: E402
from bgpadv_lab.topology import Lab  # noqa: E402


def rib_count(frr: FrrRouter) -> int:
    data = frr.vtysh_json("show bgp ipv4 unicast summary json")
    peers = (data.get("ipv4Unicast") or data).get("peers", {})
    return int(peers.get(W1, {}).get("pfxRcd", 0))


def proc_stats(pid: int) -> tuple[float, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks (100 Hz)
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    peak = next(int(x.split()[1]) for x in status if x.startswith("VmHWM"))
    return cpu, peak * 1024


def main(sizes: list[int]) -> None:
    for n in sizes:
        with Lab("bgpsp-bench") as lab, tempfile.TemporaryDirectory(prefix="bgpsp-bench-") as tmp:
            sp = Speaker(lab, Path(tmp))
            lab.frr.wait_for(lambda: lab.frr.neighbor_state(W1) == "Established", 30, "session")
            cpu0, _ = proc_stats(sp.proc.pid)
            routes = v4_hosts(0, n)
            t0 = time.monotonic()
            sp.set([(p, W1) for p in routes])
            lab.frr.wait_for(lambda n=n: rib_count(lab.frr) == n, 600, f"{n} routes", every=0.2)
            t_announce = time.monotonic() - t0
            cpu1, rss = proc_stats(sp.proc.pid)
            t1 = time.monotonic()
            sp.set([])
            lab.frr.wait_for(lambda: rib_count(lab.frr) == 0, 600, "withdrawal", every=0.2)
            t_withdraw = time.monotonic() - t1
            cpu2, rss2 = proc_stats(sp.proc.pid)
            print(
                f"routes={n:>7}  announce->FRR RIB {t_announce:7.2f} s  withdraw {t_withdraw:7.2f} s  "
                f"ExaBGP CPU {cpu1 - cpu0:6.1f} s + {cpu2 - cpu1:6.1f} s  peak RSS {max(rss, rss2) / 2**20:6.0f} MiB"
            )
            lab.net.kill(sp.proc)
            sp.log.close()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10000, 100000])
