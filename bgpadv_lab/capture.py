"""Independent timing of BGP UPDATEs where they reach a router: tcpdump in its namespace plus a BGP decoder.

`UpdateCapture(netns, interface)` runs `tcpdump -w -` inside the namespace with the capture filter `tcp port 179`,
reassembles each TCP stream and decodes every BGP UPDATE: withdrawn routes and NLRI (IPv4), MP_REACH_NLRI and
MP_UNREACH_NLRI (IPv4/IPv6 unicast). The pcap records, link layers (Ethernet with VLAN tags, Linux cooked SLL and SLL2,
raw IP), IPv4/IPv6, TCP and BGP UPDATEs are decoded by dpkt; only the TCP stream reassembly and the BGP message framing
on top of it (dpkt has neither) are written here. Each UPDATE is stamped with the kernel's capture time of the TCP
segment that carried the UPDATE's first byte, converted to `time.monotonic()` seconds (the wall↔monotonic offset is
sampled when the capture starts), so it compares directly with bgpadv's own monotonic stage times on the same machine.

Limits: no ADD-PATH (path identifiers) decoding; a stream whose capture starts mid-message resynchronises on the next
BGP marker; a lost segment (gap in sequence numbers) drops the stream's partial message and resynchronises likewise.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import shutil
import signal
import struct
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

import dpkt

log = logging.getLogger(__name__)

MARKER = b"\xff" * 16
HEADER = 19
UPDATE = 2
AFI_IPV4, AFI_IPV6, SAFI_UNICAST = 1, 2, 1
# What dpkt raises on short or malformed bytes.
DECODE_ERRORS = (dpkt.Error, struct.error, IndexError, ValueError)


@dataclass(frozen=True, slots=True)
class CapturedUpdate:
    """One BGP UPDATE seen on the wire."""

    at: float  # time.monotonic() seconds: capture time of the segment holding the UPDATE's first byte
    wall: float  # the same instant in epoch seconds, as the kernel stamped it
    src: str  # "address:port" of the sender
    dst: str
    announced: tuple[str, ...] = ()
    withdrawn: tuple[str, ...] = ()
    next_hops: tuple[str, ...] = ()

    @property
    def end_of_rib(self) -> bool:
        return not self.announced and not self.withdrawn


# --- BGP decoding (pure) ------------------------------------------------------------------------------------------


def _routes(routes: Iterable[dpkt.Packet], afi: int) -> list[str]:
    """dpkt's RouteIPV4/RouteIPV6 (prefix bytes zero-padded to the address width) as canonical "address/len"."""
    width = 32 if afi == AFI_IPV4 else 128
    out = []
    for route in routes:
        if route.len > width:
            raise ValueError(f"prefix length {route.len} > {width}")
        out.append(f"{ipaddress.ip_address(route.prefix)}/{route.len}")
    return out


def _ipv4_nlri(data: bytes) -> list[dpkt.Packet]:
    """IPv4 NLRI bytes as plain RouteIPV4s."""
    routes = []
    while data:
        route = dpkt.bgp.RouteIPV4(data)
        if len(route) > len(data):
            raise ValueError(f"truncated NLRI: /{route.len} in {len(data)} bytes")
        routes.append(route)
        data = data[len(route) :]
    return routes


def _next_hops(raw: bytes) -> list[str]:
    """An MP_REACH next-hop field: one IPv4 or IPv6 address, or an IPv6 global + link-local pair."""
    if len(raw) in (4, 16):
        return [str(ipaddress.ip_address(raw))]
    if len(raw) == 32:
        return [str(ipaddress.IPv6Address(raw[:16])), str(ipaddress.IPv6Address(raw[16:]))]
    return []


def decode_update(body: bytes) -> tuple[list[str], list[str], list[str]]:
    """(announced, withdrawn, next hops) of one UPDATE message body (the bytes after the 19-byte header)."""
    # dpkt reads the UPDATE's own IPv4 NLRI as ADD-PATH routes whenever their byte count is a multiple of 9 (it cannot
    # know what the session negotiated; the lab never negotiates ADD-PATH): hand it the message without them, and
    # read them as plain routes.
    (wlen,) = struct.unpack_from("!H", body, 0)
    (alen,) = struct.unpack_from("!H", body, 2 + wlen)
    upd = dpkt.bgp.BGP.Update(body[: 4 + wlen + alen])
    announced = _routes(_ipv4_nlri(body[4 + wlen + alen :]), AFI_IPV4)
    withdrawn = _routes(upd.withdrawn, AFI_IPV4)
    next_hops: list[str] = []
    for attr in upd.attributes:
        if attr.type == dpkt.bgp.NEXT_HOP and attr.len == 4:
            next_hops.append(str(ipaddress.IPv4Address(attr.next_hop.ip)))
        elif attr.type == dpkt.bgp.MP_REACH_NLRI:
            mp = attr.mp_reach_nlri
            if mp.safi == SAFI_UNICAST and mp.afi in (AFI_IPV4, AFI_IPV6):
                next_hops += _next_hops(mp.next_hop)
                announced += _routes(mp.announced, mp.afi)
        elif attr.type == dpkt.bgp.MP_UNREACH_NLRI:
            mp = attr.mp_unreach_nlri
            if mp.safi == SAFI_UNICAST and mp.afi in (AFI_IPV4, AFI_IPV6):
                withdrawn += _routes(mp.withdrawn, mp.afi)
    return announced, withdrawn, next_hops


@dataclass(slots=True)
class _Stream:
    """One direction of a TCP connection: reassembled bytes waiting to form BGP messages."""

    next_seq: int | None = None
    aligned: bool = False  # True when the buffer starts at a BGP message boundary
    buf: bytearray = field(default_factory=bytearray)
    segments: deque[list] = field(default_factory=deque)  # [bytes left in buf, wall time] per segment


class BgpStreamDecoder:
    """Feeds TCP segments in capture order; yields (wall time, message type, body) per complete BGP message."""

    def __init__(self) -> None:
        self._streams: dict[tuple[str, str], _Stream] = {}

    def segment(self, key: tuple[str, str], seq: int, syn: bool, payload: bytes, wall: float):
        st = self._streams.setdefault(key, _Stream())
        if syn:
            st.next_seq, st.aligned = (seq + 1) & 0xFFFFFFFF, True
            st.buf.clear()
            st.segments.clear()
        if not payload:
            return
        if st.next_seq is None:  # joined mid-stream
            st.next_seq = seq
        delta = (seq - st.next_seq) & 0xFFFFFFFF
        if delta >= 0x80000000:  # starts before what we have: a retransmission, maybe with new bytes at its end
            skip = (st.next_seq - seq) & 0xFFFFFFFF
            if skip >= len(payload):
                return
            payload = payload[skip:]
        elif delta:  # a gap: bytes were lost to the capture; resynchronise on the next marker
            st.buf.clear()
            st.segments.clear()
            st.aligned = False
            st.next_seq = seq
        st.next_seq = (st.next_seq + len(payload)) & 0xFFFFFFFF
        st.buf += payload
        st.segments.append([len(payload), wall])
        yield from self._messages(st)

    @staticmethod
    def _consume(st: _Stream, n: int) -> None:
        del st.buf[:n]
        while n and st.segments:
            seg = st.segments[0]
            take = min(n, seg[0])
            seg[0] -= take
            n -= take
            if seg[0] == 0:
                st.segments.popleft()

    def _messages(self, st: _Stream):
        while True:
            if not st.aligned:
                at = st.buf.find(MARKER)
                if at < 0:
                    keep = len(st.buf) - 15
                    if keep > 0:
                        self._consume(st, keep)
                    return
                self._consume(st, at)
                if len(st.buf) < HEADER:
                    return
                length, mtype = struct.unpack_from("!HB", st.buf, 16)
                if not (HEADER <= length <= 65535 and 1 <= mtype <= 5):
                    self._consume(st, 1)
                    continue
                st.aligned = True
            if len(st.buf) < HEADER:
                return
            if st.buf[:16] != MARKER:
                st.aligned = False
                continue
            length, mtype = struct.unpack_from("!HB", st.buf, 16)
            if length < HEADER:
                st.aligned = False
                self._consume(st, 1)
                continue
            if len(st.buf) < length:
                return
            wall = st.segments[0][1]
            body = bytes(st.buf[HEADER:length])
            self._consume(st, length)
            yield wall, mtype, body


# --- pcap stream parsing ------------------------------------------------------------------------------------------


def read_pcap(stream: IO[bytes]) -> Iterator[tuple[float, int, bytes]]:
    """(epoch seconds, link type, frame bytes) for each record of a pcap stream (micro or nanosecond, either order)."""
    try:
        reader = dpkt.pcap.Reader(stream)
    except dpkt.NeedData:  # empty, or the stream ended inside the file header
        return
    linktype = reader.datalink() & 0xFFFF
    try:
        for ts, frame in reader:
            yield float(ts), linktype, frame  # ts is a Decimal for nanosecond captures
    except dpkt.NeedData:  # the stream ended inside a record header (tcpdump stopped)
        return


_LINK_LAYERS: dict[int, Callable[[bytes], dpkt.Packet]] = {
    1: dpkt.ethernet.Ethernet,  # VLAN and QinQ tags are dpkt's to strip
    113: dpkt.sll.SLL,  # Linux cooked
    276: dpkt.sll2.SLL2,  # Linux cooked v2
}


def tcp_segment(linktype: int, frame: bytes) -> tuple[str, int, str, int, int, int, bytes] | None:
    """(src, sport, dst, dport, seq, flags, payload) of a TCP/IP frame; None for anything else."""
    if linktype in _LINK_LAYERS:
        ip = _LINK_LAYERS[linktype](frame).data
    elif linktype in (12, 101) and frame:  # raw IP
        ip = dpkt.ip.IP(frame) if frame[0] >> 4 == 4 else dpkt.ip6.IP6(frame)
    else:
        return None
    if not isinstance(ip, dpkt.ip.IP | dpkt.ip6.IP6) or not isinstance(ip.data, dpkt.tcp.TCP):
        return None
    tcp = ip.data
    src, dst = str(ipaddress.ip_address(ip.src)), str(ipaddress.ip_address(ip.dst))
    return src, tcp.sport, dst, tcp.dport, tcp.seq, tcp.flags, bytes(tcp.data)


def decode_pcap(stream: IO[bytes], offset: float = 0.0) -> Iterator[CapturedUpdate]:
    """Every BGP UPDATE in a pcap stream; `offset` = wall - monotonic, to stamp `at`."""
    decoder = BgpStreamDecoder()
    for wall, linktype, frame in read_pcap(stream):
        try:
            seg = tcp_segment(linktype, frame)
        except DECODE_ERRORS:
            continue
        if seg is None:
            continue
        src, sport, dst, dport, seq, flags, payload = seg
        a, b = _endpoint(src, sport), _endpoint(dst, dport)
        for msg_wall, mtype, body in decoder.segment((a, b), seq, bool(flags & 0x02), payload, wall):
            if mtype != UPDATE:
                continue
            try:
                announced, withdrawn, hops = decode_update(body)
            except DECODE_ERRORS as e:
                log.warning("undecodable UPDATE from %s: %s", a, e)
                continue
            yield CapturedUpdate(msg_wall - offset, msg_wall, a, b, tuple(announced), tuple(withdrawn), tuple(hops))


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def clock_offset(samples: int = 7) -> float:
    """wall - monotonic, from the tightest of a few paired readings."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        m1 = time.monotonic()
        w = time.time()
        m2 = time.monotonic()
        if best is None or m2 - m1 < best[0]:
            best = (m2 - m1, w - (m1 + m2) / 2)
    assert best is not None
    return best[1]


# --- the capture process --------------------------------------------------------------------------------------------


class UpdateCapture:
    """tcpdump in `netns` on `interface`, decoded live. Use as a context manager; see the module docstring.

    `src`: keep only UPDATEs sent from this address (e.g. the speaker's), None for both directions.
    """

    def __init__(
        self, netns: str, interface: str, *, src: str | None = None, bpf: str = "tcp port 179", startup: float = 10.0
    ):
        self.netns = netns
        self.interface = interface
        self.src = src
        self.bpf = bpf
        self.startup = startup
        self.offset = 0.0
        self.proc: subprocess.Popen[bytes] | None = None
        self.errors: list[str] = []
        self._updates: list[CapturedUpdate] = []
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._done = False

    def __enter__(self) -> UpdateCapture:
        tcpdump = shutil.which("tcpdump") or "/usr/bin/tcpdump"
        argv = ["ip", "netns", "exec", self.netns, tcpdump, "-i", self.interface, "-U", "-w", "-", "-n", "-p"]
        argv += ["-s", "0", "-B", "8192", "--immediate-mode", "--time-stamp-precision=nano", self.bpf]
        self.offset = clock_offset()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ready = threading.Event()
        self._threads = [
            threading.Thread(target=self._read_stderr, args=(ready,), name="capture-stderr", daemon=True),
            threading.Thread(target=self._read_stdout, name="capture-stdout", daemon=True),
        ]
        for t in self._threads:
            t.start()
        if not ready.wait(self.startup) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"tcpdump did not start in {self.netns} on {self.interface}: {self.errors}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop tcpdump (by PID) and wait for the decoder to finish what was captured."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        for t in self._threads:
            t.join(5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def _read_stderr(self, ready: threading.Event) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").strip()
            if "listening on" in line:
                ready.set()
            elif line:
                self.errors.append(line)

    def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            for upd in decode_pcap(self.proc.stdout, self.offset):
                if self.src is not None and upd.src.rsplit(":", 1)[0].strip("[]") != self.src:
                    continue
                with self._cond:
                    self._updates.append(upd)
                    self._cond.notify_all()
        except (OSError, ValueError) as e:
            self.errors.append(f"decoder: {e}")
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    # --- results ------------------------------------------------------------------------------------------------

    def updates(self) -> list[CapturedUpdate]:
        with self._cond:
            return list(self._updates)

    def first_seen(
        self, prefixes: Iterable[str], *, op: str | None = None, since: float | None = None
    ) -> dict[str, float]:
        """For each prefix, the earliest capture time (monotonic) at or after `since` (op: announce|withdraw|None)."""
        wanted = {_canonical(p) for p in prefixes}
        found: dict[str, float] = {}
        for upd in self.updates():
            if since is not None and upd.at < since:
                continue
            for kind, items in (("announce", upd.announced), ("withdraw", upd.withdrawn)):
                if op is not None and op != kind:
                    continue
                for p in items:
                    if p in wanted and p not in found:
                        found[p] = upd.at
        return found

    def wait_for(
        self, prefixes: Iterable[str], timeout: float, *, op: str | None = None, since: float | None = None
    ) -> dict[str, float]:
        """Block until every prefix was seen (see `first_seen`); TimeoutError naming the missing ones otherwise."""
        wanted = [_canonical(p) for p in prefixes]
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = self.first_seen(wanted, op=op, since=since)
                if len(found) == len(set(wanted)):
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._done:
                    missing = sorted(set(wanted) - found.keys())
                    raise TimeoutError(f"not captured within {timeout}s: {missing[:10]} ({len(missing)} missing)")
                self._cond.wait(min(remaining, 0.5))


def _canonical(prefix: str) -> str:
    try:
        return str(ipaddress.ip_network(prefix, strict=False))
    except ValueError:
        return prefix
