"""The reading rules for addresses written by the cluster, shared by the decoder, the planner and the guard.

- `parse_address`: the one strict parser of an address as a Kubernetes object writes it (`"10.0.0.1"`,
  `"10.0.0.1/24"`, IPv6 alike): the textual forms `inet_pton` accepts, no whitespace, no zone index, a prefix
  length of plain ASCII digits within the family's range; at most 64 characters. Returns plain integers (parsing with
  `inet_pton` is an order of magnitude cheaper than building an object per check, and a cluster has an address per
  VM); the decoder turns them into `bgpadv.core.prefix` values.
- `SPECIAL_RANGES`: every range that never holds a unicast host address (no network subnet may overlap one, no next
  hop may lie in one, no announced prefix may overlap one).
"""

from __future__ import annotations

import socket

from bgpadv.core.prefix import BITS, Prefix

_BITS = {4: 32, 6: 128}
_FAMILY = {4: socket.AF_INET, 6: socket.AF_INET6}
MAX_ADDRESS_CHARS = 64

# (first, last, what) of every range that never holds a unicast host address, per family
SPECIAL_RANGES: dict[int, tuple[tuple[int, int, str], ...]] = {
    4: (
        (0x00000000, 0x00FFFFFF, "unspecified or 'this network' (0.0.0.0/8)"),
        (0x7F000000, 0x7FFFFFFF, "loopback (127.0.0.0/8)"),
        (0xA9FE0000, 0xA9FEFFFF, "link-local (169.254.0.0/16)"),
        (0xE0000000, 0xEFFFFFFF, "multicast (224.0.0.0/4)"),
        (0xFFFFFFFF, 0xFFFFFFFF, "the limited broadcast address (255.255.255.255)"),
    ),
    6: (
        (0, 0, "the unspecified address (::)"),
        (1, 1, "loopback (::1)"),
        (0xFFFF << 32, (0xFFFF << 32) | 0xFFFFFFFF, "IPv4-mapped IPv6 (::ffff:0:0/96)"),
        (0xFE80 << 112, (0xFEBF << 112) | ((1 << 112) - 1), "link-local (fe80::/10)"),
        (0xFF << 120, (1 << 128) - 1, "multicast (ff00::/8)"),
    ),
}


def special_range_reason(version: int, first: int, last: int) -> str | None:
    """What special range the addresses first..last overlap (a phrase for people), or None."""
    for lo, hi, what in SPECIAL_RANGES[version]:
        if lo <= last and first <= hi:
            return what
    return None


def special_address_reason(version: int, value: int) -> str | None:
    """Why an address is never a unicast host address (a phrase for people), or None when it may be one."""
    return special_range_reason(version, value, value)


def parse_address(value: object) -> tuple[int, int, int | None] | None:
    """Parse `"a.b.c.d"`, `"a.b.c.d/len"`, an IPv6 address or `"v6/len"`.

    Returns (version, integer, prefix length or None), or None when the value is anything else (see the module).
    """
    if not isinstance(value, str) or not value or len(value) > MAX_ADDRESS_CHARS:
        return None
    addr, slash, plen = value.partition("/")
    version = 6 if ":" in addr else 4
    try:
        packed = socket.inet_pton(_FAMILY[version], addr)
    except (OSError, ValueError):
        return None
    prefixlen: int | None = None
    if slash:
        if not (plen.isascii() and plen.isdigit()) or len(plen) > 3:
            return None
        prefixlen = int(plen)
        if prefixlen > _BITS[version]:
            return None
    return version, int.from_bytes(packed, "big"), prefixlen


_inet_pton = socket.inet_pton
_from_bytes = int.from_bytes
_AF4, _AF6 = socket.AF_INET, socket.AF_INET6


def parse_vm_address(text: object) -> tuple[int, int] | None:
    """(version, integer) of a VM address as a claim's `status.ips` or a guest report writes it: bare, or with the
    subnet's prefix length (`"10.100.0.10/24"`, which is no network address: the length is the subnet's). None when
    malformed. The planner's hot path once; kept exactly as strict (no length limit on the text: `inet_pton` refuses
    anything long)."""
    if text.__class__ is not str:
        return None
    addr, slash, plen = text.partition("/")
    try:
        if ":" in addr:
            version, bits = 6, 128
            value = _from_bytes(_inet_pton(_AF6, addr), "big")
        else:
            version, bits = 4, 32
            value = _from_bytes(_inet_pton(_AF4, addr), "big")
    except (OSError, ValueError):
        return None
    if slash and not (plen.isascii() and plen.isdigit() and len(plen) <= 3 and int(plen) <= bits):
        return None
    return version, value


def parse_cidr(value: object) -> tuple[Prefix, bool] | None:
    """A subnet string (`"192.168.100.0/24"`) parsed strictly: the prefix with host bits cleared, and whether the
    text had none set. None when malformed or when it is a bare address (no `/length`)."""
    parsed = parse_address(value)
    if parsed is None:
        return None
    version, integer, length = parsed
    if length is None:
        return None
    host = (1 << (BITS[version] - length)) - 1
    return Prefix(version, integer & ~host, length), integer & host == 0
