"""A minimal controller for the lab: ExaBGP's API process driven by the real Speaker.

Reads desired sets from a JSON file the test rewrites (`{"gen": N, "routes": [["10.1.0.1/32", "10.0.0.11"], ...]}`,
next hop null = self; every peer gets the same set) and writes its state to a status file after every change, for
the test to wait on. One thread owns the speaker; a reader thread only queues stdin lines (never leave ExaBGP's
replies unread). Usage (as ExaBGP's `run`): python speaker_driver.py CONFIG.yaml DESIRED.json STATUS.json
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from pathlib import Path

from bgpadv.config import load
from bgpadv.core.model import ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker.session import Speaker

SOURCE = ObjectRef("VirtualMachineInstance", "lab", "lab")


class Counts:
    def __init__(self) -> None:
        self.announced = 0
        self.withdrawn = 0
        self.withdrawn_prefixes: set[str] = set()

    def updates_sent(self, peer, announced, withdrawn, at) -> None:
        self.announced += len(announced)
        self.withdrawn += len(withdrawn)
        self.withdrawn_prefixes.update(str(p) for p in withdrawn)

    def __getattr__(self, name):
        return lambda *a, **k: None


def main() -> int:
    config_path, desired_path, status_path = (Path(a) for a in sys.argv[1:4])
    config = load(config_path)
    lines: queue.Queue[str | None] = queue.Queue()

    def reader() -> None:
        for line in sys.stdin:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    counts = Counts()
    speaker = Speaker.from_config(config, write, counts)
    threading.Thread(target=reader, daemon=True).start()
    speaker.start()
    seen_mtime = 0.0
    gen = -1
    last_status = None
    last_write = 0.0
    while True:
        try:
            line = lines.get(timeout=0.05)
            if line is None:
                return 0
            speaker.handle_line(line)
            while True:  # drain what is already there before looking at the file again
                line = lines.get_nowait()
                if line is None:
                    return 0
                speaker.handle_line(line)
        except queue.Empty:
            pass
        if speaker.closed:
            return 0
        try:
            mtime = desired_path.stat().st_mtime
        except FileNotFoundError:
            mtime = 0.0
        if mtime and mtime != seen_mtime:
            seen_mtime = mtime
            data = json.loads(desired_path.read_text())
            routes = [
                Route(Prefix.parse(p, strict=False), Address.parse(nh) if nh else None, "lab", RouteKind.HOST, SOURCE)
                for p, nh in data["routes"]
            ]
            gen = data["gen"]
            speaker.set_desired({peer.name: routes for peer in config.peers})
        idle = speaker.inflight == 0 and speaker.queued == 0
        if not idle and time.monotonic() - last_write < 0.5:
            continue  # keep the busy path cheap (advertised() copies the whole table)
        last_write = time.monotonic()
        status = {
            "pid": os.getpid(),
            "ready": speaker.ready,
            "gen": gen,
            "idle": idle,
            "errors": speaker.errors,
            "announced_sent": counts.announced,
            "withdrawn_sent": counts.withdrawn,
            "peer_states": speaker.peer_states,
            "advertised": {p.name: len(speaker.advertised(p.name)) for p in config.peers},
        }
        if status != last_status:
            last_status = status
            tmp = status_path.with_suffix(".tmp")
            tmp.write_text(json.dumps({**status, "withdrawn": sorted(counts.withdrawn_prefixes), "t": time.time()}))
            tmp.replace(status_path)


if __name__ == "__main__":
    sys.exit(main())
