"""`bgpadv render --learned FILE`: what the egress import (`importRoutes`) would install from learned routes.

The file maps peer address -> prefix -> next hop (YAML or JSON, e.g. `{"10.0.0.1": {"0.0.0.0/0": "10.0.0.1"}}`), as
ExaBGP echoes what the peers send. Each entry that cannot be read is refused (`malformed-learned-route`, one line on
stderr each, at most `MAX_LEARNED_PROBLEMS`) and the rest still counts, as the live import treats the echo. Per
`importRoutes` network it prints its VRF/table and the routes it would hold, through the import guard as the live
import applies it (`bgpadv.importer`), for the node's connected subnets as the Node annotations state them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from bgpadv import config as bgpadv_config
from bgpadv.core import yamlsafe
from bgpadv.core.bounded import brief
from bgpadv.core.prefix import Address, Prefix
from bgpadv.core.printable import join_lines, printable, write_line, write_text
from bgpadv.core.reasons import IMPORT_MALFORMED as MALFORMED
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan as make_plan

if TYPE_CHECKING:  # the importer loads only where routes are imported
    from bgpadv.importer.guard import Interface

T = TypeVar("T")


def main(
    state: ClusterState, cfg: bgpadv_config.Config, objects: Sequence[dict], learned_path: str, output: str
) -> int:
    """Print what the import would install from the routes in `learned_path` (see the module): 0, or 2 when the
    file cannot be read or is no mapping."""
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
        out.setdefault(str(peer), {}).update(_learned_routes(peer, routes, problem))
    return out, problems


def _learned_routes(peer: Address, routes: dict, problem: Callable[[str], None]) -> dict[Prefix, Address | None]:
    """One peer's prefix → next hop entries that can be read; `problem` is told of each that cannot."""
    table: dict[Prefix, Address | None] = {}
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
    return table


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
