"""Memory and time of the speaker's send log (bgpadv.speaker.sent) at N host routes per peer.

Drives a real `Speaker` (two peers, the default chunking) through a first full announcement of N /32s, each chunk
acknowledged, and measures with tracemalloc what the send log alone holds afterwards, per route and peer; then the
time `SendLog.acked` takes per command (the cost added to each `done`), and a withdrawal of every route (what
the bounded withdrawn table keeps).

Run: `nice -n 10 .venv/bin/python bench/sent_log.py [N]` (default 100,000). Not a test: nothing is asserted.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from bgpadv.config import PeerConfig
from bgpadv.core.model import Cause, ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker.sent import SendLog
from bgpadv.speaker.session import Speaker

PEERS = [PeerConfig(address=Address.parse(a), asn=64512) for a in ("10.0.0.1", "10.0.0.2")]
CLAIM = ObjectRef("IPAMClaim", "vm.default", "ns", "0b6a4c1e-2f4d-4b8e-9c1a-7d2e3f4a5b6c")


def main(n: int) -> None:
    base = Address.parse("10.128.0.0").value
    hop = Address.parse("192.0.2.11")
    routes = [Route(Prefix.host(4, base + i), hop, "vmnet", RouteKind.HOST, CLAIM, node="w1") for i in range(n)]
    written: list[str] = []
    speaker = Speaker(PEERS, written.append, local_asn=64513, max_inflight=10_000)
    speaker.start()
    speaker.handle_line("[]")
    speaker.handle_line("done")
    speaker.handle_line("done")
    speaker.set_desired({p.name: routes for p in PEERS}, Cause(time.monotonic(), time.monotonic()))
    commands = speaker.inflight
    # measure: the same acks into a fresh log (the speaker's own is filled by the speaker's acks below)
    inflight = list(speaker._inflight)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    log = SendLog(p.name for p in PEERS)
    for cmd in inflight:
        log.acked(cmd.peer, cmd.kind, cmd.keys, cmd.cause, time.monotonic())
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    log = SendLog(p.name for p in PEERS)  # timed without tracemalloc's overhead
    started = time.perf_counter()
    for cmd in inflight:
        log.acked(cmd.peer, cmd.kind, cmd.keys, cmd.cause, time.monotonic())
    took = time.perf_counter() - started
    for _ in range(commands):
        speaker.handle_line("done")
    print(f"routes per peer           {n}")
    print(f"peers                     {len(PEERS)}")
    print(f"commands acknowledged     {len(inflight)}")
    print(f"send log memory           {held / 1e6:.2f} MB ({held / (n * len(PEERS)):.1f} B per route and peer)")
    print(f"acked() time, all         {took * 1e3:.1f} ms ({took / (n * len(PEERS)) * 1e9:.0f} ns per prefix)")
    started = time.perf_counter()
    for cmd in inflight:
        log.acked(cmd.peer, "withdraw", cmd.keys, cmd.cause, time.monotonic())
    took = time.perf_counter() - started
    print(f"withdraw all, acked()     {took * 1e3:.1f} ms ({took / (n * len(PEERS)) * 1e9:.0f} ns per prefix)")
    print(f"entries kept after        {log.sizes()}")
    print(f"speaker's own log entries {speaker.sent.sizes()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
