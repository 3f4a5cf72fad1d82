"""The capture's BGP decoder on hand-built wire bytes (RFC 4271 UPDATE layout, RFC 4760 MP_REACH/MP_UNREACH).

Scope: prefixes and next hops of IPv4 and IPv6 UPDATEs, End-of-RIB, TCP reassembly when messages are split at any
byte, retransmitted segments, a capture that joins mid-stream or loses a segment (resynchronisation on the marker),
the time of an UPDATE being that of its first segment, and a whole pcap stream over Ethernet (802.1Q too), Linux
cooked capture, IPv4 and IPv6 transport, cut short. The BGP bytes are built by hand from the RFCs, independently of
dpkt (which the decoder uses); the pcap records and link/IP/TCP frames of the link-layer tests are built with dpkt.
"""

from __future__ import annotations

import io
import ipaddress
import struct

import dpkt
import pytest

from bgpadv_lab.capture import BgpStreamDecoder, decode_pcap, decode_update

MARKER = b"\xff" * 16


def nlri(*prefixes: str) -> bytes:
    out = b""
    for p in prefixes:
        net = ipaddress.ip_network(p)
        out += bytes([net.prefixlen]) + net.network_address.packed[: (net.prefixlen + 7) // 8]
    return out


def attr(code: int, value: bytes, flags: int = 0x40) -> bytes:
    if len(value) > 255:
        return bytes([flags | 0x10, code]) + struct.pack("!H", len(value)) + value
    return bytes([flags, code, len(value)]) + value


ORIGIN_IGP = attr(1, b"\x00")
AS_PATH = attr(2, b"\x02\x01" + struct.pack("!I", 64513))


def update(withdrawn: bytes = b"", attrs: bytes = b"", announced: bytes = b"") -> bytes:
    body = struct.pack("!H", len(withdrawn)) + withdrawn + struct.pack("!H", len(attrs)) + attrs + announced
    return MARKER + struct.pack("!HB", 19 + len(body), 2) + body


def keepalive() -> bytes:
    return MARKER + struct.pack("!HB", 19, 4)


V4_ANNOUNCE = update(
    attrs=ORIGIN_IGP + AS_PATH + attr(3, ipaddress.IPv4Address("10.0.0.11").packed),
    announced=nlri("192.168.100.205/32", "10.77.0.0/16", "0.0.0.0/0"),
)
V4_WITHDRAW = update(withdrawn=nlri("192.168.100.205/32"))
V6_REACH = update(
    attrs=ORIGIN_IGP
    + AS_PATH
    + attr(
        14,
        struct.pack("!HBB", 2, 1, 32)
        + ipaddress.IPv6Address("fd00::11").packed
        + ipaddress.IPv6Address("fe80::1").packed
        + b"\x00"
        + nlri("fd10:100::cd/128", "fd10:100::/64"),
        flags=0x80,
    )
)
V6_UNREACH = update(attrs=attr(15, struct.pack("!HB", 2, 1) + nlri("fd10:100::cd/128"), flags=0x80))
END_OF_RIB = update()


@pytest.mark.parametrize(
    ("message", "announced", "withdrawn", "next_hops"),
    [
        pytest.param(
            V4_ANNOUNCE,
            ["192.168.100.205/32", "10.77.0.0/16", "0.0.0.0/0"],
            [],
            ["10.0.0.11"],
            id="ipv4-nlri",
        ),
        pytest.param(V4_WITHDRAW, [], ["192.168.100.205/32"], [], id="ipv4-withdrawn"),
        pytest.param(V6_REACH, ["fd10:100::cd/128", "fd10:100::/64"], [], ["fd00::11", "fe80::1"], id="ipv6-mp-reach"),
        pytest.param(V6_UNREACH, [], ["fd10:100::cd/128"], [], id="ipv6-mp-unreach"),
        pytest.param(END_OF_RIB, [], [], [], id="end-of-rib"),
    ],
)
def test_decode_update(message: bytes, announced: list[str], withdrawn: list[str], next_hops: list[str]) -> None:
    assert decode_update(message[19:]) == (announced, withdrawn, next_hops)


def test_extended_length_attributes_are_skipped_correctly() -> None:
    big = attr(8, b"\x00\x01\x00\x02" * 100)  # 400 bytes of communities: extended length
    msg = update(attrs=ORIGIN_IGP + big + attr(3, bytes([10, 0, 0, 12])), announced=nlri("10.1.0.1/32"))
    assert decode_update(msg[19:]) == (["10.1.0.1/32"], [], ["10.0.0.12"])


def run(decoder: BgpStreamDecoder, segments: list[tuple[int, bytes, float]], syn_seq: int | None = 1000):
    key = ("10.0.0.11:179", "10.0.0.1:40000")
    out = []
    if syn_seq is not None:
        out += list(decoder.segment(key, syn_seq, True, b"", 0.0))
    for seq, payload, wall in segments:
        out += [
            (w, t, decode_update(b)[0] if t == 2 else None)
            for w, t, b in decoder.segment(key, seq, False, payload, wall)
        ]
    return out


STREAM = keepalive() + V4_ANNOUNCE + V4_WITHDRAW


@pytest.mark.parametrize("cut", range(1, len(STREAM)))
def test_messages_split_at_any_byte_are_reassembled(cut: int) -> None:
    got = run(BgpStreamDecoder(), [(1001, STREAM[:cut], 1.0), (1001 + cut, STREAM[cut:], 2.0)])
    assert [t for _, t, _ in got] == [4, 2, 2]
    assert got[1][2] == ["192.168.100.205/32", "10.77.0.0/16", "0.0.0.0/0"]
    # An UPDATE is stamped with the segment carrying its first byte.
    start = len(keepalive())
    assert got[1][0] == (1.0 if cut > start else 2.0)


def test_retransmitted_segments_are_not_decoded_twice() -> None:
    half = len(STREAM) // 2
    got = run(
        BgpStreamDecoder(),
        [
            (1001, STREAM[:half], 1.0),
            (1001, STREAM[:half], 1.1),
            (1001, STREAM, 1.2),
            (1001 + half, STREAM[half:], 1.3),
        ],
    )
    assert [t for _, t, _ in got] == [4, 2, 2]


def test_a_capture_joining_mid_stream_resynchronises_on_the_marker() -> None:
    tail = V4_ANNOUNCE[7:] + V4_WITHDRAW  # the first message is cut: only the second can be decoded
    got = run(BgpStreamDecoder(), [(5000, tail, 1.0)], syn_seq=None)
    assert [(t, a) for _, t, a in got] == [(2, [])]


def test_a_lost_segment_drops_the_partial_message_and_resynchronises() -> None:
    first = V4_ANNOUNCE[:30]
    # bytes 30..34 of V4_ANNOUNCE never reach the capture; the next segment starts inside the message
    rest = V4_ANNOUNCE[30 + 5 :] + V4_WITHDRAW
    got = run(BgpStreamDecoder(), [(1001, first, 1.0), (1001 + 30 + 5, rest, 2.0)])
    assert [(t, a) for _, t, a in got] == [(2, [])]  # only the withdrawal survives


def pcap(frames: list[tuple[float, bytes]]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)  # nanosecond pcap, Ethernet
    for ts, frame in frames:
        sec = int(ts)
        out += struct.pack("<IIII", sec, round((ts - sec) * 1e9), len(frame), len(frame)) + frame
    return out


def ether_ipv4_tcp(src: str, dst: str, sport: int, dport: int, seq: int, flags: int, payload: bytes) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + len(tcp),
        0,
        0,
        64,
        6,
        0,
        ipaddress.IPv4Address(src).packed,
        ipaddress.IPv4Address(dst).packed,
    )
    frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp
    return frame + b"\x00" * max(0, 60 - len(frame))  # Ethernet padding must not be read as payload


def test_decode_pcap_stream_with_offset_to_monotonic() -> None:
    frames = [
        (1_700_000_000.5, ether_ipv4_tcp("10.0.0.11", "10.0.0.1", 40000, 179, 999, 0x02, b"")),
        (1_700_000_001.25, ether_ipv4_tcp("10.0.0.11", "10.0.0.1", 40000, 179, 1000, 0x18, keepalive())),
        (1_700_000_002.0, ether_ipv4_tcp("10.0.0.11", "10.0.0.1", 40000, 179, 1019, 0x18, V4_ANNOUNCE)),
        (1_700_000_003.0, ether_ipv4_tcp("10.0.0.1", "10.0.0.11", 179, 40000, 7, 0x18, V4_WITHDRAW)),
    ]
    updates = list(decode_pcap(io.BytesIO(pcap(frames)), offset=1_699_999_000.0))
    assert [(u.src, u.dst) for u in updates] == [
        ("10.0.0.11:40000", "10.0.0.1:179"),
        ("10.0.0.1:179", "10.0.0.11:40000"),
    ]
    assert updates[0].at == pytest.approx(1002.0) and updates[0].wall == pytest.approx(1_700_000_002.0)
    assert updates[0].announced == ("192.168.100.205/32", "10.77.0.0/16", "0.0.0.0/0")
    assert updates[1].withdrawn == ("192.168.100.205/32",)


def tcp_frame(linktype: int, src: str, dst: str, seq: int, payload: bytes, *, vlan: int | None = None) -> bytes:
    """One TCP segment 40000 → 179 framed for `linktype` by dpkt's builders (Ethernet, optionally 802.1Q; SLL)."""
    tcp = dpkt.tcp.TCP(sport=40000, dport=179, seq=seq, flags=dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK, data=payload)
    if ":" in src:
        ip: dpkt.Packet = dpkt.ip6.IP6(
            src=ipaddress.IPv6Address(src).packed, dst=ipaddress.IPv6Address(dst).packed, nxt=6, hlim=64, data=tcp
        )
        ip.plen = len(tcp)
        ethertype = dpkt.ethernet.ETH_TYPE_IP6
    else:
        ip = dpkt.ip.IP(src=ipaddress.IPv4Address(src).packed, dst=ipaddress.IPv4Address(dst).packed, p=6, data=tcp)
        ethertype = dpkt.ethernet.ETH_TYPE_IP
    if linktype == 113:
        return bytes(dpkt.sll.SLL(type=0, hrd=1, hlen=6, hdr=b"\x02" * 6 + b"\x00\x00", ethtype=ethertype, data=ip))
    if vlan is not None:
        tag = struct.pack("!HH", vlan, ethertype)
        return b"\x02" * 6 + b"\x04" * 6 + struct.pack("!H", dpkt.ethernet.ETH_TYPE_8021Q) + tag + bytes(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x04" * 6, dst=b"\x02" * 6, type=ethertype, data=ip))


def pcap_of(linktype: int, frames: list[tuple[float, bytes]]) -> io.BytesIO:
    out = io.BytesIO()
    writer = dpkt.pcap.Writer(out, linktype=linktype, nano=True)
    for ts, frame in frames:
        writer.writepkt(frame, ts=ts)
    out.seek(0)
    return out


@pytest.mark.parametrize(
    ("linktype", "vlan", "src", "dst"),
    [
        pytest.param(113, None, "10.0.0.11", "10.0.0.1", id="linux-cooked-ipv4"),
        pytest.param(1, 100, "10.0.0.11", "10.0.0.1", id="ethernet-802.1q-ipv4"),
        pytest.param(1, None, "fd00::11", "fd00::1", id="ethernet-ipv6-transport"),
    ],
)
def test_updates_are_decoded_from_every_link_layer_and_address_family_the_lab_captures(
    linktype: int, vlan: int | None, src: str, dst: str
) -> None:
    frames = [
        (1_700_000_001.0, tcp_frame(linktype, src, dst, 1000, keepalive(), vlan=vlan)),
        (1_700_000_002.0, tcp_frame(linktype, src, dst, 1019, V6_REACH, vlan=vlan)),
    ]
    (update,) = decode_pcap(pcap_of(linktype, frames), offset=1_699_999_000.0)
    sender = f"[{src}]:40000" if ":" in src else f"{src}:40000"
    assert (update.src, update.at, update.announced, update.next_hops) == (
        sender,
        pytest.approx(1002.0),
        ("fd10:100::cd/128", "fd10:100::/64"),
        ("fd00::11", "fe80::1"),
    )


def test_a_pcap_stream_cut_inside_a_record_yields_what_came_before() -> None:
    whole = pcap_of(
        1, [(1_700_000_002.0, ether_ipv4_tcp("10.0.0.11", "10.0.0.1", 40000, 179, 1000, 0x18, V4_WITHDRAW))]
    )
    data = whole.getvalue()
    cut = data + data[24:30]  # a second record header that tcpdump never finished writing
    assert [u.withdrawn for u in decode_pcap(io.BytesIO(cut))] == [("192.168.100.205/32",)]
    assert list(decode_pcap(io.BytesIO(b""))) == []
