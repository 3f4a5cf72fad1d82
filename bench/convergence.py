"""Convergence of the whole chain: a Kubernetes write → the route on the ToR (wire, BGP table, kernel FIB).

Builds the lab (FRR ToR, worker namespaces), runs `bgpadv run` in worker-1 against the fake API, then makes
CHANGES single changes one at a time, alternating three kinds:
  - migrate: a running VM's VMI moves to the other node (status.nodeName flips) → its /32 gets a new next hop;
  - start:   a new VM (IPAMClaim with IPs, then its VMI Running) → a new /32 is announced (timed from the VMI write);
  - stop:    a VM's VMI is deleted → its /32 is withdrawn.
For each change it takes, on the ToR side only:
  - wire: the UPDATE carrying the prefix captured on the ToR's interface (tcpdump in the ToR namespace);
  - rib:  FRR's BGP table shows the expected best path (polled through bgpd's vty socket, ~0.2 ms a query);
  - fib:  the ToR kernel's route changes (`ip monitor route` in the ToR namespace).
All times are time.monotonic() on this machine, from just before the API write. Prints p50/p90/p99/max.

With `--storm K` it then writes K migrations of distinct VMs, evenly spread over one second (the target:
500 within a second at 10k VMs, all on the ToR within 2 s), and takes from the capture the UPDATE of each: how long
from the first write until the last of them was on the wire, and per migration write → wire (p50/p99); then checks
FRR's table has every one at its new node.

With `--refresh R` (default 3) it then has the ToR ask worker-1 R times for a ROUTE-REFRESH (`clear bgp ipv4 unicast
10.0.0.11 soft in`, what an edit of the ToR's inbound policy does) and, 50 ms later, migrates one VM: how long the
whole answer took (request → FRR's count of UPDATEs from worker-1 stops moving), in how many UPDATEs, and how long
the migration took from its write to its best path in FRR's table while the answer was under way.

Run: `.venv/bin/python bench/convergence.py [CHANGES] [--vms N] [--storm K] [--refresh R]` (root; default 120 changes
at 10,000 VMs, then a storm of 500; `BENCH_SCALE=100k` (as `make bench` passes it on) makes the default 100,000 VMs).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from figures import figure, quantile

from bgpadv_lab import objects as k8s
from bgpadv_lab.capture import UpdateCapture
from bgpadv_lab.chain import BgpadvInLab
from bgpadv_lab.fib import FibMonitor
from bgpadv_lab.topology import Lab

NS = "imported-vms"
NODES = {"worker-1": "10.0.0.11", "worker-2": "10.0.0.12"}


def vm_objects(name: str, ip: str, node: str) -> tuple[dict, dict]:
    claim = k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/12"])
    vmi = k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip])])
    return claim, vmi


def percentiles(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    if not ms:
        return "n/a"
    q = {p: quantile(ms, p) for p in (0.5, 0.9, 0.99)}
    return f"p50 {q[0.5]:7.1f}  p90 {q[0.9]:7.1f}  p99 {q[0.99]:7.1f}  max {max(ms):7.1f} ms  (n={len(ms)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("changes", type=int, nargs="?", default=120)
    scale = 100_000 if os.environ.get("BENCH_SCALE") == "100k" else 10_000
    parser.add_argument("--vms", type=int, default=scale, help="running VMs (host routes) in the background")
    parser.add_argument("--storm", type=int, default=500, help="then K migrations within one second (0: none)")
    parser.add_argument("--refresh", type=int, default=3, help="then R ROUTE-REFRESH requests, a migration in each")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the lab is torn down
    changes, background = args.changes, args.vms
    cluster = [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.node("worker-2", "10.0.0.12", "fd00::12"),
        k8s.cudn_layer2("vmnet-a", ["10.64.0.0/12"], labels={"bgpadv.io/advertise": "true"}),
    ]
    running: dict[str, str] = {}  # vm name -> node
    for i in range(background):
        name, node = f"bg-{i}", "worker-1" if i % 2 else "worker-2"
        cluster.extend(vm_objects(name, k8s.numbered_vm_address(i), node))
        running[name] = node
    ips = {f"bg-{i}": k8s.numbered_vm_address(i) for i in range(background)}

    results: dict[str, dict[str, list[float]]] = {}
    with Lab("bgpbench") as lab, BgpadvInLab(lab, cluster) as chain:
        frr = chain.frr
        vty = frr.vty()
        loaded = time.monotonic()
        frr.wait_for(lambda: vty_count(vty) >= background, 600, "the initial load", every=0.2)
        print(
            f"initial load: {background} host routes in FRR's table {time.monotonic() - loaded:.1f} s after the session"
        )
        fib = FibMonitor(lab.net, lab.ns("tor"))
        with UpdateCapture(lab.ns("tor"), "w1") as capture:
            time.sleep(1.0)
            next_vm = background
            for n in range(changes):
                kind = ("migrate", "start", "stop")[n % 3]
                if kind == "migrate":
                    name = f"bg-{n % background}"
                    while name not in running:
                        name = f"bg-{(int(name[3:]) + 1) % background}"
                    target = "worker-2" if running[name] == "worker-1" else "worker-1"
                    prefix, want = f"{ips[name]}/32", NODES[target]
                    patch = {"metadata": {"labels": {"kubevirt.io/nodeName": target}}}
                    t0 = time.monotonic()
                    chain.api.patch("kubevirt.io/v1", "VirtualMachineInstance", name, NS, patch)
                    chain.api.patch_status(
                        "kubevirt.io/v1", "VirtualMachineInstance", name, NS, {"status": {"nodeName": target}}
                    )
                    running[name] = target
                elif kind == "start":
                    name = f"new-{next_vm}"
                    ips[name] = k8s.numbered_vm_address(next_vm)
                    next_vm += 1
                    claim, vmi = vm_objects(name, ips[name], "worker-2")
                    chain.api.create(claim)
                    time.sleep(0.05)
                    prefix, want = f"{ips[name]}/32", NODES["worker-2"]
                    t0 = time.monotonic()
                    chain.api.create(vmi)
                    running[name] = "worker-2"
                else:
                    name = next(iter(running))
                    prefix, want = f"{ips[name]}/32", "del"
                    t0 = time.monotonic()
                    chain.api.delete("kubevirt.io/v1", "VirtualMachineInstance", name, NS)
                    del running[name]
                try:
                    op = "withdraw" if want == "del" else "announce"
                    wire = capture.wait_for([prefix], 10, op=op, since=t0)[prefix]
                    rib = _wait_rib(vty, prefix, want, 10)
                    fib_at = fib.wait(prefix, "del", t0) if want == "del" else fib.wait(prefix, "add", t0, via=want)
                    if fib_at is None:
                        raise TimeoutError(f"FIB: {prefix} {want}")
                except TimeoutError as e:
                    print(f"change {n} ({kind} {prefix}): {e}", file=sys.stderr)
                    continue
                r = results.setdefault(kind, {"wire": [], "rib": [], "fib": []})
                r["wire"].append(wire - t0)
                r["rib"].append(rib - t0)
                r["fib"].append(fib_at - t0)
                time.sleep(0.05)
            storm = migration_storm(chain, capture, running, ips, args.storm) if args.storm else None
        refreshes = [refresh_with_a_migration(chain, vty, running, ips) for _ in range(args.refresh)]
        vty.close()
        inside = chain.status().get("convergence", {})
    print(f"convergence over {changes} single changes (API write → ToR), {background} VMs in the background")
    for stage in ("wire", "rib", "fib"):
        together = [v for r in results.values() for v in r[stage]]
        print(f"  {stage:5} all      {percentiles(together)}")
        for kind, r in sorted(results.items()):
            print(f"  {stage:5} {kind:8} {percentiles(r[stage])}")
    for kind in ("migrate", "start"):
        wire = results.get(kind, {}).get("wire", [])
        if wire:
            p99 = quantile(wire, 0.99)
            figure(
                f"API write → UPDATE on the ToR's wire, {kind}, {background} VMs (p99)",
                p99 * 1000,
                "ms",
                goal="≤ 10 ms",
            )
    if storm is not None:
        last, each, wrong = storm
        print(
            f"storm: {args.storm} migrations written within 1 s, {background} VMs: the last on the ToR's wire "
            f"{last:.2f} s after the first write; per migration write → wire {percentiles(each)}; "
            f"{wrong} not at their new node in FRR's table"
        )
        figure(
            f"storm of {args.storm} migrations at {background} VMs: first write → last on the wire",
            last,
            "s",
            goal="≤ 2 s",
        )
    if refreshes:
        took, updates, migrated = (sorted(column) for column in zip(*refreshes, strict=True))
        print(
            f"route refresh at {background} VMs, {len(refreshes)} times: the answer took {percentiles(took)} in "
            f"{updates} UPDATEs; a migration written 50 ms into it reached FRR's table in {percentiles(migrated)}"
        )
        figure(f"ROUTE-REFRESH answer at {background} VMs (median)", statistics.median(took), "s")
        figure(
            f"a migration during a ROUTE-REFRESH answer, {background} VMs: write → FRR's table (max)",
            max(migrated) * 1000,
            "ms",
        )
    print("  wire = UPDATE captured on the ToR's interface; rib = FRR best path (vty poll); fib = ToR kernel route")
    print(f"  median rib-wire gap (FRR's own processing): {statistics.median(_gaps(results)) * 1000:.1f} ms")
    print("bgpadv's own stages (from its /status; since the watch event reached bgpadv):")
    for stage, figures in inside.items():
        shown = {k: round(v * 1000, 1) if isinstance(v, float) else v for k, v in figures.items()}
        print(f"  {stage:10} {shown}")
    return 0


def migration_storm(
    chain: BgpadvInLab, capture: UpdateCapture, running: dict[str, str], ips: dict[str, str], count: int
) -> tuple[float, list[float], int]:
    """`count` migrations of distinct running VMs, their writes evenly spread over one second: (first write → the
    last UPDATE on the wire, each write → its UPDATE, how many FRR's table does not show at the new node)."""
    names = [n for n in running if n.startswith("bg-")][:count]
    written: dict[str, float] = {}
    wanted: dict[str, str] = {}
    start = time.monotonic()
    for k, name in enumerate(names):
        delay = start + k / count - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        target = "worker-2" if running[name] == "worker-1" else "worker-1"
        prefix = f"{ips[name]}/32"
        written[prefix] = time.monotonic()
        chain.api.patch_status("kubevirt.io/v1", "VirtualMachineInstance", name, NS, {"status": {"nodeName": target}})
        running[name] = target
        wanted[prefix] = NODES[target]
    seen = capture.wait_for(list(written), 30, op="announce", since=start)
    each = [seen[p] - at for p, at in written.items()]
    last = max(seen.values()) - start
    time.sleep(0.5)  # FRR's best-path run (it holds its work queue 50 ms)
    table = chain.frr.bgp_routes("ipv4")
    wrong = sum(1 for p, hop in wanted.items() if table.get(p) != [hop])
    return last, each, wrong


def refresh_with_a_migration(
    chain: BgpadvInLab, vty, running: dict[str, str], ips: dict[str, str]
) -> tuple[float, int, float]:
    """The ToR asks worker-1 for a ROUTE-REFRESH; 50 ms later a VM migrates: (request → the answer's last UPDATE
    read by FRR, UPDATEs in the answer, migration write → its best path in FRR's table)."""
    before = updates_received(vty)
    asked = time.monotonic()
    chain.frr.vtysh(f"clear bgp ipv4 unicast {NODES['worker-1']} soft in")
    time.sleep(0.05)
    name = next(n for n in running if n.startswith("bg-"))
    target = "worker-2" if running[name] == "worker-1" else "worker-1"
    t0 = time.monotonic()
    chain.api.patch_status("kubevirt.io/v1", "VirtualMachineInstance", name, NS, {"status": {"nodeName": target}})
    running[name] = target
    migrated = _wait_rib(vty, f"{ips[name]}/32", NODES[target], 60) - t0
    count, moved = updates_received(vty), time.monotonic()
    while time.monotonic() - moved < 1.0:  # settled: the same count for 1 s
        time.sleep(0.02)
        if (now := updates_received(vty)) != count:
            count, moved = now, time.monotonic()
    return moved - asked, count - before - 1, migrated  # the migration's own UPDATE is not the answer's


def updates_received(vty) -> int:
    """UPDATEs FRR has read from worker-1's session."""
    data = vty.json(f"show bgp neighbors {NODES['worker-1']} json")
    return int(data[NODES["worker-1"]]["messageStats"]["updatesRecv"])


def _gaps(results: dict[str, dict[str, list[float]]]) -> list[float]:
    return [rib - wire for r in results.values() for wire, rib in zip(r["wire"], r["rib"], strict=True)] or [0.0]


def vty_count(vty) -> int:
    """Prefixes FRR accepted from its peers (the IPv4 summary: cheap even at 100k routes)."""
    peers = vty.json("show bgp ipv4 unicast summary json").get("peers") or {}
    return sum(int(p.get("pfxRcd") or 0) for p in peers.values())


def _wait_rib(vty, prefix: str, want: str, timeout: float) -> float:
    """Poll bgpd until the best path of `prefix` goes via `want` (or the prefix is gone for "del")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = vty.json(f"show bgp ipv4 unicast {prefix} json")
        at = time.monotonic()
        paths = data.get("paths") or []
        if want == "del":
            if not paths:
                return at
        else:
            for path in paths:
                best = (path.get("bestpath") or {}).get("overall")
                if best and any(h.get("ip") == want for h in path.get("nexthops", [])):
                    return at
        time.sleep(0.0005)
    raise TimeoutError(f"RIB: {prefix} {want}")


if __name__ == "__main__":
    sys.exit(main())
