"""ExaBGP's entry point as bgpadv runs it, under CPython or PyPy: run as a file, never imported by bgpadv.

    <python> exabgp_boot.py <the exabgp package directory> server|validate <exabgp.conf>

It puts the ExaBGP package's parent directory first on `sys.path` (only that: under PyPy nothing else of CPython's
site-packages can be picked up; this file's own directory is taken off, so no bgpadv module shadows one ExaBGP
imports), makes three changes to ExaBGP, then runs ExaBGP's own `main`.

The first change (measured, see issue 19): for every route a command announces or withdraws, ExaBGP 5.0 calls
`Neighbor.remove_self(change)` once per peer, and that returns `copy.deepcopy(change)`: the NLRI, every attribute
object and their caches, so that `next-hop self` can be filled in per peer. A bulk load spent ~40 % of ExaBGP's CPU
in that deepcopy. After the call ExaBGP changes only the NLRI of a change (`nlri.action` when a withdrawal is
filed, `nlri.nexthop` for `next-hop self`), never its attributes. So for a change whose next hop is not `self`
bgpadv's ExaBGP copies the change and its NLRI object (shallow: what ExaBGP may still mutate is per peer again) and
shares the attributes, which stay read-only; `next-hop self` keeps ExaBGP's own deepcopy. The lab's tests run
ExaBGP through this file, so the routes the ToR learns are what prove it.

The second change (measured, issue 19): with `api { send { parsed; update; } }`, `Protocol.send` parses every UPDATE
it has just packed (`Update.unpack_message`) to write it to the API process as JSON; with 10,000 routes that was
~15 % of ExaBGP's CPU on the push, the process every route waits for. bgpadv's ExaBGP writes such an UPDATE as ExaBGP's
own `packets` JSON instead: the same event, its message as bytes (hex), which the controller reads
(`bgpadv.speaker.wire`) on its own core. Only that case changes: an UPDATE on a session that negotiated ADD-PATH
for sending, a configuration that asks for `packets` or `consolidate`, and every other message (OPEN, NOTIFICATION,
End-of-RIB, which ExaBGP writes elsewhere) keep ExaBGP's path. The hex of that JSON is rendered by `bytes.hex`,
the same text as ExaBGP's `hexstring` (a format call per byte). The lab's tests read the `sent` stage from this echo.

The third change (measured, issue 19): ExaBGP's outgoing RIB (`OutgoingRIB.updates`) hands the session one `Update`
per route for two things bgpadv sends a lot of: its answer to a ROUTE-REFRESH (the whole table again, what a ToR asks
for whenever its operator edits inbound policy) and every IPv6 unicast route (it groups only IPv4 unicast). Each such
`Update` becomes its own BGP message, 10,000 messages for 10,000 routes, each echoed to the controller and parsed
by the ToR. bgpadv's ExaBGP merges consecutive single-route `Update`s of one unicast family whose path attributes
are the same (ExaBGP's attribute index: the attributes and the next hop) into one `Update`, which ExaBGP's own
`Update.messages` then packs to the negotiated message size, as it does for IPv4 today. Only neighbours in the
stream are merged, so nothing moves across a ROUTE-REFRESH marker (enhanced refresh's BoRR and EoRR still bracket
the re-sent routes) or across an update with other attributes; a prefix already in the group ends it rather than
joining it, so a withdrawal and an announcement of one prefix keep their order; a group holds at most
`COALESCED_ROUTES` routes, so a big table still goes out while it is read; a neighbour configured with
`group-updates false` gets ExaBGP's stream as it is.
"""

from __future__ import annotations

import copy
import os
import sys
from typing import Any


def shallow_remove_self(original: Any) -> Any:
    """`Neighbor.remove_self` without the deepcopy for a change whose next hop is not `self` (see the module)."""

    def remove_self(neighbor: Any, changes: Any) -> Any:
        if changes.nlri.nexthop.SELF:
            return original(neighbor, changes)
        change = copy.copy(changes)
        change.nlri = copy.copy(changes.nlri)
        return change

    remove_self.__doc__ = original.__doc__
    return remove_self


UPDATE = 2  # a BGP message's type octet (RFC 4271 §4.1)
TYPE_OCTET = 18  # where it sits in the 19-octet header


def hexstring(value: bytes) -> str:
    """ExaBGP's `exabgp.util.hexstring` (`0x` and two upper-case digits per byte) by `bytes.hex`."""
    return "0x" + value.hex().upper()


def raw_update_echo(original: Any) -> Any:
    """`Protocol.send` that echoes an UPDATE as its bytes instead of parsing it back (see the module)."""

    def send(protocol: Any, raw: bytes) -> Any:
        api = protocol.neighbor.api
        if (
            raw[TYPE_OCTET] != UPDATE
            or not api["send-parsed"]
            or api["send-packets"]
            or api["send-consolidate"]
            or _sends_paths(protocol.negotiated)
        ):
            return original(protocol, raw)
        return _send_echoing_bytes(protocol, raw)

    send.__doc__ = original.__doc__
    return send


def _sends_paths(negotiated: Any) -> bool:
    return any(negotiated.addpath.send(afi, safi) for afi, safi in negotiated.families)


def _send_echoing_bytes(protocol: Any, raw: bytes) -> Any:
    """What `Protocol.send` does for an UPDATE (count it, tell the API processes, write it), the API told by
    ExaBGP's `packets` encoder rather than its parsed one."""
    peer = protocol.peer
    peer.stats["send-update"] += 1
    neighbor = peer.neighbor
    processes = peer.reactor.processes
    if not processes.silence:
        negotiated = protocol.negotiated if neighbor.api["negotiated"] else None
        for process in neighbor.api["send-update"]:
            line = processes._encoder[process].packets(neighbor, "send", UPDATE, negotiated, raw[:19], raw[19:])
            processes.write(process, line, neighbor)
    yield from protocol.connection.writer(raw)


COALESCED_ROUTES = 2048  # at most this many routes in one merged `Update` (a few BGP messages' worth)


def coalesced_updates(original: Any, update_class: Any, families: frozenset[Any]) -> Any:
    """`OutgoingRIB.updates` whose consecutive one-route `Update`s of one of `families` with the same attributes
    are merged (see the module)."""

    def updates(rib: Any, grouped: bool) -> Any:
        stream = original(rib, grouped)
        if not grouped:
            return stream
        return coalesce(stream, update_class, families)

    updates.__doc__ = original.__doc__
    return updates


def coalesce(stream: Any, update_class: Any, families: frozenset[Any]) -> Any:
    """`stream` (ExaBGP's `Update`s and other messages, in order) with runs of mergeable one-route `Update`s merged."""
    group: list[Any] = []
    seen: set[Any] = set()
    attributes: Any = None
    family: Any = None
    for message in stream:
        nlris = getattr(message, "nlris", None) if isinstance(message, update_class) else None
        nlri = nlris[0] if nlris and len(nlris) == 1 else None
        afi_safi = (nlri.afi, nlri.safi) if nlri is not None else None
        if afi_safi not in families:
            if group:
                yield update_class(group, attributes)
                group, seen = [], set()
            yield message
            continue
        key = _prefix_key(nlri)
        same = (
            group
            and afi_safi == family
            and (message.attributes is attributes or message.attributes.index() == attributes.index())
            and key not in seen
            and len(group) < COALESCED_ROUTES
        )
        if not same:
            if group:
                yield update_class(group, attributes)
            group, seen = [], set()
            attributes, family = message.attributes, afi_safi
        group.append(nlri)
        seen.add(key)
    if group:
        yield update_class(group, attributes)


def _prefix_key(nlri: Any) -> tuple[Any, ...]:
    """The route of one unicast family: its prefix (ExaBGP's `CIDR.pack_ip`, the address cut to the mask, and the
    mask) and its ADD-PATH path identifier's bytes. Cheaper than `nlri.index()`, which builds the family's text and
    the packed prefix anew at each call (18 % of ExaBGP's CPU in a 100k refresh answer). Coarser at worst (no path
    identifier and identifier 0 both read as four zero octets), which only ends a group sooner."""
    return nlri.cidr.mask, nlri.cidr.pack_ip(), nlri.path_info.pack()


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    package = sys.argv.pop(1)
    sys.path[:] = [os.path.dirname(package), *(p for p in sys.path if os.path.abspath(p or ".") != here)]
    sys.argv[0] = "exabgp"
    from exabgp.bgp.message import Update
    from exabgp.bgp.neighbor import Neighbor
    from exabgp.protocol.family import AFI, SAFI
    from exabgp.reactor.api.response import json as json_encoder
    from exabgp.reactor.protocol import Protocol
    from exabgp.rib.outgoing import OutgoingRIB

    Neighbor.remove_self = shallow_remove_self(Neighbor.remove_self)
    Protocol.send = raw_update_echo(Protocol.send)
    unicast = frozenset({(AFI.ipv4, SAFI.unicast), (AFI.ipv6, SAFI.unicast)})
    OutgoingRIB.updates = coalesced_updates(OutgoingRIB.updates, Update, unicast)
    json_encoder.hexstring = hexstring
    from exabgp.application.main import main as exabgp_main

    sys.exit(exabgp_main())


if __name__ == "__main__":
    main()
