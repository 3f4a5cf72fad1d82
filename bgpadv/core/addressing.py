"""The reading rules for addresses written by the cluster, shared by the decoder, the planner and the guard.

- `parse_address`: the one strict parser of an address as a Kubernetes object writes it (`"10.0.0.1"`,
  `"10.0.0.1/24"`, IPv6 alike): the textual forms `inet_pton` accepts, no whitespace, no zone index, a prefix
  length of plain ASCII digits within the family's range; at most 64 characters. Returns plain integers (parsing with
  `inet_pton` is an order of magnitude cheaper than building an object per check, and a cluster has an address per
  VM); the decoder turns them into `bgpadv.core.prefix` values.
- `SPECIAL_PURPOSE`: the IANA special-purpose ranges (RFC 6890 and successors) with bgpadv's decision for a network
  subnet, a VM address and a next hop in each; `SPECIAL_RANGES` (no network subnet and no announced prefix may
  overlap one) and `NEXT_HOP_RANGES` (no next hop may lie in one) are its columns.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass, field

from bgpadv.core.prefix import BITS, Prefix

_BITS = {4: 32, 6: 128}
_FAMILY = {4: socket.AF_INET, 6: socket.AF_INET6}
MAX_ADDRESS_CHARS = 64


@dataclass(frozen=True, slots=True)
class SpecialPurpose:
    """One entry of the IANA special-purpose address registries (RFC 6890 and successors), or of the ranges those
    registries leave to private use, with what bgpadv does when the range meets (a) a network subnet (the subnet
    overlaps it), (b) a VM address or (c) a next hop (the address lies in it): `REFUSE` or `ALLOW`.

    There is no "warn": a warning nobody reads while the fabric carries the route is a wrong route. Each range is
    either harmless on a private fabric (allowed) or never a VM's or a node's unicast space (refused, with a reason
    code and the entry's `what` in the refusal's message). `vm` always equals `subnet`: a VM address lies inside
    its network's subnets, and a subnet that may not overlap a range holds no VM address in it.
    """

    prefix: str
    what: str
    rfc: str
    subnet: str
    vm: str
    next_hop: str
    group: str = ""
    """The name under which an operator may allow the range as network space (`networks.allowSpecialRanges`,
    `OPT_IN_GROUPS`); "" for a range that is never a VM network."""
    version: int = field(init=False)
    first: int = field(init=False)
    last: int = field(init=False)

    def __post_init__(self) -> None:
        net = Prefix.parse(self.prefix)  # strict: no host bits
        object.__setattr__(self, "version", net.version)
        object.__setattr__(self, "first", net.first)
        object.__setattr__(self, "last", net.last)


REFUSE, ALLOW = "refuse", "allow"


def _refused(prefix: str, what: str, rfc: str, group: str = "") -> SpecialPurpose:
    return SpecialPurpose(prefix, what, rfc, REFUSE, REFUSE, REFUSE, group)


def _allowed(prefix: str, what: str, rfc: str) -> SpecialPurpose:
    return SpecialPurpose(prefix, what, rfc, ALLOW, ALLOW, ALLOW)


SPECIAL_PURPOSE: tuple[SpecialPurpose, ...] = (
    _refused("0.0.0.0/8", "unspecified or 'this network' (0.0.0.0/8)", "RFC 791, 1122"),
    _allowed("10.0.0.0/8", "private use (10.0.0.0/8)", "RFC 1918"),
    # OVN-K's join (100.64.0.0/16) and transit (100.88.0.0/16) ranges lie here: refused by `ovnKubernetes` instead
    _allowed("100.64.0.0/10", "shared address space (100.64.0.0/10)", "RFC 6598"),
    _refused("127.0.0.0/8", "loopback (127.0.0.0/8)", "RFC 1122"),
    _refused("169.254.0.0/16", "link-local (169.254.0.0/16)", "RFC 3927"),
    _allowed("172.16.0.0/12", "private use (172.16.0.0/12)", "RFC 1918"),
    _refused("192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)", "RFC 6890"),
    _refused("192.0.2.0/24", "documentation (TEST-NET-1, 192.0.2.0/24)", "RFC 5737", "documentation"),
    _refused("192.88.99.0/24", "the deprecated 6to4 relay anycast (192.88.99.0/24)", "RFC 7526"),
    _allowed("192.168.0.0/16", "private use (192.168.0.0/16)", "RFC 1918"),
    _refused("198.18.0.0/15", "benchmarking (198.18.0.0/15)", "RFC 2544", "benchmarking"),
    _refused("198.51.100.0/24", "documentation (TEST-NET-2, 198.51.100.0/24)", "RFC 5737", "documentation"),
    _refused("203.0.113.0/24", "documentation (TEST-NET-3, 203.0.113.0/24)", "RFC 5737", "documentation"),
    _refused("224.0.0.0/4", "multicast (224.0.0.0/4)", "RFC 5771"),
    _refused("255.255.255.255/32", "the limited broadcast address (255.255.255.255)", "RFC 919"),
    _refused("240.0.0.0/4", "reserved (240.0.0.0/4)", "RFC 1112"),
    _refused("::/128", "the unspecified address (::)", "RFC 4291"),
    _refused("::1/128", "loopback (::1)", "RFC 4291"),
    _refused("::/96", "IPv4-compatible IPv6, deprecated (::/96)", "RFC 4291"),
    _refused("::ffff:0:0/96", "IPv4-mapped IPv6 (::ffff:0:0/96)", "RFC 4291"),
    _refused("64:ff9b::/96", "the NAT64 well-known prefix (64:ff9b::/96)", "RFC 6052"),
    _refused("64:ff9b:1::/48", "local-use NAT64 (64:ff9b:1::/48)", "RFC 8215"),
    _refused("100::/64", "discard-only (100::/64)", "RFC 6666"),
    _refused("2001::/32", "Teredo (2001::/32)", "RFC 4380"),
    _refused("2001:2::/48", "benchmarking (2001:2::/48)", "RFC 5180", "benchmarking"),
    _refused("2001:10::/28", "ORCHID, deprecated (2001:10::/28)", "RFC 4843"),
    _refused("2001:20::/28", "ORCHIDv2 (2001:20::/28)", "RFC 7343"),
    _refused("2001::/23", "IETF protocol assignments (2001::/23)", "RFC 2928"),
    _refused("2001:db8::/32", "documentation (2001:db8::/32)", "RFC 3849", "documentation"),
    _refused("2002::/16", "6to4 (2002::/16)", "RFC 3056"),
    _refused("3fff::/20", "documentation (3fff::/20)", "RFC 9637", "documentation"),
    _refused("5f00::/16", "SRv6 SIDs (5f00::/16)", "RFC 9602"),
    _allowed("fc00::/7", "unique local (fc00::/7)", "RFC 4193"),
    _refused("fe80::/10", "link-local (fe80::/10)", "RFC 4291"),
    _refused("fec0::/10", "site-local, deprecated (fec0::/10)", "RFC 3879"),
    _refused("ff00::/8", "multicast (ff00::/8)", "RFC 4291"),
)
"""The special-purpose table (see `SpecialPurpose`), most specific entries first within a family where they nest
(the first entry that matches names the range). The guide's "Special-purpose addresses" table (docs/concepts.md)
is this one."""


OPT_IN_GROUPS: tuple[str, ...] = ("documentation", "benchmarking")
"""The special-purpose ranges an operator may allow as network space (`networks.allowSpecialRanges`), by the
`group` of their entries: `documentation` (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32,
3fff::/20) and `benchmarking` (198.18.0.0/15, 2001:2::/48), which labs and upstream examples use. Never a next hop
for it: the `next_hop` column stays as it is."""


def _table(use: str) -> dict[int, tuple[tuple[int, int, str], ...]]:
    out: dict[int, list[tuple[int, int, str]]] = {4: [], 6: []}
    for e in SPECIAL_PURPOSE:
        if getattr(e, use) == REFUSE:
            out[e.version].append((e.first, e.last, e.what))
    return {v: tuple(entries) for v, entries in out.items()}


SPECIAL_RANGES: dict[int, tuple[tuple[int, int, str], ...]] = _table("subnet")
"""(first, last, what) per family of every range no network subnet may overlap and no announced prefix may overlap
(the `subnet` column of `SPECIAL_PURPOSE`)."""

NEXT_HOP_RANGES: dict[int, tuple[tuple[int, int, str], ...]] = _table("next_hop")
"""(first, last, what) per family of every range no next hop may lie in (the `next_hop` column)."""


_GROUPED: dict[str, tuple[SpecialPurpose, ...]] = {
    g: tuple(e for e in SPECIAL_PURPOSE if e.group == g) for g in OPT_IN_GROUPS
}


_SUBNET_REFUSED: dict[int, tuple[SpecialPurpose, ...]] = {
    v: tuple(e for e in SPECIAL_PURPOSE if e.version == v and e.subnet == REFUSE) for v in (4, 6)
}


def special_range(version: int, first: int, last: int, allowed: frozenset[str] = frozenset()) -> SpecialPurpose | None:
    """The first entry of the table refused as network space that the addresses first..last overlap, or None.

    `allowed`: `OPT_IN_GROUPS` names whose ranges are network space here. A range inside an allowed entry passes it
    and every entry that contains that entry (2001:2::/48, benchmarking, lies in 2001::/23); one that overlaps an
    allowed entry only in part is judged by every other entry it meets."""
    entries = [e for g in allowed for e in _GROUPED.get(g, ()) if e.version == version]
    inside = [e for e in entries if e.first <= first and last <= e.last]
    for e in _SUBNET_REFUSED[version]:
        if not (e.first <= last and first <= e.last):
            continue
        if e in entries:  # an allowed range itself
            continue
        if any(e.first <= a.first and a.last <= e.last for a in inside):  # holds the allowed range they lie in
            continue
        return e
    return None


def special_range_reason(version: int, first: int, last: int, allowed: frozenset[str] = frozenset()) -> str | None:
    """What special range the addresses first..last overlap (a phrase for people), or None (`special_range`)."""
    entry = special_range(version, first, last, allowed)
    return entry.what if entry is not None else None


def other_family_note(version: int, others: Sequence[str]) -> str:
    """What refusing a network for one subnet of IP `version` means for its subnets of the other family (`others`,
    as written), said plainly: a network is announced in every family or in none; "" when it has none."""
    if not others:
        return ""
    family = f"IPv{10 - version}"
    listed = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
    return (
        f"; the network is refused whole, so its {family} subnet{'s' if len(others) > 1 else ''} {listed} and its "
        f"VMs' {family} addresses are not announced either (a network is announced in every family or in none)"
    )


def special_address_reason(version: int, value: int) -> str | None:
    """Why an address is never a next hop (a phrase for people: the `NEXT_HOP_RANGES` entry it lies in), or None
    when it may be one."""
    for lo, hi, what in NEXT_HOP_RANGES[version]:
        if lo <= value <= hi:
            return what
    return None


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
