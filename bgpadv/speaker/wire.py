"""The routes of one BGP UPDATE message, read from its bytes: bgpadv's ExaBGP echoes each UPDATE it sends as the raw
message (ExaBGP's `packets` JSON, `bgpadv.speaker.exabgp_boot`), and this is what the `sent` stage reads of it.

RFC 4271 §4.3 and RFC 4760 for the two families bgpadv configures, IPv4 and IPv6 unicast, without ADD-PATH (bgpadv
never configures it; the boot patch keeps ExaBGP's parsed echo on a session that negotiates it):

- Withdrawn Routes and NLRI: IPv4 prefixes, each a length octet and the fewest octets that hold it;
- NEXT_HOP (type 3): the IPv4 NLRI's next hop;
- MP_REACH_NLRI (14): AFI, SAFI, the next hop (4 octets IPv4; 16, or 32 with a link-local address, IPv6, of which the
  first is kept), a reserved octet, then the prefixes; MP_UNREACH_NLRI (15): AFI, SAFI, the withdrawn prefixes;
- End-of-RIB (RFC 4724): an empty UPDATE for IPv4, an MP_UNREACH_NLRI with no prefixes and nothing else for others.

Never raises: a part that cannot be read (a length running past its field, a prefix longer than its family, another
family, a next hop of no known size) is counted in `malformed` and dropped, with the rest of its field (a length
that lies leaves nothing to resynchronise on). Host bits set in a prefix are masked, as the JSON echo's reader does.

Why not a library: ExaBGP's own parser is the cost being moved out of ExaBGP (and would load ExaBGP's globals into the
controller), and dpkt, the lab's capture decoder, guesses ADD-PATH from a field's length (a multiple of 9 octets) and
is no dependency of the product. The two fields read here are a length octet and the octets it counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from bgpadv.core.prefix import Address, Prefix

UPDATE = 2  # the message type octet
HEADER_BYTES = 19  # marker (16), length (2), type (1)
NEXT_HOP, MP_REACH_NLRI, MP_UNREACH_NLRI = 3, 14, 15
_EXTENDED_LENGTH = 0x10
_VERSION_OF_AFI = {1: 4, 2: 6}
_UNICAST = 1
_BITS = {4: 32, 6: 128}
_FAMILY = {4: "ipv4 unicast", 6: "ipv6 unicast"}


@dataclass(frozen=True, slots=True)
class WireUpdate:
    announced: list[tuple[Prefix, Address | None]]  # (prefix, next hop)
    withdrawn: list[Prefix]
    eor: tuple[str, ...] = ()  # the family of an End-of-RIB marker
    malformed: int = 0


def read_update(body: bytes) -> WireUpdate:
    """The routes of an UPDATE's body (the message after its 19-octet header)."""
    announced: list[tuple[Prefix, Address | None]] = []
    withdrawn: list[Prefix] = []
    if len(body) < 4:
        return WireUpdate(announced, withdrawn, malformed=1)
    withdrawn_end = 2 + int.from_bytes(body[0:2], "big")
    if withdrawn_end + 2 > len(body):
        return WireUpdate(announced, withdrawn, malformed=1)
    malformed = _prefixes(body[2:withdrawn_end], 4, withdrawn)
    attributes_end = withdrawn_end + 2 + int.from_bytes(body[withdrawn_end : withdrawn_end + 2], "big")
    if attributes_end > len(body):
        return WireUpdate(announced, withdrawn, malformed=malformed + 1)
    attributes, cut = _attributes(body[withdrawn_end + 2 : attributes_end])
    malformed += cut
    nlri = body[attributes_end:]
    next_hop: Address | None = None
    eor: tuple[str, ...] = ()
    for code, value in attributes:
        if code == NEXT_HOP:
            next_hop, bad = _next_hop(value)
            malformed += bad
        elif code == MP_REACH_NLRI:
            malformed += _mp_reach(value, announced)
        elif code == MP_UNREACH_NLRI:
            version = _unicast(value)
            if version is None:
                malformed += 1
            elif len(value) == 3 and len(attributes) == 1 and withdrawn_end == 2 and not nlri and not cut:
                eor = (_FAMILY[version],)  # an MP_UNREACH_NLRI with no prefixes and nothing else
            else:
                malformed += _prefixes(value[3:], version, withdrawn)
    if nlri:
        reach: list[Prefix] = []
        malformed += _prefixes(nlri, 4, reach)
        if next_hop is None:
            malformed += 1  # IPv4 NLRI without a NEXT_HOP: kept with no next hop, as the JSON reader keeps them
        announced.extend((p, next_hop) for p in reach)
    elif withdrawn_end == 2 and attributes_end == 4:
        eor = (_FAMILY[4],)  # an empty UPDATE
    return WireUpdate(announced, withdrawn, eor, malformed)


def _attributes(data: bytes) -> tuple[list[tuple[int, bytes]], int]:
    """(type code, value) of each path attribute, and 1 if the field ends in one whose length runs past it."""
    out: list[tuple[int, bytes]] = []
    at, end = 0, len(data)
    while at < end:
        if at + 3 > end:
            return out, 1
        flags, code = data[at], data[at + 1]
        if flags & _EXTENDED_LENGTH:
            if at + 4 > end:
                return out, 1
            start, size = at + 4, int.from_bytes(data[at + 2 : at + 4], "big")
        else:
            start, size = at + 3, data[at + 2]
        at = start + size
        if at > end:
            return out, 1
        out.append((code, data[start:at]))
    return out, 0


def _unicast(value: bytes) -> int | None:
    """The IP version of an MP attribute's AFI/SAFI when it is IPv4 or IPv6 unicast."""
    if len(value) < 3 or value[2] != _UNICAST:
        return None
    return _VERSION_OF_AFI.get(int.from_bytes(value[0:2], "big"))


def _next_hop(value: bytes) -> tuple[Address | None, int]:
    """An IPv4 next hop (4 octets) or an IPv6 one (16; 32 with a link-local address, of which the global one is the
    route's); (None, 1) for any other size."""
    if len(value) == 4:
        return Address(4, int.from_bytes(value, "big")), 0
    if len(value) in (16, 32):
        return Address(6, int.from_bytes(value[:16], "big")), 0
    return None, 1


def _mp_reach(value: bytes, announced: list[tuple[Prefix, Address | None]]) -> int:
    version = _unicast(value)
    if version is None or len(value) < 5:
        return 1
    hop_end = 4 + value[3]
    if hop_end + 1 > len(value):
        return 1
    hop, malformed = _next_hop(value[4:hop_end])
    prefixes: list[Prefix] = []
    malformed += _prefixes(value[hop_end + 1 :], version, prefixes)
    announced.extend((p, hop) for p in prefixes)
    return malformed


def _prefixes(data: bytes, version: int, out: list[Prefix]) -> int:
    """Append the prefixes of one field to `out`; 1 if the field ends in something unreadable, else 0."""
    bits = _BITS[version]
    at, end = 0, len(data)
    while at < end:
        length = data[at]
        octets = (length + 7) >> 3
        stop = at + 1 + octets
        if length > bits or stop > end:
            return 1
        value = int.from_bytes(data[at + 1 : stop], "big") << (bits - 8 * octets)
        out.append(Prefix(version, value & ~((1 << (bits - length)) - 1), length))
        at = stop
    return 0
