"""Hostile-document figures: printed, never asserted.

    .venv/bin/python bench/hostile.py [--claims N] [--addresses N]

- the "billion laughs" alias bomb in a manifest directory: load time and peak memory (tracemalloc);
- a `kind: List` of N IPAMClaims (default 20,000, about 18 MB of YAML): `load_manifests` time;
- one IPAMClaim listing N addresses (default 40,000): `plan()` time (refused whole: one address per family);
- one guest-reported VMI interface on an IPAM-less secondary network listing N addresses: `plan()` time (the first
  `maxAddressesPerInterface` are taken, the rest refused in one refusal).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgpadv.planner import plan  # noqa: E402
from bgpadv.sources.manifests import load_manifests  # noqa: E402
from bgpadv_lab import objects as k8s  # noqa: E402

T = TypeVar("T")
ADV = {"bgpadv.io/advertise": "true"}
LAUGHS = (
    "a: &a ["
    + ",".join(['"lol"'] * 9)
    + "]\n"
    + "".join(
        f"{level}: &{level} [{','.join([f'*{prev}'] * 9)}]\n"
        for prev, level in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


def _timed(what: str, fn: Callable[[], T]) -> T:
    started, cpu = time.perf_counter(), time.process_time()
    result = fn()
    print(f"{what}: {time.perf_counter() - started:.3f} s wall, {time.process_time() - cpu:.3f} s CPU")
    return result


def alias_bomb(tmp: Path) -> None:
    d = tmp / "bomb"
    d.mkdir()
    (d / "bomb.yaml").write_text(
        "kind: IPAMClaim\nmetadata: {name: x, namespace: y}\n" + LAUGHS + "status: {ips: *i}\n"
    )
    tracemalloc.start()
    _, warnings = _timed(
        f"alias bomb ({(d / 'bomb.yaml').stat().st_size} bytes) load_manifests", lambda: load_manifests(d)
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"  peak memory allocated {peak / 2**20:.2f} MiB; {warnings[0].split(': ', 1)[1]}")


def claims_list(tmp: Path, n: int) -> None:
    d = tmp / "claims"
    d.mkdir()
    template = k8s.ipam_claim("ns", "vm-@.default", "vm-@", "cluster_udn_vmnet-a", ["10.@.0.1/8"])
    item = yaml.safe_dump({"items": [template]}, sort_keys=False).split("\n", 1)[1]
    text = "apiVersion: v1\nkind: List\nitems:\n" + "".join(item.replace("@", str(i)) for i in range(n))
    (d / "claims.yaml").write_text(text)
    state, _ = _timed(f"{n} claims ({len(text) / 2**20:.1f} MiB of YAML) load_manifests", lambda: load_manifests(d))
    assert len(state.ipam_claims) == n


def big_claim(n: int) -> None:
    ips = [f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}/8" for i in range(1, n + 1)]
    objs = [
        k8s.node("worker-1", "192.0.2.11"),
        k8s.cudn_layer2("vmnet-a", ["10.0.0.0/8"], labels=ADV),
        k8s.ipam_claim("ns", "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ips),
        k8s.vmi("ns", "vm-a", "worker-1"),
    ]
    state, config = k8s.state(objs), k8s.config()
    result = _timed(f"one claim with {n} addresses plan()", lambda: plan(state, config))
    print(f"  {len(result.rejected)} refusal(s): {result.rejected[0].reason}: {result.rejected[0].message}")


def big_vmi(n: int) -> None:
    ips = [f"100.{64 + ((i >> 16) & 63)}.{(i >> 8) & 255}.{i & 255}" for i in range(1, n + 1)]
    objs = [
        k8s.node("worker-1", "192.0.2.11"),
        k8s.namespace("ns", {"guests": "vmnet-d"}),
        k8s.cudn_layer2(
            "vmnet-d",
            ["100.64.0.0/10"],  # not the lab's fabric 10.0.0.0/24
            labels=ADV,
            role="Secondary",
            ipam_mode="Disabled",
            namespace_selector={"matchLabels": {"guests": "vmnet-d"}},
        ),
        k8s.vmi(
            "ns", "vm-a", "worker-1", interfaces=[k8s.interface(ips, name="data")], secondary=[("data", "vmnet-d")]
        ),
    ]
    state, config = k8s.state(objs), k8s.config()
    result = _timed(f"one guest-reported VMI interface with {n} addresses plan()", lambda: plan(state, config))
    print(f"  {len(result.routes)} routes, {len(result.rejected)} refusals")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--claims", type=int, default=20_000)
    p.add_argument("--addresses", type=int, default=40_000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bgpadv-hostile-") as tmp:
        alias_bomb(Path(tmp))
        claims_list(Path(tmp), args.claims)
    big_claim(args.addresses)
    big_vmi(args.addresses)


if __name__ == "__main__":
    main()
