"""The one form of an IP prefix and of an IP address, from the decoder to the wire and back from ExaBGP's echo.

`Prefix` and `Address` are immutable values of plain integers: `version` (4 or 6), `value` (the integer address)
and, for a prefix, `length`. Each carries its `key`, the tuple `(version, value, length)` computed once, which is what
equality, hashing and ordering use, so a prefix is a cheap dictionary key and sorts by family, then address, then
length. Text is parsed at the edges (`parse`) and rendered canonically (`str`: dotted quad, RFC 5952 IPv6), so a
string from the cluster never travels further than the decoder.

The parsers are strict, as a route must be: `Prefix.parse` refuses host bits set (`strict=False` masks them), and both
refuse anything that is not an IPv4 dotted quad or an IPv6 address in text form (no leading zeros in IPv4 parts, no
zone index, no integers). `ValueError` says why. Nothing here needs netaddr: only the configuration reads prefixes
with it, and holds these values.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Final

BITS: Final = {4: 32, 6: 128}
_ALL = {4: (1 << 32) - 1, 6: (1 << 128) - 1}
_FAMILY = {4: socket.AF_INET, 6: socket.AF_INET6}


def _address_text(version: int, value: int) -> str:
    return socket.inet_ntop(_FAMILY[version], value.to_bytes(BITS[version] // 8, "big"))


def _parse_address(text: str) -> tuple[int, int]:
    if not isinstance(text, str):
        raise ValueError(f"not an IP address: {text!r}")
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"not an IP address: {text!r}") from None
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.scope_id is not None:
        raise ValueError(f"an IP address with a zone index: {text!r}")
    return parsed.version, int(parsed)


class Address:
    """One IP address: `version` 4 or 6, `value` the integer. Ordered by (version, value)."""

    __slots__ = ("_hash", "key", "value", "version")

    version: int
    value: int
    key: tuple[int, int]

    def __init__(self, version: int, value: int) -> None:
        if version not in BITS or not 0 <= value <= _ALL[version]:
            raise ValueError(f"not an IPv{version} address value: {value!r}")
        self.version = version
        self.value = value
        self.key = (version, value)
        self._hash = hash(self.key)

    @classmethod
    def of(cls, version: int, value: int) -> Address:
        """An address from values already known to be valid (a parser's output, another address's fields): no
        validation, for hot paths."""
        a = object.__new__(cls)
        a.version = version
        a.value = value
        a.key = key = (version, value)
        a._hash = hash(key)
        return a

    @classmethod
    def parse(cls, text: str) -> Address:
        """`10.0.0.1`, `fd00::1`; ValueError otherwise."""
        return cls(*_parse_address(text))

    @property
    def bits(self) -> int:
        return BITS[self.version]

    def prefix(self) -> Prefix:
        """The host prefix of this address (/32 or /128)."""
        return Prefix.host(self.version, self.value)

    def _within(self, ranges: dict[int, tuple[int, int]]) -> bool:
        """In the range (network value, length) `ranges` gives for this address's version; False when none."""
        span = ranges.get(self.version)
        if span is None:
            return False
        value, length = span
        shift = BITS[self.version] - length
        return self.value >> shift == value >> shift

    def is_loopback(self) -> bool:
        """In 127.0.0.0/8, or ::1."""
        return self._within({4: (0x7F000000, 8), 6: (1, 128)})

    def is_link_local(self) -> bool:
        """In 169.254.0.0/16 or fe80::/10."""
        return self._within({4: (0xA9FE0000, 16), 6: (0xFE80 << 112, 10)})

    def is_multicast(self) -> bool:
        """In 224.0.0.0/4 or ff00::/8."""
        return self._within({4: (0xE0000000, 4), 6: (0xFF << 120, 8)})

    def is_ipv4_mapped(self) -> bool:
        """An IPv4-mapped IPv6 address, ::ffff:0:0/96 (RFC 4291 section 2.5.5.2)."""
        return self._within({6: (0xFFFF << 32, 96)})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Address) and self.key == other.key

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Address) -> bool:
        return self.key < other.key

    def __le__(self, other: Address) -> bool:
        return self.key <= other.key

    def __str__(self) -> str:
        return _address_text(self.version, self.value)

    def __repr__(self) -> str:
        return f"Address('{self}')"

    def __reduce__(self) -> tuple[type[Address], tuple[int, int]]:
        return (Address, (self.version, self.value))


class Prefix:
    """One IP prefix: `version` 4 or 6, `value` the network address as an integer (host bits zero), `length`.

    Ordered by `key` = (version, value, length); `first`/`last` are the integer bounds; `in` tests containment of an
    `Address` or a `Prefix`."""

    __slots__ = ("_hash", "key", "length", "value", "version")

    version: int
    value: int
    length: int
    key: tuple[int, int, int]

    def __init__(self, version: int, value: int, length: int) -> None:
        bits = BITS.get(version)
        if bits is None or not 0 <= length <= bits or not 0 <= value <= _ALL[version]:
            raise ValueError(f"not an IPv{version} prefix: {value!r}/{length!r}")
        if value & ((1 << (bits - length)) - 1):
            raise ValueError(f"host bits set in {_address_text(version, value)}/{length}")
        self.version = version
        self.value = value
        self.length = length
        self.key = (version, value, length)
        self._hash = hash(self.key)

    @classmethod
    def host(cls, version: int, value: int) -> Prefix:
        """The /32 or /128 of one address value: the planner's hot path (no validation beyond the slots)."""
        p = object.__new__(cls)
        length = 32 if version == 4 else 128
        p.version = version
        p.value = value
        p.length = length
        p.key = key = (version, value, length)
        p._hash = hash(key)
        return p

    @classmethod
    def from_key(cls, key: tuple[int, int, int]) -> Prefix:
        """The prefix of a `key` (version, value, length), validated as the constructor does."""
        return cls(*key)

    @classmethod
    def parse(cls, text: str, strict: bool = True) -> Prefix:
        """`10.0.0.0/24`, `fd00::/64`, or a bare address (a host prefix). Host bits set: ValueError when `strict`,
        masked otherwise."""
        if not isinstance(text, str):
            raise ValueError(f"not an IP prefix: {text!r}")
        address, slash, length_text = text.partition("/")
        version, value = _parse_address(address)
        bits = BITS[version]
        if not slash:
            length = bits
        elif length_text.isascii() and length_text.isdigit() and len(length_text) <= 3:
            length = int(length_text)
            if length > bits:
                raise ValueError(f"prefix length {length} over {bits}: {text!r}")
        else:
            raise ValueError(f"not a prefix length: {text!r}")
        host_mask = (1 << (bits - length)) - 1
        if value & host_mask:
            if strict:
                raise ValueError(f"host bits set in {text!r}")
            value &= ~host_mask
        return cls(version, value, length)

    @property
    def bits(self) -> int:
        return BITS[self.version]

    @property
    def first(self) -> int:
        return self.value

    @property
    def last(self) -> int:
        return self.value | ((1 << (BITS[self.version] - self.length)) - 1)

    @property
    def size(self) -> int:
        return 1 << (BITS[self.version] - self.length)

    @property
    def is_host(self) -> bool:
        return self.length == BITS[self.version]

    @property
    def network_address(self) -> Address:
        return Address(self.version, self.value)

    def __contains__(self, item: Address | Prefix) -> bool:
        if item.version != self.version:
            return False
        if isinstance(item, Prefix):
            return item.length >= self.length and self.value <= item.value and item.last <= self.last
        return self.value <= item.value <= self.last

    def overlaps(self, other: Prefix) -> bool:
        return self.version == other.version and self.value <= other.last and other.value <= self.last

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Prefix) and self.key == other.key

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Prefix) -> bool:
        return self.key < other.key

    def __le__(self, other: Prefix) -> bool:
        return self.key <= other.key

    def __str__(self) -> str:
        return f"{_address_text(self.version, self.value)}/{self.length}"

    def __repr__(self) -> str:
        return f"Prefix('{self}')"

    def __reduce__(self) -> tuple[type[Prefix], tuple[int, int, int]]:
        return (Prefix, (self.version, self.value, self.length))
