"""ExaBGP's text API: command lines rendered from model objects, and the lines ExaBGP writes back.

Every value in a command line is rendered here from a parsed value (`Prefix`, `Address`, the configuration's peer
address, int, a validated Attributes); nothing from the cluster is ever copied into a line as a string, so a hostile
value cannot add words to a command. Lines carry no trailing newline: the writer adds it.

Commands (ExaBGP 5.0, checked against its `reactor/api/command/*.py`):
- `neighbor <peer> announce attributes next-hop <ip|self> origin igp [...] nlri <p1> <p2> ...`: one line, many
  NLRI sharing attributes. IPv6 prefixes go in the same syntax with an IPv6 next hop (MP_REACH is built from it).
- `neighbor <peer> withdraw attributes nlri ...`: ExaBGP indexes its RIB by prefix only, so a withdrawal carries no
  next hop (measured: accepted for IPv4 and IPv6). `next-hop self` for an IPv6 prefix on an IPv4 session is answered
  `error`, so the speaker never renders it.
- `neighbor <peer> announce eor <afi> <safi>`: only accepted for an established peer (ExaBGP answers `error` else).
- `show neighbor json` (one JSON list line) and `show adj-rib out json` (one line per route with
  `exabgp.api.show-routes-format=v2`): both run on ExaBGP's ordered async queue, which the start-up resync uses.

Replies: `done` / `error` (plain text even with the JSON encoder; the JSON answer form is accepted too), JSON events
(`{"exabgp": ..., "type": "state" | "negotiated" | "update" | "notification", ...}`), and the answers of the show
commands. An UPDATE event comes parsed (`"update": {"announce": ..., "withdraw": ...}`, what ExaBGP receives) or as
its bytes (`"body": "0x..."`, what bgpadv's ExaBGP sends: `bgpadv.speaker.exabgp_boot`, read by
`bgpadv.speaker.wire`). A `negotiated` event (interface peers only) says what a session negotiated, before its `up`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bgpadv.core.model import Attributes, normalize_community
from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker import wire

MAX_LINE_BYTES = 256 * 1024  # ExaBGP kills an API process at 1 MiB without a newline; stay far below
FAMILIES: dict[str, tuple[str, str]] = {"ipv4 unicast": ("ipv4", "unicast"), "ipv6 unicast": ("ipv6", "unicast")}
SHOW_NEIGHBORS = "show neighbor json"
SHOW_ADJ_RIB_OUT = "show adj-rib out json"
SHOW_ADJ_RIB_IN = "show adj-rib in json"  # the same line format; needs `adj-rib-in true` on the neighbor
_U32 = 4294967295


def family_of(prefix: Prefix) -> str:
    """The ExaBGP family name of a prefix: "ipv4 unicast" or "ipv6 unicast"."""
    return "ipv4 unicast" if prefix.version == 4 else "ipv6 unicast"


def _address(value: Address) -> str:
    if not isinstance(value, Address):
        raise TypeError(f"expected an Address, got {type(value).__name__}")
    return str(value)


def _prefix(value: Prefix) -> str:
    if value.__class__ is not Prefix:
        raise TypeError(f"expected a Prefix, got {type(value).__name__}")
    return _cidr_text(value)


def _cidr_text(prefix: Prefix) -> str:
    """The canonical text of a prefix, IPv4 formatted from the integers (`str` goes through `inet_ntop`, which costs
    more over 100,000 NLRI); IPv6 is `str`'s RFC 5952 compact form."""
    length = prefix.length
    if prefix.version == 4:
        value = prefix.value
        return f"{value >> 24}.{value >> 16 & 255}.{value >> 8 & 255}.{value & 255}/{length}"
    return str(prefix)


def _u32(name: str, value: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _U32:
        raise ValueError(f"{name} must be an integer between 0 and {_U32}, got {value!r}")
    return str(value)


def _community(value: str, large: bool = False) -> str:
    community = normalize_community(value, large)
    if community is None:
        raise ValueError(f"invalid community {value!r}")
    return community


def render_attributes(attributes: Attributes, local_asn: int | None = None) -> str:
    """The shared path attributes, in ExaBGP's order: origin, local-preference, med, communities, as-path (for
    an eBGP session: the speaker removes the prepend toward iBGP peers, `Attributes.on_session`)."""
    words = ["origin igp"]
    if attributes.local_preference is not None:
        words.append(f"local-preference {_u32('local-preference', attributes.local_preference)}")
    if attributes.med is not None:
        words.append(f"med {_u32('med', attributes.med)}")
    if attributes.communities:
        values = " ".join(_community(c) for c in attributes.communities)
        words.append(f"community [ {values} ]")
    if attributes.large_communities:
        values = " ".join(_community(c, large=True) for c in attributes.large_communities)
        words.append(f"large-community [ {values} ]")
    if attributes.as_path_prepend:
        if local_asn is None:
            raise ValueError("as-path prepending needs the local ASN")
        count = int(attributes.as_path_prepend)
        if not 0 < count <= 10:
            raise ValueError(f"as-path prepend must be between 0 and 10, got {count}")
        asn = _u32("local ASN", local_asn)
        # ExaBGP sends a given AS path as it is (it adds the local AS only to an empty one on eBGP): `count` extra
        # copies are `count + 1` in all (a prepend of 2 sent as two copies showed the AS twice in FRR's `path`, once
        # fewer than asked)
        words.append(f"as-path [ {' '.join([asn] * (count + 1))} ]")
    return " ".join(words)


def _next_hop(next_hop: Address | None) -> str:
    return "self" if next_hop is None else _address(next_hop)


def render_announce(
    peer: Address,
    next_hop: Address | None,
    attributes: Attributes,
    prefixes: Sequence[Prefix],
    *,
    local_asn: int | None = None,
) -> str:
    """One bulk announcement: every prefix shares the next hop (None = `self`) and the attributes."""
    if not prefixes:
        raise ValueError("an announcement needs at least one prefix")
    nlri = " ".join(_prefix(p) for p in prefixes)
    attrs = render_attributes(attributes, local_asn)
    return f"neighbor {_address(peer)} announce attributes next-hop {_next_hop(next_hop)} {attrs} nlri {nlri}"


def render_withdraw(peer: Address, prefixes: Sequence[Prefix]) -> str:
    """One bulk withdrawal. ExaBGP indexes its RIB by prefix only, so no next hop is needed (nor `self`, which
    ExaBGP rejects for an IPv6 prefix on an IPv4 session)."""
    if not prefixes:
        raise ValueError("a withdrawal needs at least one prefix")
    nlri = " ".join(_prefix(p) for p in prefixes)
    return f"neighbor {_address(peer)} withdraw attributes nlri {nlri}"


def announce_lines(
    peer: Address,
    next_hop: Address | None,
    attributes: Attributes,
    prefixes: Sequence[Prefix],
    max_prefixes: int,
    max_bytes: int = MAX_LINE_BYTES,
    *,
    local_asn: int | None = None,
) -> Iterator[tuple[int, str]]:
    """`render_announce` of each run of `chunks(prefixes, max_prefixes, max_bytes)`, as (prefixes in the run, line),
    rendering every prefix once (the speaker's bulk path)."""
    if not prefixes:
        raise ValueError("an announcement needs at least one prefix")
    attrs = render_attributes(attributes, local_asn)
    head = f"neighbor {_address(peer)} announce attributes next-hop {_next_hop(next_hop)} {attrs} nlri "
    yield from _lines(head, [_prefix(p) for p in prefixes], max_prefixes, max_bytes)


def withdraw_lines(
    peer: Address, prefixes: Sequence[Prefix], max_prefixes: int, max_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, str]]:
    """`render_withdraw` of each run of `chunks(prefixes, max_prefixes, max_bytes)`, as (prefixes in the run, line)."""
    if not prefixes:
        raise ValueError("a withdrawal needs at least one prefix")
    head = f"neighbor {_address(peer)} withdraw attributes nlri "
    yield from _lines(head, [_prefix(p) for p in prefixes], max_prefixes, max_bytes)


def _lines(head: str, words: list[str], max_prefixes: int, max_bytes: int) -> Iterator[tuple[int, str]]:
    for start, end in _runs([len(w) + 1 for w in words], max_prefixes, max_bytes):
        yield end - start, head + " ".join(words[start:end])


def render_eor(peer: Address, family: str) -> str:
    """End-of-RIB for one family (the speaker's neighbors run with `manual-eor true`)."""
    afi, safi = FAMILIES[family]
    return f"neighbor {_address(peer)} announce eor {afi} {safi}"


def chunks(prefixes: Sequence[Prefix], max_prefixes: int, max_bytes: int = MAX_LINE_BYTES) -> Iterator[list[Prefix]]:
    """Split prefixes into runs of at most `max_prefixes` whose rendered NLRI stays under `max_bytes`."""
    prefixes = list(prefixes)
    for start, end in _runs([len(_cidr_text(p)) + 1 for p in prefixes], max_prefixes, max_bytes):
        yield prefixes[start:end]


def _runs(widths: Sequence[int], max_prefixes: int, max_bytes: int) -> Iterator[tuple[int, int]]:
    """[start, end) index runs of at most `max_prefixes` items whose widths sum under `max_bytes` less 1 KiB."""
    if max_prefixes < 1:
        raise ValueError("max_prefixes must be at least 1")
    budget = max_bytes - 1024  # room for the command words and the attributes
    start = 0
    size = 0
    for i, width in enumerate(widths):
        if i > start and (i - start >= max_prefixes or size + width > budget):
            yield start, i
            start, size = i, 0
        size += width
    if start < len(widths):
        yield start, len(widths)


# ---------------------------------------------------------------------------------------------------------------
# What ExaBGP writes back


@dataclass(frozen=True, slots=True)
class Ack:
    """`done` (ok) or `error`: the answer to the oldest unanswered command."""

    ok: bool


@dataclass(frozen=True, slots=True)
class Shutdown:
    """ExaBGP is exiting."""


@dataclass(frozen=True, slots=True)
class PeerState:
    peer: str  # canonical peer address
    state: str  # "up" | "down" | "connected"
    reason: str = ""


@dataclass(frozen=True, slots=True)
class UpdateEvent:
    """An UPDATE ExaBGP sent (direction "send", from `api { send { update; } }`) or received ("receive")."""

    peer: str
    direction: str
    announced: tuple[tuple[Prefix, Address | None], ...]  # (prefix, next hop)
    withdrawn: tuple[Prefix, ...]
    eor: tuple[str, ...] = ()  # families of an End-of-RIB marker
    malformed: int = 0  # parts that could not be read (a prefix or next hop that is no address, a wrong type): dropped


@dataclass(frozen=True, slots=True)
class Notification:
    peer: str
    direction: str
    code: int
    subcode: int
    message: str = ""


ENH_IPV4 = "ipv4 unicast ipv6"
"""ExaBGP's name of the Extended Next Hop capability's IPv4 unicast entry with IPv6 next hops (RFC 8950)."""


@dataclass(frozen=True, slots=True)
class Negotiated:
    """What a session negotiated (`api { negotiated; }`, interface peers only): ExaBGP writes it once the OPEN
    messages are exchanged, before the session's `up`. `nexthop`: the Extended Next Hop entries both sides
    advertised, as ExaBGP names them (`"ipv4 unicast ipv6"`); empty when the peer did not advertise the capability."""

    peer: str
    nexthop: tuple[str, ...]

    @property
    def extended_next_hop(self) -> bool:
        """IPv4 unicast with IPv6 next hops may be sent on the session (RFC 8950)."""
        return ENH_IPV4 in self.nexthop


@dataclass(frozen=True, slots=True)
class NeighborList:
    """The answer to `show neighbor json`: (peer address, "up" | "down") for every configured neighbor."""

    peers: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class RibRoute:
    """One line of `show adj-rib out json` (format v2): a route in ExaBGP's adj-rib-out for `peer`."""

    peer: str
    prefix: Prefix
    next_hop: Address | None


@dataclass(frozen=True, slots=True)
class RibInDone:
    """Not a line: the speaker's marker that ExaBGP acknowledged `show adj-rib in json` (the dump is complete)."""


@dataclass(frozen=True, slots=True)
class Other:
    """Anything else (version banner, an event type bgpadv does not use, unparsable text)."""

    line: str


Reply = Ack | Shutdown | PeerState | Negotiated | UpdateEvent | Notification | NeighborList | RibRoute | Other

_DONE = {"done", '{ "answer": "done", "message": "command completed" }'}
_ERROR = {"error"}


def _net(value: object) -> Prefix | None:
    """A prefix of ExaBGP's JSON (a string, or a `{"nlri": ...}` / `{"prefix": ...}` object), host bits masked."""
    if isinstance(value, dict):
        value = value.get("nlri", value.get("prefix"))
    if not isinstance(value, str):
        return None
    try:
        return Prefix.parse(value, strict=False)
    except ValueError:
        return None


def _addr(value: object) -> Address | None:
    if not isinstance(value, str):
        return None
    try:
        return Address.parse(value)
    except ValueError:
        return None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _peer_of(event: dict[str, Any]) -> str:
    peer = _addr(_dict(_dict(event.get("neighbor")).get("address")).get("peer"))
    return str(peer) if peer is not None else ""


def _items(value: object) -> list[object]:
    """The NLRI list of one family / next hop: a list (anything else is one malformed item)."""
    return value if isinstance(value, list) else [] if value is None else [_MALFORMED]


_MALFORMED = object()


def _announced(update: dict[str, Any]) -> tuple[list[tuple[Prefix, Address | None]], int]:
    """(prefix, next hop) of every announced NLRI, and how many parts could not be read. A next hop that is no
    address keeps its prefixes with no next hop (the import refuses them, counted); a prefix that is none is
    dropped."""
    announced: list[tuple[Prefix, Address | None]] = []
    malformed = 0
    families = update.get("announce")
    if families is not None and not isinstance(families, dict):
        return [], 1
    for by_next_hop in _dict(families).values():
        if not isinstance(by_next_hop, dict):
            malformed += 1
            continue
        for nh, nlris in by_next_hop.items():
            hop = _addr(nh)
            malformed += hop is None
            for item in _items(nlris):
                net = _net(item)
                if net is None:
                    malformed += 1
                else:
                    announced.append((net, hop))
    return announced, malformed


def _withdrawn(update: dict[str, Any]) -> tuple[list[Prefix], int]:
    withdrawn: list[Prefix] = []
    malformed = 0
    families = update.get("withdraw")
    if families is not None and not isinstance(families, dict):
        return [], 1
    for nlris in _dict(families).values():
        for item in _items(nlris):
            net = _net(item)
            if net is None:
                malformed += 1
            else:
                withdrawn.append(net)
    return withdrawn, malformed


def _update(event: dict[str, Any]) -> UpdateEvent:
    neighbor = _dict(event.get("neighbor"))
    message = _dict(neighbor.get("message"))
    if "body" in message and "update" not in message and "eor" not in message:
        return _packed_update(event, neighbor, message)
    update = _dict(message.get("update"))
    marker = message.get("eor")
    eor = (f"{marker.get('afi')} {marker.get('safi')}",) if isinstance(marker, dict) else ()
    announced, bad_announced = _announced(update)
    withdrawn, bad_withdrawn = _withdrawn(update)
    return UpdateEvent(
        peer=_peer_of(event),
        direction=str(neighbor.get("direction", "")),
        announced=tuple(announced),
        withdrawn=tuple(withdrawn),
        eor=eor,
        malformed=bad_announced + bad_withdrawn,
    )


def _packed_update(event: dict[str, Any], neighbor: dict[str, Any], message: dict[str, Any]) -> UpdateEvent:
    """An UPDATE echoed as its bytes (ExaBGP's `packets` JSON: `{"category": 2, "header": "0x...", "body": "0x..."}`,
    what bgpadv's ExaBGP writes for the UPDATEs it sends, `bgpadv.speaker.exabgp_boot`), read by `wire.read_update`."""
    body, header = message.get("body"), message.get("header")
    read = None
    if isinstance(body, str) and body.startswith("0x") and isinstance(header, str) and header.startswith("0x"):
        try:
            raw_header = bytes.fromhex(header[2:])
            if len(raw_header) == wire.HEADER_BYTES and raw_header[-1] == wire.UPDATE:
                read = wire.read_update(bytes.fromhex(body[2:]))
        except ValueError:
            read = None
    if read is None:
        read = wire.WireUpdate([], [], malformed=1)
    return UpdateEvent(
        peer=_peer_of(event),
        direction=str(neighbor.get("direction", "")),
        announced=tuple(read.announced),
        withdrawn=tuple(read.withdrawn),
        eor=read.eor,
        malformed=read.malformed,
    )


def _neighbor_list(data: list[Any]) -> NeighborList:
    """`show neighbor json`: "fsm" is ExaBGP's FSM state; its "state" says down for the first second."""
    peers = []
    for item in data:
        if not isinstance(item, dict):
            continue
        addr = _addr(_dict(item.get("peer")).get("address"))
        if addr is not None:
            fsm = str(item.get("fsm", "")).upper()
            state = ("up" if fsm == "ESTABLISHED" else "down") if fsm else str(item.get("state", ""))
            peers.append((str(addr), state))
    return NeighborList(tuple(peers))


def _event(data: dict[str, Any], text: str) -> Reply:
    """One of ExaBGP's JSON events (`{"exabgp": ..., "type": ...}`)."""
    kind = data.get("type")
    neighbor = _dict(data.get("neighbor"))
    if kind == "state":
        return PeerState(_peer_of(data), str(neighbor.get("state", "")), str(neighbor.get("reason", "")))
    if kind == "update":
        return _update(data)
    if kind == "negotiated":
        return _negotiated(data, text)
    if kind == "notification":
        if data.get("notification") == "shutdown":
            return Shutdown()
        note = _dict(neighbor.get("notification"))
        return Notification(
            peer=_peer_of(data),
            direction=str(neighbor.get("direction", "")),
            code=_int(note.get("code")),
            subcode=_int(note.get("subcode")),
            message=str(note.get("message", "")),
        )
    return Other(text)


def _negotiated(data: dict[str, Any], text: str) -> Reply:
    """`{"type": "negotiated", "neighbor": {"address": ..., "negotiated": {"nexthop": ["ipv4 unicast ipv6"], ...}}}`;
    a message without a peer or whose `nexthop` is not a list of strings is `Other` (nothing is assumed negotiated)."""
    peer = _peer_of(data)
    nexthop = _dict(_dict(data.get("neighbor")).get("negotiated")).get("nexthop")
    if not peer or not isinstance(nexthop, list) or not all(isinstance(n, str) for n in nexthop):
        return Other(text)
    return Negotiated(peer, tuple(" ".join(n.split()) for n in nexthop))


def _rib_route(data: dict[str, Any], text: str) -> Reply:
    """One line of `show adj-rib out json` (format v2)."""
    peer = _addr(_dict(data.get("peer")).get("address"))
    nlri = _dict(data.get("route")).get("nlri") or {}
    prefix = _net(nlri.get("prefix")) if isinstance(nlri, dict) else None
    if peer is not None and prefix is not None:
        return RibRoute(str(peer), prefix, _addr(nlri.get("nexthop")))
    return Other(text)


def parse_reply(line: str) -> Reply:
    """Classify one line ExaBGP wrote to the API process's stdin. Never raises: anything unreadable is `Other`."""
    try:
        return _parse_reply(line)
    except Exception:  # a shape no rule above foresaw: never a traceback for a line
        return Other(line.strip() if isinstance(line, str) else repr(line))


def _parse_reply(line: str) -> Reply:
    text = line.strip()
    if text in _DONE:
        return Ack(True)
    if text in _ERROR or text.startswith('{ "answer": "error"'):
        return Ack(False)
    if text == "shutdown":
        return Shutdown()
    if not text or text[0] not in "[{":
        return Other(text)
    try:
        data = json.loads(text)
    except ValueError:
        return Other(text)
    if isinstance(data, list):
        return _neighbor_list(data)
    if not isinstance(data, dict):
        return Other(text)
    if "exabgp" in data:
        return _event(data, text)
    if "route" in data and "peer" in data:
        return _rib_route(data, text)
    return Other(text)
