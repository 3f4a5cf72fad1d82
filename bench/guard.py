"""Guard benchmark: the cost of the last guard (`bgpadv.safety.guard.Guard`) per plan (printed, never asserted).

A context of two peers (an IPv4 and an IPv6 session, both carrying both families), 100 nodes and one dual-stack
CUDN (10.128.0.0/14, fd10:100::/64), built from a cluster state like the controller's. Route sets: 100,000 IPv4 /32s
(100k), and the same plus 100,000 IPv6 /128s (200k: 100,000 dual-stack VMs). Scenarios, each on a fresh tuple like
the planner hands over:
  - cold:        a new Guard (empty verdict cache): every route evaluated;
  - unchanged:   the same Route objects again (every verdict from the cache);
  - one-changed: one Route object replaced by a new one (another next hop): one route evaluated;
  - context:     `Guard.context(plan)` when the plan's networks and node addresses did not change (identity compare);
  - over-limit:  `safety.maxRoutes` one below the set, the peers holding all but the newest route (cached verdicts).

    .venv/bin/python bench/guard.py [--runs R]

Prints the median wall time and the median CPU time (process_time) of R runs of each scenario, in milliseconds.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bgpadv.core.model import ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.planner import plan
from bgpadv.safety.guard import Guard
from bgpadv_lab import objects as k8s

PEERS = [{"address": "10.0.0.1", "asn": 64512}, {"address": "fd00::1", "asn": 64512}]
CONFIG = k8s.config(peers=PEERS)
SOURCE = ObjectRef("IPAMClaim", "vm", "tenant", "", "2025-03-01T09:00:00Z")


def state():
    nodes = [k8s.node(f"worker-{i}", f"10.0.{i // 250}.{i % 250 + 1}", f"fd00::{i + 1:x}") for i in range(100)]
    cudn = k8s.cudn_layer2("vmnet", ["10.128.0.0/14", "fd10:100::/64"], labels=k8s.ADVERTISED)
    return k8s.state(*nodes, cudn)


def build(n: int, version: int, next_hop: Address) -> list[Route]:
    """n host routes, every object freshly built (as the planner does)."""
    base = Address.parse("10.128.0.0" if version == 4 else "fd10:100::").value
    return [
        Route(Prefix.host(version, base + 10 + i), next_hop, "vmnet", RouteKind.HOST, SOURCE, "worker-1")
        for i in range(n)
    ]


def timed(call: Callable[[], object]) -> tuple[float, float]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cluster = plan(state(), CONFIG)  # the guard reads the plan's context (networks, node addresses)
    w4, w6 = Address.parse("10.0.0.1"), Address.parse("fd00::1")
    sets = {
        "100k": build(100_000, 4, Address.parse("10.0.0.11")),
        "200k": build(100_000, 4, Address.parse("10.0.0.11")) + build(100_000, 6, Address.parse("fd00::11")),
    }
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for label, routes in sets.items():
        for _ in range(args.runs):
            guard = Guard(CONFIG)
            ctx = guard.context(cluster)
            results.setdefault((label, "cold"), []).append(timed(partial(guard.check, tuple(routes), ctx)))
            assert guard.evaluated == len(routes)
            again = tuple(routes)
            results.setdefault((label, "unchanged"), []).append(timed(partial(guard.check, again, ctx)))
            assert guard.evaluated == len(routes)
            changed = list(routes)
            old = changed[len(changed) // 3]
            changed[len(changed) // 3] = Route(old.prefix, w4 if old.family == 4 else w6, "vmnet", old.kind, SOURCE)
            one = tuple(changed)
            results.setdefault((label, "one-changed"), []).append(timed(partial(guard.check, one, ctx)))
            assert guard.evaluated == len(routes) + 1
            results.setdefault((label, "context"), []).append(timed(partial(guard.context, cluster)))
            # one route over safety.maxRoutes: the peer holds all but the newest
            limited = Guard(k8s.config(peers=PEERS, safety={"maxRoutes": len(routes) - 1}))
            lctx = limited.context(cluster)
            limited.check(one, lctx)
            held = {r.prefix.key for r in routes[:-1]}
            over = partial(limited.check, again, lctx, lambda _peer, held=held: held)
            results.setdefault((label, "over-limit"), []).append(timed(over))
    print(f"guard, 2 peers, 100 nodes, {args.runs} runs: median wall / CPU ms")
    for (label, scenario), samples in results.items():
        wall = statistics.median(w for w, _ in samples) * 1000
        cpu = statistics.median(c for _, c in samples) * 1000
        print(f"  {label:<5} {scenario:<12} {wall:9.2f} {cpu:9.2f}")


if __name__ == "__main__":
    main()
