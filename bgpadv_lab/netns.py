"""Network-namespace lab primitives (test fixtures, demo): namespaces, veths, bridges, addresses, processes.

Everything goes through `ip` (iproute2) except `in_netns`, which moves the calling thread with setns(2). Every
namespace and process a `Netns` set creates is remembered and removed by name/PID in `teardown()`; `sweep(prefix)`
removes leftovers of an earlier run with the same prefix (best effort).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def sh(argv: Sequence[str], *, check: bool = True, netns: str | None = None) -> subprocess.CompletedProcess:
    """Run a command (inside `netns` if given) and return its completed process (text output)."""
    full = ["ip", "netns", "exec", netns, *argv] if netns else list(argv)
    result = subprocess.run(full, capture_output=True, text=True, timeout=60)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(full)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def in_netns(name: str) -> Iterator[None]:
    """Move the CURRENT THREAD into namespace `name`; restore its original namespace on exit.

    Sockets created inside keep living in `name` after the thread moves back (e.g. a listening server).
    """
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(original)
    finally:
        os.close(target)
        os.close(original)


class Netns:
    """The namespaces and processes of one lab, all named `<prefix>-<suffix>`."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.namespaces: list[str] = []
        self.processes: list[subprocess.Popen] = []

    def name(self, suffix: str) -> str:
        return f"{self.prefix}-{suffix}"

    def create(self, suffix: str) -> str:
        """Create namespace `<prefix>-<suffix>` with loopback up; return its name."""
        name = self.name(suffix)
        sh(["ip", "netns", "add", name])
        self.namespaces.append(name)
        sh(["ip", "link", "set", "lo", "up"], netns=name)
        return name

    def veth(self, ns_a: str, dev_a: str, ns_b: str, dev_b: str) -> None:
        """A veth pair created directly inside both namespaces (no name clash in the root namespace)."""
        for dev in (dev_a, dev_b):
            if len(dev) > 15:
                raise ValueError(f"interface name {dev!r} is longer than 15 characters")
        sh(["ip", "link", "add", dev_a, "netns", ns_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b])
        self.up(ns_a, dev_a)
        self.up(ns_b, dev_b)

    def bridge(self, ns: str, name: str, ports: Sequence[str] = ()) -> None:
        sh(["ip", "link", "add", name, "type", "bridge"], netns=ns)
        for port in ports:
            sh(["ip", "link", "set", port, "master", name], netns=ns)
        self.up(ns, name)

    def up(self, ns: str, dev: str) -> None:
        sh(["ip", "link", "set", dev, "up"], netns=ns)

    def address(self, ns: str, dev: str, cidr: str) -> None:
        extra = ["nodad"] if ":" in cidr else []
        sh(["ip", "addr", "add", cidr, "dev", dev, *extra], netns=ns)

    def route(self, ns: str, destination: str, via: str) -> None:
        family = ["-6"] if ":" in via else []
        sh(["ip", *family, "route", "replace", destination, "via", via], netns=ns)

    def sysctl(self, ns: str, key: str, value: str) -> None:
        sh(["sysctl", "-q", "-w", f"{key}={value}"], netns=ns)

    def forwarding(self, ns: str) -> None:
        self.sysctl(ns, "net.ipv4.ip_forward", "1")
        self.sysctl(ns, "net.ipv6.conf.all.forwarding", "1")

    def spawn(self, ns: str, argv: Sequence[str], **popen) -> subprocess.Popen:
        """Start a process inside `ns` (`ip netns exec` execs, so the PID is the program's own)."""
        proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv], **popen)
        self.processes.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen, timeout: float = 5.0) -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)

    def teardown(self) -> None:
        """Kill every process this lab started (by PID, then whatever still lives in its namespaces), delete them."""
        for proc in reversed(self.processes):
            with contextlib.suppress(Exception):
                self.kill(proc)
        for ns in reversed(self.namespaces):
            _kill_namespace_pids(ns)
            sh(["ip", "netns", "del", ns], check=False)
        self.processes.clear()
        self.namespaces.clear()


def _kill_namespace_pids(ns: str) -> None:
    pids = sh(["ip", "netns", "pids", ns], check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    if pids:
        time.sleep(0.1)


def sweep(prefix: str) -> list[str]:
    """Best effort: remove namespaces named `<prefix>-*` left by an earlier run (and the processes in them)."""
    removed = []
    run = Path("/run/netns")
    if not run.is_dir():
        return removed
    for entry in run.iterdir():
        if entry.name.startswith(f"{prefix}-"):
            _kill_namespace_pids(entry.name)
            sh(["ip", "netns", "del", entry.name], check=False)
            removed.append(entry.name)
    return removed
