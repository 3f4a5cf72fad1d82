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
from collections.abc import Callable, Iterable, Sequence
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
from bgpadv.core.printable import join_lines, printable, write_line, write_text
from bgpadv.core.reasons import FAMILY_NOT_CARRIED
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


def _cells(row: Sequence[object]) -> tuple[str, ...]:
    """Every cell of a table row made printable (`bgpadv.core.printable`): the one place a cell becomes text."""
    return tuple(printable(c) for c in row)


def _printed(rows: Iterable[Sequence[object]]) -> list[tuple[str, ...]]:
    return [_cells(row) for row in rows]


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
            _cells(
                (
                    r.prefix,
                    "self" if r.next_hop is None else r.next_hop,
                    r.kind,
                    r.node or "-",
                    r.source,
                    attributes_text(r.attributes),
                    ", ".join(instance.peers_of(r)) if instance is not None else "-",
                )
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
        refused = _printed([(x.source, x.value, x.reason, x.message) for x in plan.rejected])
        refused_widths = _widths(refused_header, refused)
        lines.append(f"refused ({len(refused)})")
        lines.append(_line(refused_header, refused_widths))
        lines.extend(_line(row, refused_widths) for row in refused)
        lines.append("")
    if silent:
        silent_header = ("SOURCE", "VALUE", "NETWORK", "WHY")
        silent_rows = _printed([(u.source, u.value, u.network or "-", u.why) for u in silent])
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
    header = ("PEER", "ASN", "SESSION", "NODE SELECTOR", "SERVED BY")
    rows = _printed(
        [
            (
                p["peer"],
                p["asn"],
                p["session"] + (f" unnumbered on {p['interface']}" if p.get("interface") else ""),
                p["nodeSelector"] or "-",
                ", ".join(p["nodes"]) or "no node",
            )
            for p in peers
        ]
    )
    widths = _widths(header, rows)
    return join_lines(["", f"peers ({len(rows)})", _line(header, widths), *(_line(row, widths) for row in rows)])


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
    routes: a YAML/JSON mapping peer address → prefix → next hop, e.g. `{"10.0.0.1": {"0.0.0.0/0": "10.0.0.1"}}`."""
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
        try:
            learned, malformed = load_learned(learned_path, {str(p.address) for p in cfg.peers})
        except (OSError, ValueError) as e:
            write_line(sys.stderr, f"{printable(learned_path)}: {printable(e)}")
            return 2
        for problem in malformed:
            write_line(sys.stderr, f"{printable(learned_path)}: refused ({MALFORMED}): {printable(problem)}")
        interfaces = node_interfaces(objects, None if cfg.node_name == bgpadv_config.EVERY_NODE else cfg.node_name)
        rows = imports(state, cfg, learned, interfaces)
        write_text(sys.stdout, render_imports(rows, output, malformed))
        return 0
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
        address = Address(peer.address.version, int(peer.address))
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
        refused = ", ".join(f"{n} {printable(reason)}" for reason, n in sorted(row["refused"].items())) or "none"
        lines.append(f"{name} ({where}, protocol 186): {len(row['routes'])} routes, refused: {refused}")
        lines += [f"  {r['prefix']} via {', '.join(r['nextHops'])}" for r in row["routes"]]
        lines += [
            f"  refused {printable(r['prefix'])} via {printable(r['nextHop'] or '-')} from {printable(r['peer'])}: "
            f"{printable(r['reason'])} ({printable(r['message'])})"
            for r in row.get("refusals", ())
        ]
    if malformed:
        lines.append(f"{len(malformed)} learned entries refused ({MALFORMED}): see stderr")
    return join_lines(lines) if lines else "no importRoutes networks configured\n"


def announced(state: ClusterState, cfg: bgpadv_config.Config) -> Plan:
    """What would really be announced: the plan through the last guard for the configured peers (the routes some
    peer gets), with the planner's refusals followed by the guard's."""
    return guarded(state, cfg).plan
