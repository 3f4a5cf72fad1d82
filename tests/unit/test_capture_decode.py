"""The capture's BGP decoder on hand-built wire bytes (RFC 4271 UPDATE layout, RFC 4760 MP_REACH/MP_UNREACH).

Scope: prefixes and next hops of IPv4 and IPv6 UPDATEs, End-of-RIB, TCP reassembly when messages are split at any
byte, retransmitted segments, a capture that joins mid-stream or loses a segment (resynchronisation on the marker),
the time of an UPDATE being that of its first segment, and a whole pcap stream.
"""

from __future__ import annotations

import io
import ipaddress
import struct

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
