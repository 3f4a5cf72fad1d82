"""The memory floor of holding the cluster as typed views: traced bytes per VM of its three views alone.

Each running VM is an IPAMClaim, a VirtualMachineInstance and a virt-launcher pod, exactly the objects bench/rss.py
seeds (`rss.running_vms`). Each is serialised to JSON, then decoded as the store decodes an object (`json.loads`, then
`bgpadv.sources.decode.dispatch.decode` of its `resources.resource_for` resource). The figure is what the views and the
strings they keep hold, as `tracemalloc` counts it. It leaves out the store and reflector dictionaries, the planner,
the guard, the hold, the speaker, and the interpreter and its imports.

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
from rss import running_vms

from bgpadv.core import resources
from bgpadv.sources.decode.dispatch import decode


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    docs = [json.dumps(obj).encode() for obj in running_vms(count, 2)]
    held: list[object] = [None] * len(docs)  # allocated before tracing starts: its pointers are not the views' cost
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i, data in enumerate(docs):
        obj = json.loads(data)
        res = resources.resource_for(obj)
        if res is None:
            raise SystemExit(f"not an object bgpadv watches: {data[:120]!r}")
        held[i] = decode(res, obj)
    gc.collect()
    per_vm = (tracemalloc.get_traced_memory()[0] - before) / count
    tracemalloc.stop()
    print(f"{count} VMs: their claim, VMI and launcher-pod views hold {per_vm:.0f} B per VM (traced)")
    print(f"at 100,000 VMs: {per_vm * 100_000 / 2**20:.0f} MiB for the views alone")
    figure("views held per VM (claim + VMI + launcher pod), traced", per_vm, "B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
