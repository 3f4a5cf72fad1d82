"""Watching the fabric while something happens to bgpadv: a continuous ping and a periodic sampler, both context
managers, for the lab tests and the benchmarks."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import threading
import time

from bgpadv_lab.topology import Lab


class ContinuousPing:
    """`ping -i INTERVAL` from the external host behind the ToR to `target` for as long as it runs.

    `answered`: the sequence numbers that got a reply; `lost`: those never answered below the last one answered (so
    packets still in flight when it stops are not counted); `sent`: the last one answered.
    """

    def __init__(self, lab: Lab, target: str, interval: float = 0.05) -> None:
        self.lab = lab
        self.target = target
        self.interval = interval
        self.proc: subprocess.Popen | None = None
        self.answered: set[int] = set()

    def __enter__(self) -> ContinuousPing:
        argv = ["ping", "-n", "-i", str(self.interval), "-W", "1", self.target]
        self.out = self.lab.workdir / f"ping-{time.monotonic_ns()}.out"  # a file: a full pipe would stall ping
        with self.out.open("w") as out:
            self.proc = self.lab.net.spawn(self.lab.ns("ext"), argv, stdout=out, stderr=subprocess.STDOUT)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGINT)
        self.proc.wait(10)
        self.answered = {int(m) for m in re.findall(r"icmp_seq=(\d+) ttl=", self.out.read_text())}

    @property
    def sent(self) -> int:
        return max(self.answered, default=0)

    @property
    def lost(self) -> list[int]:
        return [seq for seq in range(1, self.sent + 1) if seq not in self.answered]


class Periodic:
    """Calls `sample()` every `interval` seconds in a thread while the context is open; counts the samples.
    Subclasses implement `sample()` and keep what they observe."""

    def __init__(self, interval: float, name: str = "sampler") -> None:
        self.interval = interval
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Periodic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self.samples += 1
            self._stop.wait(self.interval)
