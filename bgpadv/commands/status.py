"""`bgpadv status`: what a running instance reports on its /status endpoint, printed for people.

The document is read by `bgpadv.commands.statusclient` and checked against `bgpadv.commands.statusdoc` (a
document of another shape: one line, exit 2).
Every string of it (network and peer names, reasons, resources: the cluster's or the remote instance's) is printed
through `bgpadv.core.printable` in the tables and lines, so no value can forge a line or steer the terminal;
`--json` prints the document exactly (pure ASCII)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import IO, Any, TypeVar

from bgpadv.commands import statusclient
from bgpadv.commands.statusdoc import PEER, BadDocument
from bgpadv.commands.table import Column, cells, headers, line, widths
from bgpadv.core.printable import join_lines, printable, write_json, write_line, write_text

DEFAULT_URL = "http://127.0.0.1:9179"
T = TypeVar("T")


def main(url: str = DEFAULT_URL, *, as_json: bool = False, out: IO[str] | None = None) -> int:
    """Print the status of the instance at `url`; 0 if it answered (ready or not), 1 if it could not be reached,
    2 if its answer is not a /status document of the expected shape (`bgpadv.commands.statusdoc`)."""
    out = out if out is not None else sys.stdout
    try:
        status = statusclient.status(url)
    except statusclient.NotTheDocument as exc:
        return statusclient.refuse("bgpadv status", exc)
    except statusclient.Unreachable as exc:
        write_line(sys.stderr, f"bgpadv status: cannot read {printable(exc.where)}: {printable(exc)}")
        return 1
    if as_json:
        write_json(out, status, sort_keys=True)
    else:
        write_text(out, render(status))
    return 0


def render(status: dict[str, Any]) -> str:
    """The status as aligned tables."""
    lines: list[str] = []
    ready = status.get("ready") or {}
    alive = status.get("alive") or {}
    lines.append(
        f"bgpadv {printable(status.get('version', '?'))}  "
        f"ready: {'yes' if ready.get('ok') else 'no (' + printable(ready.get('reason', '?')) + ')'}  "
        f"alive: {'yes' if alive.get('ok', True) else 'no (' + printable(alive.get('reason', '?')) + ')'}"
    )
    now = status.get("time")
    lines.append(f"last sync: {_ago(status.get('last_sync'), now)}   last plan: {_ago(status.get('last_plan'), now)}")
    lines.append("")

    peers = status.get("peers") or {}
    lines += render_sessions(peers)
    lines.append("")
    placement = status.get("placement")
    if placement:
        lines += render_placement(placement)

    routes = status.get("routes") or []
    rows = [[str(r.get("peer", "-")), r["network"], r["family"], r["kind"], str(r["count"])] for r in routes]
    lines += _table(["PEER", "NETWORK", "FAMILY", "KIND", "ROUTES"], rows, "no routes held by ExaBGP", "llllr")
    lines.append(
        f"total {printable(status.get('routes_total', 0))} routes held over all peers, "
        f"{printable(status.get('routes_planned', 0))} planned, {printable(status.get('refusals', 0))} refused values"
    )
    held = status.get("held") or {}
    held_routes = {peer: n for peer, n in (held.get("routes") or {}).items() if n}
    if held_routes or held.get("resources"):
        per_peer = ", ".join(f"{printable(n)} for {printable(peer)}" for peer, n in held_routes.items()) or "none"
        resources = ", ".join(printable(r) for r in held.get("resources") or ()) or "none"
        lines.append(f"held (fail static): withdrawals {per_peer}; unreadable resources {resources}")
    lines.append("")

    conv = status.get("convergence") or {}
    rows = [
        [stage, str(c.get("samples", 0)), _ms(c.get("p50")), _ms(c.get("p90")), _ms(c.get("p99")), _ms(c.get("max"))]
        for stage, c in sorted(conv.items(), key=lambda kv: _stage_order(kv[0]))
    ]
    lines += _table(["STAGE (since event)", "SAMPLES", "P50", "P90", "P99", "MAX"], rows, "no samples", "lrrrrr")
    imported = status.get("import")
    if imported is not None:
        lines.append("")
        lines += render_import(imported)
    return join_lines(lines)


Session = tuple[str, dict[str, Any]]
"""A peer's name and its session, as /status serves it under `peers`."""
SESSION_COLUMNS: tuple[Column[Session], ...] = (
    # an unnumbered session: the peer's link-local address with its zone, the interface
    Column("PEER", lambda s: f"{s[0]}%{s[1]['interface']}" if s[1].get("interface") else s[0]),
    Column("ASN", lambda s: _num(s[1].get("asn")), right=True),
    Column("NODE", lambda s: str(s[1].get("node") or "-")),
    Column("STATE", lambda s: str(s[1].get("state", "?"))),
    Column("UPTIME", lambda s: _duration(s[1].get("uptime_seconds")), right=True),
    Column("SENT", lambda s: _num(s[1].get("routes_sent", s[1].get("routes_advertised"))), right=True),
    Column("RECEIVED", lambda s: _num(s[1].get("routes_received")), right=True),
    Column("REFUSED", lambda s: _num(s[1].get("routes_refused")), right=True),
    Column("BFD", lambda s: str(s[1].get("bfd") or "disabled")),
)
"""The sessions table of `status` and, after an INSTANCE column, of `status --all`."""


def _session_notes(name: str, p: dict[str, Any], prefix: str = "") -> list[str]:
    """The last error and the last NOTIFICATION of a session, one line each; an unnumbered session that negotiated no
    Extended Next Hop."""
    out = []
    if p.get("interface") and p.get("extended_next_hop") is False:
        out.append(f"  {prefix}{name} negotiated no Extended Next Hop: IPv4 routes are not sent to it")
    error = p.get("last_error")
    if isinstance(error, dict) and error.get("message"):
        out.append(f"  {prefix}{name} last error ({_when(error.get('time'))}): {error['message']}")
    note = p.get("last_notification")
    if isinstance(note, dict):
        way = "sent" if note.get("direction") == "send" else "received"
        text = f"{note.get('code')}/{note.get('subcode')} {note.get('message') or ''}".rstrip()
        out.append(f"  {prefix}{name} last NOTIFICATION {way} ({_when(note.get('time'))}): {text}")
    return [printable(line) for line in out]


def render_sessions(peers: dict[str, Any]) -> list[str]:
    """Each peer's session: ASN, node, state, uptime, routes sent/received/refused, BFD; then errors/NOTIFICATIONs."""
    lines = _columns(SESSION_COLUMNS, list(peers.items()), "no peers")
    for name, p in peers.items():
        lines += _session_notes(name, p)
    return lines


def render_all(objects: list[dict[str, Any]], now: float) -> str:
    """`bgpadv status --all`: every instance's sessions from the BGPSessionState objects; an object of another
    shape (a hand-written or damaged one) is named in a last line instead of its session."""
    from bgpadv.observe.sessionstate import peer_entry

    entries, damaged = [], []
    for obj in objects:
        try:
            entries.append(PEER(peer_entry(_mappings(obj), now), ""))
        except (BadDocument, AttributeError, TypeError, ValueError, OverflowError) as exc:
            name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
            damaged.append(f"{printable(name if isinstance(name, str) else '?')} ({printable(exc)})")
    instance: Column[Session] = Column("INSTANCE", lambda s: str(s[1].get("instance") or "-"))
    sessions = [(str(e.get("peer") or "-"), e) for e in entries]
    lines = _columns((instance, *SESSION_COLUMNS), sessions, "no BGPSessionState objects")
    for e in entries:
        lines += _session_notes(str(e.get("peer")), e, prefix=f"{e.get('instance')}/")
    if damaged:
        lines.append(f"not shown, not BGPSessionState objects of the expected shape: {', '.join(damaged)}")
    return join_lines(lines)


def _mappings(obj: object) -> dict[str, Any]:
    """A listed object whose spec, status and metadata are mappings (BadDocument otherwise)."""
    if not isinstance(obj, dict):
        raise BadDocument("not a mapping")
    for key in ("metadata", "spec", "status"):
        if not isinstance(obj.get(key) or {}, dict):
            raise BadDocument(f"{key}: not a mapping")
    return obj


def main_all(
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    *,
    as_json: bool = False,
    out: IO[str] | None = None,
) -> int:
    """Print every instance's sessions read from the API; 0 read, 2 the API could not be read."""
    import time

    from bgpadv.config.schema import KubernetesConfig
    from bgpadv.sources.client import make_api_client
    from bgpadv.sources.sessionstate import list_session_states

    out = out if out is not None else sys.stdout
    try:
        objects = list_session_states(make_api_client(KubernetesConfig(kubeconfig, context)), namespace)
    except Exception as exc:  # a refused LIST, an unreachable API, no kubeconfig
        write_line(sys.stderr, f"bgpadv status --all: cannot list bgpsessionstates.bgpadv.io: {printable(exc)}")
        return 2
    if as_json:
        write_json(out, objects, sort_keys=True)
    else:
        write_text(out, render_all(objects, time.time()))
    return 0


def _when(wall: object) -> str:
    if not isinstance(wall, int | float):
        return "?"
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def render_placement(placement: dict[str, Any]) -> list[str]:
    """Which configured peers this instance serves (peers[].nodeSelector against its node's labels)."""
    node = placement.get("node")
    served = ", ".join(printable(p) for p in placement.get("serves") or []) or "none"
    where = f"node {printable(node)}" if node else "this instance (its node is not known: BGPADV_POD_NODE_NAME unset)"
    lines = [f"{where} serves: {served}"]
    others = placement.get("notServed") or []
    if others:
        lines.append(
            "not served here: "
            + ", ".join(f"{printable(p.get('peer'))} ({printable(p.get('nodeSelector'))})" for p in others)
        )
    for w in placement.get("waitingForLink") or []:  # interface peers whose link failed, tried again
        lines.append(
            f"waiting for its link: {printable(w.get('peer'))} on {printable(w.get('interface'))} for "
            f"{_secs(w.get('waitingSeconds'))} ({w.get('attempts') or 0} tries, next in "
            f"{_secs(w.get('nextAttemptSeconds'))}): {printable(w.get('reason'))}"
        )
    return [*lines, ""]


def _secs(value: object) -> str:
    return f"{value:g} s" if isinstance(value, int | float) else "?"


def render_import(imported: dict[str, Any]) -> list[str]:
    """The egress import: routes learned per peer, then per network its table and the routes it should hold and
    holds (protocol 186)."""
    rows = [
        [peer, prefix, str(next_hop or "-")]
        for peer, routes in sorted((imported.get("learned") or {}).items())
        for prefix, next_hop in routes.items()
    ]
    lines = _table(["LEARNED FROM", "PREFIX", "NEXT HOP"], rows, "no routes learned", "lll")
    if not imported.get("complete", True):
        lines.append("(the learned routes are not complete yet: nothing installed is removed for being unknown)")
    lines.append("")
    rows = []
    for name, net in sorted((imported.get("networks") or {}).items()):
        installed = net.get("installed") or {}
        desired = net.get("desired") or {}
        where = f"table {net['table']}" if net.get("table") is not None else f"VRF {net.get('vrf') or '?'} absent"
        for prefix in sorted(set(installed) | set(desired)):
            state = (
                "installed"
                if installed.get(prefix) == desired.get(prefix)
                else "pending"
                if prefix in desired
                else "leaving"
            )
            rows.append([name, where, prefix, ",".join(desired.get(prefix) or installed.get(prefix) or []), state])
        if not installed and not desired:
            rows.append([name, where, "-", "-", "-"])
    lines += _table(["IMPORT NETWORK", "TABLE", "PREFIX", "NEXT HOPS", "STATE"], rows, "no network imports", "lllll")
    refused = [
        [name, str(r.get("prefix")), str(r.get("nextHop") or "-"), str(r.get("peer")), str(r.get("reason"))]
        for name, net in sorted((imported.get("networks") or {}).items())
        for r in net.get("refusals") or ()
        if isinstance(r, dict)
    ]
    if refused:
        lines.append("")
        lines += _table(["REFUSED IMPORT", "PREFIX", "NEXT HOP", "FROM", "REASON"], refused, "none", "lllll")
    return lines


STAGE_ORDER = ("planned", "written", "acked", "sent", "handover")


def _stage_order(stage: str) -> tuple[int, str]:
    return (STAGE_ORDER.index(stage) if stage in STAGE_ORDER else len(STAGE_ORDER), stage)


def _table(header: list[str], rows: Sequence[Sequence[object]], empty: str, align: str) -> list[str]:
    """Columns padded to their widest cell, no indent; `align` has one l (left) or r (right) per column. Every cell
    is made printable first (`bgpadv.commands.table`)."""
    if not rows:
        return [header[0], f"  ({empty})"]
    printed = [cells(row) for row in rows]
    sizes = widths(header, printed)
    right = [a == "r" for a in align]
    return [line(row, sizes, "", right) for row in (header, *printed)]


def _columns(columns: Sequence[Column[T]], items: Sequence[T], empty: str) -> list[str]:
    """`_table` for items under declared columns."""
    align = "".join("r" if c.right else "l" for c in columns)
    return _table(list(headers(columns)), [[c.cell(item) for c in columns] for item in items], empty, align)


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}d{h:02}h{m:02}m" if d else f"{h}h{m:02}m{s:02}s" if h else f"{m}m{s:02}s"


def _ago(wall: float | None, now: float | None) -> str:
    if wall is None:
        return "never"
    stamp = datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{stamp} ({_duration(max(0.0, now - wall))} ago)" if now else stamp
