"""IPv6 neighbour discovery on an unnumbered peer's link (RFC 4861): the node's link-local address on an interface,
the ToR's (the source of the Router Advertisement that answers a Router Solicitation), and the messages themselves.

A raw ICMPv6 socket bound to the interface (SO_BINDTODEVICE) needs CAP_NET_RAW. Hop limit 255 both ways: a
receiver drops neighbour discovery that crossed a router (RFC 4861 6.1), and so does `discover_router`.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from pathlib import Path

from bgpadv.core.prefix import Address

ICMPV6_RS, ICMPV6_RA = 133, 134
ALL_NODES, ALL_ROUTERS = "ff02::1", "ff02::2"
_SOURCE_LINK_LAYER = 1  # option type (RFC 4861 4.6.1)
_IF_INET6 = Path("/proc/net/if_inet6")
_IFA_F_DADFAILED, _IFA_F_TENTATIVE = 0x08, 0x40
_SCOPE_LINK = 0x20
_IPV6_RECVHOPLIMIT = getattr(socket, "IPV6_RECVHOPLIMIT", 51)
_IPV6_HOPLIMIT = getattr(socket, "IPV6_HOPLIMIT", 52)


class LinkError(Exception):
    """The link cannot carry an unnumbered session (the message says why, for the operator)."""


def interface_index(interface: str) -> int:
    """The kernel's index of `interface`; LinkError when there is no such interface."""
    try:
        return socket.if_nametoindex(interface)
    except OSError:
        raise LinkError(f"no interface {interface} on this node") from None


def link_local(interface: str, if_inet6: Path = _IF_INET6) -> Address:
    """The node's usable IPv6 link-local address on `interface` (past duplicate address detection); LinkError when
    there is no such interface or no such address (IPv6 disabled on it, or DAD still running or failed)."""
    interface_index(interface)
    try:
        lines = if_inet6.read_text().splitlines()
    except OSError as e:
        raise LinkError(f"cannot read the node's IPv6 addresses ({e}): is IPv6 disabled?") from None
    waiting = False
    for line in lines:
        fields = line.split()
        if len(fields) != 6 or fields[5] != interface or int(fields[3], 16) != _SCOPE_LINK:
            continue
        if int(fields[4], 16) & (_IFA_F_DADFAILED | _IFA_F_TENTATIVE):
            waiting = True
            continue
        return Address(6, int(fields[0], 16))
    if waiting:
        raise LinkError(f"the link-local address of {interface} is not usable yet (duplicate address detection)")
    raise LinkError(f"no IPv6 link-local address on {interface} (is IPv6 disabled on it?)")


def mac_address(interface: str) -> bytes:
    """The interface's link-layer address (6 bytes for Ethernet; b"" when it has none)."""
    try:
        text = Path(f"/sys/class/net/{interface}/address").read_text().strip()
        raw = bytes.fromhex(text.replace(":", ""))
    except (OSError, ValueError):
        return b""
    return raw if len(raw) == 6 else b""


def _option(mac: bytes) -> bytes:
    return struct.pack("!BB", _SOURCE_LINK_LAYER, 1) + mac if len(mac) == 6 else b""


def router_solicitation(mac: bytes) -> bytes:
    """An RS (type 133) with the source link-layer option; the kernel fills the checksum."""
    return struct.pack("!BBHI", ICMPV6_RS, 0, 0, 0) + _option(mac)


def router_advertisement(mac: bytes) -> bytes:
    """An RA (type 134) that makes no one route through the node: router lifetime 0 (not a default router), no
    prefix information, no flags, only the source link-layer option. What a ToR's unnumbered interface needs to
    learn the node's link-local address (FRR: `neighbor IFACE interface`)."""
    return struct.pack("!BBHBBHII", ICMPV6_RA, 0, 0, 0, 0, 0, 0, 0) + _option(mac)


def icmp6_socket(interface: str) -> socket.socket:
    """A raw ICMPv6 socket bound to `interface`, hop limit 255 out, the hop limit of each packet in reported.
    Raises LinkError (no such interface) or PermissionError (no CAP_NET_RAW)."""
    index = interface_index(interface)
    sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, interface.encode())
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
        sock.setsockopt(socket.IPPROTO_IPV6, _IPV6_RECVHOPLIMIT, 1)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def receive(sock: socket.socket) -> tuple[int, Address] | None:
    """One ICMPv6 message from `sock`: (type, source address) when it came from the link (hop limit 255), else
    None (nothing to read, or a message that crossed a router)."""
    try:
        data, ancillary, _flags, source = sock.recvmsg(2048, socket.CMSG_SPACE(4))
    except (BlockingIOError, InterruptedError):
        return None
    hops = next(
        (struct.unpack("i", d[:4])[0] for level, kind, d in ancillary if kind == _IPV6_HOPLIMIT and len(d) >= 4), 255
    )
    if not data or hops != 255:
        return None
    return data[0], Address.parse(str(source[0]).split("%")[0])


def discover_router(interface: str, timeout: float = 5.0, resend: float = 1.0) -> Address:
    """The link-local address of the router on `interface`: a Router Solicitation to all routers (again every
    `resend` s), the source of the first Router Advertisement that comes back within `timeout` s. LinkError when
    the interface or its link-local address is missing, or no router answered in time."""
    link_local(interface)  # the RS leaves from it: a clear error first
    mac = mac_address(interface)
    deadline = time.monotonic() + timeout
    with icmp6_socket(interface) as sock:
        next_send = 0.0
        while (now := time.monotonic()) < deadline:
            if now >= next_send:
                sock.sendto(router_solicitation(mac), (ALL_ROUTERS, 0, 0, interface_index(interface)))
                next_send = now + resend
            readable, _, _ = select.select([sock], [], [], max(0.0, min(deadline, next_send) - now))
            while readable:
                got = receive(sock)
                if got is None:
                    break
                kind, source = got
                if kind == ICMPV6_RA and source.is_link_local():
                    return source
    raise LinkError(
        f"no router answered a Router Solicitation on {interface} within {timeout:g} s: is the ToR's interface "
        "configured for unnumbered BGP (FRR: neighbor IFACE interface, which sends Router Advertisements)? Or "
        "write its link-local address in the peer's `address`"
    )
