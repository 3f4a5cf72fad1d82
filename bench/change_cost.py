"""What one change costs the controller at 1k, 10k and 100k routes, and what storms do to single changes (printed).

The whole chain in one process, without ExaBGP: a real `Controller` (store, incremental planner, guard, fail-static
hold) drives a real `Speaker` whose commands go to a fake ExaBGP that acknowledges each at once. A cluster of N VMs
(claim + running VMI each, one Layer2 CUDN, two nodes, two peers) is listed, planned and announced; then:

  - change:  CHANGES single migrations one at a time (a VMI's `status.nodeName` flips: one next hop changes),
             each timed from the event on the loop's queue to the speaker's command written (`Controller.step`,
             coalescing window 0), wall and CPU;
  - storm:   (at --storm-vms, default 10,000) 500 migrations fed from another thread within one second into the
             running loop (coalescing window as configured): per migration, queue → its command written
             (p50/p99/max) and the time until the last one is written;
  - flood:   (at --flood-vms, default 2,000, each with its launcher pod listed) 20,000 irrelevant launcher-pod
             rewrites (status heartbeats of pods of VMs that run where they are) fed as watch lines through the real
             reflectors (JSON decode, view, unchanged-rewrite drop: what a reflector thread does) from another thread
             as fast as it can, one migration (a VMI watch line) in the middle: its line → command latency, and the
             flood's length;
  - bulk:    10,000 new VMs (claim + VMI each) fed in one go, one migration of an existing VM right behind the
             first claim: its latency, and how long the bulk load took (coalescing must not starve the single change).

With `--baseline REF` the same measurements run first on the code of git revision REF (exported to a temporary
directory, run in a subprocess), so the figures before and after a change come from one run on one machine; the
ratio after / before is printed. `--profile N` prints a cProfile of one change at N routes instead.

    .venv/bin/python bench/change_cost.py [--sizes 1000,10000,100000] [--changes 20] [--baseline main]
    .venv/bin/python bench/change_cost.py --profile 100000

Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CODE = os.environ.get("BENCH_CHANGE_COST_CODE")  # the baseline's exported tree (set by --baseline)
sys.path.insert(0, CODE or str(Path(__file__).resolve().parent.parent))

from figures import figure, quantile  # noqa: E402

from bgpadv.core import resources  # noqa: E402
from bgpadv.runtime.controller import Controller, LoopSettings, watched_resources  # noqa: E402
from bgpadv.sources.reflector import Reflector, WatchEvent  # noqa: E402
from bgpadv.speaker.session import Speaker  # noqa: E402
from bgpadv_lab import objects as k8s  # noqa: E402

NS = "imported-vms"
NODES = {"worker-1": "10.0.0.11", "worker-2": "10.0.0.12"}
PEERS = [{"address": "10.0.0.1", "asn": 64512}, {"address": "10.0.0.2", "asn": 64512}]


def ip(i: int) -> str:
    return k8s.numbered_vm_address(i, "10.128.0.0/14")  # room for 200k VMs


def vm(i: int, node: str) -> tuple[dict, dict]:
    claim = k8s.ipam_claim(NS, f"vm-{i}.default", f"vm-{i}", "cluster_udn_vmnet-a", [f"{ip(i)}/14"])
    return claim, k8s.vmi(NS, f"vm-{i}", node, interfaces=[k8s.interface([ip(i)])])


class Sources:
    """Delivers nothing by itself: the bench puts events on the controller's queue."""

    def __init__(self) -> None:
        self.synced = True

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def relist(self) -> None:
        pass


class FakeExaBGP:
    """The speaker's `write`: records when each prefix was first written after `expect`, acknowledges at once."""

    def __init__(self) -> None:
        self.speaker: Speaker | None = None
        self.acks = 0
        self.written: dict[str, float] = {}
        self.watching: set[str] = set()
        self.lines = 0

    def write(self, line: str) -> None:
        self.lines += 1
        if self.watching and " nlri " in line:
            now = time.perf_counter()
            for p in line.split(" nlri ", 1)[1].split():
                p = p.removesuffix("/32")
                if p in self.watching and p not in self.written:
                    self.written[p] = now
        self.acks += 1

    def ack(self) -> None:
        speaker = self.speaker
        assert speaker is not None
        while self.acks:
            self.acks -= 1
            speaker.handle_line("done")


_VERSION = iter(range(10**6, 10**9))


def event(res: resources.Resource, kind: str, obj: dict | None) -> WatchEvent:
    """A watch event; the object gets a resourceVersion of its own (the store ignores an unchanged one)."""
    if obj is not None:
        obj["metadata"]["resourceVersion"] = str(next(_VERSION))
    return WatchEvent(resource=res, type=kind, obj=obj, received_at=time.monotonic())


def build(n: int, window: float, pods: bool = False) -> tuple[Controller, FakeExaBGP, list[int]]:
    """A controller with n running VMs listed (with their launcher pods when `pods`), planned, announced and
    acknowledged. Returns the per-VM node index."""
    config = k8s.config(peers=PEERS)
    exa = FakeExaBGP()
    speaker = Speaker.from_config(config, exa.write)
    exa.speaker = speaker
    c = Controller(
        config,
        speaker=speaker,
        sources=Sources(),
        settings=LoopSettings(coalesce_window=window, resync_interval=1e9),
    )
    speaker.start()
    speaker.handle_line(json.dumps([{"state": "up", "peer": {"address": p["address"]}} for p in PEERS]))
    exa.acks = 0
    speaker.handle_line("done")  # show neighbors
    speaker.handle_line("done")  # show adj-rib out
    objs = [k8s.node(name, addr, None) for name, addr in NODES.items()]
    objs.append(k8s.cudn_layer2("vmnet-a", ["10.128.0.0/14"], labels=k8s.ADVERTISED))
    where = []
    for i in range(n):
        node = "worker-1" if i % 2 == 0 else "worker-2"
        where.append(0 if node == "worker-1" else 1)
        objs.extend(vm(i, node))
        if pods:
            objs.append(k8s.launcher_pod(NS, f"vm-{i}", node))
    for o in objs:
        res = resources.resource_for(o)
        c.queue.put(event(res, "ADDED", o))
    for res in watched_resources(config):
        c.queue.put(event(res, "SYNCED", None))
    while not c.queue.empty():
        c.step()
    exa.ack()
    c.step()
    exa.ack()
    assert c.plan is not None and len(c.plan.routes) == n + 1, (len(c.plan.routes) if c.plan else None, n)
    return c, exa, where


def migrate(c: Controller, where: list[int], i: int) -> WatchEvent:
    where[i] ^= 1
    node = "worker-2" if where[i] else "worker-1"
    return event(resources.VMI, "MODIFIED", vm(i, node)[1])


def per_change(n: int, changes: int) -> dict[str, list[float]]:
    c, exa, where = build(n, 0.0)
    wall: list[float] = []
    cpu: list[float] = []
    for k in range(changes):
        i = (k * 7919) % n
        ev = migrate(c, where, i)
        exa.watching = {ip(i)}
        exa.written = {}
        w, p = time.perf_counter(), time.process_time()
        c.queue.put(ev)
        c.step()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - p)
        assert ip(i) in exa.written, "the migration was not sent"
        exa.ack()
    return {"wall": wall, "cpu": cpu}


def run_loop(c: Controller, exa: FakeExaBGP, done: threading.Event, settle: float = 0.2) -> None:
    """The controller's loop on this thread until `done`, plus `settle` seconds; acknowledges between steps."""
    end = None
    while True:
        c.step(wait=0.001)
        exa.ack()
        if done.is_set():
            end = end or time.perf_counter() + settle
            if time.perf_counter() >= end:
                return


def storm(n: int, window: float, count: int = 500, seconds: float = 1.0) -> dict[str, float | list[float]]:
    c, exa, where = build(n, window)
    chosen = [(k * 7919) % n for k in range(count)]
    events = [migrate(c, where, i) for i in chosen]
    exa.watching = {ip(i) for i in chosen}
    exa.written = {}
    sent: dict[str, float] = {}
    done = threading.Event()

    def feed() -> None:
        start = time.perf_counter()
        for k, (i, ev) in enumerate(zip(chosen, events, strict=True)):
            due = start + k * seconds / count
            while time.perf_counter() < due:
                time.sleep(0.0002)
            sent[ip(i)] = time.perf_counter()
            c.queue.put(ev)
        done.set()

    t = threading.Thread(target=feed)
    started = time.perf_counter()
    t.start()
    run_loop(c, exa, done, settle=1.0)
    t.join()
    lat = [exa.written[p] - s for p, s in sent.items() if p in exa.written]
    last = max(exa.written.values(), default=started) - started
    return {"latency": lat, "missing": float(count - len(lat)), "last": last}


def watch_line(kind: str, obj: dict) -> bytes:
    """One watch line as the API server writes it, the object with a resourceVersion of its own."""
    obj["metadata"]["resourceVersion"] = str(next(_VERSION))
    return json.dumps({"type": kind, "object": obj}).encode()


def heartbeat(k: int, node: str) -> dict:
    """A launcher pod's status rewrite the planner never reads (the kubelet's probe times)."""
    pod = k8s.launcher_pod(NS, f"vm-{k}", node)
    pod.setdefault("status", {})["conditions"] = [
        {"type": "Ready", "status": "True", "lastProbeTime": f"2026-12-03T08:{k // 60 % 60:02d}:{k % 60:02d}Z"}
    ]
    return pod


def reflector(c: Controller, res: resources.Resource) -> Reflector:
    """A reflector for `res` emitting into the controller's queue, its cache what its LIST would have left (the
    store's views): the bench hands it watch lines instead of a server."""
    r = Reflector(None, res, c.queue.put)  # type: ignore[arg-type]  # never calls the API here
    r._cache = dict(getattr(c.store.state, res.field))
    return r


def flood(n: int, window: float, count: int = 20_000) -> dict[str, float | list[float]]:
    c, exa, where = build(n, window, pods=True)
    lines = [
        watch_line("MODIFIED", heartbeat(k % n, "worker-1" if where[k % n] == 0 else "worker-2")) for k in range(count)
    ]
    pod_reflector, vmi_reflector = reflector(c, resources.LAUNCHER_POD), reflector(c, resources.VMI)
    target = n // 3
    where[target] ^= 1
    mig = watch_line("MODIFIED", vm(target, "worker-2" if where[target] else "worker-1")[1])
    exa.watching = {ip(target)}
    exa.written = {}
    sent: list[float] = []
    done = threading.Event()
    span: list[float] = []

    def feed() -> None:  # the two reflector threads' work, on one thread
        start = time.perf_counter()
        for k, line in enumerate(lines):
            if k == count // 2:
                sent.append(time.perf_counter())
                vmi_reflector._handle(mig, time.monotonic())
            pod_reflector._handle(line, time.monotonic())
            if k % 200 == 0:
                time.sleep(0)  # let the loop run, as a reflector thread reading a socket does
        span.append(time.perf_counter() - start)
        done.set()

    t = threading.Thread(target=feed)
    t.start()
    run_loop(c, exa, done)
    t.join()
    got = exa.written.get(ip(target))
    return {"latency": [got - sent[0]] if got is not None else [], "span": span[0], "missing": float(got is None)}


def bulk(n: int, window: float, count: int = 10_000) -> dict[str, float | list[float]]:
    c, exa, where = build(n, window)
    new = [vm(n + k, "worker-1") for k in range(count)]
    target = n // 3
    mig = migrate(c, where, target)
    watch = {ip(target), ip(n + count - 1)}
    exa.watching = watch
    exa.written = {}
    sent: list[float] = []
    done = threading.Event()

    def feed() -> None:
        for k, (claim, vmi) in enumerate(new):
            c.queue.put(event(resources.IPAM_CLAIM, "ADDED", claim))
            if k == 0:
                sent.append(time.perf_counter())
                c.queue.put(mig)
            c.queue.put(event(resources.VMI, "ADDED", vmi))
        done.set()

    t = threading.Thread(target=feed)
    t.start()
    run_loop(c, exa, done, settle=2.0)
    t.join()
    one = exa.written.get(ip(target))
    last = exa.written.get(ip(n + count - 1))
    return {
        "latency": [one - sent[0]] if one is not None else [],
        "bulk": (last - sent[0]) if last is not None else float("nan"),
        "missing": float(one is None),
    }


def measure(args: argparse.Namespace) -> dict:
    out: dict = {"change": {}, "storm": None}
    for n in args.sizes:
        out["change"][str(n)] = per_change(n, args.changes)
    if args.storm_vms:
        window = LoopSettings().coalesce_window
        out["storm"] = storm(args.storm_vms, window)
        out["flood"] = flood(args.flood_vms, window)
        out["bulk"] = bulk(args.storm_vms, window)
    return out


def ms(values: list[float]) -> str:
    v = [x * 1000 for x in values]
    if not v:
        return "n/a"
    return f"p50 {quantile(v, 0.5):8.2f}  p99 {quantile(v, 0.99):8.2f}  max {max(v):8.2f} ms"


def report(label: str, r: dict) -> None:
    print(f"-- {label}")
    for n, samples in r["change"].items():
        print(
            f"  one change at {int(n):>7} routes: wall {ms(samples['wall'])} | CPU median "
            f"{statistics.median(samples['cpu']) * 1000:8.2f} ms"
        )
        if label.startswith("after"):
            p99 = quantile(samples["wall"], 0.99)
            figure(f"one change at {int(n)} routes, event → command (p99)", p99 * 1000, "ms", goal="flat in N")
    if r.get("storm"):
        s = r["storm"]
        print(
            f"  storm (500 migrations in 1 s): queue → written {ms(s['latency'])}; last written "
            f"{s['last']:.2f} s after the first event; missing {int(s['missing'])}"
        )
        if label.startswith("after"):
            figure("storm: 500 migrations in 1 s at 10k, last written after", s["last"], "s", goal="≤ 2 s at the ToR")
        f = r["flood"]
        if label.startswith("after") and f["latency"]:
            figure("flood: a migration behind 10,000 pod rewrites", max(f["latency"]) * 1000, "ms", goal="a few ms")
        print(
            f"  flood (20,000 pod events, one migration inside): migration {ms(f['latency'])}; "
            f"flood fed in {f['span']:.2f} s; missing {int(f['missing'])}"
        )
        b = r["bulk"]
        if label.startswith("after") and b["latency"]:
            figure("bulk: a migration behind 10,000 new VMs", max(b["latency"]) * 1000, "ms", goal="not starved")
        print(
            f"  bulk (10,000 new VMs, one migration behind the first): migration {ms(b['latency'])}; "
            f"bulk written after {b['bulk']:.2f} s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10_000, 100_000])
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--storm-vms", type=int, default=10_000, help="0: no storm figures")
    parser.add_argument("--flood-vms", type=int, default=2_000)
    parser.add_argument("--baseline", help="git revision to measure first, in the same run")
    parser.add_argument("--profile", type=int, help="cProfile one change at this many routes")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the baseline's subprocess
    args = parser.parse_args()
    if args.profile:
        c, exa, where = build(args.profile, 0.0)
        prof = cProfile.Profile()
        for k in range(5):
            c.queue.put(migrate(c, where, (k * 7919) % args.profile))
            prof.enable()
            c.step()
            prof.disable()
            exa.ack()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        return 0
    if args.json:
        print(json.dumps(measure(args)))
        return 0
    before = None
    if args.baseline:
        root = Path(__file__).resolve().parent.parent
        with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tmp:
            archive = subprocess.run(
                ["git", "-C", str(root), "archive", args.baseline, "bgpadv", "bgpadv_lab"],
                check=True,
                capture_output=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            argv = [sys.executable, __file__, "--json", "--changes", str(args.changes)]
            argv += ["--sizes", ",".join(map(str, args.sizes)), "--storm-vms", str(args.storm_vms)]
            argv += ["--flood-vms", str(args.flood_vms)]
            env = {**os.environ, "BENCH_CHANGE_COST_CODE": tmp}
            before = json.loads(subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout)
        report(f"before ({args.baseline})", before)
    after = measure(args)
    report("after (this checkout)", after)
    if before is not None:
        print("-- after / before (median wall of one change)")
        for n in args.sizes:
            b = statistics.median(before["change"][str(n)]["wall"])
            a = statistics.median(after["change"][str(n)]["wall"])
            print(f"  {n:>7} routes: {a * 1000:8.2f} / {b * 1000:8.2f} ms = {a / b:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
