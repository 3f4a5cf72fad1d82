"""Memory of a running bgpadv (every process it runs) holding N host routes: what the pod's requests rest on.

Builds the lab, seeds the fake API with N running VMs (IPAMClaim, VMI and virt-launcher pod each, the realistic
objects of bgpadv_lab/objects.py, single stack: one /32 each), runs `bgpadv run` in worker-1, waits until FRR holds
the N routes, then prints the resident and peak resident memory (VmRSS, VmHWM) of each process bgpadv runs (the
`bgpadv run` supervisor, ExaBGP, the API shim, the controller) and their sum, which is what the container's memory
cgroup is charged (plus the page cache of the runtime directory, a few KB). Until 2026-12-03 it read the supervisor
as ExaBGP and left the shim out.

Run: `.venv/bin/python bench/rss.py [N] [--nodes K] [--per-node]` (root; default 10,000 VMs over 2 nodes). Not a
test: nothing is asserted.

`--per-node` runs the instance in per-node mode as worker-1 (`mode: per-node`, BGPADV_NODE_NAME=worker-1, as the
DaemonSet does): it watches the launcher pods of worker-1 only and announces worker-1's VMs (N/K) plus the subnet,
while it still holds every claim and VMI of the cluster. `--nodes K` spreads the VMs round-robin over K nodes.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from figures import figure

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config
from bgpadv_lab.topology import Lab

NS = "imported-vms"


def memory(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process, in KiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def running_vms(count: int, nodes: int) -> list[dict]:
    """`count` running VMs spread round-robin over worker-1..worker-`nodes`, on vmnet-a (10.64.0.0/12): each one's
    IPAMClaim, VMI and virt-launcher pod, in that order."""
    objects: list[dict] = []
    for i in range(count):
        name, node, ip = f"vm-{i}", f"worker-{i % nodes + 1}", k8s.numbered_vm_address(i)
        objects.append(k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/12"]))
        objects.append(k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip])]))
        objects.append(k8s.launcher_pod(NS, name, node))
    return objects


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the lab is torn down
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", nargs="?", type=int, default=10_000, help="running VMs in the cluster")
    parser.add_argument("--nodes", type=int, default=2, help="nodes the VMs are spread over (round-robin)")
    parser.add_argument("--per-node", action="store_true", help="per-node mode, as worker-1's instance")
    args = parser.parse_args()
    count, nodes = args.count, max(2, args.nodes)
    cluster = [
        k8s.node(f"worker-{k}", k8s.numbered_node_address(k), "fd00::11" if k == 1 else None)
        for k in range(1, nodes + 1)
    ]
    cluster.append(k8s.cudn_layer2("vmnet-a", ["10.64.0.0/12"], labels={"bgpadv.io/advertise": "true"}))
    cluster.extend(running_vms(count, nodes))
    expected = count
    options: dict = {}
    if args.per_node:
        expected = sum(1 for i in range(count) if i % nodes == 0)  # worker-1's VMs
        options = {"env": {"BGPADV_NODE_NAME": "worker-1"}}
    print(f"{count} VMs over {nodes} nodes, {'per-node (worker-1)' if args.per_node else 'cluster'} mode")
    with Lab("bgprss") as lab:
        config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", "w1")
        if args.per_node:
            config["mode"] = "per-node"
        with BgpadvInLab(lab, cluster, config=config, **options) as chain:
            measure(chain, expected, f"{count} VMs, {'per-node' if args.per_node else 'cluster'} mode")
    return 0


def measure(chain: BgpadvInLab, count: int, label: str) -> None:
    """Wait until FRR holds `count` routes, then print the memory of ExaBGP and of the controller."""
    started = time.monotonic()
    vty = chain.frr.vty()

    def loaded() -> bool:
        summary = vty.json("show bgp ipv4 unicast summary json")
        peers = (summary.get("ipv4Unicast") or summary).get("peers", {})
        return sum(int(p.get("pfxRcd", 0)) for p in peers.values()) >= count

    chain.frr.wait_for(loaded, 900, "the initial load", every=1.0)
    print(f"{count} host routes in FRR's table {time.monotonic() - started:.1f} s after start")
    time.sleep(5)  # let the first full resync settle
    processes = {
        "supervisor": [chain.proc.pid],  # `bgpadv run`
        "ExaBGP": chain.exabgp_pids(),
        "API shim": chain.shim_pids(),
        "controller": chain.controller_pids(),
    }
    totals = [0, 0]
    for what, pids in processes.items():
        rss, hwm = (sum(m[i] for m in map(memory, pids)) for i in (0, 1))
        totals[0] += rss
        totals[1] += hwm
        print(f"{what:>10}: RSS {rss / 1024:6.1f} MiB, peak {hwm / 1024:6.1f} MiB")
    print(f"{'total':>10}: RSS {totals[0] / 1024:6.1f} MiB, peak {totals[1] / 1024:6.1f} MiB (sum of the peaks)")
    figure(f"RSS of everything bgpadv runs, {label}", totals[1] / 1024, "MiB", goal="≤ 300 MB at 100k")
    vty.close()


if __name__ == "__main__":
    sys.exit(main())
