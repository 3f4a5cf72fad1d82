"""Incremental planner benchmark: cold plan() against IncrementalPlanner after one small change (printed, never
asserted beyond equality).

Same synthetic cluster as bench/planner.py (N IPAMClaims with Running VMIs and launcher pods over 4 Layer2 CUDNs,
a Layer3 CUDN and 50 nodes). Times, on that state: cold `plan()`, the incremental planner's first (full) plan, then
one change at a time applied the way the store applies it (the changed object decoded, its view replaced) and
planned incrementally with the changed (field, key) given; also a plan with `changed=None` (every object compared
by identity). After each step the incremental plan is compared with a cold `plan()` of the same state (not timed;
`--no-check` skips).

    .venv/bin/python bench/planner_incremental.py [--claims N] [--single-stack] [--no-check]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from planner import bench_config, build_objects  # bench/planner.py

from bgpadv.core import resources
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.sources.decode.dispatch import decode, state_from_objects


def _timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--single-stack", action="store_true", help="one IPv4 address per claim")
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with cold plan()")
    args = parser.parse_args()
    config = bench_config()
    objects = build_objects(args.claims, dual_stack=not args.single_stack)
    state = state_from_objects(objects)[0]
    claims, vmis, nodes, pods = state.ipam_claims, state.vmis, state.nodes, state.pods  # the store's own mappings
    raw: dict[tuple[str, object], dict] = {}  # the objects as the API returned them, by (field, key)
    for obj in objects:
        res = resources.resource_for(obj)
        assert res is not None
        raw[(res.field, res.key(obj))] = obj
    print(f"claims: {args.claims:,} ({'single' if args.single_stack else 'dual'} stack)")

    cold, t = _timed(lambda: plan(state, config))
    print(f"cold plan():                          {t:.3f} s  ({len(cold.routes):,} routes)")
    inc = IncrementalPlanner(config)
    first, t = _timed(lambda: inc.plan(state, None))
    print(f"incremental, first plan (full build): {t:.3f} s")
    assert first == cold

    def step(label: str, changed) -> None:
        result, t = _timed(lambda: inc.plan(state, changed))
        check = ""
        if not args.no_check:
            check = "  equal to cold plan(): " + str(result == plan(state, config))
        print(f"{label:<38}{t:.3f} s{check}")

    # one claim modified: its IPv4 address moves to a free one
    key = next(iter(claims))
    claim = copy.deepcopy(raw[("ipam_claims", key)])
    claim["status"]["ips"][0] = "10.100.250.250/16"
    claim["metadata"]["resourceVersion"] = "2"
    claims[key] = decode(resources.IPAM_CLAIM, claim, key)  # as the store applies the event
    step("one claim modified:", {("ipam_claims", key)})

    # one claim deleted, then added back
    del claims[key]
    step("one claim deleted:", {("ipam_claims", key)})
    claims[key] = decode(resources.IPAM_CLAIM, claim, key)
    step("one claim added:", {("ipam_claims", key)})

    # one VMI migrated: migration completed, status.nodeName flipped to the target
    vkey = next(k for k in vmis if vmis[k].migration is None)
    vmi = copy.deepcopy(raw[("vmis", vkey)])
    source = vmi["status"]["nodeName"]
    target = "worker-49" if source != "worker-49" else "worker-48"
    vmi["status"]["migrationState"] = {"sourceNode": source, "targetNode": target, "completed": True}
    vmi["status"]["nodeName"] = target
    vmis[vkey] = decode(resources.VMI, vmi, vkey)
    step("one VMI migrated:", {("vmis", vkey)})

    # one launcher pod changed (a migration target pod becomes ready)
    pkey = next(k for k in pods if k[1].endswith("-tgt01"))
    pod = copy.deepcopy(raw[("pods", pkey)])
    pod["metadata"]["annotations"]["kubevirt.io/migration-target-ready-timestamp"] = "2025-03-01T10:05:00Z"
    pods[pkey] = decode(resources.LAUNCHER_POD, pod, pkey)
    step("one launcher pod changed:", {("pods", pkey)})

    # one node changed: its IPv4 address (the next hop of every route to it)
    nkey = "worker-7"
    node = copy.deepcopy(raw[("nodes", nkey)])
    node["status"]["addresses"][0]["address"] = "10.0.9.7"
    annotations = node["metadata"]["annotations"]
    annotations["k8s.ovn.org/node-primary-ifaddr"] = json.dumps({"ipv4": "10.0.9.7/16", "ipv6": "fd00::8/64"})
    nodes[nkey] = decode(resources.NODE, node, nkey)
    per_node = args.claims // 50 * (1 if args.single_stack else 2)
    step(f"one node changed (~{per_node:,} routes):", {("nodes", nkey)})

    step("nothing changed:", set())
    step("changed=None (identity diff):", None)


if __name__ == "__main__":
    main()
