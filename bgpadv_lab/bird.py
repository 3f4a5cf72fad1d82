"""BIRD 2 (Debian's bird2) as a top-of-rack router inside a network namespace, for the unnumbered case.

One BGP protocol per node link (`neighbor fe80::NODE%swpN as …`: BIRD sends no Router Advertisements and learns no
neighbour from them, so the node's link-local address is written in), IPv4 unicast with Extended Next Hop and IPv6
unicast, everything learned exported to the namespace kernel's main table. Private config, control socket and pid
file in a work directory, so several labs can run side by side and never touch the host's BIRD. Queries go through
`birdc -s SOCKET`.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.netns import Netns

BIRD, BIRDC = "/usr/sbin/bird", "/usr/sbin/birdc"


@dataclass(frozen=True, slots=True)
class BirdNeighbor:
    """A node on a point-to-point link: the ToR's port and the node's link-local address on it."""

    name: str  # the BGP protocol's name in BIRD
    interface: str
    address: str  # fe80::…
    asn: int = 64513


def render_bird_config(
    neighbors: tuple[BirdNeighbor, ...], log_file: Path, asn: int = 64512, bfd: tuple[int, int, int] | None = None
) -> str:
    """bird.conf: `device` (BIRD must know the interfaces to reach a link-local neighbour), the kernel protocols
    exporting every route to the main tables (`via inet6 …` for an IPv4 route with an IPv6 next hop), and one eBGP
    session per neighbour that accepts everything and sends nothing. No IPv4 address anywhere: the router id is set.
    `bfd` (receive, transmit ms, multiplier): a `bfd` protocol on every interface and each session tied to it."""
    tied = "\n    bfd on;" if bfd is not None else ""
    sessions = "".join(
        f"""
protocol bgp {n.name} {{
    local as {asn};
    neighbor {n.address}%{n.interface} as {n.asn};
    hold time 9;
    keepalive time 3;
    connect retry time 2;{tied}
    error wait time 1, 5;
    ipv4 {{ import all; export none; extended next hop on; }};
    ipv6 {{ import all; export none; }};
}}
"""
        for n in neighbors
    )
    return f"""log "{log_file}" all;
router id 10.255.0.1;
protocol device {{ scan time 1; }}
protocol kernel {{ ipv4 {{ import none; export all; }}; scan time 2; }}
protocol kernel {{ ipv6 {{ import none; export all; }}; scan time 2; }}
{_bfd_protocol(bfd)}{sessions}"""


def _bfd_protocol(bfd: tuple[int, int, int] | None) -> str:
    if bfd is None:
        return ""
    rx, tx, multiplier = bfd
    timers = f"min rx interval {rx} ms; min tx interval {tx} ms; multiplier {multiplier};"
    return f'protocol bfd {{ interface "*" {{ {timers} }}; }}\n'


class BirdRouter:
    """`bird` in `ns`, started by `start()` (foreground, a child of the lab), stopped by PID in `stop()`."""

    def __init__(
        self,
        lab: Netns,
        ns: str,
        workdir: Path,
        neighbors: tuple[BirdNeighbor, ...],
        bfd: tuple[int, int, int] | None = None,
    ) -> None:
        self.lab = lab
        self.bfd = bfd
        self.ns = ns
        self.dir = workdir
        self.neighbors = neighbors
        self.socket = workdir / "bird.ctl"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 20.0) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        conf = self.dir / "bird.conf"
        conf.write_text(render_bird_config(self.neighbors, self.dir / "bird.log", bfd=self.bfd))
        out = (self.dir / "bird.out").open("ab")
        argv = [BIRD, "-f", "-c", str(conf), "-s", str(self.socket), "-P", str(self.dir / "bird.pid")]
        self.proc = self.lab.spawn(self.ns, argv, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        FrrRouter.wait_for(lambda: self._answers(), timeout, "BIRD's control socket")

    def stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.lab.kill(self.proc)
            self.proc = None

    def birdc(self, command: str) -> str:
        """`birdc -s SOCKET COMMAND`'s output (birdc talks to the socket: no need to enter the namespace)."""
        result = subprocess.run([BIRDC, "-s", str(self.socket), command], capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise RuntimeError(f"birdc {command!r}: {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    def _answers(self) -> bool:
        try:
            return "BIRD" in self.birdc("show status")
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            return False

    def protocol(self, name: str) -> dict[str, str]:
        """`show protocols all NAME`: the state (`Established`, `Active`, …) under "state" and each `Key: value` line
        (`Neighbor address`, `Local capabilities`, …); {} when BIRD does not answer."""
        try:
            out = self.birdc(f"show protocols all {name}")
        except (RuntimeError, subprocess.TimeoutExpired):
            return {}
        info: dict[str, str] = {}
        for line in out.splitlines():
            if line.startswith(name + " "):
                info["state"] = line.split()[-1]
            key, sep, value = line.strip().partition(":")
            if sep and key and key not in info:
                info[key] = value.strip()
        info["text"] = out
        return info

    def bfd_sessions(self) -> dict[tuple[str, str], str]:
        """`show bfd sessions`: (neighbour address, interface) → state (`Up`, `Down`, `Init`, …); {} without BFD."""
        try:
            out = self.birdc("show bfd sessions")
        except (RuntimeError, subprocess.TimeoutExpired):
            return {}
        sessions = {}
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 3 and ":" in fields[0] and fields[2] in ("Up", "Down", "Init", "AdminDown"):
                sessions[(fields[0], fields[1])] = fields[2]
        return sessions

    def route(self, prefix: str, table: str = "master4") -> list[dict[str, str]]:
        """The paths of exactly `prefix` in BIRD's `table` (`show route all for PREFIX`), each as its gateway and
        interface (`via fe80::… on swp1`), protocol, `BGP.next_hop` and whether it is the best (`*`)."""
        try:
            out = self.birdc(f"show route all {prefix} table {table}")
        except RuntimeError as e:
            if "Network not found" in str(e):  # birdc's answer (and exit status 1) for a prefix it does not have
                return []
            raise
        paths: list[dict[str, str]] = []
        for line in out.splitlines():
            head = re.match(r"^(\S+/\d+)?\s+unicast \[(\S+) .*?\](.*)$", line)
            if head:
                paths.append({"protocol": head.group(2), "best": str("*" in head.group(3))})
                continue
            via = re.match(r"^\s+via (\S+) on (\S+)", line)
            if via and paths:
                paths[-1].update(gateway=via.group(1), interface=via.group(2))
            attr = re.match(r"^\s+BGP\.next_hop: (.*)$", line)
            if attr and paths:
                paths[-1]["next_hop"] = attr.group(1).strip()
        return paths
