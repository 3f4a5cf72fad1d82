"""The one prefix and address value type (bgpadv.core.prefix): parsing, canonical text, order, containment.

Scope: what every layer relies on — a prefix parsed from the cluster's text equals the one built from integers,
renders canonically for ExaBGP, hashes and orders by (family, address, length), and refuses what is not a prefix.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from netaddr import IPAddress, IPNetwork

from bgpadv.core.prefix import Address, Prefix


@pytest.mark.parametrize(
    ("text", "canonical", "version", "length"),
    [
        pytest.param("192.168.100.10/32", "192.168.100.10/32", 4, 32, id="ipv4-host"),
        pytest.param("192.168.100.0/24", "192.168.100.0/24", 4, 24, id="ipv4-subnet"),
        pytest.param("192.168.100.10", "192.168.100.10/32", 4, 32, id="bare-ipv4-is-a-host"),
        pytest.param("FD00:10:244::/64", "fd00:10:244::/64", 6, 64, id="ipv6-lowercased"),
        pytest.param("fd00:0:0:0:0:0:0:1/128", "fd00::1/128", 6, 128, id="ipv6-compressed"),
        pytest.param("0.0.0.0/0", "0.0.0.0/0", 4, 0, id="default-v4"),
        pytest.param("::/0", "::/0", 6, 0, id="default-v6"),
    ],
)
def test_a_prefix_parses_to_its_canonical_text(text: str, canonical: str, version: int, length: int) -> None:
    p = Prefix.parse(text)
    assert (str(p), p.version, p.length) == (canonical, version, length)
    assert p == Prefix.parse(canonical) and hash(p) == hash(Prefix.parse(canonical))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("192.168.100.10/24", id="host-bits"),
        pytest.param("192.168.100.0/33", id="length-over-32"),
        pytest.param("fd00::/129", id="length-over-128"),
        pytest.param("192.168.100.0/-1", id="negative-length"),
        pytest.param("192.168.100.0/ 24", id="space"),
        pytest.param("192.168.100.0/24 next-hop 203.0.113.9", id="injection"),
        pytest.param("192.168.010.0/24", id="leading-zero"),
        pytest.param("3232261120/24", id="integer"),
        pytest.param("fe80::1%eth0/128", id="zone"),
        pytest.param("", id="empty"),
        pytest.param("10.0.0.0/٢٤", id="non-ascii-digits"),
    ],
)
def test_what_is_not_a_prefix_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Prefix.parse(text)


def test_non_strict_parsing_masks_host_bits() -> None:
    assert str(Prefix.parse("192.168.100.10/24", strict=False)) == "192.168.100.0/24"


def test_non_strings_are_refused() -> None:
    for value in (None, 3232261120, ["10.0.0.0/8"]):
        with pytest.raises(ValueError):
            Prefix.parse(value)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            Address.parse(value)  # type: ignore[arg-type]


def test_order_is_family_then_address_then_length() -> None:
    texts = ["fd00::/64", "10.0.1.0/24", "10.0.0.0/16", "10.0.0.0/24", "::/0", "9.0.0.0/8"]
    assert [str(p) for p in sorted(Prefix.parse(t) for t in texts)] == [
        "9.0.0.0/8",
        "10.0.0.0/16",
        "10.0.0.0/24",
        "10.0.1.0/24",
        "::/0",
        "fd00::/64",
    ]


def test_containment_and_overlap_stay_within_a_family() -> None:
    net = Prefix.parse("10.0.0.0/24")
    assert Prefix.parse("10.0.0.128/25") in net and Prefix.parse("10.0.0.0/23") not in net
    assert Address.parse("10.0.0.255") in net and Address.parse("10.0.1.0") not in net
    assert Address.parse("::a00:1") not in net  # same integer, other family
    assert net.overlaps(Prefix.parse("10.0.0.0/8")) and not net.overlaps(Prefix.parse("10.0.1.0/24"))
    assert (net.first, net.last, net.size) == (0x0A000000, 0x0A0000FF, 256)


def test_an_address_and_its_host_prefix() -> None:
    a = Address.parse("fd00::10")
    assert str(a) == "fd00::10" and str(a.prefix()) == "fd00::10/128" and a.prefix().is_host
    assert a.prefix() == Prefix.host(6, a.value) == Prefix(6, a.value, 128)
    assert Address.parse("::ffff:10.0.0.1").version == 6


def test_values_survive_pickling_and_are_not_equal_across_types() -> None:
    p, a = Prefix.parse("10.0.0.0/8"), Address.parse("10.0.0.0")
    assert pickle.loads(pickle.dumps(p)) == p and pickle.loads(pickle.dumps(a)) == a
    assert p != a and p.network_address == a


@given(st.integers(0, 2**32 - 1), st.integers(0, 32))
def test_ipv4_text_agrees_with_netaddr(value: int, length: int) -> None:
    masked = value & ~((1 << (32 - length)) - 1)
    ours, theirs = Prefix(4, masked, length), IPNetwork((masked, length), 4)
    assert str(ours) == str(theirs) and Prefix.parse(str(theirs)) == ours
    assert str(Address(4, value)) == str(IPAddress(value, 4))


@given(st.integers(0, 2**128 - 1), st.integers(0, 128))
def test_ipv6_text_agrees_with_netaddr(value: int, length: int) -> None:
    masked = value & ~((1 << (128 - length)) - 1)
    ours = Prefix(6, masked, length)
    assert Prefix.parse(str(ours)) == ours
    assert IPNetwork(str(ours)) == IPNetwork((masked, length), 6)
    assert Address.parse(str(Address(6, value))) == Address(6, value)


@pytest.mark.parametrize(
    ("version", "value"),
    [pytest.param(4, 0xC0A86405, id="ipv4"), pytest.param(6, (0xFD10 << 112) | 0xCD, id="ipv6")],
)
def test_the_fast_constructors_build_what_the_validating_ones_build(version: int, value: int) -> None:
    fast, slow = Address.of(version, value), Address(version, value)
    assert (fast, hash(fast), str(fast), fast.key) == (slow, hash(slow), str(slow), slow.key)
    host = Prefix.host(version, value)
    assert Prefix.from_key(host.key) == host and hash(Prefix.from_key(host.key)) == hash(host)


def test_from_key_validates_like_the_constructor() -> None:
    with pytest.raises(ValueError, match="host bits"):
        Prefix.from_key((4, 0x0A000001, 24))


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        pytest.param("127.0.0.1", {"loopback"}, id="ipv4-loopback"),
        pytest.param("127.255.255.255", {"loopback"}, id="ipv4-loopback-last"),
        pytest.param("128.0.0.0", set(), id="after-ipv4-loopback"),
        pytest.param("::1", {"loopback"}, id="ipv6-loopback"),
        pytest.param("::2", set(), id="not-ipv6-loopback"),
        pytest.param("169.254.0.1", {"link-local"}, id="ipv4-link-local"),
        pytest.param("fe80::1", {"link-local"}, id="ipv6-link-local"),
        pytest.param("febf:ffff::1", {"link-local"}, id="ipv6-link-local-last"),
        pytest.param("fec0::1", set(), id="after-ipv6-link-local"),
        pytest.param("224.0.0.5", {"multicast"}, id="ipv4-multicast"),
        pytest.param("239.255.255.255", {"multicast"}, id="ipv4-multicast-last"),
        pytest.param("240.0.0.0", set(), id="after-ipv4-multicast"),
        pytest.param("ff02::1", {"multicast"}, id="ipv6-multicast"),
        pytest.param("::ffff:10.0.0.1", {"ipv4-mapped"}, id="ipv4-mapped"),
        pytest.param("::fffe:10.0.0.1", set(), id="not-ipv4-mapped"),
        pytest.param("10.0.0.1", set(), id="ipv4-unicast"),
        pytest.param("fd00::1", set(), id="ipv6-unique-local"),
    ],
)
def test_an_address_says_which_special_kind_it_is_as_netaddr_does(text: str, kinds: set[str]) -> None:
    """The kinds the configuration refuses for a session (loopback toward a remote peer, link-local, multicast,
    IPv4-mapped): the same answers as netaddr's predicates."""
    ours, theirs = Address.parse(text), IPAddress(text)
    found = {
        kind
        for kind, yes in (
            ("loopback", ours.is_loopback()),
            ("link-local", ours.is_link_local()),
            ("multicast", ours.is_multicast()),
            ("ipv4-mapped", ours.is_ipv4_mapped()),
        )
        if yes
    }
    assert found == kinds
    assert (ours.is_loopback(), ours.is_link_local(), ours.is_multicast(), ours.is_ipv4_mapped()) == (
        theirs.is_loopback(),
        theirs.is_link_local(),
        theirs.is_multicast(),
        theirs.is_ipv4_mapped(),
    )
