"""The ToR kernel's FIB as it changes: `ip monitor route` in a namespace, each event stamped on arrival."""

from __future__ import annotations

import subprocess
import threading
import time

from bgpadv_lab.netns import Netns


class FibMonitor:
    """Collects (monotonic time read, "add"|"del", prefix, gateway) for every IPv4 route event in `ns`."""

    def __init__(self, net: Netns, ns: str) -> None:
        self.events: list[tuple[float, str, str, str]] = []
        self._cond = threading.Condition()
        self.proc = net.spawn(ns, ["ip", "-4", "monitor", "route"], stdout=subprocess.PIPE, text=True, bufsize=1)
        threading.Thread(target=self._read, name="fib-monitor", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            at = time.monotonic()
            words = line.split()
            if not words:
                continue
            op = "del" if words[0] == "Deleted" else "add"
            dst = words[1] if op == "del" else words[0]
            via = words[words.index("via") + 1] if "via" in words[:-1] else ""
            if "/" not in dst:
                dst += "/32"
            with self._cond:
                self.events.append((at, op, dst, via))
                self._cond.notify_all()

    def wait(self, prefix: str, op: str, since: float, *, via: str | None = None, timeout: float = 5.0) -> float | None:
        """The time of the first `op` event for `prefix` (through `via`, if given) at or after `since`; None if
        none came within `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for at, o, p, gw in self.events:
                    if o == op and p == prefix and at >= since and (via is None or gw == via):
                        return at
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
