"""The speaker: takes the whole desired set per peer, diffs it against what ExaBGP holds, and drives ExaBGP.

A single-threaded state machine around a `write` callable (one command line, no newline). The controller feeds it
every line ExaBGP writes (`handle_line`) and every new plan (`set_desired`); it never blocks and never reads.

What it keeps, per peer (every table keyed by `Prefix.key`, the prefix's precomputed tuple of ints: a tuple hashes
and compares in C, cheaper than the `Prefix` itself over diffs of 100,000 routes):
- `advertised`: what ExaBGP's adj-rib-out holds according to acknowledged commands. A prefix mapped to None is
  *unknown*: learned at start-up from ExaBGP (attributes not compared) or touched by a command answered `error`. An
  unknown prefix is re-announced if desired (ExaBGP drops an identical re-announcement without sending an UPDATE)
  and withdrawn otherwise, so nothing diverges silently.
- in flight: written, unacknowledged commands (at most `max_inflight`), matched to `done`/`error` in order. A diff
  looks at advertised overlaid with the in-flight commands (a small overlay, not a copy of the table).
- queued: rendered but unwritten commands; a newer `set_desired` replaces them, diffing against advertised + in
  flight so nothing is lost.

Start-up (`start()`): ExaBGP keeps its routes when the API process (the controller) dies and respawns it, so a new
speaker first learns ExaBGP's adj-rib-out. It writes `show neighbor json` and `show adj-rib out json`; both run on
ExaBGP's ordered async queue, behind any command the previous instance left half-done, whose late `done`/`error`
would otherwise be taken for ours. Acks are discarded until the neighbor list (a JSON list) arrives. When the RIB
dump is acknowledged the speaker is `ready`; a `set_desired` before that only records the desired set.

End-of-RIB: the neighbors run with `manual-eor true` (otherwise ExaBGP sends EoR before the routes are re-announced
after a restart and the ToR flushes its stale routes). The speaker sends `announce eor` for each family of each peer
once the first full desired set is acknowledged, and again whenever a peer comes up afterwards (ExaBGP has then
queued its whole adj-rib-out for that peer and emits the EoR after it). ExaBGP answers `error` for a peer that is not
established; that is expected and ignored (the peer's `up` will trigger the EoR).

Graceful shutdown (`drain()`, RFC 8326): from then on every desired route carries the GRACEFUL_SHUTDOWN community
65535:0, so the next diff re-announces each advertised route with it (an attribute change) and routes desired later
carry it from the start. The peers lower their preference for the routes while they still forward on them; the
process that owns ExaBGP then stops it without a NOTIFICATION so graceful restart keeps the routes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bgpadv.config import Config, PeerConfig
from bgpadv.core.model import Attributes, Cause, Route
from bgpadv.core.prefix import Address, Prefix
from bgpadv.observe.observers import NullObserver, RouteChange, SpeakerObserver
from bgpadv.speaker import protocol
from bgpadv.speaker.protocol import (
    Ack,
    Negotiated,
    NeighborList,
    Notification,
    PeerState,
    RibInDone,
    RibRoute,
    Shutdown,
    UpdateEvent,
)
from bgpadv.speaker.sent import SendLog

log = logging.getLogger(__name__)

_ANNOUNCE = "announce"
_WITHDRAW = "withdraw"
_EOR = "eor"
_SHOW_NEIGHBORS = "show-neighbors"
_SHOW_RIB = "show-rib"
_SHOW_RIB_IN = "show-rib-in"

_FAMILY = {4: protocol.family_of(Prefix(4, 0, 0)), 6: protocol.family_of(Prefix(6, 0, 0))}
_Key = tuple[int, int, int]  # `Prefix.key`: (IP version, network value, prefix length)
GRACEFUL_SHUTDOWN = "65535:0"  # RFC 8326 well-known community


def _network(key: _Key, route: Route | None = None) -> Prefix:
    """The prefix of a key: the route's own when there is one (no allocation)."""
    return route.prefix if route is not None else Prefix.from_key(key)


def _same_wire(a: Route, b: Route) -> bool:
    """`a.wire_key() == b.wire_key()` for two routes whose prefix keys are equal, compared on the precomputed keys."""
    if a is b:
        return True
    x, y = a.next_hop, b.next_hop
    if x is not y and (x is None or y is None or x.key != y.key):
        return False
    return a.attributes is b.attributes or a.attributes == b.attributes


@dataclass(slots=True)
class _Command:
    kind: str
    peer: str  # PeerConfig.name ("" for commands addressed to ExaBGP itself)
    line: str
    routes: tuple[Route, ...] = ()  # announce
    prefixes: tuple[Prefix, ...] = ()  # withdraw
    keys: tuple[_Key, ...] = ()  # `Prefix.key` of each route (announce) or prefix (withdraw), in order
    cause: Cause | None = None
    seq: int = 0
    changes: list[RouteChange] = field(default_factory=list)


def _on_link(peers: Sequence[PeerConfig]) -> dict[str, Address]:
    """Per interface peer (`PeerConfig.on_link`): the node's link-local address, every route's next hop to it."""
    return {p.name: p.on_link for p in peers if p.on_link is not None}


class Speaker:
    """Drives one ExaBGP through its process API. Not thread-safe: one thread calls every method."""

    def __init__(
        self,
        peers: Sequence[PeerConfig],
        write: Callable[[str], None],
        observer: SpeakerObserver = NullObserver(),  # noqa: B008 - stateless default
        *,
        max_inflight: int = 100,
        chunk_prefixes: int = 1000,
        local_asn: int | None = None,
        max_line_bytes: int = protocol.MAX_LINE_BYTES,
        self_addresses: Sequence[Address] = (),
        on_received: Callable[[object, float], None] | None = None,
        sent: SendLog | None = None,
    ) -> None:
        if max_inflight < 1 or chunk_prefixes < 1:
            raise ValueError("max_inflight and chunk_prefixes must be at least 1")
        self._peers = {p.name: p for p in peers}
        self._write = write
        self._observer = observer
        self._max_inflight = max_inflight
        self._chunk = chunk_prefixes
        self._local_asn = local_asn
        # what `next-hop self` stands for, per IP version (config nextHopSelf); absent: ExaBGP's own `self`
        self._self = {a.version: a for a in self_addresses}
        # per peer: the configured addresses, then what was derived for the session where nothing is configured
        # (PeerConfig.self_addresses: the node's global address of that family, bgpadv.runtime.peering)
        self._self_of = {p.name: {**{a.version: a for a in p.self_addresses}, **self._self} for p in peers}
        self._on_link = _on_link(peers)
        # iBGP peers get no AS-path prepend: our own AS in the path makes the peer drop the route (loop detection)
        self._ibgp = {p.name for p in peers if local_asn is not None and p.ibgp(local_asn)}
        self._no_prepend: dict[tuple[bool, Attributes], Attributes] = {}
        self._max_line_bytes = max_line_bytes
        self._advertised: dict[str, dict[_Key, Route | None]] = {name: {} for name in self._peers}
        self._unknown: dict[str, set[_Key]] = {name: set() for name in self._peers}  # keys advertised maps to None
        self._desired: dict[str, dict[_Key, Route]] | None = None  # None: nothing asked for yet
        # per peer: key -> (what the latest unacknowledged command for it leaves ExaBGP holding (None: withdrawn),
        # that command); queued and in-flight commands both: what `apply_delta` diffs against
        self._pending: dict[str, dict[_Key, tuple[Route | None, _Command]]] = {name: {} for name in self._peers}
        self._cause: Cause | None = None
        self._inflight: deque[_Command] = deque()
        self._queue: deque[_Command] = deque()
        self._seq = 0
        self._started = False
        self._discarding = False  # start-up: acks of a previous instance's commands may still arrive
        self._rib_dump: dict[str, dict[_Key, Route | None]] = {}
        self._ready = False
        self._eor_done = False  # the first full desired set was acknowledged and EoR sent
        self._peer_states: dict[str, str] = {}
        # per interface peer: whether its current session negotiated Extended Next Hop for IPv4 (ExaBGP's
        # `negotiated` message); absent: unknown (no session, or not told yet): IPv4 withheld (`no_extended_next_hop`)
        self._extended_next_hop: dict[str, bool] = {}
        self._synced: dict[str, bool] = {name: False for name in self._peers}
        self.errors = 0  # commands answered `error` (EoR excluded)
        self.skipped = 0  # desired routes a peer cannot carry that got past the guard (logged as errors; a bug)
        self.closed = False  # ExaBGP said it is shutting down
        self.draining = False  # drain(): every route carries GRACEFUL_SHUTDOWN
        self._gshut: dict[Attributes, Attributes] = {}  # attributes -> the same with 65535:0 (shared objects)
        # the import hook (bgpadv.importer): it gets every received UPDATE, peer state, the start-up neighbor list
        # and ExaBGP's adj-rib-in (`show adj-rib in json`, then RibInDone)
        self.on_received = on_received
        # each prefix's last acknowledged send per peer, for `explain --status-url` (bgpadv.speaker.sent); `sent`: one
        # on other clocks (a test's)
        self.sent = sent if sent is not None else SendLog(self._peers)

    @classmethod
    def from_config(
        cls,
        config: Config,
        write: Callable[[str], None],
        observer: SpeakerObserver = NullObserver(),  # noqa: B008 - stateless default
        *,
        on_received: Callable[[object, float], None] | None = None,
    ) -> Speaker:
        """The speaker bgpadv's configuration asks for: its peers, flow control, local AS and `self` addresses;
        `on_received`: the import hook (what ExaBGP receives, for the egress import)."""
        return cls(
            config.peers,
            write,
            observer,
            max_inflight=config.exabgp.max_inflight,
            chunk_prefixes=config.exabgp.chunk_prefixes,
            local_asn=config.local_asn,
            self_addresses=config.next_hop_self,
            on_received=on_received,
        )

    # ------------------------------------------------------------------ public API

    @property
    def ready(self) -> bool:
        """The start-up resync finished: set_desired now sends."""
        return self._ready

    @property
    def inflight(self) -> int:
        return len(self._inflight)

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def peer_states(self) -> dict[str, str]:
        return dict(self._peer_states)

    @property
    def no_extended_next_hop(self) -> frozenset[str]:
        """The interface peers whose session has not negotiated the Extended Next Hop capability for IPv4 unicast
        (RFC 8950): not up, up before ExaBGP said what it negotiated, or negotiated without it. The guard refuses
        their IPv4 routes (`extended-next-hop-not-negotiated`). Other peers are never in it."""
        return frozenset(
            name
            for name, peer in self._peers.items()
            if peer.interface is not None and not self._extended_next_hop.get(name, False)
        )

    @property
    def extended_next_hop(self) -> dict[str, bool]:
        """Per interface peer whose current session ExaBGP reported on: whether it negotiated Extended Next Hop for
        IPv4 unicast (absent: not known yet, or no session)."""
        return dict(self._extended_next_hop)

    def advertised(self, peer: str) -> Mapping[Prefix, Route]:
        """Routes ExaBGP holds for `peer` according to acknowledged commands (unknown prefixes left out)."""
        return {r.prefix: r for r in self._advertised.get(peer, {}).values() if r is not None}

    def held(self, peer: str) -> Collection[_Key]:
        """The prefixes ExaBGP holds for `peer` (unknown ones included), as `Prefix.key` keys: a view, no copy.
        The guard keeps these first when a peer goes over `safety.maxRoutes`."""
        return self._advertised.get(peer, {}).keys()

    def unknown(self, peer: str) -> int:
        """How many prefixes for `peer` are in an unknown state (learned at start-up or after an error)."""
        return len(self._unknown.get(peer, ()))

    @property
    def needs_retry(self) -> bool:
        """An `error` left prefixes unknown that the last desired set cares about: call `resync()` later."""
        return self._ready and any(self._unknown.values()) and self._pending_work() == 0

    def start(self) -> None:
        """Learn ExaBGP's adj-rib-out (hitless restart of the controller). Call once, before anything else."""
        if self._started:
            return
        self._started = True
        self._discarding = True
        self._rib_dump = {name: {} for name in self._peers}
        self._queue.append(_Command(_SHOW_NEIGHBORS, "", protocol.SHOW_NEIGHBORS))
        self._queue.append(_Command(_SHOW_RIB, "", protocol.SHOW_ADJ_RIB_OUT))
        if self.on_received is not None:
            self._queue.append(_Command(_SHOW_RIB_IN, "", protocol.SHOW_ADJ_RIB_IN))
        self._pump(time.monotonic())

    def set_desired(self, desired: Mapping[str, Iterable[Route]], cause: Cause | None = None) -> None:
        """The WHOLE desired set per peer (key = PeerConfig.name); a configured peer left out gets nothing. Diffs
        every desired route against what ExaBGP holds: start-up, resync, reload; `apply_delta` for a change."""
        table: dict[str, dict[_Key, Route]] = {}
        for name, peer in self._peers.items():
            wanted: dict[_Key, Route] = {}
            admit = self._admission(name, peer)
            dropped = 0
            for route in desired.get(name, ()):
                admitted = admit(route)
                if admitted is not None:
                    wanted[admitted.prefix.key] = admitted
                else:
                    dropped += 1
            self._report_dropped(name, dropped)
            table[name] = wanted
        self._warn_unconfigured(desired)
        self._desired = table
        self._cause = cause
        if self._ready:
            self._replan()

    def apply_delta(self, changes: Mapping[str, Mapping[_Key, Route | None]], cause: Cause | None = None) -> None:
        """A change of the desired set: per peer, prefix key -> the route it gets now (None: none). Only those keys
        are diffed against what ExaBGP will hold once every queued and in-flight command is acknowledged, and
        commands are planned for them alone, behind the ones already queued (which stay): the cost of the change,
        not of the table. The same end state as `set_desired` of the whole set the changes lead to."""
        if self._desired is None:
            self._desired = {name: {} for name in self._peers}
        touched: dict[str, list[_Key]] = {}
        for name, peer in self._peers.items():
            change = changes.get(name)
            if not change:
                continue
            wanted = self._desired.setdefault(name, {})
            admit = self._admission(name, peer)
            dropped = 0
            for key, route in change.items():
                admitted = admit(route) if route is not None else None
                if admitted is None:
                    dropped += route is not None
                    wanted.pop(key, None)
                else:
                    wanted[key] = admitted
            self._report_dropped(name, dropped)
            touched[name] = list(change)
        self._warn_unconfigured(changes)
        self._cause = cause
        if self._ready and touched:
            self._replan_keys(touched)

    def _admission(self, name: str, peer: PeerConfig) -> Callable[[Route], Route | None]:
        """The route as desired for `name` (GRACEFUL_SHUTDOWN added while draining), or None when the session
        cannot carry it: the peer lacks the family, or the next hop is of another version (or a `self` ExaBGP
        cannot resolve on this session)."""
        self_ok = self._self_ok(peer)
        own_self = self._self_of[name]
        on_link = name in self._on_link  # every route goes via the node's link-local address (RFC 8950)
        unresolved = peer.interface is not None and not on_link  # no next hop valid on its link: nothing goes

        def admit(route: Route) -> Route | None:
            if self.draining:
                route = self._graceful_shutdown(route)
            version = route.prefix.key[0]
            if on_link or unresolved:
                return route if on_link and version in self_ok else None
            hop = route.next_hop if route.next_hop is not None else own_self.get(version)
            if version in self_ok and (self_ok[version] if hop is None else hop.version == version):
                return route
            return None

        return admit

    def _report_dropped(self, name: str, dropped: int) -> None:
        if dropped:
            # Defence in depth: the guard (bgpadv.safety.guard) refuses these with `family-not-carried` before they
            # get here, so this is a bug upstream; never send ExaBGP what the session cannot carry, and say so.
            self.skipped += dropped
            log.error(
                "desired routes the peer cannot carry reached the speaker; not sent",
                extra={"peer": name, "routes": dropped},
            )

    def _warn_unconfigured(self, desired: Mapping[str, object]) -> None:
        unknown = [peer for peer in desired if peer not in self._peers]
        if unknown:
            log.warning("desired routes for unconfigured peers ignored", extra={"peers": sorted(unknown)})

    def set_peers(self, peers: Sequence[PeerConfig]) -> None:
        """The peer set changed live (ExaBGP was reloaded with these neighbors: `bgpadv.runtime.controller`'s peer
        move). A new peer starts with nothing advertised and not synced; it gets routes from the next `set_desired`
        (ExaBGP queues them until its session is up, and the speaker's End-of-RIB follows its `up`). A removed peer's
        tables, queued commands and desired set are dropped (the controller withdrew its routes before ExaBGP dropped
        it); acks of its commands still in flight are matched in order and discarded. A kept peer keeps everything:
        its session is untouched. A kept peer whose configuration changed is taken as the new one's (same name)."""
        new = {p.name: p for p in peers}
        removed = [name for name in self._peers if name not in new]
        for name in removed:
            self._advertised.pop(name, None)
            self._unknown.pop(name, None)
            self._pending.pop(name, None)
            self._peer_states.pop(name, None)
            self._extended_next_hop.pop(name, None)
            self._synced.pop(name, None)
            self._rib_dump.pop(name, None)
            if self._desired is not None:
                self._desired.pop(name, None)
        self._queue = deque(c for c in self._queue if c.peer in new or c.peer == "")
        for name in new:
            if name not in self._peers:
                self._advertised[name] = {}
                self._unknown[name] = set()
                self._pending[name] = {}
                self._synced[name] = False
                if self._started and not self._ready:
                    self._rib_dump.setdefault(name, {})
                if self._desired is not None:
                    self._desired[name] = {}
        self._peers = new
        self.sent.set_peers(new)
        self._self_of = {p.name: {**{a.version: a for a in p.self_addresses}, **self._self} for p in peers}
        self._on_link = _on_link(peers)
        self._ibgp = {p.name for p in peers if self._local_asn is not None and p.ibgp(self._local_asn)}
        log.info("peer set changed", extra={"peers": list(new), "removed": removed})

    def drain(self) -> None:
        """Graceful shutdown: re-announce every desired route with GRACEFUL_SHUTDOWN (65535:0), now and from now on.
        Idempotent; there is no way back (the process is about to stop)."""
        if self.draining:
            return
        self.draining = True
        log.warning("graceful shutdown: re-announcing every route with the GRACEFUL_SHUTDOWN community")
        if self._desired is not None:
            self._desired = {
                name: {k: self._graceful_shutdown(r) for k, r in table.items()} for name, table in self._desired.items()
            }
            if self._ready:
                self._replan()

    def resync(self) -> None:
        """Diff the last desired set again (after errors left prefixes unknown)."""
        if self._ready and self._desired is not None:
            self._replan()

    def handle_line(self, line: str, at: float | None = None) -> None:
        """One line ExaBGP wrote on the API process's stdin."""
        at = time.monotonic() if at is None else at
        reply = protocol.parse_reply(line)
        handler = self._HANDLERS.get(type(reply))
        if handler is not None:
            handler(self, reply, at)
        self._pump(at)

    # ------------------------------------------------------------------ replies (handle_line)

    def _reply_ack(self, reply: Ack, at: float) -> None:
        self._on_ack(reply.ok, at)

    def _reply_rib_route(self, reply: RibRoute, at: float) -> None:
        if self._inflight and self._inflight[0].kind == _SHOW_RIB_IN:
            if self.on_received is not None:
                self.on_received(reply, at)
        else:
            self._on_rib_route(reply)

    def _reply_neighbors(self, reply: NeighborList, at: float) -> None:
        if self.on_received is not None:
            self.on_received(reply, at)
        self._discarding = False
        for peer, state in reply.peers:
            if peer in self._peers:
                self._peer_states[peer] = state
                self._observer.peer_state(peer, state, at)  # a restarted controller learns sessions here

    def _reply_peer_state(self, reply: PeerState, at: float) -> None:
        self._on_peer_state(reply, at)
        if self.on_received is not None and reply.peer in self._peers:
            self.on_received(reply, at)

    def _reply_negotiated(self, reply: Negotiated, at: float) -> None:
        """A session's OPEN messages were exchanged (before its `up`): what it may carry from now on."""
        peer = self._peers.get(reply.peer)
        if peer is None or peer.interface is None:
            return
        self._extended_next_hop[reply.peer] = reply.extended_next_hop
        log.log(
            logging.INFO if reply.extended_next_hop else logging.WARNING,
            "session negotiated"
            if reply.extended_next_hop
            else "session negotiated without Extended Next Hop for IPv4 unicast: IPv4 routes are not sent to this peer",
            extra={"peer": reply.peer, "nexthop": list(reply.nexthop)},
        )

    def _reply_update(self, reply: UpdateEvent, at: float) -> None:
        if reply.direction == "receive" and self.on_received is not None:
            self.on_received(reply, at)
        elif reply.direction == "send":
            self._observer.updates_sent(reply.peer, [p for p, _ in reply.announced], list(reply.withdrawn), at)

    def _reply_notification(self, reply: Notification, at: float) -> None:
        log.warning(
            "BGP notification",
            extra={"peer": reply.peer, "direction": reply.direction, "code": reply.code, "sub": reply.subcode},
        )
        if reply.peer in self._peers:
            self._observer.notification(reply.peer, reply.direction, reply.code, reply.subcode, reply.message, at)

    def _reply_shutdown(self, reply: Shutdown, at: float) -> None:
        log.warning("ExaBGP is shutting down")
        self.closed = True

    _HANDLERS: ClassVar[Mapping[type, Callable[[Speaker, Any, float], None]]] = {
        Ack: _reply_ack,
        RibRoute: _reply_rib_route,
        NeighborList: _reply_neighbors,
        PeerState: _reply_peer_state,
        Negotiated: _reply_negotiated,
        UpdateEvent: _reply_update,
        Notification: _reply_notification,
        Shutdown: _reply_shutdown,
    }

    # ------------------------------------------------------------------ internals

    def _graceful_shutdown(self, route: Route) -> Route:
        """`route` with GRACEFUL_SHUTDOWN added to its communities; equal attributes map to one shared object, so
        the diff's identity shortcut and its grouping by attributes keep working."""
        attributes = self._gshut.get(route.attributes)
        if attributes is None:
            old = route.attributes
            if GRACEFUL_SHUTDOWN in old.communities:
                attributes = old
            else:
                attributes = dataclasses.replace(old, communities=(*old.communities, GRACEFUL_SHUTDOWN))
            self._gshut[old] = attributes
        return route if attributes is route.attributes else dataclasses.replace(route, attributes=attributes)

    def _self_ok(self, peer: PeerConfig) -> dict[int, bool]:
        """The IP versions `peer` carries, each with whether ExaBGP can resolve a `next-hop self` route of it: only
        within the session's family (or IPv4)."""
        session = (peer.local_address or peer.address).version
        return {v: v == 4 or v == session for v, family in _FAMILY.items() if family in peer.families}

    def _next_hop(self, route: Route, peer: str) -> Address | None:
        """The next hop to render: the node's link-local address toward an interface peer (the only next hop valid
        on that link), else the route's own, or the address `self` stands for on `peer`'s session."""
        on_link = self._on_link.get(peer)
        if on_link is not None:
            return on_link
        return route.next_hop if route.next_hop is not None else self._self_of[peer].get(route.prefix.version)

    def _wire_attributes(self, attributes: Attributes, peer: str) -> Attributes:
        """The attributes as sent to `peer` (`Attributes.on_session`): no AS-path prepend on an iBGP session, no
        local preference on an eBGP one. One shared object per distinct input, for grouping."""
        ibgp = peer in self._ibgp
        if (attributes.as_path_prepend == 0) if ibgp else (attributes.local_preference is None):
            return attributes
        out = self._no_prepend.get((ibgp, attributes))
        if out is None:
            out = self._no_prepend[(ibgp, attributes)] = attributes.on_session(ibgp)
        return out

    def _pending_work(self) -> int:
        return len(self._queue) + sum(1 for c in self._inflight if c.kind in (_ANNOUNCE, _WITHDRAW))

    def _in_flight(self, peer: str) -> dict[_Key, Route | None]:
        """What the unacknowledged commands for `peer` will change, the latest winning: key -> announced route, or
        None for a withdrawal. Overlaid on `advertised`, it is what ExaBGP will hold once they succeed."""
        overlay: dict[_Key, Route | None] = {}
        for cmd in self._inflight:
            if cmd.peer != peer:
                continue
            if cmd.kind == _ANNOUNCE:
                overlay.update(zip(cmd.keys, cmd.routes, strict=True))
            elif cmd.kind == _WITHDRAW:
                overlay.update(dict.fromkeys(cmd.keys))
        return overlay

    def _replan(self) -> None:
        """Diff the whole desired set of every peer against what ExaBGP will hold (advertised and in flight); the
        queued commands are dropped first (the latest desired set wins)."""
        assert self._desired is not None
        self._queue = deque(c for c in self._queue if c.kind not in (_ANNOUNCE, _WITHDRAW))  # latest wins
        self._pending = {name: {} for name in self._peers}
        for cmd in self._inflight:
            self._note_pending(cmd)
        self._synced = dict.fromkeys(self._peers, False)  # every desired set ends in a `synced`, even a no-op
        for name, peer in self._peers.items():
            wanted = self._desired.get(name, {})
            advertised = self._advertised[name]
            overlay = self._in_flight(name)
            groups: _Groups = {}
            for key, route in wanted.items():
                current = overlay.get(key, advertised.get(key)) if overlay else advertised.get(key)
                if current is None or not _same_wire(current, route):
                    self._group(groups, name, key, route)
            # what ExaBGP will hold (advertised, less in-flight withdrawals, plus in-flight announcements) but is
            # no longer wanted; an unknown prefix (None in advertised) counts as held
            gone = [k for k in advertised if k not in wanted and (k not in overlay or overlay[k] is not None)]
            gone += [k for k, r in overlay.items() if r is not None and k not in wanted and k not in advertised]
            self._queue_commands(name, peer, groups, gone, _overlaid(overlay, advertised))
        at = time.monotonic()
        for name in self._peers:
            self._check_synced(name, at)
        self._maybe_initial_eor()
        self._pump(at)

    def _replan_keys(self, touched: Mapping[str, Sequence[_Key]]) -> None:
        """`_replan` for the given keys of the given peers only, diffed against advertised overlaid with every
        queued and in-flight command (which stay): new commands go behind them, so the latest one wins."""
        assert self._desired is not None
        for name, keys in touched.items():
            peer = self._peers[name]
            wanted = self._desired.get(name, {})
            advertised = self._advertised[name]
            pending = self._pending[name]
            groups: _Groups = {}
            gone: list[_Key] = []
            for key in dict.fromkeys(keys):
                p = pending.get(key)
                if p is not None:
                    current, holds = p[0], p[0] is not None
                else:
                    current, holds = advertised.get(key), key in advertised
                route = wanted.get(key)
                if route is not None:
                    if current is None or not _same_wire(current, route):
                        self._group(groups, name, key, route)
                elif holds:
                    gone.append(key)

            def held_route(
                k: _Key,
                pending: dict[_Key, tuple[Route | None, _Command]] = pending,
                advertised: dict[_Key, Route | None] = advertised,
            ) -> Route | None:
                p = pending.get(k)
                return p[0] if p is not None else advertised.get(k)

            self._synced[name] = False
            self._queue_commands(name, peer, groups, gone, held_route)
        at = time.monotonic()
        for name in touched:
            self._check_synced(name, at)
        self._maybe_initial_eor()
        self._pump(at)

    def _group(self, groups: _Groups, name: str, key: _Key, route: Route) -> None:
        """Add a route to announce to its group: by (next hop, attributes), one group a bulk announcement; keyed by
        the next hop's precomputed key (every route may carry its own equal object)."""
        hop = self._next_hop(route, name)
        by = (None if hop is None else hop.key, route.attributes)
        group = groups.get(by)
        if group is None:
            group = groups[by] = (hop, self._wire_attributes(route.attributes, name), [])
        group[2].append((key, route))

    def _queue_commands(
        self,
        name: str,
        peer: PeerConfig,
        groups: _Groups,
        gone: list[_Key],
        held_route: Callable[[_Key], Route | None],
    ) -> None:
        """Render and queue the announcements (`groups`) and withdrawals (`gone`; `held_route(key)`: the route
        ExaBGP will hold there, for its prefix) for one peer."""
        for next_hop, attributes, items in sorted(groups.values(), key=_group_order):
            items.sort(key=_first)
            prefixes = [r.prefix for _, r in items]
            start = 0
            for count, line in protocol.announce_lines(
                peer.address,
                next_hop,
                attributes,
                prefixes,
                self._chunk,
                self._max_line_bytes,
                local_asn=self._local_asn,
            ):
                chosen = items[start : start + count]
                start += count
                self._enqueue(
                    _Command(
                        _ANNOUNCE,
                        name,
                        line,
                        routes=tuple(r for _, r in chosen),
                        keys=tuple(k for k, _ in chosen),
                        cause=self._cause,
                    )
                )
        gone.sort()  # by (version, value, prefixlen); one run of commands per version
        for version in sorted({k[0] for k in gone}):
            keys = [k for k in gone if k[0] == version]
            prefixes = [_network(k, held_route(k)) for k in keys]
            start = 0
            for count, line in protocol.withdraw_lines(peer.address, prefixes, self._chunk, self._max_line_bytes):
                run = slice(start, start + count)
                start += count
                self._enqueue(
                    _Command(
                        _WITHDRAW,
                        name,
                        line,
                        prefixes=tuple(prefixes[run]),
                        keys=tuple(keys[run]),
                        cause=self._cause,
                    )
                )

    def _enqueue(self, cmd: _Command) -> None:
        self._queue.append(cmd)
        self._note_pending(cmd)

    def _note_pending(self, cmd: _Command) -> None:
        """An announcement or withdrawal not yet acknowledged: what it leaves ExaBGP holding, per key."""
        pending = self._pending.setdefault(cmd.peer, {})
        if cmd.kind == _ANNOUNCE:
            for k, r in zip(cmd.keys, cmd.routes, strict=True):
                pending[k] = (r, cmd)
        elif cmd.kind == _WITHDRAW:
            for k in cmd.keys:
                pending[k] = (None, cmd)

    def _send_now(self, cmd: _Command) -> None:
        self._seq += 1
        cmd.seq = self._seq
        if len(cmd.line) + 1 > self._max_line_bytes:
            raise AssertionError(f"command of {len(cmd.line)} bytes exceeds the line limit")
        self._write(cmd.line)
        self._inflight.append(cmd)

    def _pump(self, at: float) -> None:
        while self._queue and len(self._inflight) < self._max_inflight and not self.closed:
            cmd = self._queue.popleft()
            if cmd.kind == _ANNOUNCE:
                cmd.changes = [RouteChange(cmd.peer, "announce", r) for r in cmd.routes]
            elif cmd.kind == _WITHDRAW:
                old = self._advertised[cmd.peer]
                cmd.changes = [RouteChange(cmd.peer, "withdraw", r) for k in cmd.keys if (r := old.get(k))]
            self._send_now(cmd)
            if cmd.kind in (_ANNOUNCE, _WITHDRAW):
                self._observer.commands_written(cmd.seq, cmd.changes, cmd.cause, at)

    def _on_ack(self, ok: bool, at: float) -> None:
        if self._discarding or not self._inflight:
            log.debug("ack of a command this speaker did not write ignored", extra={"ok": ok})
            return
        cmd = self._inflight.popleft()
        if cmd.peer and cmd.peer not in self._peers:  # a peer removed since (set_peers): nothing to record
            if cmd.kind in (_ANNOUNCE, _WITHDRAW):
                self._observer.command_acked(cmd.seq, ok, at)
            self._maybe_initial_eor()
            return
        if cmd.kind in (_ANNOUNCE, _WITHDRAW):
            self._acked(cmd, ok, at)
        elif cmd.kind == _EOR:
            if not ok:
                log.debug("End-of-RIB refused (peer not established)", extra={"peer": cmd.peer})
        elif cmd.kind == _SHOW_RIB:
            self._advertised = {name: self._rib_dump.get(name, {}) for name in self._peers}
            self._inherit_extended_next_hop()
            self._unknown = {name: {k for k, r in rib.items() if r is None} for name, rib in self._advertised.items()}
            self._rib_dump = {}
            self._ready = True
            log.info(
                "start-up resync done",
                extra={"learned": {p: len(v) for p, v in self._advertised.items()}, "ok": ok},
            )
            if self._desired is not None:
                self._replan()
        elif cmd.kind == _SHOW_RIB_IN and self.on_received is not None:
            self.on_received(RibInDone(), at)
        self._maybe_initial_eor()

    def _acked(self, cmd: _Command, ok: bool, at: float) -> None:
        """An announcement or withdrawal answered: advertised, the unknown keys and the pending index follow."""
        self._observer.command_acked(cmd.seq, ok, at)
        rib = self._advertised[cmd.peer]
        unknown = self._unknown[cmd.peer]
        if ok:
            self.sent.acked(cmd.peer, cmd.kind, cmd.keys, cmd.cause, at)
            if cmd.kind == _ANNOUNCE:
                rib.update(zip(cmd.keys, cmd.routes, strict=True))
            else:
                for k in cmd.keys:
                    rib.pop(k, None)
            if unknown:
                unknown.difference_update(cmd.keys)
        else:
            rib.update(dict.fromkeys(cmd.keys))
            unknown.update(cmd.keys)
        pending = self._pending.get(cmd.peer)
        if pending:
            for k in cmd.keys:
                p = pending.get(k)
                if p is not None and p[1] is cmd:
                    del pending[k]
        if not ok:
            self.errors += 1
            self._observer.peer_error(
                cmd.peer, f"ExaBGP refused a command ({cmd.kind} of {len(cmd.keys)} prefixes); retrying", at
            )
            log.error(
                "ExaBGP refused a command; its prefixes are now unknown and will be retried",
                extra={"peer": cmd.peer, "kind": cmd.kind, "prefixes": len(cmd.routes) + len(cmd.prefixes)},
            )
        self._check_synced(cmd.peer, at)

    def _inherit_extended_next_hop(self) -> None:
        """A restarted controller finds sessions up whose `negotiated` message went to its predecessor (ExaBGP says
        it once per session, and `show neighbor json` has no Extended Next Hop). The predecessor sent an interface
        peer IPv4 routes only when the session had negotiated it: IPv4 routes in ExaBGP's adj-rib-out for an
        interface peer that is up mean it was; none leave it unknown (withheld until the next session)."""
        for name, peer in self._peers.items():
            if peer.interface is None or name in self._extended_next_hop or self._peer_states.get(name) != "up":
                continue
            if any(key[0] == 4 for key in self._advertised[name]):
                self._extended_next_hop[name] = True

    def _on_rib_route(self, route: RibRoute) -> None:
        if route.peer in self._rib_dump:
            self._rib_dump[route.peer][route.prefix.key] = None  # present; attributes not compared

    def _on_peer_state(self, event: PeerState, at: float) -> None:
        if event.peer not in self._peers:
            return
        self._peer_states[event.peer] = event.state
        if event.state != "up":  # the next session says again what it negotiated
            self._extended_next_hop.pop(event.peer, None)
        self._observer.peer_state(event.peer, event.state, at)
        if event.state == "down" and event.reason:
            self._observer.peer_error(event.peer, f"session down: {event.reason}", at)
        if event.state == "up" and self._eor_done:
            self._queue_eor(event.peer)

    def _queue_eor(self, name: str) -> None:
        peer = self._peers[name]
        for family in peer.families:
            self._queue.append(_Command(_EOR, name, protocol.render_eor(peer.address, family)))

    def _check_synced(self, name: str, at: float) -> None:
        if self._synced.get(name) or self._desired is None:
            return
        busy = any(c.peer == name and c.kind in (_ANNOUNCE, _WITHDRAW) for c in (*self._queue, *self._inflight))
        if not busy:
            self._synced[name] = True
            known = len(self._advertised[name]) - len(self._unknown[name])  # len(advertised(name))
            self._observer.synced(name, known, at)

    def _maybe_initial_eor(self) -> None:
        if self._eor_done or not self._ready or self._desired is None or self._pending_work():
            return
        self._eor_done = True
        for name in self._peers:
            self._queue_eor(name)


def _overlaid(overlay: Mapping[_Key, Route | None], advertised: Mapping[_Key, Route | None]) -> _HeldRoute:
    """The route ExaBGP will hold at a key: the in-flight overlay's, else the advertised one."""

    def held_route(key: _Key) -> Route | None:
        return overlay.get(key, advertised.get(key))

    return held_route


_HeldRoute = Callable[[_Key], "Route | None"]
_Groups = dict[tuple[object, ...], tuple[Address | None, Attributes, list[tuple[_Key, Route]]]]
"""Announcements to render: by (next hop key, attributes) -> (next hop, wire attributes, [(key, route)])."""


def _group_order(group: tuple[Address | None, Attributes, list[tuple[_Key, Route]]]) -> tuple[object, ...]:
    next_hop, attributes, _ = group
    return (
        0 if next_hop is None else next_hop.version,
        0 if next_hop is None else next_hop.value,
        repr(attributes),
    )


def _first(item: tuple[_Key, Route]) -> _Key:
    return item[0]
