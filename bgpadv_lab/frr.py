"""FRR (Debian's zebra + bgpd) as the lab's top-of-rack router, inside a network namespace.

Private config/pid/vty/zserv paths in a work directory owned by `frr`, so several labs can run side by side and
never touch the host's FRR. Queries go through `vtysh --vty_socket DIR` and `ip -j route` inside the namespace.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bgpadv_lab.netns import Netns, sh

FRR_DIR = Path("/usr/lib/frr")
T = TypeVar("T")
SESSION_SETTLE = 2.0  # s a session is up before a test changes what the ToR originates (FrrRouter.settle_sessions)


@dataclass(frozen=True, slots=True)
class ActiveNeighbor:
    """A node the ToR connects to itself (bgpadv's peer is `passive` there), in the CLUSTER peer-group."""

    address: str
    port: int = 179  # FRR `neighbor ADDRESS port N`: where bgpadv listens (`exabgp.listenPort`)
    password: str | None = None  # TCP MD5 (`neighbor ADDRESS password`)


@dataclass(frozen=True, slots=True)
class TorSettings:
    asn: int = 64512
    router_id: str = "10.0.0.1"
    listen: str = "10.0.0.1"  # bgpd listens only here
    listen_also: tuple[str, ...] = ()  # and here (an IPv6 address for IPv6 sessions)
    port: int = 179  # bgpd's BGP port (`-p`): bgpadv's `peers[].port` connects there
    cluster_asn: int = 64513
    cluster_ranges: tuple[str, ...] = ("10.0.0.0/24",)  # `bgp listen range`: the nodes connect to the ToR
    keepalive: int = 1
    hold: int = 3
    graceful_restart: bool = True
    stalepath_time: int = 60
    active_neighbors: tuple[ActiveNeighbor, ...] = ()  # the ToR connects to these; the rest connect to the ToR
    # BFD: (receive-interval ms, transmit-interval ms, detect-multiplier) of profile `fast`; the ToR runs bfdd
    # (on zebra's socket) and ties every CLUSTER neighbor to it (`neighbor CLUSTER bfd`, `bfd profile fast`)
    bfd: tuple[int, int, int] | None = None
    # unnumbered: `neighbor IFACE interface` in the CLUSTER peer-group, one per interface (a point-to-point link to a
    # node, peering over the link-local addresses; bgpd has zebra send RAs there and learns the node from its RAs)
    interfaces: tuple[str, ...] = ()


def render_frr_config(s: TorSettings, log_file: Path) -> str:
    """bgpd/zebra configuration: dynamic neighbors from the cluster (and the `active_neighbors` the ToR connects to),
    accept /32 and /128, send nothing back. `bgp route-map delay-timer 0`: bgpd applies the route maps as it reads
    them; with the default (5 s) it applied them 5 s after its start and asked every session up by then for a
    ROUTE-REFRESH, which ExaBGP answers by sending its whole table again, at a moment no test chose (measured before
    bgpadv's ExaBGP packed that answer, one UPDATE per route: a migration 1 s after a 10k load delayed by up to
    350 ms, 2 runs in 3).
    A refresh a test wants, it asks for (`clear bgp ... soft in`)."""
    ranges = "\n".join(f" bgp listen range {r} peer-group CLUSTER" for r in s.cluster_ranges)
    for n in s.active_neighbors:
        ranges += f"\n neighbor {n.address} peer-group CLUSTER\n neighbor {n.address} port {n.port}"
        if n.password is not None:
            ranges += f"\n neighbor {n.address} password {n.password}"
    for interface in s.interfaces:
        ranges += f"\n neighbor {interface} interface peer-group CLUSTER"
    gr = (
        f" bgp graceful-restart\n bgp graceful-restart stalepath-time {s.stalepath_time}\n"
        if s.graceful_restart
        else ""
    )
    bfd = " neighbor CLUSTER bfd\n neighbor CLUSTER bfd profile fast\n" if s.bfd is not None else ""
    families = ""
    for afi in ("ipv4", "ipv6"):
        families += (
            f" address-family {afi} unicast\n"
            "  neighbor CLUSTER activate\n"
            "  neighbor CLUSTER route-map FROM-CLUSTER in\n"
            "  neighbor CLUSTER route-map TO-CLUSTER out\n"
            " exit-address-family\n"
        )
    return f"""frr defaults traditional
hostname tor
log file {log_file}
no ipv6 forwarding
ip forwarding
ipv6 forwarding
!
route-map FROM-CLUSTER permit 10
!
route-map TO-CLUSTER deny 10
!
bgp route-map delay-timer 0
!
router bgp {s.asn}
 bgp router-id {s.router_id}
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 bgp bestpath as-path multipath-relax
{gr} neighbor CLUSTER peer-group
 neighbor CLUSTER remote-as {s.cluster_asn}
 neighbor CLUSTER timers {s.keepalive} {s.hold}
{bfd}{ranges}
{families}!
"""


def render_bfdd_config(s: TorSettings, log_file: Path) -> str:
    """bfdd's configuration on the ToR: profile `fast` (bgpd registers each BFD neighbor's session itself)."""
    assert s.bfd is not None
    rx, tx, multiplier = s.bfd
    return (
        f"log file {log_file}\n!\nbfd\n profile fast\n  receive-interval {rx}\n  transmit-interval {tx}\n"
        f"  detect-multiplier {multiplier}\n !\n!\n"
    )


class FrrRouter:
    """zebra + bgpd in `ns`, started by `start()`, stopped by PID in `stop()`."""

    def __init__(self, lab: Netns, ns: str, workdir: Path, settings: TorSettings = TorSettings()) -> None:
        self.lab = lab
        self.ns = ns
        self.dir = workdir
        self.settings = settings
        self.procs: list[subprocess.Popen] = []

    def start(self, timeout: float = 20.0) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        conf = self.dir / "frr.conf"
        conf.write_text(render_frr_config(self.settings, self.dir / "frr.log"))
        shutil.chown(self.dir, "frr", "frr")
        for path in self.dir.iterdir():
            shutil.chown(path, "frr", "frr")
        common = ["-u", "frr", "-g", "frr", "-P", "0", "--vty_socket", str(self.dir), "-f", str(conf)]
        zserv = ["-z", str(self.dir / "zserv.api")]
        out = (self.dir / "daemons.out").open("ab")
        self.procs.append(
            self.lab.spawn(
                self.ns,
                [str(FRR_DIR / "zebra"), *common, "-i", str(self.dir / "zebra.pid"), *zserv],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        )
        self.wait_for(lambda: (self.dir / "zserv.api").exists(), timeout, "zebra's zserv socket")
        if self.settings.bfd is not None:
            bfd_conf = self.dir / "bfdd.conf"
            bfd_conf.write_text(render_bfdd_config(self.settings, self.dir / "bfdd.log"))
            shutil.chown(bfd_conf, "frr", "frr")
            bfd = [str(FRR_DIR / "bfdd"), *common[:-1], str(bfd_conf), "-i", str(self.dir / "bfdd.pid"), *zserv]
            bfd += ["--bfdctl", str(self.dir / "bfdd.sock")]
            self.procs.append(self.lab.spawn(self.ns, bfd, stdout=out, stderr=subprocess.STDOUT))
            self.wait_for(lambda: self._ok("show bfd peers json"), timeout, "bfdd's vty")
        bgp = [str(FRR_DIR / "bgpd"), *common, "-i", str(self.dir / "bgpd.pid"), *zserv, "-l", self.settings.listen]
        for address in self.settings.listen_also:
            bgp += ["-l", address]
        if self.settings.port != 179:
            bgp += ["-p", str(self.settings.port)]
        self.procs.append(self.lab.spawn(self.ns, bgp, stdout=out, stderr=subprocess.STDOUT))
        self.wait_for(lambda: self._ok("show bgp summary json"), timeout, "bgpd's vty")

    def stop(self) -> None:
        pids = [p.pid for p in self.procs]
        for proc in reversed(self.procs):
            with contextlib.suppress(Exception):
                self.lab.kill(proc)
        self.procs.clear()
        for pid in pids:  # FRR's crash-log scratch directories
            for daemon in ("zebra", "bgpd", "bfdd"):
                for sep in ("-", "."):
                    shutil.rmtree(f"/var/tmp/frr/{daemon}{sep}{pid}", ignore_errors=True)

    # ------------------------------------------------------------------ routes to the cluster

    def configure(self, *lines: str) -> None:
        """Run configuration commands (`configure terminal` first, each line one vtysh `-c`)."""
        argv = ["vtysh", "--vty_socket", str(self.dir), "-c", "configure terminal"]
        for line in lines:
            argv += ["-c", line]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if result.returncode != 0 or "%" in result.stdout:
            raise RuntimeError(f"vtysh {lines!r}: {result.stderr.strip() or result.stdout.strip()}")

    def settle_sessions(self, at_least: float = SESSION_SETTLE, timeout: float = 30.0) -> None:
        """Wait until every Established session has been up for `at_least` seconds.

        Why: FRR 8.4 loses a withdrawal it originates within its update-subgroup's coalesce window (1,050 ms after a
        session comes up): `no network P` then removes P from its table but never from its adj-rib-out, so the peer
        keeps P for good (seen in the egress tests with `debug bgp updates`: the withdrawal's walk happened while the
        coalesce timer ran, and nothing was sent). A test that changes what the ToR originates waits this out."""

        def settled() -> bool:
            neighbors = self.vtysh_json("show bgp neighbors json")
            up = [n for n in neighbors.values() if isinstance(n, dict) and n.get("bgpState") == "Established"]
            return all(int(n.get("bgpTimerUpMsec", 0)) >= at_least * 1000 for n in up)

        self.wait_for(settled, timeout, f"every session up for {at_least} s", every=0.1)

    def announce_to_cluster(self, *prefixes: str) -> None:
        """Originate `prefixes` (IPv4 or IPv6, each in its own address family, over every session: an IPv6 prefix
        goes to an IPv4 neighbor as MP_REACH, next hop the ToR's global IPv6 address on the link) towards the
        cluster, next hop the ToR (by default it sends nothing back): `network` statements, the route check off, and
        the outbound route map opened for exactly these. Waits for the sessions to settle first
        (`settle_sessions`)."""
        self.settle_sessions()
        lines = [
            "route-map TO-CLUSTER permit 5",
            "match ip address prefix-list TO-CLUSTER-OK",
            "exit",
        ]
        if any(":" in p for p in prefixes):
            lines += ["route-map TO-CLUSTER permit 6", "match ipv6 address prefix-list TO-CLUSTER-OK6", "exit"]
        lines += [f"router bgp {self.settings.asn}", "no bgp network import-check"]
        lines += ["neighbor CLUSTER advertisement-interval 0", *self._networks(prefixes)]
        lists = [f"{_family(p)[1]} prefix-list TO-CLUSTER-OK{_family(p)[2]} permit {p}" for p in prefixes]
        self.configure(*lists, *lines)

    def withdraw_from_cluster(self, *prefixes: str) -> None:
        """Stop originating `prefixes`: the ToR sends their withdrawal (once its sessions settled,
        `settle_sessions`)."""
        self.settle_sessions()
        self.configure(f"router bgp {self.settings.asn}", *self._networks(prefixes, "no "))

    @staticmethod
    def _networks(prefixes: tuple[str, ...], no: str = "") -> list[str]:
        """`network` lines for `prefixes`, each under its address family (in `router bgp`)."""
        lines = []
        for afi in ("ipv4", "ipv6"):
            mine = [p for p in prefixes if _family(p)[0] == afi]
            if mine:
                lines += [f"address-family {afi} unicast", *[f"{no}network {p}" for p in mine], "exit-address-family"]
        return lines

    # ------------------------------------------------------------------ queries

    def vtysh(self, command: str) -> str:
        result = subprocess.run(
            ["vtysh", "--vty_socket", str(self.dir), "-c", command], capture_output=True, text=True, timeout=30
        )
        if result.returncode != 0:
            raise RuntimeError(f"vtysh {command!r}: {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    def vty(self, daemon: str = "bgpd") -> VtyClient:
        """A direct client of `daemon`'s vty socket: 0.2-1 ms a query against 15-30 ms for a vtysh fork."""
        return VtyClient(self.dir / f"{daemon}.vty")

    def vtysh_json(self, command: str) -> Any:
        return json.loads(self.vtysh(command) or "{}")

    def _ok(self, command: str) -> bool:
        try:
            self.vtysh_json(command)
            return True
        except (RuntimeError, ValueError, subprocess.TimeoutExpired):
            return False

    def bgp_routes(self, afi: str = "ipv4") -> dict[str, list[str]]:
        """Best paths in bgpd's table: prefix -> next hops of the best (and multipath) paths."""
        data = self.vtysh_json(f"show bgp {afi} unicast json")
        out: dict[str, list[str]] = {}
        for prefix, paths in (data.get("routes") or {}).items():
            hops = []
            for path in paths:
                if path.get("bestpath") or path.get("multipath"):
                    hops.extend(nh.get("ip", "") for nh in path.get("nexthops", []) if nh.get("afi") == afi)
            if hops:
                out[prefix] = sorted(set(hops))
        return out

    def valid_paths(self, afi: str = "ipv4") -> dict[str, list[tuple[str, str]]]:
        """Every valid path in bgpd's table: prefix -> sorted (peer, global next hop), one entry per path and hop."""
        out: dict[str, list[tuple[str, str]]] = {}
        for prefix, paths in (self.vtysh_json(f"show bgp {afi} unicast json").get("routes") or {}).items():
            for path in paths:
                if path.get("valid"):
                    hops = [nh["ip"] for nh in path.get("nexthops", []) if nh.get("scope", "global") == "global"]
                    out.setdefault(prefix, []).extend((path.get("peerId", "?"), h) for h in hops)
        return {p: sorted(v) for p, v in out.items()}

    def wait_valid_paths(
        self, expected: dict[str, list[tuple[str, str]]], afi: str = "ipv4", timeout: float = 40.0
    ) -> None:
        """Wait until `valid_paths(afi)` is `expected`; the TimeoutError says what bgpd had last."""
        last: dict[str, list[tuple[str, str]]] = {}

        def ok() -> bool:
            nonlocal last
            last = self.valid_paths(afi)
            return last == expected

        try:
            self.wait_for(ok, timeout, f"{afi} table {expected}", every=0.2)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; FRR has {last}") from None

    def best_next_hops(self, prefix: str) -> list[str] | None:
        """The next hops of bgpd's best (and multipath) paths for `prefix` (its family read from the prefix); None
        when bgpd has no route for it."""
        return self.bgp_routes("ipv6" if ":" in prefix else "ipv4").get(prefix)

    def wait_route(self, prefix: str, next_hops: list[str] | None, timeout: float = 15.0) -> float:
        """Wait until bgpd's best path for `prefix` has `next_hops` (None: until it has no route for it); returns
        the seconds it took."""
        start = time.monotonic()
        self.wait_for(
            lambda: self.best_next_hops(prefix) == next_hops,
            timeout,
            f"{prefix} -> {next_hops} (FRR has {self.best_next_hops(prefix)})",
        )
        return time.monotonic() - start

    def fib_routes(self, family: int = 4) -> dict[str, list[str]]:
        """The ToR kernel's BGP routes: prefix -> gateways."""
        raw = sh(["ip", f"-{family}", "-j", "route", "show", "proto", "bgp"], netns=self.ns).stdout
        out: dict[str, list[str]] = {}
        for route in json.loads(raw or "[]"):
            dst = route["dst"]
            if "/" not in dst:
                dst += "/32" if family == 4 else "/128"
            gateways = [route["gateway"]] if "gateway" in route else [h["gateway"] for h in route.get("nexthops", [])]
            out[dst] = sorted(gateways)
        return out

    def bfd_peers(self) -> dict[str, dict]:
        """`show bfd peers json` by peer address (status, diagnostic, timers)."""
        return {str(p.get("peer")): p for p in self.vtysh_json("show bfd peers json") or []}

    def neighbor(self, address: str) -> dict:
        data = self.vtysh_json(f"show bgp neighbors {address} json")
        return data.get(address, {})

    def neighbor_state(self, address: str) -> str:
        """bgpd's FSM state for the neighbor ("Established", "Active", ...; "" if unknown)."""
        try:
            return str(self.neighbor(address).get("bgpState", ""))
        except (RuntimeError, ValueError):
            return ""

    def graceful_restart(self, address: str, afi: str = "ipv4") -> dict:
        return self.vtysh_json(f"show bgp {afi} neighbors {address} graceful-restart json").get(address, {})

    @staticmethod
    def wait_for(predicate: Callable[[], T], timeout: float = 30.0, what: str = "condition", every=0.1) -> T:
        """Poll until `predicate()` is truthy; return its value or raise TimeoutError naming `what`."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(every)


def _family(prefix: str) -> tuple[str, str, str]:
    """(address family, prefix-list keyword, the TO-CLUSTER prefix list's suffix) of `prefix`."""
    return ("ipv6", "ipv6", "6") if ":" in prefix else ("ipv4", "ip", "")


def prefixes(routes: Iterable[str]) -> set[str]:
    return set(routes)


class VtyClient:
    """Speaks vtysh's protocol on a daemon's unix vty socket: a command ends with NUL; the answer ends with three
    NULs and a status byte (0 = success). For measuring, where a vtysh fork per query is too coarse."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))

    def command(self, command: str) -> str:
        self.sock.sendall(command.encode() + b"\0")
        buf = bytearray()
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("vty socket closed")
            buf += chunk
            if len(buf) >= 4 and buf[-4:-1] == b"\0\0\0":
                status = buf[-1]
                text = bytes(buf[:-4]).decode(errors="replace")
                if status != 0:
                    raise RuntimeError(f"vty {command!r} failed ({status}): {text.strip()}")
                return text

    def json(self, command: str) -> Any:
        return json.loads(self.command(command) or "{}")

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> VtyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
