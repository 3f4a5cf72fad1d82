"""ExaBGP's entry point as bgpadv runs it, under CPython or PyPy: run as a file, never imported by bgpadv.

    <python> exabgp_boot.py <the exabgp package directory> server|validate <exabgp.conf>

It puts the ExaBGP package's parent directory first on `sys.path` (only that: under PyPy nothing else of CPython's
site-packages can be picked up; this file's own directory is taken off, so no bgpadv module shadows one ExaBGP imports),
makes four changes to ExaBGP, then runs ExaBGP's own `main`.

Each change replaces an ExaBGP internal, so each is made only on the ExaBGP it was written and tested against: a release
within `TESTED_EXABGP` whose replaced function still takes the same parameters and still names what the change assumes
it does (its code object's names), and whose helpers the change calls are still there. Otherwise ExaBGP runs its own
code for that change (slower, the same routes: the controller reads both echoes) and one log line on stderr names each
change left out and why.

The first change (measured on a bulk load of 10,000 routes): for every route a command announces or withdraws, ExaBGP
5.0 calls `Neighbor.remove_self(change)` once per peer, and that returns `copy.deepcopy(change)`: the NLRI, every
attribute object and their caches, so that `next-hop self` can be filled in per peer. A bulk load spent ~40 % of
ExaBGP's CPU in that deepcopy. After the call ExaBGP changes only the NLRI of a change (`nlri.action` when a withdrawal
is filed, `nlri.nexthop` for `next-hop self`), never its attributes. So for a change whose next hop is not `self`
bgpadv's ExaBGP copies the change and its NLRI object (shallow: what ExaBGP may still mutate is per peer again) and
shares the attributes, which stay read-only; `next-hop self` keeps ExaBGP's own deepcopy. The lab's tests run ExaBGP
through this file, so the routes the ToR learns are what prove it.

The second change (measured on the same load): with `api { send { parsed; update; } }`, `Protocol.send` parses every
UPDATE it has just packed (`Update.unpack_message`) to write it to the API process as JSON; with 10,000 routes that was
~15 % of ExaBGP's CPU on the push, the process every route waits for. bgpadv's ExaBGP writes such an UPDATE as ExaBGP's
own `packets` JSON instead: the same event, its message as bytes (hex), which the controller reads
(`bgpadv.speaker.wire`) on its own core. Only that case changes: an UPDATE on a session that negotiated ADD-PATH for
sending, a configuration that asks for `packets` or `consolidate`, and every other message (OPEN, NOTIFICATION,
End-of-RIB, which ExaBGP writes elsewhere) keep ExaBGP's path. The fourth change: the hex of that JSON is rendered by
`bytes.hex`, the same text as ExaBGP's `hexstring` (a format call per byte). The lab's tests read the `sent` stage from
this echo.

The third change (measured on a ROUTE-REFRESH answer): ExaBGP's outgoing RIB (`OutgoingRIB.updates`) hands the session
one `Update` per route for two things bgpadv sends a lot of: its answer to a ROUTE-REFRESH (the whole table again, what
a ToR asks for whenever its operator edits inbound policy) and every IPv6 unicast route (it groups only IPv4 unicast).
Each such `Update` becomes its own BGP message, 10,000 messages for 10,000 routes, each echoed to the controller and
parsed by the ToR. bgpadv's ExaBGP merges consecutive single-route `Update`s of one unicast family whose path attributes
are the same (ExaBGP's attribute index: the attributes and the next hop) into one `Update`, which ExaBGP's own
`Update.messages` then packs to the negotiated message size, as it does for IPv4 today. Only neighbours in the stream
are merged, so nothing moves across a ROUTE-REFRESH marker (enhanced refresh's BoRR and EoRR still bracket the re-sent
routes) or across an update with other attributes; a prefix already in the group ends it rather than joining it, so a
withdrawal and an announcement of one prefix keep their order; a group holds at most `COALESCED_ROUTES` routes, so a big
table still goes out while it is read; a neighbour configured with `group-updates false` gets ExaBGP's stream as it is.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
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


TESTED_EXABGP = ((5, 0, 13), (5, 0, 15))
"""The lowest and highest ExaBGP release the changes were written and tested against (`make compat` runs both; the
range pyproject.toml allows). Any other release runs ExaBGP's own code, all of it."""


@dataclass(frozen=True)
class Patch:
    """One change to ExaBGP: `owner.attribute` (a class's function, or a module's) becomes `replacement(original)`,
    if the original still takes `parameters` and its code still names `uses` (what the replacement assumes it does:
    `deepcopy` in `remove_self`, the parse and the API write in `send`, ...). `also`: further checks of what the
    replacement itself calls, each a reason to refuse or None."""

    name: str
    owner: Any
    attribute: str
    parameters: tuple[str, ...]
    uses: frozenset[str]
    replacement: Callable[[Any], Any]
    also: tuple[Callable[[], str | None], ...] = ()


def parse_release(release: str) -> tuple[int, ...] | None:
    """`5.0.15` as (5, 0, 15); None for a release that is not dotted numbers (a development build)."""
    parts = release.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def signature_refusal(function: Any, parameters: tuple[str, ...], uses: frozenset[str] = frozenset()) -> str | None:
    """Why `function` is not the one a change was written for (its parameters' names, the names its code uses), or
    None."""
    if function is None:
        return "missing"
    try:
        found = tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return "no signature"
    if found != parameters:
        return f"takes ({', '.join(found)}), not ({', '.join(parameters)})"
    code = getattr(function, "__code__", None)
    missing = sorted(uses - set(code.co_names if code is not None else ()))
    return f"no longer uses {', '.join(missing)}" if missing else None


def helper_refusal(name: str, function: Any, parameters: tuple[str, ...]) -> str | None:
    """`signature_refusal` of a function a change calls, named."""
    why = signature_refusal(function, parameters)
    return f"{name} {why}" if why is not None else None


CHANGES = ("Neighbor.remove_self", "Protocol.send", "OutgoingRIB.updates", "json.hexstring")


def install(release: str, patches: Callable[[], list[Patch]]) -> list[str]:
    """Apply each change `patches()` describes whose target is the one it was written for, under a tested `release`;
    returns why each other one was not applied (empty: all were). The changes stand alone, so the others still apply.
    `patches` is called only for a tested release: another one may not have the modules it imports."""
    version = parse_release(release)
    low, high = TESTED_EXABGP
    if version is None or not low <= version <= high:
        tested = f"{'.'.join(map(str, low))} to {'.'.join(map(str, high))}"
        return [f"{name}: ExaBGP {release} is not a tested release ({tested})" for name in CHANGES]
    try:
        described = patches()
    except (ImportError, AttributeError) as e:
        return [f"{name}: ExaBGP's modules are not where it expects them ({e})" for name in CHANGES]
    refused: list[str] = []
    for p in described:
        original = getattr(p.owner, p.attribute, None)
        why = signature_refusal(original, p.parameters, p.uses) or next(
            (reason for check in p.also if (reason := check()) is not None), None
        )
        if why is None:
            setattr(p.owner, p.attribute, p.replacement(original))
        else:
            refused.append(f"{p.name}: {why}")
    return refused


def refusal_line(release: str, refused: list[str]) -> str:
    """The one log line (bgpadv's JSON log shape) saying which changes ExaBGP runs without, and why."""
    return json.dumps(
        {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "level": "warning",
            "logger": "bgpadv.speaker.exabgp_boot",
            "msg": "ExaBGP runs its own code for the changes bgpadv could not verify (slower, same routes)",
            "exabgp": release,
            "not_applied": refused,
        }
    )


def exabgp_patches() -> list[Patch]:
    """The four changes (see the module), on the ExaBGP importable now."""
    from exabgp.bgp.message import Update
    from exabgp.bgp.message.update.nlri.cidr import CIDR
    from exabgp.bgp.neighbor import Neighbor
    from exabgp.protocol.family import AFI, SAFI
    from exabgp.reactor.api.processes import Processes
    from exabgp.reactor.api.response import json as json_encoder
    from exabgp.reactor.protocol import Protocol
    from exabgp.rib.outgoing import OutgoingRIB

    unicast = frozenset({(AFI.ipv4, SAFI.unicast), (AFI.ipv6, SAFI.unicast)})
    packets = ("self", "neighbor", "direction", "category", "negotiated", "header", "body")
    write = ("self", "process", "string", "neighbor")
    return [
        Patch(
            "Neighbor.remove_self",
            Neighbor,
            "remove_self",
            ("self", "changes"),
            frozenset({"deepcopy", "SELF", "ip_self"}),
            shallow_remove_self,
        ),
        Patch(
            "Protocol.send",
            Protocol,
            "send",
            ("self", "raw"),
            frozenset({"stats", "unpack_message", "_to_api", "writer"}),
            raw_update_echo,
            (
                lambda: helper_refusal("JSON.packets", getattr(json_encoder.JSON, "packets", None), packets),
                lambda: helper_refusal("Processes.write", getattr(Processes, "write", None), write),
            ),
        ),
        Patch(
            "OutgoingRIB.updates",
            OutgoingRIB,
            "updates",
            ("self", "grouped"),
            frozenset({"Update", "RouteRefresh"}),
            lambda original: coalesced_updates(original, Update, unicast),
            (
                lambda: helper_refusal("Update", Update.__init__, ("self", "nlris", "attributes")),
                lambda: None if hasattr(CIDR, "pack_ip") else "CIDR.pack_ip is missing",
            ),
        ),
        Patch(
            "json.hexstring",
            json_encoder,
            "hexstring",
            ("value",),
            frozenset(),
            lambda original: hexstring,
            (lambda: None if json_encoder.hexstring(SAMPLE) == hexstring(SAMPLE) else "renders hex otherwise",),
        ),
    ]


SAMPLE = bytes(range(0, 256, 15))  # bytes whose hex both renderings must agree on, digits and letters


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    package = sys.argv.pop(1)
    sys.path[:] = [os.path.dirname(package), *(p for p in sys.path if os.path.abspath(p or ".") != here)]
    sys.argv[0] = "exabgp"
    from exabgp.version import release

    refused = install(release, exabgp_patches)
    if refused:
        sys.stderr.write(refusal_line(release, refused) + "\n")
    from exabgp.application.main import main as exabgp_main

    sys.exit(exabgp_main())


if __name__ == "__main__":
    main()
