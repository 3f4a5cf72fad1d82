"""Host routes that keep an interface peer's BFD session on its link.

bfdd runs without zebra and so knows no interface: the BFD session of an interface peer (`peers[].interface`) is
given to it by the ToR's link-local address alone (`bgpadv.speaker.bfd`), and the kernel picks the link its packets
leave by from the main routing table, where every interface with IPv6 has its own `fe80::/64` route and the first one
wins (on a node: any of the pod, tunnel or bridge interfaces, not necessarily the uplink). `LinkRoutes` keeps one
host route per such session, `fe80::<ToR>/128 dev <uplink>` in the main table with protocol `RTPROT_BGPADV` (211),
so that packets to that address with no zone (bfdd's, and only those) leave by the peer's link.

A link going down takes its routes with it: a thread watches the kernel's notifications (a netlink socket on the link
and IPv6 route groups; only a link change or the deletion of one of its routes wakes it, not the thousands of route
writes of an import) and puts every missing route back, also every `REPAIR_SECONDS` whatever it heard. It reads the
main table with a dump the kernel filters (`host_routes`): milliseconds whatever the other tables hold.
Only routes with protocol 211 in the main table are ever added or deleted; one of ours that no session wants any more
is deleted, and a route someone else wrote for the same address is left alone (logged once). The routes stay when the
controller exits: bfdd keeps its sessions across a controller restart, and the next controller adopts them (and
deletes those its configuration no longer wants). `ip -6 route flush proto 211` removes them by hand.

Writing a route needs CAP_NET_ADMIN: `raise_net_admin` says why it cannot be raised, and then the interface peers'
BFD sessions are not run (`bgpadv.speaker.bfd`: state `refused` with that reason).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from bgpadv.core.capability import CAP_NET_ADMIN, raise_capability

log = logging.getLogger(__name__)

RTPROT_BGPADV = 211
"""The protocol of bgpadv's host routes (`ip route ... proto 211`; add `211 bgpadv` to /etc/iproute2/rt_protos.d/
for a name). Not one of a routing daemon's that may run on the node: FRR's (frr-k8s) take 186 to 198 (its zebra
sweeps them at start), BIRD's 12, Calico's 80."""
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
        """The protocol-211 host routes in the main table: address → interface."""
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


_NLMSG = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port
_RTMSG = struct.Struct("=BBBBBBBBI")  # rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags
_RTA = struct.Struct("=HH")  # rtattr: length, type
_NLMSG_ERROR, _NLMSG_DONE, _RTM_NEWROUTE, _RTM_GETROUTE = 2, 3, 24, 26
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_RTA_DST, _RTA_OIF, _RTA_TABLE = 1, 4, 15
_SOL_NETLINK, _NETLINK_GET_STRICT_CHK = 270, 12
_RTN_UNICAST = 1


def _attributes(data: bytes, offset: int, end: int) -> dict[int, bytes]:
    out = {}
    while offset + _RTA.size <= end:
        length, kind = _RTA.unpack_from(data, offset)
        if length < _RTA.size:
            break
        out[kind] = data[offset + _RTA.size : offset + length]
        offset += (length + 3) & ~3
    return out


def host_routes(protocol: int = 0) -> list[tuple[str, int, int]]:
    """(address, interface index, protocol) of each IPv6 /128 unicast route in the main table (of `protocol` only,
    when not 0). A dump the kernel filters itself (strict checking, Linux 4.20 and later: the main table alone, the
    protocol given): pyroute2 dumps every table and filters in Python, seconds on a node whose VRF tables hold tens
    of thousands of routes, where this takes milliseconds."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.setsockopt(_SOL_NETLINK, _NETLINK_GET_STRICT_CHK, 1)
        sock.bind((0, 0))
        body = _RTMSG.pack(socket.AF_INET6, 0, 0, 0, MAIN_TABLE, protocol, 0, 0, 0)
        body += _RTA.pack(8, _RTA_TABLE) + struct.pack("=I", MAIN_TABLE)
        sock.send(_NLMSG.pack(_NLMSG.size + len(body), _RTM_GETROUTE, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0) + body)
        out: list[tuple[str, int, int]] = []
        done = False
        while not done:
            done = routes_of(sock.recv(1 << 16), out)
        return out


def _messages(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(type, start of the payload, end) of each netlink message in `data`."""
    offset = 0
    while offset + _NLMSG.size <= len(data):
        length, kind, *_ = _NLMSG.unpack_from(data, offset)
        if length < _NLMSG.size or offset + length > len(data):
            return
        yield kind, offset + _NLMSG.size, offset + length
        offset += (length + 3) & ~3


def routes_of(data: bytes, out: list[tuple[str, int, int]]) -> bool:
    """Append to `out` the IPv6 /128 unicast routes of the main table in one read of a route dump (address,
    interface index, protocol); True when the dump ended. Raises OSError for the kernel's error."""
    for kind, start, end in _messages(data):
        if kind == _NLMSG_DONE:
            return True
        if kind == _NLMSG_ERROR:
            code = -struct.unpack_from("=i", data, start)[0]
            raise OSError(code, f"route dump: {os.strerror(code)}")
        if kind != _RTM_NEWROUTE or end - start < _RTMSG.size:
            continue
        family, dst_len, _src, _tos, table, proto, _scope, rtype, _flags = _RTMSG.unpack_from(data, start)
        attrs = _attributes(data, start + _RTMSG.size, end)
        dst, oif = attrs.get(_RTA_DST), attrs.get(_RTA_OIF)
        table = struct.unpack("=I", attrs[_RTA_TABLE][:4])[0] if len(attrs.get(_RTA_TABLE, b"")) >= 4 else table
        if (family, dst_len, rtype, table) != (socket.AF_INET6, 128, _RTN_UNICAST, MAIN_TABLE):
            continue
        if dst is not None and len(dst) == 16 and oif is not None and len(oif) >= 4:
            out.append((socket.inet_ntop(socket.AF_INET6, dst), struct.unpack("=I", oif[:4])[0], proto))
    return False


def _name(index: int) -> str:
    try:
        return socket.if_indextoname(index)
    except OSError:
        return f"#{index}"


class NetlinkKernel:
    """`Kernel` on the namespace the process runs in: `host_routes` to read, pyroute2 to write.

    Each write raises CAP_NET_ADMIN in the writing thread first (`net_admin`) and opens its own netlink socket:
    capabilities are per thread, and the kernel checks a netlink write against the socket's opener too, so neither
    a thread started nor a socket opened before the capability was raised could ever write."""

    def __init__(self, net_admin: Callable[[], str | None] = lambda: None) -> None:
        self._net_admin = net_admin

    def _write(self, command: str, what: str, **route: object) -> None:
        from pyroute2 import IPRoute

        self._net_admin()  # when it cannot be raised, the write fails with EPERM: that is the error told
        with _netlink(what), IPRoute() as ipr:
            ipr.route(command, family=socket.AF_INET6, table=MAIN_TABLE, proto=RTPROT_BGPADV, **route)

    def ours(self) -> dict[str, str]:
        return {a: _name(i) for a, i, _proto in host_routes(RTPROT_BGPADV)}

    def others(self, address: str) -> bool:
        return any(a == address and proto != RTPROT_BGPADV for a, _i, proto in host_routes())

    def add(self, address: str, interface: str) -> None:
        try:
            index = socket.if_nametoindex(interface)
        except OSError:
            raise OSError(errno.ENODEV, f"no interface {interface}") from None
        self._write("add", f"add {address}/128 dev {interface}", dst=f"{address}/128", oif=index)

    def delete(self, address: str, interface: str) -> None:
        self._write("del", f"delete {address}/128 dev {interface}", dst=f"{address}/128")


def _notifications() -> socket.socket:
    """A netlink socket on the kernel's link and IPv6 route notifications (woken by each; read and dropped)."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_NONBLOCK, socket.NETLINK_ROUTE)
    sock.bind((0, _RTMGRP_LINK | _RTMGRP_IPV6_ROUTE))
    return sock


class LinkRoutes:
    """The host routes of the interface peers' BFD sessions (see the module). `set_desired` from the controller;
    `repair` is one pass (the thread's, or a test's); `start` runs the thread that repairs on every link or route
    change the kernel reports and every `repair_seconds`. `net_admin`: raises CAP_NET_ADMIN in the calling thread
    (`raise_net_admin`), before each write."""

    def __init__(
        self,
        kernel: Kernel | None = None,
        *,
        net_admin: Callable[[], str | None] = lambda: None,
        repair_seconds: float = REPAIR_SECONDS,
        notifications: Callable[[], socket.socket] = _notifications,
    ) -> None:
        self._kernel = kernel
        self._net_admin = net_admin
        self._desired: dict[str, str] = {}
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()  # stop() wakes the thread's select
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._repair_seconds = repair_seconds
        self._notifications = notifications
        self._told: set[tuple[str, str, str]] = set()  # (address, interface, why) logged already: each once
        self.errors = 0

    @property
    def kernel(self) -> Kernel:
        if self._kernel is None:
            self._kernel = NetlinkKernel(self._net_admin)
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
            except OSError as e:  # no IPv6 on this node (ipv6.disable=1) is no error while no route is wanted
                level = logging.WARNING if desired else logging.DEBUG
                self._fail("", "", f"reading the main table failed: {e}", error=bool(desired), level=level)
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
                why = "another route for it is in the main table, left as it is: the BFD session follows that route"
                self._fail(address, interface, why, error=False)
            elif e.errno == errno.ENETDOWN:  # put back when the link comes up
                self._fail(address, interface, f"{interface} is down", error=False, level=logging.INFO)
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

    def _fail(
        self, address: str, interface: str, why: str, *, error: bool = True, level: int = logging.WARNING
    ) -> None:
        """Log each (route, reason) once (`errors` counts every failed write; a DEBUG line is no telling); a link
        that is down is the usual case, repaired when it comes up."""
        self.errors += 1 if error else 0
        if (address, interface, why) in self._told:
            return
        if level > logging.DEBUG:
            self._told.add((address, interface, why))
        log.log(level, "BFD: host route to the peer: %s", why, extra={"address": address, "interface": interface})

    # -- the thread ----------------------------------------------------------------------------------------------------
    def start(self) -> LinkRoutes:
        self._thread = threading.Thread(target=self._run, name="bfd-link-routes", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching; the routes stay (see the module)."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        try:
            sock: socket.socket | None = self._notifications()
        except OSError as e:
            log.warning("BFD: no kernel notifications (%s): host routes repaired every %ss", e, self._repair_seconds)
            sock = None
        watched = [self._wake_r] + ([sock] if sock is not None else [])
        try:
            while not self._stop.is_set():
                ready = select.select(watched, [], [], self._repair_seconds)[0]
                settled = sock is not None and sock in ready and not self._stop.wait(SETTLE_SECONDS)
                if settled and sock is not None and not relevant(sock):
                    continue  # another table's routes, another protocol's: nothing of ours moved
                with self._lock:
                    idle = not self._desired  # set_desired({}) itself deleted what was ours
                if not (self._stop.is_set() or idle):
                    self.repair()
        finally:
            if sock is not None:
                sock.close()
            self._wake_r.close()
            self._wake_w.close()


_RTM_NEWLINK, _RTM_DELLINK, _RTM_DELROUTE = 16, 17, 25


def relevant(sock: socket.socket) -> bool:
    """Read every pending notification: True when one may concern a host route of ours (`concerns_ours`) or some were
    lost (the socket's buffer overran)."""
    found = False
    while True:
        try:
            data = sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return found
        except OSError as e:  # ENOBUFS: notifications were dropped
            log.debug("BFD: kernel notifications lost: %s", e)
            found = True
            continue
        if not data:
            return found
        found = concerns_ours(data) or found


def concerns_ours(data: bytes) -> bool:
    """Some notification in `data` may concern a host route of ours: a link changed, a protocol-211 IPv6 route was
    deleted."""
    for kind, start, end in _messages(data):
        if kind in (_RTM_NEWLINK, _RTM_DELLINK):
            return True
        if kind == _RTM_DELROUTE and end - start >= _RTMSG.size:
            family, _dst, _src, _tos, _table, proto, *_ = _RTMSG.unpack_from(data, start)
            if family == socket.AF_INET6 and proto == RTPROT_BGPADV:
                return True
    return False
