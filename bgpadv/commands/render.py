"""`bgpadv render`: what would be announced, what is refused, and what yields no route, for a cluster.

The cluster comes from manifests (`--manifests`: files, directories, `-` for standard input) or, read-only, from the
API (`--kubeconfig`: each resource the service reads is listed once, `bgpadv.commands.inputs`). The plan goes through
the same last guard (`bgpadv.safety.guard`) as in the controller, for the configured peers: a route is listed when at
least one peer would get it, with those peers; the guard's refusals follow the planner's. Every claim address that
yields neither a route nor a refusal is listed too, with why (a stopped or pending VM, a claim waiting for its
address, a network being deleted: `bgpadv.commands.outcome`).

Two forms. JSON is a contract for scripts and never loses keys:
`{"routes": [{"prefix", "nextHop", "network", "kind", "source", "node", "family", "attributes", "peers"}],
"refused": [{"source", "value", "reason", "message", "network"}], "rejected": (the same list, its former name, kept
for scripts written against it), "unrouted": [{"source", "value", "why", "network"}]}` (`nextHop` is `"self"` for
next-hop-self routes, `node` is null for network-wide routes, `attributes` holds `localPreference`, `med`,
`communities`, `largeCommunities`, `asPathPrepend`). The table is for people: aligned columns, grouped by network,
then the refused values, then the addresses without a route.

Exit codes: 0 rendered; 2 the configuration is invalid (every field path on stderr) or the cluster cannot be read
(a missing manifest, manifests without any object bgpadv reads, an unreachable API, a refused LIST).

An advertised network of a kind no OVN-K release bgpadv knows routes (`bgpadv.core.datapath`) gets a `warning:` line
on stderr, in both forms: its routes are announced, but the node has no path for them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from bgpadv import config as bgpadv_config
from bgpadv.commands.explain import attributes_json, attributes_text
from bgpadv.commands.inputs import InputError, read_objects
from bgpadv.commands.outcome import Instance, Unrouted, guarded, served_on, unrouted
from bgpadv.core import datapath, yamlsafe
from bgpadv.core.bounded import brief
from bgpadv.core.model import Plan, Refusal, Route
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.printable import printable
from bgpadv.core.reasons import IMPORT_MALFORMED as MALFORMED
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan as make_plan
from bgpadv.runtime.peering import serving_nodes
from bgpadv.sources.decode import state_from_objects

if TYPE_CHECKING:  # the importer loads only where routes are imported
    from bgpadv.importer.guard import Interface

OUTPUTS = ("table", "json")
T = TypeVar("T")


def route_json(route: Route, peers: Sequence[str] = ()) -> dict:
    return {
        "prefix": str(route.prefix),
        "nextHop": "self" if route.next_hop is None else str(route.next_hop),
        "network": route.network,
        "kind": str(route.kind),
        "source": str(route.source),
        "node": route.node,
        "family": route.family,
        "attributes": attributes_json(route.attributes),
        "peers": list(peers),
    }


def unrouted_json(item: Unrouted) -> dict:
    return {"source": str(item.source), "value": item.value, "why": item.why, "network": item.network}


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


def render_table(plan: Plan, instance: Instance | None = None, silent: Sequence[Unrouted] = ()) -> str:
    """Routes grouped by network (columns aligned across groups), then refusals with their reasons, then the
    addresses without a route and why, then a summary. `instance` gives the peers of each route."""
    lines: list[str] = []
    header = ("PREFIX", "NEXT HOP", "KIND", "NODE", "SOURCE", "ATTRIBUTES", "PEERS")
    rows = [
        (
            printable(r.network),
            (
                str(r.prefix),
                "self" if r.next_hop is None else str(r.next_hop),
                printable(r.kind),
                printable(r.node or "-"),
                printable(r.source),
                attributes_text(r.attributes),
                ", ".join(instance.peers_of(r)) if instance is not None else "-",
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
    if silent:
        silent_header = ("SOURCE", "VALUE", "NETWORK", "WHY")
        silent_rows = [
            (printable(u.source), printable(u.value), printable(u.network or "-"), printable(u.why)) for u in silent
        ]
        silent_widths = _widths(silent_header, silent_rows)
        lines.append(f"no route ({len(silent_rows)})")
        lines.append(_line(silent_header, silent_widths))
        lines.extend(_line(row, silent_widths) for row in silent_rows)
        lines.append("")
    subnets = sum(1 for r in plan.routes if r.kind == "subnet")
    lines.append(
        f"{len(plan.routes)} route(s): {subnets} subnet, {len(plan.routes) - subnets} host; "
        f"{len(plan.rejected)} refused; {len(silent)} without a route"
    )
    return "\n".join(lines) + "\n"


def render_plan(
    plan: Plan,
    output: str,
    instance: Instance | None = None,
    silent: Sequence[Unrouted] = (),
    peers: list[dict] | None = None,
) -> str:
    """The plan as text: `output` is "table" or "json" (ValueError otherwise). `instance` gives each route's peers,
    `silent` the addresses that yield no route (`outcome.unrouted`), `peers` which nodes serve which peer
    (`bgpadv.runtime.peering.serving_nodes`): a `peers` key or a last table section."""
    if output == "json":
        refused = [refusal_json(x) for x in plan.rejected]
        doc = {
            "routes": [route_json(r, instance.peers_of(r) if instance is not None else ()) for r in plan.routes],
            "refused": refused,
            "rejected": refused,
            "unrouted": [unrouted_json(u) for u in silent],
        }
        if peers is not None:
            doc["peers"] = peers
        return json.dumps(doc, indent=2) + "\n"
    if output == "table":
        return render_table(plan, instance, silent) + (render_peers(peers) if peers is not None else "")
    raise ValueError(f"unknown output {output!r} (expected one of {', '.join(OUTPUTS)})")


def render_peers(peers: list[dict]) -> str:
    """The table of which nodes' instances peer with which peer."""
    header = ("PEER", "ASN", "SESSION", "NODE SELECTOR", "SERVED BY")
    rows = [
        (p["peer"], str(p["asn"]), p["session"], p["nodeSelector"] or "-", ", ".join(p["nodes"]) or "no node")
        for p in peers
    ]
    widths = _widths(header, rows)
    lines = ["", f"peers ({len(rows)})", _line(header, widths), *(_line(row, widths) for row in rows)]
    return "\n".join(lines) + "\n"


def main(
    config_path: str,
    manifests: str | Sequence[str],
    output: str,
    learned_path: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> int:
    """Run `bgpadv render`: 0 rendered; 2 a usage error, an invalid configuration (every field path on stderr) or a
    cluster that cannot be read (manifests: files, directories or "-"; or `kubeconfig`, read-only).

    With `learned_path` it prints instead what the egress import (`importRoutes`) would install from those learned
    routes: a YAML/JSON mapping peer address → prefix → next hop, e.g. `{"10.0.0.1": {"0.0.0.0/0": "10.0.0.1"}}`."""
    if output not in OUTPUTS:
        print(f"error: --output must be one of {', '.join(OUTPUTS)}, got {output!r}", file=sys.stderr)
        return 2
    cfg = bgpadv_config.load_or_report(config_path, listener=False)  # no listener: no node address
    if cfg is None:
        return 2
    inputs = [manifests] if isinstance(manifests, str) else list(manifests)
    try:
        objects, warnings = read_objects(cfg, inputs, kubeconfig, context)
    except InputError as e:
        print(f"bgpadv render: {printable(e)}", file=sys.stderr)
        return 2
    state, _ignored = state_from_objects(objects)  # decoded once, as the store decodes events
    for warning in warnings:
        print(f"warning: {printable(warning)}", file=sys.stderr)
    if learned_path is not None:
        try:
            learned, malformed = load_learned(learned_path, {str(p.address) for p in cfg.peers})
        except (OSError, ValueError) as e:
            print(f"{learned_path}: {printable(e)}", file=sys.stderr)
            return 2
        for problem in malformed:
            print(f"{learned_path}: refused ({MALFORMED}): {printable(problem)}", file=sys.stderr)
        interfaces = node_interfaces(objects, cfg.node_name)
        rows = imports(state, cfg, learned, interfaces)
        sys.stdout.write(render_imports(rows, output, malformed))
        return 0
    peers = serving_nodes(cfg, state.nodes) if cfg.peer_selection else None  # which node serves which peer
    cfg = served_on(state, cfg, cfg.speaker_node)  # the peers the node's labels select, self from its InternalIPs
    instance = guarded(state, cfg)
    for warning in datapath_warnings(state, instance.plan):
        print(f"warning: {warning}", file=sys.stderr)
    sys.stdout.write(render_plan(instance.plan, output, instance, unrouted(state, cfg, (instance,)), peers))
    return 0


def datapath_warnings(state: ClusterState, plan: Plan) -> list[str]:
    """One warning per advertised network whose kind has no node-side path in any known OVN-K release."""
    out = []
    for name in sorted(plan.context.networks):
        view = state.cudns.get(name)
        if view is None:
            continue
        kind = datapath.kind_of(view.topology, view.secondary, view.ipam_disabled)
        note = datapath.unsupported(kind) if kind is not None else None
        if note is not None:
            out.append(f"network {printable(name)}: {note}")
    return out


MAX_LEARNED_PROBLEMS = 100


def load_learned(path: str, peers: set[str] | None = None) -> tuple[dict[str, dict[Prefix, Address | None]], list[str]]:
    """A learned-routes file: peer address → prefix → next hop (null: none). Returns what can be read and one
    problem per entry that cannot (a peer that is no address or, with `peers`, no configured peer; a prefix or next
    hop that is no address; a value of the wrong type): each is refused (`malformed-learned-route`), the rest still
    counts, as the live import treats ExaBGP's echo. ValueError only when the file is no mapping at all."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text: {e.reason}") from None
    documents = list(yamlsafe.load_documents(text))
    raw = documents[0][1] if len(documents) == 1 else None
    if isinstance(raw, yamlsafe.Refused) or not isinstance(raw, dict):
        raise ValueError("must map peer addresses to {prefix: next hop}")
    out: dict[str, dict[Prefix, Address | None]] = {}
    problems: list[str] = []

    def problem(text: str) -> None:
        if len(problems) < MAX_LEARNED_PROBLEMS:
            problems.append(text)
        elif len(problems) == MAX_LEARNED_PROBLEMS:
            problems.append("(more malformed entries not listed)")

    for peer_key, routes in raw.items():
        peer = _parsed(Address.parse, peer_key)
        if peer is None:
            problem(f"peer {brief(peer_key)}: not an IP address")
            continue
        if peers is not None and str(peer) not in peers:
            problem(f"peer {peer}: not a configured peer")
            continue
        if not isinstance(routes, dict):
            problem(f"peer {peer}: must map prefixes to next hops, got {brief(routes)}")
            continue
        table = out.setdefault(str(peer), {})
        for prefix_key, next_hop in routes.items():
            prefix = _parsed(lambda t: Prefix.parse(t, strict=False), prefix_key)
            if prefix is None:
                problem(f"peer {peer}: prefix {brief(prefix_key)}: not an IP prefix")
                continue
            hop = None if next_hop is None else _parsed(Address.parse, next_hop)
            if next_hop is not None and hop is None:
                problem(f"peer {peer}: {prefix}: next hop {brief(next_hop)}: not an IP address")
                continue
            table[prefix] = hop
    return out, problems


def _parsed(parse: Callable[[str], T], value: object) -> T | None:
    if not isinstance(value, str):
        return None
    try:
        return parse(value)
    except ValueError:
        return None


def node_interfaces(objects: Sequence[dict], node_name: str | None) -> list[Interface] | None:
    """What render knows of the node's connected subnets: the OVN-K address annotations (`node-primary-ifaddr`,
    `host-cidrs`) of the instance's node (per-node mode), or of every node (cluster mode); None when none says."""
    from bgpadv.importer.guard import interfaces_of_annotations

    out: list[Interface] = []
    for obj in objects:
        meta = obj.get("metadata")
        if obj.get("kind") != "Node" or not isinstance(meta, dict):
            continue
        if node_name is not None and meta.get("name") != node_name:
            continue
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            out += interfaces_of_annotations(annotations, str(meta.get("name")))  # each node's primary link
    return out or None


def imports(
    state: ClusterState,
    cfg: bgpadv_config.Config,
    learned: dict,
    interfaces: list[Interface] | None = None,
) -> list[dict]:
    """Per `importRoutes` network: its VRF/table and the routes it would hold, from `learned` (bgpadv.importer),
    through the import guard as the live import applies it (`interfaces`: the node's, None when unknown)."""
    from bgpadv.importer.guard import context_of
    from bgpadv.importer.netlink import vrf_name
    from bgpadv.importer.policy import desired_routes
    from bgpadv.importer.reconciler import selected_networks

    context = make_plan(state, cfg).context
    selected = selected_networks(context.networks)
    nodes = (a for addresses in context.node_addresses.values() for a in addresses)
    subnets = tuple(dict.fromkeys(s for sel in selected.values() for s in sel.subnets))
    guard = context_of(cfg, subnets, nodes, interfaces, local_interfaces=cfg.node_name is not None)
    out = []
    for net in cfg.import_routes.networks:
        sel = selected.get(net.name)
        if sel is None and not net.external:
            out.append({"network": net.name, "selected": False, "table": None, "vrf": None, "routes": []})
            continue
        network_id = net.network_id if net.network_id is not None else sel.network_id if sel else None
        desired = desired_routes(learned, net, sel.subnets if sel else (), cfg.import_routes.max_routes, guard)
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
                "refusals": [r.as_json() for r in desired.refusals],
            }
        )
    return out


def render_imports(rows: list[dict], output: str, malformed: Sequence[str] = ()) -> str:
    if output == "json":
        return json.dumps({"imports": rows, "malformed": list(malformed)}, indent=2) + "\n"
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
        lines += [
            f"  refused {r['prefix']} via {r['nextHop'] or '-'} from {r['peer']}: {r['reason']} "
            f"({printable(r['message'])})"
            for r in row.get("refusals", ())
        ]
    if malformed:
        lines.append(f"{len(malformed)} learned entries refused ({MALFORMED}): see stderr")
    return "\n".join(lines) + "\n" if lines else "no importRoutes networks configured\n"


def announced(state: ClusterState, cfg: bgpadv_config.Config) -> Plan:
    """What would really be announced: the plan through the last guard for the configured peers (the routes some
    peer gets), with the planner's refusals followed by the guard's."""
    return guarded(state, cfg).plan
