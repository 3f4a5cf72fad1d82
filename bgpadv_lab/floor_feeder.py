"""The raw-ExaBGP floor's API process: N /32s in `announce attributes ... nlri` lines, nothing else.

What any integration could do at best with ExaBGP's text API: CHUNK prefixes a command, at most INFLIGHT commands
waiting for their `done` (ExaBGP's acks read on a thread, so its pipe never fills), no diff, no echo, no relay.
The prefixes are those of bench/bulk.py's VMs (`address(0..N-1)`, in 10.64.0.0/12). It stays
alive after the last ack (ExaBGP would respawn it and it would announce everything again).

Usage (as ExaBGP's `run`): python floor_feeder.py N CHUNK INFLIGHT
"""

from __future__ import annotations

import sys
import threading


def address(i: int) -> str:
    """The i-th VM address of the bulk benchmark: 10.64.0.10 onwards (room for a million; no bgpadv import, so this
    runs under any interpreter)."""
    value = (10 << 24) | (64 << 16) | (i + 10)
    return f"{value >> 24}.{value >> 16 & 255}.{value >> 8 & 255}.{value & 255}"


def main() -> int:
    count, chunk, inflight = (int(a) for a in sys.argv[1:4])
    slots = threading.Semaphore(inflight)
    finished = threading.Event()

    def read_acks() -> None:
        for line in sys.stdin:
            if line.strip() in ("done", "error"):
                slots.release()
        finished.set()

    threading.Thread(target=read_acks, daemon=True).start()
    for start in range(0, count, chunk):
        nlri = " ".join(f"{address(i)}/32" for i in range(start, min(count, start + chunk)))
        slots.acquire()
        sys.stdout.write(f"announce attributes next-hop self origin igp nlri {nlri}\n")
        sys.stdout.flush()
    finished.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
