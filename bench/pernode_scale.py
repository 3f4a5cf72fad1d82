"""Per-node scale: what the instance of one node costs as the cluster grows, its VMI watches scoped or not.

For each node count K (default 20, 50, 100) and each way of watching: "scoped" (what bgpadv does: the VMIs
labelled `kubevirt.io/nodeName=worker-1` and those labelled `kubevirt.io/migrationTargetNodeName=worker-1`, and the
IPAMClaims of those VMs only, read as they arrive) and "unscoped" (every VMI and every IPAMClaim of the cluster, as
before), it seeds the fake API with N running VMs (IPAMClaim, VMI,
virt-launcher pod each; default 20,000, `--count 100000` for the full scale) spread round-robin over K nodes, runs
`bgpadv run` in per-node mode as worker-1 against the real FRR ToR and prints:

- start → routes: seconds from starting `bgpadv run` to worker-1's N/K host routes in FRR's table;
- initial bytes: what the API sent it until then (LIST and WATCH bodies), in all and per resource;
- churn bytes: what the API sent it during 1,000 live migrations among the *other* nodes, each written as KubeVirt
  writes it (virt-controller: the target label and the migration state; the target's virt-handler: the completion,
  moving the node label and status.nodeName; then the target label removed): three VMI writes each, no pod writes
  (launcher pods are watched by spec.nodeName in both ways);
- a migration in: a VM of another node migrates to worker-1 (the target label, then `--lead` seconds later
  target-ready, default 0: the claim read races the hand-over): seconds from the target-ready write to its route
  at the ToR;
- after an apiserver restart (every watch cut, the history compacted: 410 Gone): the LIST and WATCH requests it
  makes and the bytes they bring, until it is quiet again, and when its LISTs went out (seconds after the cut);
- peak RSS of every process it runs (the sum of the VmHWM of the `bgpadv run` supervisor, ExaBGP, the API shim and
  the controller, as bench/rss.py).

"unscoped" is today's build with `resources.for_node` giving VMIs and IPAMClaims back whole, patched in at
interpreter start by a sitecustomize on PYTHONPATH (bench only: the product has no such switch). Run:
`.venv/bin/python bench/pernode_scale.py [--count N] [--nodes 20 50 100] [--migrations 1000] [--lead S]` (root).
Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from figures import figure
from rss import memory, running_vms

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, fake_api_in, lab_config
from bgpadv_lab.fakeapi import FakeApiServer
from bgpadv_lab.topology import Lab

NS = "imported-vms"
VMI_API = ("kubevirt.io/v1", "VirtualMachineInstance")
UNSCOPED = '''"""bench/pernode_scale.py: per-node VMIs and IPAMClaims watched whole (the build before node scoping)."""
import importlib.abc
import importlib.util
import sys


class _Unscoped(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "bgpadv.core.resources":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            scoped = module.for_node
            whole = (module.VMI, module.IPAM_CLAIM)
            module.for_node = lambda r, node: (r,) if r in whole else scoped(r, node)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Unscoped())
'''


RESTART_EVENT = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "apiserver-restart", "namespace": "default"},
    "reason": "Restarted",
    "message": "bench: the apiserver restarts",
}


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes), printed beside each figure: timings depend on them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def mib(size: float) -> str:
    return f"{size / 2**20:.2f} MiB"


def sent(api: FakeApiServer) -> Counter:
    with api._sent_lock:
        return Counter(api.sent)


def settled(api: FakeApiServer, quiet: float = 1.0, timeout: float = 60.0) -> Counter:
    """The bytes sent, once nothing more was sent for `quiet` seconds."""
    last, since, end = sent(api), time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < end:
        time.sleep(0.2)
        now = sent(api)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last


def by_resource(counts: Counter) -> str:
    per: Counter = Counter()
    for (_, plural), size in counts.items():
        per[plural] += size
    return ", ".join(f"{plural} {mib(size)}" for plural, size in per.most_common() if size)


def migrate_elsewhere(api: FakeApiServer, count: int, nodes: int, migrations: int) -> None:
    """`migrations` live migrations, none from or to worker-1: VM i (on worker-(i % nodes + 1)) moves one node on,
    skipping worker-1, with KubeVirt's three VMI writes."""
    movable = [i for i in range(count) if i % nodes != 0][:migrations]
    for i in movable:
        name, source = f"vm-{i}", f"worker-{i % nodes + 1}"
        target = f"worker-{i % nodes + 2}" if i % nodes + 2 <= nodes else "worker-2"
        if target == source:
            continue
        state = k8s.migration_state(source, target, vmi=name)
        started = {"metadata": {"labels": {"kubevirt.io/migrationTargetNodeName": target}}}
        api.patch(*VMI_API, name, NS, {**started, "status": {"migrationState": state}})
        done = k8s.migration_state(source, target, vmi=name, target_ready="2025-03-01T10:00:10Z", completed=True)
        moved = {"metadata": {"labels": {"kubevirt.io/nodeName": target}}}
        api.patch(*VMI_API, name, NS, {**moved, "status": {"migrationState": done, "nodeName": target}})
        api.patch(*VMI_API, name, NS, {"metadata": {"labels": {"kubevirt.io/migrationTargetNodeName": None}}})


def routes_received(vty: Any) -> int:
    summary = vty.json("show bgp ipv4 unicast summary json")
    peers = (summary.get("ipv4Unicast") or summary).get("peers", {})
    return sum(int(p.get("pfxRcd", 0)) for p in peers.values())


def migrate_in(api: FakeApiServer, vty: Any, frr: Any, nodes: int, expected: int, lead: float) -> float:
    """A live migration of a VM of another node to worker-1, written as KubeVirt writes it: the target label and the
    migration state once the target pod is scheduled, `lead` seconds later target-ready. Seconds from the
    target-ready write to worker-1's route at the ToR."""
    name, target = f"vm-{nodes + 1}", "worker-1"  # (on worker-2 at start; maybe moved by the churn since)
    source = (api.get(*VMI_API, name, NS) or {})["metadata"]["labels"]["kubevirt.io/nodeName"]
    state = k8s.migration_state(source, target, vmi=name)
    scheduled = {"metadata": {"labels": {"kubevirt.io/migrationTargetNodeName": target}}}
    api.patch(*VMI_API, name, NS, {**scheduled, "status": {"migrationState": state}})
    time.sleep(lead)
    ready = k8s.migration_state(source, target, vmi=name, target_ready="2025-03-01T10:00:10Z")
    at = time.monotonic()
    api.patch(*VMI_API, name, NS, {"status": {"migrationState": ready}})
    frr.wait_for(lambda: routes_received(vty) >= expected + 1, 60, "the migrated VM's route", every=0.02)
    return time.monotonic() - at


def list_times(api: FakeApiServer, since: Counter, until: float) -> list[float]:
    """Sample the LIST requests counted until `until` (monotonic), every 50 ms: the offset of each new one."""
    start, seen, out = time.monotonic(), sum(n for (v, _), n in since.items() if v == "list"), []
    while time.monotonic() < until:
        with api._lock:
            now = sum(n for (v, _), n in api.requests.items() if v == "list")
        out += [time.monotonic() - start] * (now - seen)
        seen = now
        time.sleep(0.05)
    return out


def run(count: int, nodes: int, migrations: int, scoped: bool, patch_dir: Path, lead: float) -> dict:
    cluster = [
        k8s.node(f"worker-{k}", k8s.numbered_node_address(k), "fd00::11" if k == 1 else None)
        for k in range(1, nodes + 1)
    ]
    cluster.append(k8s.cudn_layer2("vmnet-a", ["10.64.0.0/12"], labels={"bgpadv.io/advertise": "true"}))
    cluster.extend(running_vms(count, nodes))
    expected = sum(1 for i in range(count) if i % nodes == 0)  # worker-1's VMs
    env = {"BGPADV_NODE_NAME": "worker-1"}
    if not scoped:
        env["PYTHONPATH"] = str(patch_dir)
    way = "scoped" if scoped else "unscoped"
    with Lab("bgppns") as lab:
        config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", "w1")
        config["mode"] = "per-node"
        api = fake_api_in(lab, "w1", "127.0.0.1")  # worker-1's loopback, as BgpadvInLab's own
        api.bookmark_interval = 60.0  # as kube-apiserver: about one a minute (the fake's 1 s would be all we count)
        api.start()
        chain = BgpadvInLab(lab, config=config, api=api, env=env)
        try:
            api.load(cluster)  # seeded before the clock starts
            started = time.monotonic()
            chain.start(wait_established=False)
            vty = chain.frr.vty()

            chain.frr.wait_for(lambda: routes_received(vty) >= expected, 900, "worker-1's routes", every=0.1)
            to_routes = time.monotonic() - started
            initial = settled(api)
            migrate_elsewhere(api, count, nodes, migrations)
            after = settled(api)
            churn = after - initial
            migrated = migrate_in(api, vty, chain.frr, nodes, expected, lead)
            after = settled(api)
            # an apiserver restart: every stream cut, the history gone (410), so every resource relists
            asked = Counter(api.requests)
            api.create(RESTART_EVENT)  # a write no watch of it sees: every watch is behind the compaction
            api.compact()
            api.drop_watches()
            spread = list_times(api, asked, time.monotonic() + 7.0)  # each relist waits up to 5 s first
            relist = settled(api, quiet=3.0) - after
            requests = sum(n for (verb, _), n in (Counter(api.requests) - asked).items() if verb in ("list", "watch"))
            pids = [chain.proc.pid, *chain.exabgp_pids(), *chain.shim_pids(), *chain.controller_pids()]
            peak = sum(memory(pid)[1] for pid in pids) / 1024
            controller = sum(memory(pid)[1] for pid in chain.controller_pids()) / 1024
            vty.close()
        finally:
            chain.stop()
            api.stop()
    result = {
        "way": way,
        "nodes": nodes,
        "routes": expected,
        "to_routes": to_routes,
        "initial": sum(initial.values()),
        "churn": sum(churn.values()),
        "relist": sum(relist.values()),
        "requests": requests,
        "spread": (min(spread), max(spread)) if spread else (0.0, 0.0),
        "migrated": migrated,
        "peak": peak,
        "controller": controller,
    }
    print(
        f"{count} VMs over {nodes} nodes, {way}: {expected} routes at the ToR {to_routes:.1f} s after start; "
        f"initial {mib(result['initial'])} ({by_resource(initial)}); {migrations} migrations elsewhere "
        f"{mib(result['churn'])} ({by_resource(churn)}); a migration in: target-ready → ToR {migrated:.2f} s "
        f"({lead:.0f} s after the target label); after an apiserver restart {requests} LIST/WATCH requests, "
        f"{mib(result['relist'])} ({by_resource(relist)}), its LISTs {len(spread)} from {result['spread'][0]:.1f} "
        f"to {result['spread'][1]:.1f} s; peak RSS {peak:.1f} MiB (controller {controller:.1f}); "
        f"load {load()}",
        flush=True,
    )
    return result


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the lab is torn down
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000, help="running VMs in the cluster")
    parser.add_argument("--nodes", type=int, nargs="+", default=[20, 50, 100], help="node counts to measure")
    parser.add_argument("--migrations", type=int, default=1000, help="live migrations among the other nodes")
    parser.add_argument("--only", choices=["scoped", "unscoped"], help="measure one way only")
    parser.add_argument(
        "--lead", type=float, default=0.0, help="seconds from the target label to target-ready (0: the worst case)"
    )
    args = parser.parse_args()
    ways = [args.only == "scoped"] if args.only else [False, True]
    results = []
    with tempfile.TemporaryDirectory(prefix="bgpadv-unscoped-") as patch_dir:
        (Path(patch_dir) / "sitecustomize.py").write_text(UNSCOPED)
        for nodes in args.nodes:
            for scoped in ways:
                results.append(run(args.count, nodes, args.migrations, scoped, Path(patch_dir), args.lead))
    print(f"per-node instance (worker-1), {args.count} VMs in the cluster, {args.migrations} migrations elsewhere")
    print(
        f"{'nodes':>5} {'way':>8} {'routes':>6} {'start→ToR':>9} {'initial':>11} {'churn':>11} {'relist':>11} "
        f"{'requests':>8} {'peak RSS':>9} {'(ctrl)':>7} {'mig-in':>7}"
    )
    for r in results:
        print(
            f"{r['nodes']:>5} {r['way']:>8} {r['routes']:>6} {r['to_routes']:>8.1f}s {mib(r['initial']):>11} "
            f"{mib(r['churn']):>11} {mib(r['relist']):>11} {r['requests']:>8} {r['peak']:>6.1f}MiB "
            f"{r['controller']:>7.1f} {r['migrated']:>6.2f}s"
        )
        label = f"per-node {r['way']}, {args.count} VMs over {r['nodes']} nodes"
        figure(f"RSS of everything, {label}", r["peak"], "MiB", goal="≤ 200 MiB at 100k/50")
        figure(f"bytes from the API during {args.migrations} migrations elsewhere, {label}", r["churn"] / 2**20, "MiB")
        figure(f"start to routes at the ToR, {label}", r["to_routes"], "s", goal="≤ 2 s")
        figure(f"RSS of the controller, {label}", r["controller"], "MiB", goal="≤ 90 MiB at 100k/50")
        figure(f"target-ready to the migrated VM's route at the ToR, {label}", r["migrated"], "s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
