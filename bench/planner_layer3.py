"""Layer3 planner benchmark: plan() time for many Layer3 CUDNs over many nodes (printed, never asserted).

Builds, in memory, L dual-stack Layer3 CUDNs (default 200; cidrs 11.i.0.0/16 with hostSubnet 24 and fd10:i::/48
with 64) and N dual-stack nodes (default 200), each node's `k8s.ovn.org/node-subnets` naming its host subnet of every
network (both families) and its "default" pod subnet: L × N × 2 host subnet routes, no claims. The target:
200 × 200 plans in at most 0.5 s.

    .venv/bin/python bench/planner_layer3.py [--networks L] [--nodes N] [--runs R]

The objects are decoded into views once (`bgpadv.sources.decode`, as the store does; timed apart: the node
annotations are parsed there, once per node). Prints the median and min wall time and the median CPU time of R runs
of `plan()`, and of `IncrementalPlanner.plan()` after one node changed (its annotation rewritten: every network's
host subnets of that node are read again), with the number of routes and whether both planners agree.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.planner import bench_config
from bgpadv.core import resources
from bgpadv.core.model import Plan
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.sources.decode.dispatch import decode, state_from_objects

LABELS = {"bgpadv.io/advertise": "true"}


def node_object(n: int, networks: int, generation: int = 0) -> dict:
    """Node `worker-n`, its host subnet of each of `networks` Layer3 CUDNs in its annotation (`generation` changes
    the object without changing its meaning: a new resourceVersion, as a kubelet heartbeat-free update would)."""
    subnets: dict[str, object] = {"default": f"10.244.{n}.0/24"}
    for i in range(networks):
        subnets[f"cluster_udn_l3-{i}"] = [f"11.{i}.{n}.0/24", f"fd10:{i:x}:0:{n:x}::/64"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"worker-{n}",
            "uid": f"node-{n}",
            "resourceVersion": str(1000 + generation),
            "creationTimestamp": "2025-03-01T09:00:00Z",
            "annotations": {
                "k8s.ovn.org/node-primary-ifaddr": json.dumps(
                    {"ipv4": f"10.0.{n // 250}.{n % 250 + 1}/16", "ipv6": f"fd00::{n + 1:x}/64"}
                ),
                "k8s.ovn.org/node-subnets": json.dumps(subnets),
            },
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{n // 250}.{n % 250 + 1}"},
                {"type": "InternalIP", "address": f"fd00::{n + 1:x}"},
                {"type": "Hostname", "address": f"worker-{n}"},
            ]
        },
    }


def build_objects(networks: int, nodes: int) -> list[dict]:
    """The synthetic cluster's raw objects, as the API returns them."""
    if networks > 256 or nodes > 256:
        raise SystemExit("at most 256 networks and 256 nodes (the addressing plan of this benchmark)")
    objects = [node_object(n, networks) for n in range(nodes)]
    for i in range(networks):
        objects.append(
            {
                "apiVersion": "k8s.ovn.org/v1",
                "kind": "ClusterUserDefinedNetwork",
                "metadata": {"name": f"l3-{i}", "labels": LABELS, "uid": f"cudn-{i}"},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": f"l3-{i}"}},
                    "network": {
                        "topology": "Layer3",
                        "layer3": {
                            "role": "Primary",
                            "subnets": [
                                {"cidr": f"11.{i}.0.0/16", "hostSubnet": 24},
                                {"cidr": f"fd10:{i:x}::/48", "hostSubnet": 64},
                            ],
                        },
                    },
                },
                "status": {"conditions": [{"type": "NetworkCreated", "status": "True"}]},
            }
        )
    return objects


def timed(runs: int, fn: Callable[[], Plan]) -> tuple[list[float], list[float], Plan | None]:
    """(wall seconds, CPU seconds, the last result) of `runs` calls of `fn`."""
    times, cpu = [], []
    result = None
    for _ in range(runs):
        result = None  # free the previous plan outside the timed region
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return times, cpu, result


def line(what: str, times: list[float], cpu: list[float]) -> str:
    return (
        f"{what}: median {statistics.median(times):.3f} s, min {min(times):.3f} s wall; "
        f"median {statistics.median(cpu):.3f} s CPU; over {len(times)} runs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    config = bench_config()
    objects = build_objects(args.networks, args.nodes)
    t0, c0 = time.perf_counter(), time.process_time()
    state: ClusterState = state_from_objects(objects)[0]
    decoded, decoded_cpu = time.perf_counter() - t0, time.process_time() - c0
    times, cpu, cold = timed(args.runs, lambda: plan(state, config))

    incremental = IncrementalPlanner(config)
    incremental.plan(state, None)
    node_res = resources.resource_for(objects[0])
    assert node_res is not None
    generation = [0]
    nodes = cast(dict, state.nodes)  # the store's dict

    def one_node_changed() -> Plan:
        generation[0] += 1
        obj = node_object(0, args.networks, generation[0])
        key = node_res.key(obj)
        nodes[key] = decode(node_res, obj, key)  # as the store applies a MODIFIED event
        return incremental.plan(state, {("nodes", key)})

    inc_times, inc_cpu, inc = timed(args.runs, one_node_changed)
    assert cold is not None and inc is not None
    agree = inc == plan(state, config)
    print(f"Layer3 CUDNs: {args.networks} (dual stack), nodes: {args.nodes}")
    print(f"decoded into views in {decoded:.2f} s ({decoded_cpu:.2f} s CPU)")
    print(f"routes: {len(cold.routes):,}, refused: {len(cold.rejected):,}")
    print(line("plan()", times, cpu))
    print(line("IncrementalPlanner.plan() after one node changed", inc_times, inc_cpu))
    print(f"incremental plan equals plan(): {agree}")


if __name__ == "__main__":
    main()
