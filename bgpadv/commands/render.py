"""`bgpadv render`: what would be announced, and what is refused, for a directory of manifests.

The plan goes through the same last guard (`bgpadv.safety.guard`) as in the controller, for the configured peers: a
route
is listed when at least one peer would get it; the guard's refusals follow the planner's.

Two forms. JSON is a contract for scripts and never loses keys:
`{"routes": [{"prefix", "nextHop", "network", "kind", "source", "node", "family"}],
"rejected": [{"source", "value", "reason", "message", "network"}]}` (`nextHop` is `"self"` for next-hop-self routes,
`node` is null for network-wide routes). The table is for people: aligned columns, grouped by network, refusals last.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from bgpadv import config as bgpadv_config
from bgpadv.core import yamlsafe
from bgpadv.core.model import Plan, Refusal, Route
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.printable import printable
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan as make_plan
from bgpadv.safety.guard import Guard
from bgpadv.sources.manifests import load_manifests

OUTPUTS = ("table", "json")


def route_json(route: Route) -> dict:
    return {
        "prefix": str(route.prefix),
        "nextHop": "self" if route.next_hop is None else str(route.next_hop),
        "network": route.network,
        "kind": str(route.kind),
        "source": str(route.source),
        "node": route.node,
        "family": route.family,
    }


def refusal_json(refusal: Refusal) -> dict:
    return {
        "source": str(refusal.source),
        "value": refusal.value,
        "reason": refusal.reason,
        "message": refusal.message,
        "network": refusal.network,
    }


def _widths(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    return [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]


def _line(cells: Sequence[str], widths: Sequence[int], indent: str = "  ") -> str:
    return (indent + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))).rstrip()


def render_table(plan: Plan) -> str:
    """Routes grouped by network (columns aligned across groups), then refusals with their reasons, then a summary."""
    lines: list[str] = []
    header = ("PREFIX", "NEXT HOP", "KIND", "NODE", "SOURCE")
    rows = [
        (
            printable(r.network),
            (
                str(r.prefix),
                "self" if r.next_hop is None else str(r.next_hop),
                printable(r.kind),
                printable(r.node or "-"),
                printable(r.source),
            ),
        )
        for r in plan.routes
    ]
    widths = _widths(header, [row for _, row in rows])
    for network in sorted({net for net, _ in rows}):
        group = [row for net, row in rows if net == network]
        lines.append(f"network {network} ({len(group)} route(s))")
        lines.append(_line(header, widths))
        lines.extend(_line(row, widths) for row in group)
        lines.append("")
    if not plan.routes:
        lines.extend(["no routes", ""])
    if plan.rejected:
        refused_header = ("SOURCE", "VALUE", "REASON", "MESSAGE")
        refused = [
            (printable(x.source), printable(x.value), printable(x.reason), printable(x.message)) for x in plan.rejected
        ]
        refused_widths = _widths(refused_header, refused)
        lines.append(f"refused ({len(refused)})")
        lines.append(_line(refused_header, refused_widths))
        lines.extend(_line(row, refused_widths) for row in refused)
        lines.append("")
    subnets = sum(1 for r in plan.routes if r.kind == "subnet")
    lines.append(
        f"{len(plan.routes)} route(s): {subnets} subnet, {len(plan.routes) - subnets} host; "
        f"{len(plan.rejected)} refused"
    )
    return "\n".join(lines) + "\n"


def render_plan(plan: Plan, output: str) -> str:
    """The plan as text: `output` is "table" or "json" (ValueError otherwise)."""
    if output == "json":
        doc = {"routes": [route_json(r) for r in plan.routes], "rejected": [refusal_json(x) for x in plan.rejected]}
        return json.dumps(doc, indent=2) + "\n"
    if output == "table":
        return render_table(plan)
    raise ValueError(f"unknown output {output!r} (expected one of {', '.join(OUTPUTS)})")


def main(config_path: str, manifests_dir: str, output: str, learned_path: str | None = None) -> int:
    """Run `bgpadv render`: 0 ok, 2 configuration error (every field path on stderr), 1 any other error.

    With `learned_path` it prints instead what the egress import (`importRoutes`) would install from those learned
    routes: a YAML/JSON mapping peer address → prefix → next hop, e.g. `{"10.0.0.1": {"0.0.0.0/0": "10.0.0.1"}}`."""
    if output not in OUTPUTS:
        print(f"error: --output must be one of {', '.join(OUTPUTS)}, got {output!r}", file=sys.stderr)
        return 1
    cfg = bgpadv_config.load_or_report(config_path)
    if cfg is None:
        return 2
    try:
        state, warnings = load_manifests(manifests_dir)
    except OSError as e:
        print(f"{manifests_dir}: cannot read the manifests: {e}", file=sys.stderr)
        return 1
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if learned_path is not None:
        try:
            learned = load_learned(learned_path)
        except (OSError, ValueError) as e:
            print(f"{learned_path}: {e}", file=sys.stderr)
            return 1
        sys.stdout.write(render_imports(imports(state, cfg, learned), output))
        return 0
    sys.stdout.write(render_plan(announced(state, cfg), output))
    return 0


def load_learned(path: str) -> dict[str, dict[Prefix, Address | None]]:
    """A learned-routes file: peer address → prefix → next hop (null: none)."""
    documents = list(yamlsafe.load_documents(Path(path).read_text()))
    raw = documents[0][1] if len(documents) == 1 else None
    if isinstance(raw, yamlsafe.Refused) or not isinstance(raw, dict):
        raise ValueError("must map peer addresses to {prefix: next hop}")
    out: dict[str, dict[Prefix, Address | None]] = {}
    for peer, routes in raw.items():
        if not isinstance(routes, dict):
            raise ValueError(f"{peer}: must map prefixes to next hops")
        out[str(Address.parse(str(peer)))] = {
            Prefix.parse(str(prefix), strict=False): Address.parse(str(nh)) if nh is not None else None
            for prefix, nh in routes.items()
        }
    return out


def imports(state: ClusterState, cfg: bgpadv_config.Config, learned: dict) -> list[dict]:
    """Per `importRoutes` network: its VRF/table and the routes it would hold, from `learned` (bgpadv.importer)."""
    from bgpadv.importer.netlink import vrf_name
    from bgpadv.importer.policy import desired_routes
    from bgpadv.importer.reconciler import selected_networks

    selected = selected_networks(make_plan(state, cfg).context.networks)
    out = []
    for net in cfg.import_routes.networks:
        sel = selected.get(net.name)
        if sel is None and not net.external:
            out.append({"network": net.name, "selected": False, "table": None, "vrf": None, "routes": []})
            continue
        network_id = net.network_id if net.network_id is not None else sel.network_id if sel else None
        desired = desired_routes(learned, net, sel.subnets if sel else (), cfg.import_routes.max_routes)
        out.append(
            {
                "network": net.name,
                "selected": True,
                "table": net.table,
                "vrf": None if net.external else vrf_name(net.name, network_id),
                "routes": [
                    {"prefix": str(p), "nextHops": sorted(str(h) for h in hops)}
                    for p, hops in sorted(desired.routes.items(), key=lambda i: i[0].key)
                ],
                "refused": desired.refused,
            }
        )
    return out


def render_imports(rows: list[dict], output: str) -> str:
    if output == "json":
        return json.dumps({"imports": rows}, indent=2) + "\n"
    lines = []
    for row in rows:
        vrf = printable(row["vrf"]) if row["vrf"] else "? (network ID unknown)"
        where = f"table {row['table']}" if row["table"] is not None else f"VRF {vrf}"
        name = printable(row["network"])
        if not row["selected"]:
            lines.append(f"{name}: not a selected network, nothing imported")
            continue
        refused = ", ".join(f"{n} {reason}" for reason, n in sorted(row["refused"].items())) or "none"
        lines.append(f"{name} ({where}, protocol 186): {len(row['routes'])} routes, refused: {refused}")
        lines += [f"  {r['prefix']} via {', '.join(r['nextHops'])}" for r in row["routes"]]
    return "\n".join(lines) + "\n" if lines else "no importRoutes networks configured\n"


def announced(state: ClusterState, cfg: bgpadv_config.Config) -> Plan:
    """What would really be announced: the plan through the last guard for the configured peers (the routes some
    peer gets), with the planner's refusals followed by the guard's."""
    plan = make_plan(state, cfg)
    guard = Guard(cfg)
    return guard.check(plan.routes, guard.context(plan)).observed(plan)
