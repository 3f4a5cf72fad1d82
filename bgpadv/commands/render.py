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
on stderr, in both forms: its routes are announced, but the node has no path for them. So does a peer that would get
routes whose third-party next hop is off the subnet it shares with the nodes (`off_subnet_warnings`: per-rack ToRs
with one central speaker), and, in cluster mode, IPv6 routes over IPv4 sessions refused for want of a next-hop self
address that the live replicas would take from the node they run on (`--node NAME` judges the replica on NAME).

Which instance is judged: cluster mode's (`--node NAME`: a replica whose pod runs on NAME); in per-node mode (`mode:
per-node`, or `--per-node` for a configuration the DaemonSet runs as it is) the instance on `--node NAME`, or every
node's in turn: the table has one section per node, the JSON one `{"nodes": [{"node": NAME, ...the document}]}`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from bgpadv import config as bgpadv_config
from bgpadv.commands import render_learned
from bgpadv.commands.inputs import InputError, read_objects
from bgpadv.commands.outcome import Instance, Unrouted, guarded, served_on, unrouted
from bgpadv.commands.route_text import attributes_text, next_hop_text, route_fields
from bgpadv.commands.table import Column, headers, line, rows, widths
from bgpadv.core import datapath
from bgpadv.core.model import Plan, Refusal, Route
from bgpadv.core.printable import join_lines, printable, write_line, write_text
from bgpadv.core.reasons import FAMILY_NOT_CARRIED
from bgpadv.core.state import ClusterState
from bgpadv.runtime.peering import serving_nodes
from bgpadv.sources.decode.dispatch import state_from_objects

OUTPUTS = ("table", "json")


def route_json(route: Route, peers: Sequence[str] = ()) -> dict:
    return {**route_fields(route), "peers": list(peers)}


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


def route_columns(instance: Instance | None) -> tuple[Column[Route], ...]:
    """The routes table's columns (grouped by network, so no NETWORK column); `instance` gives the peers."""
    return (
        Column("PREFIX", lambda r: r.prefix),
        Column("NEXT HOP", next_hop_text),
        Column("KIND", lambda r: r.kind),
        Column("NODE", lambda r: r.node or "-"),
        Column("SOURCE", lambda r: r.source),
        Column("ATTRIBUTES", lambda r: attributes_text(r.attributes)),
        Column("PEERS", lambda r: ", ".join(instance.peers_of(r)) if instance is not None else "-"),
    )


REFUSED_COLUMNS: tuple[Column[Refusal], ...] = (
    Column("SOURCE", lambda x: x.source),
    Column("VALUE", lambda x: x.value),
    Column("REASON", lambda x: x.reason),
    Column("MESSAGE", lambda x: x.message),
)
UNROUTED_COLUMNS: tuple[Column[Unrouted], ...] = (
    Column("SOURCE", lambda u: u.source),
    Column("VALUE", lambda u: u.value),
    Column("NETWORK", lambda u: u.network or "-"),
    Column("WHY", lambda u: u.why),
)
PEER_COLUMNS: tuple[Column[dict], ...] = (
    Column("PEER", lambda p: p["peer"]),
    Column("ASN", lambda p: p["asn"]),
    Column("SESSION", lambda p: p["session"] + (f" unnumbered on {p['interface']}" if p.get("interface") else "")),
    Column("NODE SELECTOR", lambda p: p["nodeSelector"] or "-"),
    Column("SERVED BY", lambda p: ", ".join(p["nodes"]) or "no node"),
)


def _section(title: str, columns: Sequence[Column], items: Sequence[object]) -> list[str]:
    """`title (n)`, the header and one line per item, then a blank line."""
    found = rows(columns, items)
    sizes = widths(headers(columns), found)
    return [f"{title} ({len(found)})", line(headers(columns), sizes), *(line(row, sizes) for row in found), ""]


def render_table(plan: Plan, instance: Instance | None = None, silent: Sequence[Unrouted] = ()) -> str:
    """Routes grouped by network (columns aligned across groups), then refusals with their reasons, then the
    addresses without a route and why, then a summary. `instance` gives the peers of each route."""
    lines: list[str] = []
    columns = route_columns(instance)
    header = headers(columns)
    printed = list(zip((printable(r.network) for r in plan.routes), rows(columns, plan.routes), strict=True))
    sizes = widths(header, [row for _, row in printed])
    for network in sorted({net for net, _ in printed}):
        group = [row for net, row in printed if net == network]
        lines.append(f"network {network} ({len(group)} route(s))")
        lines.append(line(header, sizes))
        lines.extend(line(row, sizes) for row in group)
        lines.append("")
    if not plan.routes:
        lines.extend(["no routes", ""])
    if plan.rejected:
        lines += _section("refused", REFUSED_COLUMNS, plan.rejected)
    if silent:
        lines += _section("no route", UNROUTED_COLUMNS, silent)
    subnets = sum(1 for r in plan.routes if r.kind == "subnet")
    lines.append(
        f"{len(plan.routes)} route(s): {subnets} subnet, {len(plan.routes) - subnets} host; "
        f"{len(plan.rejected)} refused; {len(silent)} without a route"
    )
    return join_lines(lines)


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
    return join_lines(["", *_section("peers", PEER_COLUMNS, peers)[:-1]])


def main(
    config_path: str,
    manifests: str | Sequence[str],
    output: str,
    learned_path: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    per_node: bool = False,
    node: str | None = None,
) -> int:
    """Run `bgpadv render`: 0 rendered; 2 a usage error, an invalid configuration (every field path on stderr) or a
    cluster that cannot be read (manifests: files, directories or "-"; or `kubeconfig`, read-only), or a `node`
    the cluster does not have. `per_node`, `node`: which instance is judged (see the module).

    With `learned_path` it prints instead what the egress import (`importRoutes`) would install from those learned
    routes: a YAML/JSON mapping peer address → prefix → next hop, e.g. `{"10.0.0.1": {"0.0.0.0/0": "10.0.0.1"}}`
    (`bgpadv.commands.render_learned`)."""
    if output not in OUTPUTS:
        write_line(sys.stderr, f"error: --output must be one of {', '.join(OUTPUTS)}, got {printable(output)}")
        return 2
    judged = bgpadv_config.Judged(per_node=per_node, node=node, unread=[])  # no password is needed to judge
    cfg = bgpadv_config.load_or_report(config_path, listener=False, judged=judged)  # no listener: no node address
    if cfg is None:
        return 2
    inputs = [manifests] if isinstance(manifests, str) else list(manifests)
    try:
        objects, warnings = read_objects(cfg, inputs, kubeconfig, context)
    except InputError as e:
        write_line(sys.stderr, f"bgpadv render: {printable(e)}")
        return 2
    state, _ignored = state_from_objects(objects)  # decoded once, as the store decodes events
    for warning in [*judged.notes, *warnings]:
        write_line(sys.stderr, f"warning: {printable(warning)}")
    if node is not None and node not in state.nodes:
        write_line(sys.stderr, f"bgpadv render: --node {printable(node)}: the cluster has no such Node")
        return 2
    if learned_path is not None:
        return render_learned.main(state, cfg, objects, learned_path, output)
    peers = serving_nodes(cfg, state.nodes) if cfg.peer_selection else None  # which node serves which peer
    if cfg.node_name == bgpadv_config.EVERY_NODE:
        write_text(sys.stdout, render_every_node(state, cfg, output, peers))
        return 0
    cfg = served_on(state, cfg, cfg.speaker_node)  # the peers the node's labels select, self from its InternalIPs
    instance = guarded(state, cfg)
    for warning in [*datapath_warnings(state, instance.plan), *instance_warnings(state, cfg, instance)]:
        write_line(sys.stderr, f"warning: {warning}")
    write_text(sys.stdout, render_plan(instance.plan, output, instance, unrouted(state, cfg, (instance,)), peers))
    return 0


def render_every_node(state: ClusterState, cfg: bgpadv_config.Config, output: str, peers: list[dict] | None) -> str:
    """Per-node mode judged for every node of the state: each node's instance in turn (`outcome.instances`), as the
    DaemonSet's pods run it; one table section, or one JSON document, per node."""
    sections: list[str] = []
    documents: list[dict] = []
    for name in sorted(n for n in state.nodes if n):
        served = served_on(state, cfg, name)
        instance = guarded(state, served, name)
        for warning in [*datapath_warnings(state, instance.plan), *instance_warnings(state, served, instance)]:
            write_line(sys.stderr, f"warning: node {printable(name)}: {warning}")
        text = render_plan(instance.plan, output, instance, unrouted(state, served, (instance,)))
        if output == "json":
            documents.append({"node": name, **json.loads(text)})
        else:
            sections.append(f"== node {printable(name)} ==\n{text}")
    if output == "json":
        doc: dict = {"nodes": documents}
        if peers is not None:
            doc["peers"] = peers
        return json.dumps(doc, indent=2) + "\n"
    if not sections:
        sections.append("no Node in the cluster: per-node mode runs no instance\n")
    return "".join(f"{section}\n" for section in sections) + (render_peers(peers) if peers is not None else "")


def instance_warnings(state: ClusterState, cfg: bgpadv_config.Config, instance: Instance) -> list[str]:
    """What the live deployment would do differently or badly, for one judged instance: see the module."""
    out = off_subnet_warnings(state, cfg, instance)
    carried = [r for r in instance.plan.rejected if r.reason == FAMILY_NOT_CARRIED]
    if carried and cfg.node_name is None and cfg.speaker_node is None:
        out.append(
            f"{len(carried)} route(s) refused {FAMILY_NOT_CARRIED} (e.g. {printable(carried[0].value)}): a live "
            "cluster-mode replica takes next-hop self for the other family from the node it runs on (the address on "
            "the session's interface, else the Node's InternalIP of that family), which render cannot know; pass "
            "--node NAME to judge the replica on NAME, or set nextHopSelf for the family"
        )
    return out


def off_subnet_warnings(state: ClusterState, cfg: bgpadv_config.Config, instance: Instance) -> list[str]:
    """One warning per peer that would get routes whose next hop lies off the subnet the peer shares with the nodes
    (their `k8s.ovn.org/host-cidrs` network holding the peer's address): a ToR reaches a third-party next hop only on
    a subnet it is attached to. Typical cause: a ToR per rack with one central speaker (cluster mode sends every
    node's routes to every peer). Peers on no node's subnet (several hops away) are not judged."""
    out = []
    for peer in cfg.peers:
        address = peer.address
        subnet = next(
            (p for n in state.nodes.values() for p in n.connected if p.version == address.version and address in p),
            None,
        )
        if subnet is None:
            continue
        off = [
            r
            for r in instance.plan.routes
            if r.next_hop is not None
            and r.next_hop.version == subnet.version
            and r.next_hop not in subnet
            and peer.name in instance.peers_of(r)
        ]
        if off:
            first = off[0]
            out.append(
                f"peer {peer.address} (on {subnet}) would get {len(off)} route(s) whose next hop is off its subnet "
                f"(e.g. {first.prefix} via {first.next_hop}, node {printable(first.node or '-')}): a ToR reaches a "
                "third-party next hop only on a subnet it shares; with a ToR per rack run per-node mode (each node "
                "peers with its own ToR), or restrict the peer with nodeSelector, or use nextHop: self"
            )
    return out


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
