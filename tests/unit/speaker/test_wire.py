"""What bgpadv reads of an UPDATE's bytes (`bgpadv.speaker.wire`): the echo of every UPDATE bgpadv's ExaBGP sends.

Rules: the messages ExaBGP itself packs for an announcement or a withdrawal, IPv4 (NLRI + NEXT_HOP) or IPv6
(MP_REACH_NLRI / MP_UNREACH_NLRI), read back as exactly the prefixes and next hop of the command, however many
messages a bulk command takes; ExaBGP's End-of-RIB markers read as End-of-RIB; an IPv6 next hop with a link-local
address keeps the global one; host bits are masked; and no byte string, cut or corrupted anywhere, raises: what
cannot be read is counted as malformed and dropped, never read as another route.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("exabgp")

from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker.wire import HEADER_BYTES, read_update
from bgpadv_lab.exabgp_packing import Packer

MARKER = b"\xff" * 16


@pytest.fixture(scope="module")
def packer() -> Packer:
    return Packer()


def read_all(messages: list[bytes]) -> tuple[list[tuple[Prefix, Address | None]], list[Prefix], int]:
    announced: list[tuple[Prefix, Address | None]] = []
    withdrawn: list[Prefix] = []
    malformed = 0
    for message in messages:
        read = read_update(message[HEADER_BYTES:])
        announced += read.announced
        withdrawn += read.withdrawn
        malformed += read.malformed
    return announced, withdrawn, malformed


def test_an_ipv4_bulk_announcement_reads_back_as_every_prefix_with_its_next_hop(packer: Packer) -> None:
    hosts = [f"10.64.{i >> 8}.{i & 255}/32" for i in range(1, 14_001)]
    messages = packer.pack(
        f"announce attributes next-hop 10.0.0.11 origin igp community [64512:100] nlri {' '.join(hosts)}"
    )

    announced, withdrawn, malformed = read_all(messages)

    assert len(messages) > 1  # 14,000 /32s fill more than one message, even an extended (65,535-octet) one
    assert sorted(announced) == sorted((Prefix.parse(h), Address.parse("10.0.0.11")) for h in hosts)
    assert withdrawn == [] and malformed == 0


def test_an_ipv6_announcement_reads_from_mp_reach_with_its_next_hop(packer: Packer) -> None:
    messages = packer.pack("announce attributes next-hop fd00::11 nlri fd00:10::5/128 2001:db8::/32 fd00:10::/64")

    announced, withdrawn, malformed = read_all(messages)

    hop = Address.parse("fd00::11")
    assert sorted(announced) == sorted(
        (Prefix.parse(p), hop) for p in ("fd00:10::5/128", "2001:db8::/32", "fd00:10::/64")
    )
    assert withdrawn == [] and malformed == 0


@pytest.mark.parametrize(
    "prefixes",
    [["10.64.0.1/32", "10.64.0.2/32", "10.96.0.0/16"], ["fd00:10::5/128", "fd00:10::6/128", "fd00:20::/48"]],
    ids=["ipv4", "ipv6"],
)
def test_a_withdrawal_reads_back_as_the_withdrawn_prefixes(packer: Packer, prefixes: list[str]) -> None:
    announced, withdrawn, malformed = read_all(packer.pack(f"withdraw attributes nlri {' '.join(prefixes)}"))

    assert announced == [] and malformed == 0
    assert sorted(withdrawn) == sorted(Prefix.parse(p) for p in prefixes)


@pytest.mark.parametrize("version, family", [(4, "ipv4 unicast"), (6, "ipv6 unicast")])
def test_exabgps_end_of_rib_reads_as_end_of_rib(packer: Packer, version: int, family: str) -> None:
    read = read_update(packer.end_of_rib(version)[HEADER_BYTES:])

    assert read.eor == (family,) and read.announced == [] and read.withdrawn == [] and read.malformed == 0


def test_an_ipv6_next_hop_with_a_link_local_address_keeps_the_global_one() -> None:
    global_hop, link_local = bytes.fromhex("fd00" + "00" * 12 + "0011"), bytes.fromhex("fe80" + "00" * 12 + "0001")
    hop = global_hop + link_local
    mp_reach = (
        b"\x00\x02\x01" + bytes([len(hop)]) + hop + b"\x00" + bytes([128]) + bytes.fromhex("fd00" + "00" * 13 + "05")
    )
    body = b"\x00\x00" + attributes(attribute(0x80, 14, mp_reach))

    read = read_update(body)

    assert read.announced == [(Prefix.parse("fd00::5/128"), Address.parse("fd00::11"))] and read.malformed == 0


def test_host_bits_set_on_the_wire_are_masked() -> None:
    body = b"\x00\x00" + attributes(attribute(0x40, 3, bytes([10, 0, 0, 11]))) + bytes([24, 10, 64, 7])

    assert read_update(body).announced == [(Prefix.parse("10.64.7.0/24"), Address.parse("10.0.0.11"))]


def test_a_prefix_longer_than_its_family_drops_the_rest_of_its_field_and_is_counted() -> None:
    body = (
        b"\x00\x00"
        + attributes(attribute(0x40, 3, bytes([10, 0, 0, 11])))
        + bytes([32, 10, 64, 0, 1, 40, 1, 2, 3, 4, 5])
    )

    read = read_update(body)

    assert read.announced == [(Prefix.parse("10.64.0.1/32"), Address.parse("10.0.0.11"))] and read.malformed == 1


def test_ipv4_routes_without_a_next_hop_are_kept_without_one_and_counted() -> None:
    read = read_update(b"\x00\x00\x00\x00" + bytes([32, 10, 64, 0, 1]))

    assert read.announced == [(Prefix.parse("10.64.0.1/32"), None)] and read.malformed == 1


def test_another_family_in_mp_reach_is_counted_not_read() -> None:
    vpn = b"\x00\x01\x80" + bytes([12]) + b"\x00" * 12 + b"\x00" + bytes([88]) + b"\x00" * 11  # IPv4 MPLS VPN
    read = read_update(b"\x00\x00" + attributes(attribute(0x80, 14, vpn)))

    assert read.announced == [] and read.malformed == 1


def test_every_cut_of_a_real_message_reads_without_raising_and_never_invents_a_route(packer: Packer) -> None:
    [message] = packer.pack("announce attributes next-hop 10.0.0.11 nlri 10.64.0.1/32 10.64.0.2/32 10.64.0.3/32")
    body = message[HEADER_BYTES:]
    whole = {p for p, _ in read_update(body).announced}

    for cut in range(len(body)):
        read = read_update(body[:cut])
        assert {p for p, _ in read.announced} <= whole
        assert read.withdrawn == []


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_read_without_raising(data: bytes) -> None:
    read = read_update(data)

    assert all(isinstance(p, Prefix) for p, _ in read.announced) and read.malformed >= 0


UNICAST_V4 = st.integers(0, 2**32 - 1).filter(lambda v: not 224 <= v >> 24 < 240)
"""An IPv4 address outside 224.0.0.0/4: ExaBGP files a prefix there under the multicast SAFI (never sent here: the
guard refuses special-purpose space)."""


@settings(max_examples=40, deadline=None)
@given(
    st.sets(st.tuples(UNICAST_V4, st.integers(8, 32)), min_size=1, max_size=300),
)
def test_any_ipv4_prefixes_exabgp_packs_read_back_as_themselves(packer: Packer, nets: set[tuple[int, int]]) -> None:
    prefixes = {Prefix(4, value & ~((1 << (32 - length)) - 1) & 0xFFFFFFFF, length) for value, length in nets}
    command = f"announce attributes next-hop 10.0.0.11 nlri {' '.join(str(p) for p in prefixes)}"

    announced, _, malformed = read_all(packer.pack(command))

    assert {p for p, _ in announced} == prefixes and len(announced) == len(prefixes) and malformed == 0


def attribute(flags: int, code: int, value: bytes) -> bytes:
    return bytes([flags, code, len(value)]) + value


def attributes(*encoded: bytes) -> bytes:
    joined = b"".join(encoded)
    return len(joined).to_bytes(2, "big") + joined
