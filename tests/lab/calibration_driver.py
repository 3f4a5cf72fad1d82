"""ExaBGP's API process for the calibration test: the real Speaker observed by the real MetricsObserver.

Usage (as ExaBGP's `run`): python calibration_driver.py CONFIG.yaml COMMANDS.fifo SENT.jsonl STATUS.json
- COMMANDS.fifo: one JSON object per line, `{"routes": [["10.80.0.1/32", "10.0.0.11"], ...], "received_at": T}`:
  the whole desired set (every peer gets it) and the monotonic time the test made the change (the "watch event").
- SENT.jsonl: one line per `updates_sent` the speaker reports, `{"peer", "announced", "withdrawn", "at"}`, where
  `at` is the time this process read ExaBGP's echo line (as the service's reader thread stamps it).
- STATUS.json: MetricsObserver.status() after every change and every UPDATE echo.
As in the service, reader threads only queue lines stamped with time.monotonic(); one thread owns the speaker.
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
from bgpadv.core.model import Cause, ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.speaker.session import Speaker

SOURCE = ObjectRef("IPAMClaim", "calibration.default", "lab", "5e0c7a44-2d2f-4c1b-9d55-1a2b3c4d5e6f")


class Recorder(MetricsObserver):
    """MetricsObserver that also appends every UPDATE echo to a JSON-lines file."""

    def __init__(self, sent_path: Path) -> None:
        super().__init__(Metrics(process_collectors=False))
        self._out = sent_path.open("a", buffering=1)

    def updates_sent(self, peer, announced, withdrawn, at) -> None:
        super().updates_sent(peer, announced, withdrawn, at)
        record = {
            "peer": peer,
            "announced": [str(p) for p in announced],
            "withdrawn": [str(p) for p in withdrawn],
            "at": at,
        }
        self._out.write(json.dumps(record) + "\n")


def main() -> int:
    config_path, fifo_path, sent_path, status_path = (Path(a) for a in sys.argv[1:5])
    config = load(config_path)
    items: queue.Queue[tuple[str, str, float] | None] = queue.Queue()

    def read(stream, kind: str) -> None:
        for line in stream:
            items.put((kind, line.rstrip("\n"), time.monotonic()))
        items.put(None)

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    observer = Recorder(sent_path)
    observer.set_peers(p.name for p in config.peers)
    speaker = Speaker.from_config(config, write, observer)
    fifo = os.fdopen(os.open(fifo_path, os.O_RDWR), "r")
    threading.Thread(target=read, args=(sys.stdin, "exabgp"), daemon=True).start()
    threading.Thread(target=read, args=(fifo, "change"), daemon=True).start()
    speaker.start()
    while True:
        item = items.get()
        if item is None or speaker.closed:
            return 0
        kind, line, at = item
        if kind == "exabgp":
            speaker.handle_line(line, at)
            if '"update"' in line:
                write_status(observer, status_path)
            continue
        change = json.loads(line)
        routes = [
            Route(
                Prefix.parse(p, strict=False),
                Address.parse(nh) if nh else None,
                "lab",
                RouteKind.HOST,
                SOURCE,
                node="w1",
            )
            for p, nh in change["routes"]
        ]
        cause = Cause(received_at=change["received_at"], planned_at=time.monotonic())
        speaker.set_desired({peer.name: routes for peer in config.peers}, cause)
        write_status(observer, status_path)


def write_status(observer: MetricsObserver, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(observer.status()))
    tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
