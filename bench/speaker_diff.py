"""Speaker diff benchmark: the cost of `Speaker.set_desired` for a large desired set (printed, never asserted).

No ExaBGP: the speaker writes into a list and every command is acknowledged right after the timed call, so what is
measured is the speaker's own work (diff against advertised + in flight, grouping, rendering, chunking). Scenarios,
against one IPv4 peer (or `--v6`: /128s with an IPv6 next hop on an IPv6 peer):
  - initial:   the first desired set of N host routes (everything announced);
  - noop-same: the same Route objects again (nothing to send);
  - noop-new:  equal but freshly built routes, prefixes and next hops (what the planner hands over each time);
  - move-one / move-back: like noop-new with one route's next hop changed, then changed back (one announcement);
  - add-one / remove-one: one route more / less (one announcement / withdrawal);
  - inflight:  noop-new while the initial announcements are all still unacknowledged (diff against in flight);
  - withdraw-all: an empty desired set.

    .venv/bin/python bench/speaker_diff.py [--routes N] [--runs R] [--v6]

Prints the median wall time and the median CPU time (process_time) of R runs of each scenario, in milliseconds.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from bgpadv.config import PeerConfig
from bgpadv.core.model import ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker.session import Speaker

SOURCE = ObjectRef("IPAMClaim", "vm", "tenant")


def build(n: int, v6: bool, next_hop: str) -> list[Route]:
    """n host routes, every object freshly parsed (as the planner does)."""
    base = Address.parse("fd00:10::" if v6 else "10.128.0.0").value
    version = 6 if v6 else 4
    return [
        Route(
            Prefix.parse(f"{Address(version, base + i)}/{128 if v6 else 32}"),
            Address.parse(next_hop),
            "vmnet",
            RouteKind.HOST,
            SOURCE,
            "worker-1",
        )
        for i in range(n)
    ]


def new_speaker(peer: PeerConfig) -> tuple[Speaker, list[str]]:
    lines: list[str] = []
    speaker = Speaker([peer], lines.append, local_asn=64513, max_inflight=10**9)
    speaker.start()
    speaker.handle_line(json.dumps([{"state": "up", "peer": {"address": str(peer.address)}}]))
    ack_all(speaker)
    assert speaker.ready
    return speaker, lines


def ack_all(speaker: Speaker) -> None:
    while speaker.inflight:
        speaker.handle_line("done")


def run(
    results: dict[str, list[tuple[float, float]]],
    speaker: Speaker,
    lines: list[str],
    label: str,
    desired: list[Route],
    expect: int,
    then_ack: bool = True,
) -> None:
    """Time one set_desired; check it sent `expect` prefixes; acknowledge everything unless told not to."""
    lines.clear()
    peer = next(iter(speaker.peer_states))
    results.setdefault(label, []).append(timed(lambda: speaker.set_desired({peer: desired})))
    sent = sum(len(x.split(" nlri ")[1].split()) for x in lines if " nlri " in x)
    assert sent == expect, (label, sent, expect)
    if then_ack:
        ack_all(speaker)


def timed(call: Callable[[], None]) -> tuple[float, float]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--v6", action="store_true", help="IPv6 /128s on an IPv6 peer")
    args = parser.parse_args()
    n = args.routes
    if args.v6:
        peer = PeerConfig(address=Address.parse("fd00::1"), asn=64512, families=("ipv6 unicast",))
        hop, other_hop = "fd00::11", "fd00::12"
    else:
        peer = PeerConfig(address=Address.parse("10.0.0.1"), asn=64512)
        hop, other_hop = "10.0.0.11", "10.0.0.12"

    results: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        routes = build(n, args.v6, hop)
        fresh = build(n, args.v6, hop)
        moved = build(n, args.v6, hop)
        moved[n // 2] = build(n // 2 + 1, args.v6, other_hop)[n // 2]
        more = build(n + 1, args.v6, hop)

        speaker, lines = new_speaker(peer)

        run(results, speaker, lines, "initial", routes, n, then_ack=False)
        run(results, speaker, lines, "inflight", fresh, 0)
        run(results, speaker, lines, "noop-same", fresh, 0)
        run(results, speaker, lines, "noop-new", routes, 0)
        run(results, speaker, lines, "move-one", moved, 1)
        run(results, speaker, lines, "move-back", routes, 1)
        run(results, speaker, lines, "add-one", more, 1)
        run(results, speaker, lines, "remove-one", routes, 1)
        run(results, speaker, lines, "withdraw-all", [], n)
        del speaker, lines

    print(f"{n} {'IPv6 /128' if args.v6 else 'IPv4 /32'} routes, {args.runs} runs: median wall / CPU ms")
    for label, samples in results.items():
        wall = statistics.median(w for w, _ in samples) * 1000
        cpu = statistics.median(c for _, c in samples) * 1000
        print(f"  {label:<13} {wall:9.1f} {cpu:9.1f}")


if __name__ == "__main__":
    main()
