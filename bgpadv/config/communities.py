"""Communities the configuration sets on routes: the well-known ones that change what the fabric does with a route,
and how many one path attribute can carry.

- `WELL_KNOWN`: BLACKHOLE (65535:666, RFC 7999), GRACEFUL_SHUTDOWN (65535:0, RFC 8326), NO_EXPORT, NO_ADVERTISE and
  NO_EXPORT_SUBCONFED (65535:65281-65283, RFC 1997). Set by `attributes` or by a policy that matches every route,
  one of them reaches every route of every peer: a field error unless the same block lists it in
  `intendedWellKnownCommunities`. Set by a narrower policy: a `check-config` warning naming the RFC. Any other
  community of the well-known range 65535:0-65535 (RFC 1997) gets a warning too.
- `worst_cases`: a route carries the communities of `attributes` and of every policy that matches it (they add
  up, each once), so the worst case per route kind is their union over every policy that can match the kind. One
  COMMUNITIES attribute holds at most 16,383 (65,535 bytes, the extended-length maximum of RFC 4271 section 4.3, 4
  bytes each), LARGE_COMMUNITY at most 5,461 (12 bytes each, RFC 8092); EXTENDED_COMMUNITIES would hold 8,191 (8
  bytes each; bgpadv sets none). Over that the route can never be sent: a field error. Over 4,000 bytes of either
  the route does not fit a 4,096-byte UPDATE with its other attributes unless both sides negotiate extended messages
  (RFC 8654): a warning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WELL_KNOWN_RANGE = "65535:"
"""RFC 1997 reserves 65535:0-65535 (0xFFFF0000-0xFFFFFFFF) for well-known communities."""


@dataclass(frozen=True, slots=True)
class WellKnown:
    name: str
    value: str
    rfc: str
    effect: str


WELL_KNOWN: tuple[WellKnown, ...] = (
    WellKnown(
        "GRACEFUL_SHUTDOWN",
        "65535:0",
        "RFC 8326",
        "receivers lower the route to the least preference (LOCAL_PREF 0): set permanently, every other path wins "
        "(bgpadv sets it itself while it drains)",
    ),
    WellKnown("BLACKHOLE", "65535:666", "RFC 7999", "receivers that honour it drop all traffic to the prefix"),
    WellKnown(
        "NO_EXPORT",
        "65535:65281",
        "RFC 1997",
        "the ToR keeps the route inside its AS: it never reaches the rest of an eBGP fabric",
    ),
    WellKnown("NO_ADVERTISE", "65535:65282", "RFC 1997", "the ToR advertises the route to no other peer at all"),
    WellKnown(
        "NO_EXPORT_SUBCONFED",
        "65535:65283",
        "RFC 1997",
        "the ToR advertises the route to no external peer, not even inside its confederation",
    ),
)
BY_VALUE = {w.value: w for w in WELL_KNOWN}
NAMES: tuple[str, ...] = tuple(w.name for w in WELL_KNOWN)

MAX_COMMUNITIES = 65_535 // 4  # 16,383
MAX_LARGE_COMMUNITIES = 65_535 // 12  # 5,461
MAX_EXTENDED_COMMUNITIES = 65_535 // 8  # 8,191 (for reference: the configuration sets none)
UPDATE_BUDGET_BYTES = 4_000
"""Bytes of one community attribute past which a route no longer fits a 4,096-byte UPDATE (RFC 4271) with its
header (23 bytes), its other attributes and its prefix; only extended messages (RFC 8654) carry it then."""


def named(communities: Iterable[str]) -> list[tuple[int, WellKnown]]:
    """(index, entry) of each named well-known community in `communities` (canonical strings)."""
    return [(i, BY_VALUE[c]) for i, c in enumerate(communities) if c in BY_VALUE]


def unintended(communities: Sequence[str], intended: Sequence[str]) -> list[tuple[int, WellKnown]]:
    """The named well-known communities of `communities` that `intended` does not list."""
    return [(i, w) for i, w in named(communities) if w.name not in intended]


def every_route_problem(w: WellKnown, where: str, routes: str = "every route") -> str:
    return (
        f"{w.value} is {w.name} ({w.rfc}) and {where} puts it on {routes} of every peer: {w.effect}; if that is "
        f"what you want, add {w.name} to intendedWellKnownCommunities beside it"
    )


def warnings(where: str, communities: Sequence[str], intended: Sequence[str]) -> list[str]:
    """`check-config` warnings of one block: each well-known community it sets that `intended` does not list (the
    ones without a name here too: the whole range is reserved, RFC 1997)."""
    out = []
    for c in communities:
        w = BY_VALUE.get(c)
        if w is not None and w.name not in intended:
            out.append(
                f"{where} sets {w.value}, {w.name} ({w.rfc}), on the routes it matches: {w.effect}; list {w.name} "
                "in intendedWellKnownCommunities if that is meant"
            )
        elif w is None and c.startswith(WELL_KNOWN_RANGE):
            out.append(
                f"{where} sets {c}, in the well-known range 65535:0-65535 (RFC 1997): receivers may act on it "
                "(RFC 7611 ACCEPT_OWN, RFC 9494 LLGR_STALE, ...); is it meant?"
            )
    return out


@dataclass(frozen=True, slots=True)
class Source:
    """One block that adds communities to routes: where it is written (a path of keys), the route kinds it can
    reach, and its standard and large communities."""

    loc: tuple[str | int, ...]
    kinds: frozenset[str]
    communities: tuple[str, ...]
    large: tuple[str, ...]


KINDS = ("subnet", "host")
_ATTRIBUTES = (
    ("communities", "COMMUNITIES", 4, MAX_COMMUNITIES),
    ("large", "LARGE_COMMUNITY", 12, MAX_LARGE_COMMUNITIES),
)


def worst_cases(sources: Sequence[Source]) -> list[tuple[tuple[str | int, ...], str, str, int, int, int]]:
    """Where the worst-case count of a route kind's communities first exceeds an attribute's limit, or else the
    UPDATE budget: (loc of the block that tips it, kind, attribute name, count, bytes, limit or 0 for the budget),
    once per block and attribute (the first kind that tips it there)."""
    out: dict[tuple[tuple[str | int, ...], bool], tuple[tuple[str | int, ...], str, str, int, int, int]] = {}
    for field, name, width, limit in _ATTRIBUTES:
        key = ("largeCommunities",) if field == "large" else ("communities",)
        for kind in KINDS:
            seen: set[str] = set()
            said = False
            for source in sources:
                if kind not in source.kinds:
                    continue
                seen.update(getattr(source, field))
                n = len(seen)
                if n > limit or (n * width > UPDATE_BUDGET_BYTES and not said):
                    loc = (*source.loc, *key)
                    out.setdefault((loc, n > limit), (loc, kind, name, n, n * width, limit if n > limit else 0))
                    if n > limit:
                        break
                    said = True
    return list(out.values())


def _what(name: str) -> str:
    return "large communities" if name == "LARGE_COMMUNITY" else "communities"


def limit_message(kind: str, name: str, count: int, limit: int) -> str:
    return (
        f"a {kind} route this reaches carries up to {count:,} {_what(name)} with attributes and every policy that can "
        f"match it: one {name} attribute holds at most {limit:,} (65,535 bytes with the extended-length flag, "
        "RFC 4271 section 4.3), so the route could never be sent"
    )


def budget_message(kind: str, name: str, count: int, size: int) -> str:
    return (
        f"a {kind} route this reaches carries up to {count:,} {_what(name)} ({size:,} bytes of {name}) with attributes "
        "and every policy that can match it: it does not fit a 4,096-byte UPDATE unless the ToR and bgpadv negotiate "
        "extended messages (RFC 8654)"
    )
