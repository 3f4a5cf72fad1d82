"""Planner benchmark: plan() time and peak memory for a large synthetic cluster (printed, never asserted).

Builds, in memory, N IPAMClaims (default 100,000) with their Running VMIs and virt-launcher pods, spread over
4 dual-stack Layer2 CUDNs and 50 dual-stack nodes; 1 % of the VMs are live-migrating (half with the target live).
Also a Layer3 CUDN with a host subnet per node. Every claim is dual stack, so N claims give 2N host routes.

    .venv/bin/python bench/planner.py [--claims N] [--runs R] [--single-stack] [--claimless F] [--no-pod-addresses]

Every launcher pod carries OVN-K's `k8s.ovn.org/pod-networks` annotation (as OVN-K writes it for every pod) and,
when its VM has a claim, the claim reference kubevirt/ipam-extensions sets (`ipam-claim-reference` of the
`v1.multus-cni.io/default-network` selection: the planner ties each claim to the VM whose pods reference it);
`--claimless F`: that fraction of the VMs has no IPAMClaim (their addresses come from the annotation);
`--no-pod-addresses`: `networks.podNetworkAddresses: false` (the cost of reading the annotations, compared).

The objects are decoded into views once (`bgpadv.sources.decode`, as the store does when they arrive; timed
apart). Prints the median and min (wall clock) and the median CPU time (process_time: what the planner itself costs when
other processes share the cores) of R runs of `plan()` (objects already built) and the peak memory allocated during
one run (tracemalloc, measured on a separate run so tracing does not slow the timed ones).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bgpadv.config import Config, parse
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan
from bgpadv.sources.decode.dispatch import state_from_objects

NODES = 50
CUDNS = 4


def bench_config(pod_addresses: bool = True) -> Config:
    """The configuration every planner benchmark uses: one peer, CUDNs selected by label."""
    return parse(
        {
            "localASN": 64513,
            "peers": [{"address": "10.0.0.1", "asn": 64512}],
            "networks": {
                "selector": {"matchLabels": {"bgpadv.io/advertise": "true"}},
                "podNetworkAddresses": pod_addresses,
            },
        }
    )


def build(claims: int, dual_stack: bool = True) -> ClusterState:
    """The synthetic cluster, decoded as the store decodes it."""
    return state_from_objects(build_objects(claims, dual_stack))[0]


def _pod_networks(ns: str, c: int, ips: list[str]) -> str:
    """OVN-K's annotation for a pod on primary CUDN vmnet-<c> (go-controller/pkg/util/pod_annotation.go)."""
    primary = {"ip_addresses": ips, "mac_address": "0a:58:0a:64:00:05", "role": "primary"}
    default = {"ip_addresses": ["10.244.0.5/24"], "mac_address": "0a:58:0a:f4:00:05", "role": "infrastructure-locked"}
    return json.dumps({"default": default, f"{ns}/vmnet-{c}": primary}, separators=(",", ":"))


def build_objects(claims: int, dual_stack: bool = True, claimless: float = 0.0) -> list[dict]:
    """The synthetic cluster's raw objects, as the API returns them."""
    objects: list[dict] = []
    for n in range(NODES):
        name = f"worker-{n}"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "uid": f"node-{n}",
                    "annotations": {
                        "k8s.ovn.org/node-primary-ifaddr": json.dumps(
                            {"ipv4": f"10.0.{n // 250}.{n % 250 + 1}/16", "ipv6": f"fd00::{n + 1:x}/64"}
                        ),
                        "k8s.ovn.org/node-subnets": json.dumps(
                            {
                                "default": f"10.244.{n}.0/24",
                                "cluster_udn_l3": [f"10.132.{n}.0/24", f"fd10:132:0:{n:x}::/64"],
                            }
                        ),
                    },
                },
                "status": {
                    "addresses": [
                        {"type": "InternalIP", "address": f"10.0.{n // 250}.{n % 250 + 1}"},
                        {"type": "InternalIP", "address": f"fd00::{n + 1:x}"},
                        {"type": "Hostname", "address": name},
                    ]
                },
            }
        )
    labels = {"bgpadv.io/advertise": "true"}
    for c in range(CUDNS):
        objects.append(
            {
                "apiVersion": "k8s.ovn.org/v1",
                "kind": "ClusterUserDefinedNetwork",
                "metadata": {"name": f"vmnet-{c}", "labels": labels, "uid": f"cudn-{c}"},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": f"ns-{c}"}},
                    "network": {
                        "topology": "Layer2",
                        "layer2": {
                            "role": "Primary",
                            "subnets": [f"10.{100 + c}.0.0/16", f"fd10:{100 + c}::/64"],
                            "infrastructureSubnets": [f"10.{100 + c}.0.0/30", f"fd10:{100 + c}::/126"],
                            "defaultGatewayIPs": [f"10.{100 + c}.0.1", f"fd10:{100 + c}::1"],
                            "ipam": {"mode": "Enabled", "lifecycle": "Persistent"},
                        },
                    },
                },
                "status": {"conditions": [{"type": "NetworkCreated", "status": "True"}]},
            }
        )
    objects.append(
        {
            "apiVersion": "k8s.ovn.org/v1",
            "kind": "ClusterUserDefinedNetwork",
            "metadata": {"name": "l3", "labels": labels},
            "spec": {
                "network": {
                    "topology": "Layer3",
                    "layer3": {
                        "role": "Primary",
                        "subnets": [
                            {"cidr": "10.132.0.0/16", "hostSubnet": 24},
                            {"cidr": "fd10:132::/48", "hostSubnet": 64},
                        ],
                    },
                }
            },
        }
    )
    for i in range(claims):
        c = i % CUDNS
        ns = f"ns-{c}"
        vm = f"vm-{i}"
        host = i // CUDNS + 4
        ips = [f"10.{100 + c}.{host >> 8}.{host & 255}/16"]
        if dual_stack:
            ips.append(f"fd10:{100 + c}::{host:x}/64")
        node = f"worker-{i % NODES}"
        networks = _pod_networks(ns, c, ips)
        without_claim = (i % 1000) < claimless * 1000
        annotations = {"kubevirt.io/domain": vm, "k8s.ovn.org/pod-networks": networks}
        if not without_claim:  # the claim reference kubevirt/ipam-extensions sets on the pod, read as OVN-K reads it
            selection = [{"name": "default", "namespace": "ovn-kubernetes", "ipam-claim-reference": f"{vm}.default"}]
            annotations["v1.multus-cni.io/default-network"] = json.dumps(selection)
        objects.append(
            {
                "apiVersion": "k8s.cni.cncf.io/v1alpha1",
                "kind": "IPAMClaim",
                "metadata": {
                    "name": f"{vm}.default",
                    "namespace": ns,
                    "uid": f"claim-{i}",
                    "creationTimestamp": "2025-03-01T09:00:00Z",
                    "labels": {"kubevirt.io/vm": vm},
                    "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": vm}],
                },
                "spec": {"network": f"cluster_udn_vmnet-{c}", "interface": ""},
                "status": {"ips": ips, "ownerPod": {"name": f"virt-launcher-{vm}-abcde"}},
            }
        )
        if without_claim:
            objects.pop()
        status: dict = {"phase": "Running", "nodeName": node}
        target = f"worker-{(i + 1) % NODES}"
        if i % 100 == 0:
            status["migrationState"] = {
                "sourceNode": node,
                "targetNode": target,
                "sourcePod": f"virt-launcher-{vm}-abcde",
                "targetPod": f"virt-launcher-{vm}-tgt01",
            }
        if i % 200 == 0:
            status["migrationState"]["targetNodeDomainReadyTimestamp"] = "2025-03-01T10:00:00Z"
        objects.append(
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstance",
                "metadata": {"name": vm, "namespace": ns, "uid": f"vmi-{i}", "labels": {"kubevirt.io/vm": vm}},
                "status": status,
            }
        )
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"virt-launcher-{vm}-abcde",
                    "namespace": ns,
                    "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": f"vmi-{i}"},
                    "annotations": annotations,
                },
                "spec": {"nodeName": node},
                "status": {"phase": "Running"},
            }
        )
        if i % 100 == 0:  # the migration target pod
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"virt-launcher-{vm}-tgt01",
                        "namespace": ns,
                        "labels": {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": f"vmi-{i}"},
                        "annotations": annotations
                        | (
                            {"kubevirt.io/migration-target-ready-timestamp": "2025-03-01T10:00:00Z"}
                            if i % 300 == 0
                            else {}
                        ),
                    },
                    "spec": {"nodeName": target},
                    "status": {"phase": "Running"},
                }
            )
    return objects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--single-stack", action="store_true", help="one IPv4 address per claim")
    parser.add_argument("--claimless", type=float, default=0.0, help="the fraction of VMs without an IPAMClaim")
    parser.add_argument("--no-pod-addresses", action="store_true", help="networks.podNetworkAddresses: false")
    args = parser.parse_args()
    config = bench_config(not args.no_pod_addresses)
    t0 = time.perf_counter()
    objects = build_objects(args.claims, dual_stack=not args.single_stack, claimless=args.claimless)
    built = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    state = state_from_objects(objects)[0]
    decoded, decoded_cpu = time.perf_counter() - t0, time.process_time() - c0
    times, cpu = [], []
    result = None
    for _ in range(args.runs):
        result = None  # free the previous plan outside the timed region
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        result = plan(state, config)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert result is not None
    gc.collect()
    tracemalloc.start()
    plan(state, config)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"VMs: {args.claims:,} ({'single' if args.single_stack else 'dual'} stack, {args.claimless:.0%} without a "
        f"claim, pod addresses {'off' if args.no_pod_addresses else 'on'}), nodes: {NODES}, CUDNs: {CUDNS}+1"
    )
    print(f"built in-memory objects in {built:.2f} s; decoded into views in {decoded:.2f} s ({decoded_cpu:.2f} s CPU)")
    print(f"routes: {len(result.routes):,}, refused: {len(result.rejected):,}")
    print(
        f"plan(): median {statistics.median(times):.3f} s, min {min(times):.3f} s wall; "
        f"median {statistics.median(cpu):.3f} s CPU; over {args.runs} runs"
    )
    print(f"plan(): peak memory allocated during one run {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
