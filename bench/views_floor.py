"""The memory floor of holding the cluster as typed views: traced bytes per VM of its three views alone.

Each running VM is an IPAMClaim, a VirtualMachineInstance and a virt-launcher pod, built as bench/rss.py builds them
(the realistic objects of bgpadv_lab/objects.py). Each object is serialised to JSON, then decoded from JSON as the
reflector decodes a LIST item (`json.loads`, then the `bgpadv.sources.decode` function of its resource). The figure is
what the views and the strings they keep hold, as `tracemalloc` counts it. It leaves out the store and reflector
dictionaries, the planner, the guard, the hold, the speaker, and the interpreter and its imports.

The figure is a lower bound on the controller's memory. With per-object views, no other part of the controller can
make it smaller: the store, the reflector's cache and the incremental planner all hold these same view objects.

Run: `.venv/bin/python bench/views_floor.py [N]` (default 20,000 VMs; about 10 s). Not a test: nothing is asserted.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bgpadv_lab is not installed

from figures import figure

from bgpadv.sources import decode
from bgpadv_lab import objects as k8s

NS = "imported-vms"


def documents(count: int) -> list[tuple[object, bytes]]:
    """(decoder, JSON document) of each VM's claim, VMI and launcher pod."""
    out: list[tuple[object, bytes]] = []
    for i in range(count):
        name, node, ip = f"vm-{i}", f"worker-{i % 2 + 1}", k8s.numbered_vm_address(i)
        claim = k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/12"])
        out.append((decode.decode_claim, json.dumps(claim).encode()))
        out.append((decode.decode_vmi, json.dumps(k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip])])).encode()))
        out.append((decode.decode_launcher_pod, json.dumps(k8s.launcher_pod(NS, name, node)).encode()))
    return out


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    docs = documents(count)
    held: list[object] = [None] * len(docs)  # allocated before tracing starts: its pointers are not the views' cost
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i, (decoder, data) in enumerate(docs):
        held[i] = decoder(json.loads(data))  # type: ignore[operator]
    gc.collect()
    per_vm = (tracemalloc.get_traced_memory()[0] - before) / count
    tracemalloc.stop()
    print(f"{count} VMs: their claim, VMI and launcher-pod views hold {per_vm:.0f} B per VM (traced)")
    print(f"at 100,000 VMs: {per_vm * 100_000 / 2**20:.0f} MiB for the views alone")
    figure("views held per VM (claim + VMI + launcher pod), traced", per_vm, "B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
