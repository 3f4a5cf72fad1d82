"""Bulk loads beside the raw-ExaBGP floor measured in the same run (printed, never asserted).

For each size (BENCH_SCALE: `10k` by default, 10 and 10,000 VMs; `100k` adds the big run; or `--sizes`), RUNS times
each (default 3, medians printed), interleaved so the machine's noise hits both alike:
  - floor:  stock ExaBGP under CPython (the settings it ships with), its API process `bgpadv_lab/floor_feeder.py`:
            1,000 prefixes a command, 100 commands in flight, nothing else. Timed from ExaBGP's start to N /32s in
            the ToR's (FRR's) BGP table; `--pypy-floor` adds the same under PyPy;
  - bgpadv: `bgpadv run` in worker-1 over a fake API holding N running VMs (IPAMClaim + VMI each, one Layer2 CUDN
            10.64.0.0/12), timed from its start to the N /32s in FRR's table; then the peak RSS (VmHWM) of each
            process it runs (supervisor, ExaBGP, shim, controller) and their sum, and the largest sampled sum of
            their current RSS (every 0.2 s: what the pod's memory cgroup saw at its worst, start-up LIST included).
  - per-node (with `--per-node`): the same in per-node mode as worker-1, the N VMs spread over 10 nodes (it holds
            every claim and VMI of the cluster and announces worker-1's tenth).
Both timings also have "session →": from the ToR's session Established to the routes (start-up taken out).
Ratios are bgpadv / floor of the same run (medians over the runs); with several runs, "paired" also gives the median of
each run's ratio to the floor run just before it, which this machine's drift (the floor alone varied 1.4× within an
hour) leaves alone. The ToR has an outbound deny filter (it sends the cluster nothing back).

Run: `nice -n 10 .venv/bin/python bench/bulk.py` (root, FRR). `BENCH_SCALE=100k` or `--sizes 10000 100000`;
`--runtime cpython|pypy|auto` sets bgpadv's `exabgp.runtime`. Skips (exit 0) where the lab cannot run.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from figures import figure

from bgpadv.speaker.exabgp_config import daemon_user, exabgp_package_dir, pypy_interpreter
from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, fake_api_in, lab_config, process_tree
from bgpadv_lab.frr import VtyClient
from bgpadv_lab.topology import TOR_V4, Lab

NS = "imported-vms"
W1 = "10.0.0.11"
FEEDER = Path(__file__).resolve().parents[1] / "bgpadv_lab" / "floor_feeder.py"
TIMELINE = bool(os.environ.get("BENCH_TIMELINE"))  # print FRR's count every poll (stderr)
SCALES = {"10k": [10, 10_000], "100k": [10, 10_000, 100_000]}  # 10: start → first routes (goal ≤ 1.5 s)


def cluster(count: int, nodes: int) -> list[dict]:
    objs = [
        k8s.node(f"worker-{k}", k8s.numbered_node_address(k), "fd00::11" if k == 1 else None)
        for k in range(1, nodes + 1)
    ]
    objs.append(k8s.cudn_layer2("vmnet-a", ["10.64.0.0/12"], labels={"bgpadv.io/advertise": "true"}))
    for i in range(count):
        name, ip = f"vm-{i}", k8s.numbered_vm_address(i)
        objs.append(k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/12"]))
        objs.append(k8s.vmi(NS, name, f"worker-{i % nodes + 1}", interfaces=[k8s.interface([ip])]))
    return objs


@dataclass
class Load:
    total: float  # start -> every route in FRR's table
    after_session: float  # session Established -> every route
    peaks: dict[str, int] = field(default_factory=dict)  # process -> VmHWM, KiB
    worst_sum: int = 0  # the largest sampled sum of VmRSS, KiB
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU seconds


def routes_and_state(vty: VtyClient) -> tuple[int, str]:
    peers = vty.json("show bgp ipv4 unicast summary json").get("peers") or {}
    peer = peers.get(W1) or {}
    return int(peer.get("pfxRcd") or 0), str(peer.get("state", ""))


def _status(pid: int) -> dict[str, int]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v.split()[0]) for k, _, v in (ln.partition(":") for ln in lines) if k in ("VmRSS", "VmHWM")}


def _cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def role(pid: int, root: int) -> str:
    if pid == root:
        return "supervisor"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    if b"server" in argv:
        return "exabgp"
    if b"--no-shim" in argv:
        return "controller"
    if b"controller" in argv:
        return "shim"
    return Path(argv[0].decode(errors="replace")).name


def wait_load(vty: VtyClient, count: int, t0: float, timeout: float, root: int | None) -> Load:
    """Poll FRR (and sample the memory of `root`'s tree) until `count` routes; the figures from `t0`."""
    established = None
    worst = 0
    last_sample = 0.0
    while True:
        now = time.monotonic()
        routes, state = routes_and_state(vty)
        if established is None and state == "Established":
            established = now
        if TIMELINE:
            print(f"    t+{now - t0:6.2f} s ({time.time():.3f})  {state:12} {routes:7} routes", file=sys.stderr)
        if routes >= count:
            break
        if now - t0 > timeout:
            raise TimeoutError(f"{routes} of {count} routes after {timeout:.0f} s")
        if root is not None and now - last_sample >= 0.2:
            last_sample = now
            worst = max(worst, sum(_status(p).get("VmRSS", 0) for p in process_tree(root)))
        time.sleep(0.05)
    done = time.monotonic()
    return Load(done - t0, done - (established or done), worst_sum=worst)


def stock_exabgp_argv(conf: Path, runtime: str) -> list[str]:
    """Stock ExaBGP's command line: its own entry point, without bgpadv's change to it
    (`bgpadv/speaker/exabgp_boot.py`), from the package bgpadv runs; under PyPy, that package put on sys.path."""
    package = exabgp_package_dir()
    assert package is not None, "the exabgp package is not installed"
    if runtime == "pypy":
        boot = "import os, sys; sys.path.insert(0, os.path.dirname(sys.argv.pop(1))); sys.argv[0] = 'exabgp'; "
        boot += "from exabgp.application.main import main; sys.exit(main())"
        return [pypy_interpreter() or "pypy3", "-c", boot, package, "server", str(conf)]
    return [sys.executable, "-m", "exabgp", "server", str(conf)]


def floor(count: int, runtime: str) -> Load:
    """Stock ExaBGP fed by the floor feeder: start -> `count` routes at FRR."""
    with Lab("bulkfl") as lab:
        conf = lab.workdir / "floor.conf"
        feeder = f"{sys.executable} {FEEDER} {count} 1000 100"
        conf.write_text(
            f"process floor {{\n    run {feeder};\n    encoder json;\n}}\n"
            f"neighbor {TOR_V4} {{\n    router-id {W1};\n    local-address {W1};\n    local-as 64513;\n"
            f"    peer-as 64512;\n    hold-time 9;\n    family {{ ipv4 unicast; }}\n"
            f"    api {{ processes [ floor ]; }}\n}}\n"
        )
        env = {
            **os.environ,
            "exabgp.daemon.daemonize": "false",
            "exabgp.daemon.drop": "false",
            "exabgp.daemon.user": daemon_user(),
            "exabgp.tcp.bind": "",
            "exabgp.api.cli": "false",
        }
        vty = lab.frr.vty()
        with (lab.workdir / "exabgp.log").open("wb") as log:
            t0 = time.monotonic()
            proc = lab.net.spawn(
                lab.ns("w1"), stock_exabgp_argv(conf, runtime), env=env, stdout=log, stderr=subprocess.STDOUT
            )
            load = wait_load(vty, count, t0, 900, None)
        load.peaks = {"exabgp": _status(proc.pid).get("VmHWM", 0)}
        load.cpu = {"exabgp": _cpu(proc.pid)}
        vty.close()
        lab.net.kill(proc)
    return load


def bgpadv(count: int, runtime: str, per_node: bool) -> Load:
    """`bgpadv run` over `count` VMs: start -> every route at FRR, then the memory of every process it runs."""
    nodes = 10 if per_node else 1
    expected = sum(1 for i in range(count) if i % nodes == 0)
    with Lab("bulkbg") as lab:
        api = fake_api_in(lab, "w1", "127.0.0.1")
        api.start()
        try:
            api.load(cluster(count, nodes))
            config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", "w1", exabgp={"runtime": runtime})
            if per_node:
                config["mode"] = "per-node"
            env = {"BGPADV_NODE_NAME": "worker-1"} if per_node else {}
            chain = BgpadvInLab(lab, config=config, api=api, env=env)
            vty = lab.frr.vty()
            try:
                t0 = time.monotonic()
                chain.start(wait_established=False)
                assert chain.proc is not None
                load = wait_load(vty, expected, t0, 900, chain.proc.pid)
                time.sleep(2.0)  # the first resync after the load
                for pid in process_tree(chain.proc.pid):
                    name = role(pid, chain.proc.pid)
                    load.peaks[name] = load.peaks.get(name, 0) + _status(pid).get("VmHWM", 0)
                    load.cpu[name] = load.cpu.get(name, 0.0) + _cpu(pid)
            finally:
                vty.close()
                chain.stop()
        finally:
            api.stop()
    return load


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(count: int, label: str, loads: list[Load], floors: list[Load]) -> None:
    total, session = median([x.total for x in loads]), median([x.after_session for x in loads])
    f_total, f_session = median([x.total for x in floors]), median([x.after_session for x in floors])
    runs = ", ".join(f"{x.total:.1f}/{x.after_session:.1f}" for x in loads)  # start → routes / session → routes
    paired = ""
    if loads is not floors and len(loads) == len(floors) > 1:
        # each run beside the floor run just before it: the machine's speed drifts between runs, not within a pair
        ratios = [x.total / f.total for x, f in zip(loads, floors, strict=True)]
        paired = f"  paired: median {median(ratios):.2f}× [{', '.join(f'{r:.2f}' for r in ratios)}]"
    if loads is not floors:
        goal = "≤ 1.5 s (start → first routes)" if count <= 10 else "≤ 0.7× floor"
        figure(f"bulk {count}: {label}, start → routes at the ToR", total, "s", floor=f_total, goal=goal)
        figure(f"bulk {count}: {label}, session → routes", session, "s", floor=f_session, goal="≤ 0.7× floor")
    print(
        f"  {label:<16} start → {count} routes {total:6.1f} s ({total / f_total:4.2f}× floor {f_total:.1f} s)  "
        f"session → routes {session:6.1f} s ({session / f_session:4.2f}× floor {f_session:.1f} s)  runs [{runs}]"
        f"{paired}"
    )
    if not loads[0].peaks:
        return
    names = sorted({n for x in loads for n in x.peaks})
    peaks = {n: median([x.peaks.get(n, 0) for x in loads]) / 1024 for n in names}
    cpu = {n: median([x.cpu.get(n, 0.0) for x in loads]) for n in names}
    floor_peak = median([x.peaks.get("exabgp", 0) for x in floors]) / 1024
    parts = "; ".join(f"{n} {peaks[n]:.0f} MiB / {cpu[n]:.1f} s CPU" for n in names)
    worst = median([x.worst_sum for x in loads]) / 1024
    if loads is not floors:
        figure(
            f"bulk {count}: {label}, RSS of all it runs (sum of peaks)",
            sum(peaks.values()),
            "MiB",
            floor=floor_peak,
            goal="≤ 300 MB at 100k",
        )
    print(
        f"  {'':<16} peak RSS: {parts}; sum of peaks {sum(peaks.values()):.0f} MiB, worst sampled sum {worst:.0f} MiB"
        f" (floor ExaBGP {floor_peak:.0f} MiB / {median([x.cpu['exabgp'] for x in floors]):.1f} s CPU)"
    )


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the lab is torn down
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", "3")))
    parser.add_argument("--runtime", default=os.environ.get("BENCH_RUNTIME", "cpython"))
    parser.add_argument("--pypy-floor", action="store_true", help="also the floor under PyPy")
    parser.add_argument("--per-node", action="store_true", help="also a per-node instance (10 nodes)")
    parser.add_argument("--no-bgpadv", action="store_true", help="the floors only")
    args = parser.parse_args()
    if os.geteuid() != 0 or not Path("/usr/lib/frr/bgpd").exists():
        print("bulk: skipped: needs root and FRR (make system-deps)")
        return 0
    sizes = args.sizes or SCALES.get(os.environ.get("BENCH_SCALE", "10k"), SCALES["10k"])
    for count in sizes:
        floors: list[Load] = []
        pypy_floors: list[Load] = []
        runs: list[Load] = []
        per_node: list[Load] = []
        for _ in range(args.runs):
            floors.append(floor(count, "cpython"))
            if args.pypy_floor:
                pypy_floors.append(floor(count, "pypy"))
            if not args.no_bgpadv:
                runs.append(bgpadv(count, args.runtime, per_node=False))
            if args.per_node:
                per_node.append(bgpadv(count, args.runtime, per_node=True))
        floor_shape = "floor: stock CPython ExaBGP, 1,000/command, 100 in flight"
        print(f"bulk load, {count} VMs (medians of {args.runs}; {floor_shape})")
        report(count, "floor (CPython)", floors, floors)
        if pypy_floors:
            report(count, "floor (PyPy)", pypy_floors, floors)
        if runs:
            report(count, f"bgpadv ({args.runtime})", runs, floors)
        if per_node:
            report(count // 10, "per-node (1/10)", per_node, floors)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("BGPADV_LOG_LEVEL", "WARNING")
    sys.exit(main())
