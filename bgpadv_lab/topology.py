"""The standard lab: a ToR running FRR, two workers and an external host, joined by veths.

```
 <p>-w1 (10.0.0.11, fd00::11) ──┐
 <p>-w2 (10.0.0.12, fd00::12) ──┤ br0 (10.0.0.1/24, fd00::1/64)  <p>-tor  ext (198.51.100.1/24) ── <p>-ext
                                                                                           (198.51.100.10)
```
Each worker's default route points at the ToR; forwarding is on everywhere. `add_vm()` puts a VM namespace behind
a worker. Everything is named from `prefix`, so concurrent labs (bgpsp, bgpe2e, bgpmx) never collide.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.netns import Netns, sh, sweep

WORKERS = {"w1": ("10.0.0.11", "fd00::11"), "w2": ("10.0.0.12", "fd00::12")}
TOR_V4, TOR_V6 = "10.0.0.1", "fd00::1"
EXT_TOR, EXT_HOST = "198.51.100.1", "198.51.100.10"


def unique_prefix(base: str) -> str:
    """`<base>-<pid>`, after removing leftovers of `<base>-<pid>` runs whose process is gone."""
    run = Path("/run/netns")
    if run.is_dir():
        dead = set()
        for entry in run.iterdir():
            parts = entry.name.split("-")
            if len(parts) >= 3 and parts[0] == base and parts[1].isdigit() and not Path(f"/proc/{parts[1]}").exists():
                dead.add(f"{base}-{parts[1]}")
        for stale in dead:
            sweep(stale)
    return f"{base}-{os.getpid()}"


def link_local(lab: Lab, role: str, dev: str) -> str:
    """The IPv6 link-local address of `dev` in `role`'s namespace once past duplicate address detection ('' before)."""
    out = sh(["ip", "-6", "-j", "addr", "show", "dev", dev, "scope", "link"], netns=lab.ns(role)).stdout
    usable = [a["local"] for link in json.loads(out or "[]") for a in link["addr_info"] if not a.get("tentative")]
    return usable[0] if usable else ""


class Lab:
    """Builds the lab on `__enter__` (or `build()`), tears it down by PID on `__exit__` (or `teardown()`)."""

    def __init__(self, base: str = "bgpsp", tor: TorSettings | None = None, start_frr: bool = True) -> None:
        self.prefix = unique_prefix(base)
        self.net = Netns(self.prefix)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-"))
        self.workdir.chmod(0o755)  # FRR drops to user frr and must reach its directory inside
        self.tor_settings = tor or TorSettings()
        self.start_frr = start_frr
        self.frr: FrrRouter | None = None
        self.tors: list[FrrRouter] = []  # further ToRs (`add_tor`), stopped at teardown
        self._vms = 0

    def ns(self, role: str) -> str:
        """Namespace name of "tor", "w1", "w2", "ext" or a VM."""
        return self.net.name(role)

    def build(self) -> Lab:
        net = self.net
        tor = net.create("tor")
        net.forwarding(tor)
        ports = []
        for role, (v4, v6) in WORKERS.items():
            ns = net.create(role)
            net.forwarding(ns)
            net.veth(tor, role, ns, "eth0")
            ports.append(role)
            net.address(ns, "eth0", f"{v4}/24")
            net.address(ns, "eth0", f"{v6}/64")
            net.route(ns, "default", TOR_V4)
            net.route(ns, "default", TOR_V6)
        net.bridge(tor, "br0", ports)
        net.address(tor, "br0", f"{TOR_V4}/24")
        net.address(tor, "br0", f"{TOR_V6}/64")
        ext = net.create("ext")
        net.veth(tor, "ext", ext, "eth0")
        net.address(tor, "ext", f"{EXT_TOR}/24")
        net.address(ext, "eth0", f"{EXT_HOST}/24")
        net.route(ext, "default", EXT_TOR)
        if self.start_frr:
            self.frr = FrrRouter(net, tor, self.workdir / "frr", self.tor_settings)
            self.frr.start()
        return self

    def add_vm(self, worker: str, ip: str, gateway: str, prefixlen: int = 24) -> str:
        """A VM namespace behind `worker`: the VM holds `ip/prefixlen` with `gateway`, the worker holds the gateway."""
        self._vms += 1
        name = f"vm{self._vms}"
        vm = self.net.create(name)
        wdev = f"vm{self._vms}"
        self.net.veth(self.ns(worker), wdev, vm, "eth0")
        self.net.address(self.ns(worker), wdev, f"{gateway}/{prefixlen}")
        self.net.address(vm, "eth0", f"{ip}/{prefixlen}")
        self.net.route(vm, "default", gateway)
        return vm

    def add_tor(self, role: str, addresses: tuple[str, ...], settings: TorSettings) -> FrrRouter:
        """A further ToR on the nodes' segment (a port of the first ToR's br0), holding `addresses` (CIDRs), running
        FRR with `settings`; started now, stopped at teardown."""
        ns = self.net.create(role)
        self.net.veth(self.ns("tor"), role, ns, "eth0")
        sh(["ip", "link", "set", role, "master", "br0"], netns=self.ns("tor"))
        for address in addresses:
            self.net.address(ns, "eth0", address)
        frr = FrrRouter(self.net, ns, self.workdir / f"frr-{role}", settings)
        self.tors.append(frr)
        frr.start()
        return frr

    def ping_from_outside(self, vm_ns: str, ip: str) -> tuple[subprocess.CompletedProcess, str]:
        """The external host behind the ToR pings `ip`, which the VM namespace `vm_ns` holds, while tcpdump in the VM
        catches the first echo request: (ping's result, tcpdump's line), to assert the source arrived intact."""
        capture = self.net.spawn(
            vm_ns,
            ["tcpdump", "-n", "-l", "-c", "1", "-i", "eth0", "icmp[icmptype] == icmp-echo"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        time.sleep(1.0)  # tcpdump attaches
        ping = sh(["ping", "-c", "3", "-W", "2", ip], netns=self.ns("ext"), check=False)
        try:
            out, _ = capture.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            capture.kill()
            out, _ = capture.communicate()
        return ping, out

    def teardown(self) -> None:
        for frr in [*self.tors, *([self.frr] if self.frr is not None else [])]:
            frr.stop()
        self.net.teardown()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Lab:
        try:
            return self.build()
        except BaseException:
            self.teardown()
            raise

    def __exit__(self, *exc: object) -> None:
        self.teardown()
