"""Host routes that keep an interface peer's BFD session on its link.

bfdd runs without zebra and so knows no interface: the BFD session of an interface peer (`peers[].interface`) is
given to it by the ToR's link-local address alone (`bgpadv.speaker.bfd`), and the kernel picks the link its packets
leave by from the main routing table, where every interface with IPv6 has its own `fe80::/64` route and the first one
wins (on a node: any of the pod, tunnel or bridge interfaces, not necessarily the uplink). `LinkRoutes` keeps one
host route per such session, `fe80::<ToR>/128 dev <uplink>` in the main table with protocol `RTPROT_BGPADV` (196),
so that packets to that address with no zone (bfdd's, and only those) leave by the peer's link.

A link going down takes its routes with it: a thread watches the kernel's link and IPv6 route changes (a netlink
socket on their multicast groups) and puts every missing route back, also every `REPAIR_SECONDS` whatever it heard.
Only routes with protocol 196 in the main table are ever added or deleted; one of ours that no session wants any more
is deleted, and a route someone else wrote for the same address is left alone (logged once). The routes stay when the
controller exits: bfdd keeps its sessions across a controller restart, and the next controller adopts them (and
deletes those its configuration no longer wants). `ip -6 route flush proto 196` removes them by hand.

Writing a route needs CAP_NET_ADMIN: `raise_net_admin` says why it cannot be raised, and then the interface peers'
BFD sessions are not run (`bgpadv.speaker.bfd`: state `refused` with that reason).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import select
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from bgpadv.core.capability import CAP_NET_ADMIN, raise_capability

log = logging.getLogger(__name__)

RTPROT_BGPADV = 196
"""The protocol of bgpadv's host routes (`ip route ... proto 196`; add `196 bgpadv` to /etc/iproute2/rt_protos.d/
for a name)."""
MAIN_TABLE = 254
REPAIR_SECONDS = 10.0
"""The routes are checked and repaired at least this often, whatever the kernel reported."""
SETTLE_SECONDS = 0.2
"""After a kernel notification, further ones within this long are taken together (a link flap is a burst)."""

NET_ADMIN_DEPLOY = (
    "kustomize: deploy/components/unnumbered-bfd; Helm: a peer in config with interface and bfd.enabled, "
    "or unnumbered.enabled and bfd.enabled"
)
"""Where the pod gets CAP_NET_ADMIN for these routes, for the error that says it has not."""

_RTMGRP_LINK = 0x1
_RTMGRP_IPV6_ROUTE = 0x400


def raise_net_admin() -> str | None:
    """Make CAP_NET_ADMIN effective in this process; None when it is, else why it cannot be."""
    return raise_capability(CAP_NET_ADMIN, "NET_ADMIN", NET_ADMIN_DEPLOY)


Routes = Mapping[str, str]
"""A host route per link-local address (`fe80::…`, no zone) → the interface it is reached on."""


class Kernel(Protocol):
    """What `LinkRoutes` does to the node's main table (`NetlinkKernel`; a dict in tests)."""

    def ours(self) -> dict[str, str]:
        """The protocol-196 host routes in the main table: address → interface."""
        ...

    def others(self, address: str) -> bool:
        """Some route of another protocol holds `address`/128 in the main table."""
        ...

    def add(self, address: str, interface: str) -> None: ...

    def delete(self, address: str, interface: str) -> None: ...


@contextlib.contextmanager
def _netlink(what: str) -> Iterator[None]:
    """pyroute2's NetlinkError (not an OSError) as an OSError with its errno."""
    from pyroute2.netlink.exceptions import NetlinkError

    try:
        yield
    except NetlinkError as e:
        raise OSError(e.code, f"{what}: {e}") from e


class NetlinkKernel:
    """`Kernel` over pyroute2, in the namespace the process runs in (imported on first use)."""

    def __init__(self) -> None:
        from pyroute2 import IPRoute

        self._ipr = IPRoute()
        self._names: dict[int, str] = {}

    def close(self) -> None:
        self._ipr.close()

    def _host_routes(self) -> list[tuple[str, int, int]]:
        """(address, interface index, protocol) of each IPv6 /128 in the main table."""
        out = []
        with _netlink("route dump"):
            messages = list(self._ipr.get_routes(family=socket.AF_INET6, table=MAIN_TABLE))
        for msg in messages:
            if msg["dst_len"] != 128 or msg["type"] != 1:  # RTN_UNICAST; not the local table's own addresses
                continue
            dst, oif = msg.get_attr("RTA_DST"), msg.get_attr("RTA_OIF")
            if dst and oif:
                out.append((str(dst), int(oif), int(msg["proto"])))
        return out

    def _name(self, index: int) -> str:
        if index not in self._names:
            with _netlink("link lookup"):
                links = self._ipr.get_links(index)
            self._names[index] = str(links[0].get_attr("IFLA_IFNAME")) if links else f"#{index}"
        return self._names[index]

    def ours(self) -> dict[str, str]:
        self._names.clear()  # an index may have been reused by another interface since
        return {a: self._name(i) for a, i, proto in self._host_routes() if proto == RTPROT_BGPADV}

    def others(self, address: str) -> bool:
        return any(a == address and proto != RTPROT_BGPADV for a, _i, proto in self._host_routes())

    def _index(self, interface: str) -> int:
        with _netlink("link lookup"):
            found = self._ipr.link_lookup(ifname=interface)
        if not found:
            raise OSError(f"no interface {interface}")
        return int(found[0])

    def add(self, address: str, interface: str) -> None:
        index = self._index(interface)
        with _netlink(f"add {address}/128 dev {interface}"):
            self._ipr.route(
                "add", family=socket.AF_INET6, dst=f"{address}/128", oif=index, table=MAIN_TABLE,
                proto=RTPROT_BGPADV,
            )  # fmt: skip

    def delete(self, address: str, interface: str) -> None:
        with _netlink(f"delete {address}/128 dev {interface}"):
            self._ipr.route(
                "del", family=socket.AF_INET6, dst=f"{address}/128", table=MAIN_TABLE, proto=RTPROT_BGPADV,
            )  # fmt: skip


def _notifications() -> socket.socket:
    """A netlink socket on the kernel's link and IPv6 route notifications (woken by each; read and dropped)."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_NONBLOCK, socket.NETLINK_ROUTE)
    sock.bind((0, _RTMGRP_LINK | _RTMGRP_IPV6_ROUTE))
    return sock


class LinkRoutes:
    """The host routes of the interface peers' BFD sessions (see the module). `set_desired` from the controller;
    `repair` is one pass (the thread's, or a test's); `start` runs the thread that repairs on every link or route
    change the kernel reports and every `repair_seconds`."""

    def __init__(
        self,
        kernel: Kernel | None = None,
        *,
        repair_seconds: float = REPAIR_SECONDS,
        notifications: Callable[[], socket.socket] = _notifications,
    ) -> None:
        self._kernel = kernel
        self._desired: dict[str, str] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._repair_seconds = repair_seconds
        self._notifications = notifications
        self._told: set[tuple[str, str, str]] = set()  # (address, interface, why) logged already: each once
        self.errors = 0

    @property
    def kernel(self) -> Kernel:
        if self._kernel is None:
            self._kernel = NetlinkKernel()
        return self._kernel

    def set_desired(self, routes: Routes) -> None:
        """Keep exactly these host routes (address → interface), repaired at once (in the caller's thread: the BFD
        session that needs its route is asked of bfdd right after)."""
        with self._lock:
            self._desired = dict(routes)
        self.repair()

    def repair(self) -> None:
        """One pass: every desired route present on its interface, every other route of ours gone."""
        with self._lock:
            desired = dict(self._desired)
            try:
                present = self.kernel.ours()
            except OSError as e:
                self._fail("", "", f"reading the main table failed: {e}")
                return
            for address, interface in present.items():
                if desired.get(address) != interface:
                    self._try(self.kernel.delete, address, interface, "delete")
            for address, interface in desired.items():
                if present.get(address) != interface:
                    self._try(self.kernel.add, address, interface, "add")

    def _try(self, change: Callable[[str, str], None], address: str, interface: str, verb: str) -> None:
        try:
            change(address, interface)
        except OSError as e:  # NetlinkKernel turns NetlinkError into OSError
            if verb == "add" and e.errno == errno.EEXIST and self._others(address):
                self._fail(address, interface, "another route for it is in the main table: left as it is", quiet=True)
            elif e.errno == errno.ENETDOWN:  # put back when the link comes up
                self._fail(address, interface, f"{interface} is down", quiet=True)
            else:
                self._fail(address, interface, f"{verb}: {e}")
        else:
            log.info("BFD: host route %s", "added" if verb == "add" else "deleted",
                     extra={"address": address, "interface": interface})  # fmt: skip
            self._told = {t for t in self._told if t[:2] != (address, interface)}

    def _others(self, address: str) -> bool:
        try:
            return self.kernel.others(address)
        except OSError:
            return False

    def _fail(self, address: str, interface: str, why: str, *, quiet: bool = False) -> None:
        """Log each (route, reason) once; a link that is down is the usual one and repaired when it comes up."""
        self.errors += 0 if quiet else 1
        if (address, interface, why) in self._told:
            return
        self._told.add((address, interface, why))
        level = logging.INFO if quiet else logging.WARNING
        log.log(level, "BFD: host route to the peer: %s", why, extra={"address": address, "interface": interface})

    # -- the thread ----------------------------------------------------------------------------------------------------
    def start(self) -> LinkRoutes:
        self._thread = threading.Thread(target=self._run, name="bfd-link-routes", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching; the routes stay (see the module)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        try:
            sock = self._notifications()
        except OSError as e:
            log.warning("BFD: no kernel notifications (%s): host routes repaired every %ss", e, self._repair_seconds)
            sock = None
        try:
            while not self._stop.is_set():
                if sock is None:
                    self._stop.wait(self._repair_seconds)
                elif select.select([sock], [], [], self._repair_seconds)[0]:
                    self._drain(sock)
                    self._stop.wait(SETTLE_SECONDS)
                    self._drain(sock)
                with self._lock:
                    idle = not self._desired  # set_desired({}) itself deleted what was ours
                if not (self._stop.is_set() or idle):
                    self.repair()
        finally:
            if sock is not None:
                sock.close()

    @staticmethod
    def _drain(sock: socket.socket) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while sock.recv(65536):
                pass
