"""`bgpadv explain`'s two renderings of an `Explanation`: the JSON document for scripts (a contract: keys are never
dropped) and the table for people (the verdict and summary, then objects, rules with what each reason code means,
routes, the announced subnets that hold the address, and what each live instance reports).

Every value printed in the table passes through `bgpadv.core.printable` (cells in `bgpadv.commands.table`, lines in
`join_lines`); the tables are declared as columns, so a column is added in one place.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bgpadv.commands.explain_engine import Announced, Explanation, Verdict, meaning
from bgpadv.commands.route_text import attributes_text, next_hop_text, route_fields
from bgpadv.commands.table import Column, aligned, table
from bgpadv.core.model import ObjectRef
from bgpadv.core.printable import join_lines
from bgpadv.core.printable import printable as _printable

OUTPUTS = ("table", "json")
"""What `--output` may say."""


def announced_json(a: Announced) -> dict[str, Any]:
    return {**route_fields(a.route), "instance": a.instance, "peers": list(a.peers)}


def _object_json(ref: ObjectRef, says: str) -> dict[str, Any]:
    return {"object": str(ref), "kind": ref.kind, "says": says}


def _rule_json(v: Verdict) -> dict[str, Any]:
    return {
        "verdict": v.verdict,
        "stage": v.stage,
        "source": str(v.source),
        "value": v.value,
        "reason": v.reason or None,
        "message": v.message,
        "meaning": v.meaning or None,
        "network": v.network or None,
    }


def to_json(out: Explanation) -> dict[str, Any]:
    return {
        "query": out.query.text,
        "kind": out.query.kind,
        "verdict": out.verdict,
        "summary": out.summary,
        "objects": [_object_json(m.ref, m.says) for m in out.objects],
        "rules": [_rule_json(v) for v in out.rules],
        "routes": [announced_json(a) for a in out.routes],
        "covering": [announced_json(a) for a in out.covering],
        "instances": out.instances,
    }


RULE_COLUMNS: tuple[Column[Verdict], ...] = (
    Column("VERDICT", lambda v: v.verdict),
    Column("BY", lambda v: v.stage),
    Column("SOURCE", lambda v: v.source),
    Column("VALUE", lambda v: v.value),
    Column("REASON", lambda v: v.reason or "-"),
    Column("MESSAGE", lambda v: v.message),
)
ROUTE_COLUMNS: tuple[Column[Announced], ...] = (
    Column("PREFIX", lambda a: a.route.prefix),
    Column("NEXT HOP", lambda a: next_hop_text(a.route)),
    Column("NETWORK", lambda a: a.route.network),
    Column("KIND", lambda a: a.route.kind),
    Column("NODE", lambda a: a.route.node or "-"),
    Column("ATTRIBUTES", lambda a: attributes_text(a.route.attributes)),
    Column("PEERS", lambda a: ", ".join(a.peers) or "-"),
)
INSTANCE_COLUMN: Column[Announced] = Column("INSTANCE", lambda a: a.instance)
"""Per-node mode only: the instance (node) announcing the route, before PEERS."""


def route_columns(per_node: bool) -> tuple[Column[Announced], ...]:
    if not per_node:
        return ROUTE_COLUMNS
    return (*ROUTE_COLUMNS[:-1], INSTANCE_COLUMN, ROUTE_COLUMNS[-1])


def render_table(out: Explanation) -> str:
    lines = [f"{_printable(out.query.text)}: {out.verdict}", f"  {_printable(out.summary)}", ""]
    lines.append("objects")
    if out.objects:
        lines += aligned(["OBJECT", "SAYS"], [[m.ref, m.says] for m in out.objects])
    else:
        lines.append("  (no watched object mentions it)")
    lines.append("")
    lines.append("rules")
    if out.rules:
        lines += table(RULE_COLUMNS, out.rules)
        codes = sorted({v.reason for v in out.rules if v.reason})
        for code in codes:
            lines.append(f"  {_printable(code)}: {meaning(code) or '(undocumented reason code)'}")
    else:
        lines.append("  (no rule met it)")
    lines.append("")
    lines.append("routes")
    columns = route_columns(out.per_node)
    if out.routes:
        lines += table(columns, out.routes)
    else:
        lines.append("  (none)")
    if out.covering:
        lines.append("")
        lines.append("announced subnets that hold it")
        lines += table(columns, out.covering)
    if out.instances:
        lines.append("")
        lines += render_instances(out.instances)
    return join_lines(lines)


def render_instances(found: Sequence[dict[str, Any]]) -> list[str]:
    """What each running instance reports (live, `--status-url`)."""
    lines = ["instances (live /status and /sent)"]
    for inst in found:
        url = _printable(inst["url"])
        if "error" in inst:
            lines.append(f"  {url}: unreachable: {_printable(inst['error'])}")
            continue
        ready = "ready" if inst.get("ready") else f"not ready ({_printable(inst.get('ready_reason'))})"
        lines.append(f"  {url}: {ready}, last plan {_printable(inst.get('last_plan') or 'never')}")
        for peer, p in sorted(inst.get("peers", {}).items()):
            state, routes = _printable(p.get("state")), _printable(p.get("routes_advertised") or 0)
            lines.append(f"    peer {_printable(peer)}: {state}, {routes} route(s) advertised")
        for r in inst.get("routes", []):
            count, kind, family = (_printable(r.get(k)) for k in ("count", "kind", "family"))
            network, peer = _printable(r.get("network")), _printable(r.get("peer", "-"))
            lines.append(f"    holds {count} {kind} IPv{family} route(s) of {network} for {peer}")
        if "sent_error" in inst:
            lines.append(f"    send times unknown: {_printable(str(inst['sent_error']))}")
        for prefix, peers in sorted((inst.get("sent") or {}).items()):
            lines.append(f"    {_printable(prefix)}: {_sent_text(peers)}")
    return lines


def _sent_text(peers: dict[str, Any]) -> str:
    """`sent to tor-a at 2026-…Z (announce), tor-b at …` or `never sent to any peer by this instance`."""
    if not peers:
        return "never sent to any peer by this instance"
    parts = []
    for peer, sent in sorted(peers.items()):
        text = f"{_printable(peer)} at {_printable(str(sent.get('at')))} ({_printable(str(sent.get('action')))})"
        if sent.get("causeReceivedAt"):
            text += f", change seen {_printable(str(sent['causeReceivedAt']))}"
        parts.append(text)
    return "sent to " + "; ".join(parts)


def render(out: Explanation, output: str) -> str:
    """The explanation as text: the JSON document when `output` is "json", else the table."""
    if output == "json":
        return json.dumps(to_json(out), indent=2) + "\n"
    return render_table(out)
