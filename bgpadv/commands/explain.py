"""`bgpadv explain IP | NAMESPACE/VM | NETWORK`: why an address, a VM or a network is (or is not) announced.

Built on what `render` prints, never a second rule engine: the plan of the pure planner through the last guard, per
instance and per peer (`bgpadv.commands.outcome`). For the thing asked about it lists

- **objects**: every watched object that mentions it (IPAMClaims listing the address or naming the VM or network,
  the VirtualMachineInstance and its virt-launcher pods, the CUDNs whose subnets hold it, the Nodes it runs on or is
  an address of), each with what it says that matters;
- **rules**: each verdict of the plan on it: `admitted` (a route the planner made and the guard let through to some
  peer), `refused` (the planner's or the guard's refusal: reason code, message, and what the code means, read from
  the docstrings of `bgpadv.core.reasons`, so a code added there is explained without a change here), `skipped`
  (the planner's silent skips: a stopped or pending VM, a claim waiting for its address, see `outcome`);
- **routes**: the resulting routes with next hop, attributes, the instance that announces them (per-node mode) and
  the peers that get them; for an address without a route of its own, the announced subnets that hold it.

The verdict is `announced` (every address asked about has its route: exit 0), `refused` (a rule refused one: exit 1),
`not announced` (nothing refused it, but no route: a stopped or pending VM, a network not selected: exit 1),
`covered` (no route of its own, but inside an announced subnet: exit 1) or `unknown` (no object mentions it: exit
1). Exit 2: a usage or input error (bad configuration, unreadable manifests, an unreachable API).

Offline it reads manifests (`--manifests FILE|DIR|-`, as `render` does); live (`--kubeconfig`) it lists the
resources the service reads, once, read-only (`bgpadv.sources.snapshot`: the service's own RBAC suffices). With
`--status-url` (repeatable: one per instance) it adds what each running instance reports on its `/status`: its
readiness, each peer's session state and the routes it holds for the networks concerned (counts per peer, network,
family and kind), and from its `/sent` when each peer was last sent each prefix concerned (the routes, the subnets
that hold the address, the address's own host prefix): announce or withdraw, the time ExaBGP acknowledged it and
when the cause was seen (`bgpadv.speaker.sent`; at most `explain_engine.MAX_SENT_PREFIXES` prefixes per instance).

The command is four modules, one job each: `explain_query` parses what is asked, `explain_engine` answers it from
the plan (`explain_objects` says what each object holds), `explain_render` prints the answer, and this module reads
the cluster and the live instances (through `bgpadv.commands.statusclient`, the commands' one HTTP client) and
exits.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from bgpadv.commands import statusclient
from bgpadv.commands.explain_engine import Explainer
from bgpadv.commands.explain_query import parse_query
from bgpadv.commands.explain_render import OUTPUTS, render_table, to_json
from bgpadv.core.printable import printable, write_json, write_line, write_text

EXIT_USAGE = 2


def main(
    target: str,
    config_path: str,
    manifests: Sequence[str] = (),
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    status_urls: Sequence[str] = (),
    output: str = "table",
    per_node: bool = False,
    node: str | None = None,
) -> int:
    """Run `bgpadv explain`: 0 announced, 1 not announced (refused, skipped, covered or unknown), 2 a usage or input
    error (the query, the configuration, the manifests or the API, a `node` the cluster does not have).

    Per-node mode (`mode: per-node`, or `per_node` for a configuration the DaemonSet runs as it is) judges every
    node's instance, or only `node`'s; in cluster mode `node` is the node a replica runs on (its addresses stand for
    next-hop self, as the live replica takes them)."""
    if output not in OUTPUTS:
        write_line(sys.stderr, f"bgpadv explain: --output must be table or json, got {printable(output)}")
        return EXIT_USAGE
    if not manifests and kubeconfig is None:
        write_line(sys.stderr, "bgpadv explain: give --manifests FILE|DIR|- or --kubeconfig FILE")
        return EXIT_USAGE
    try:
        query = parse_query(target)
    except ValueError as e:
        write_line(sys.stderr, f"bgpadv explain: {printable(e)}")
        return EXIT_USAGE
    explainer = _explainer(config_path, manifests, kubeconfig, context, per_node, node)
    if explainer is None:
        return EXIT_USAGE
    explanation = explainer.explain(query)
    try:
        explanation.instances = [
            live_instance(url, explanation.networks(), explanation.prefixes()) for url in status_urls
        ]
    except statusclient.NotTheDocument as e:
        return statusclient.refuse("bgpadv explain: --status-url", e)
    if output == "json":
        write_json(sys.stdout, to_json(explanation))
    else:
        write_text(sys.stdout, render_table(explanation))
    return explanation.exit_code


def _explainer(
    config_path: str,
    manifests: Sequence[str],
    kubeconfig: str | None,
    context: str | None,
    per_node: bool,
    node: str | None,
) -> Explainer | None:
    """The configuration and the cluster read, and the instances judged (every one, or `node`'s); None when one
    cannot be (what is wrong is on stderr)."""
    from bgpadv import config as bgpadv_config
    from bgpadv.commands.inputs import InputError, read_cluster
    from bgpadv.commands.outcome import instances

    judged = bgpadv_config.Judged(per_node=per_node, node=node, unread=[])  # no password is needed to judge
    cfg = bgpadv_config.load_or_report(config_path, listener=False, judged=judged)  # no listener: no node address
    if cfg is None:
        return None
    try:
        state, warnings = read_cluster(cfg, manifests, kubeconfig, context)
    except InputError as e:
        write_line(sys.stderr, f"bgpadv explain: {printable(e)}")
        return None
    for warning in [*judged.notes, *warnings]:
        write_line(sys.stderr, f"warning: {printable(warning)}")
    if node is not None and node not in state.nodes:
        write_line(sys.stderr, f"bgpadv explain: --node {printable(node)}: the cluster has no such Node")
        return None
    found = instances(state, cfg)
    if node is not None and cfg.node_name is not None:
        found = tuple(i for i in found if i.name == node)
    return Explainer(state, cfg, found)


def instance_report(
    url: str, status: dict[str, Any] | None, error: str | None, networks: Sequence[str]
) -> dict[str, Any]:
    """One instance's /status, cut to what concerns the explained networks."""
    if status is None:
        return {"url": url, "error": error or "no answer"}
    ready = status.get("ready") or {}
    return {
        "url": url,
        "ready": bool(ready.get("ok")),
        "ready_reason": ready.get("reason"),
        "last_plan": status.get("last_plan"),
        "peers": status.get("peers") or {},
        "routes": [r for r in status.get("routes") or [] if r.get("network") in networks],
    }


def live_instance(url: str, networks: Sequence[str], prefixes: Sequence[str] = ()) -> dict[str, Any]:
    """What the instance at `url` reports; an unreachable one is a report with an `error`, an older one without
    `/sent` a report with a `sent_error`. NotTheDocument (one line naming the URL) when an answer is not the
    document an instance writes."""
    try:
        report = instance_report(url, statusclient.status(url), None, networks)
    except statusclient.Unreachable as e:
        return instance_report(url, None, str(e), networks)
    if prefixes:
        try:
            report["sent"] = statusclient.sent(url, prefixes)
        except statusclient.Unreachable as e:  # an older instance: no /sent (404)
            report["sent_error"] = str(e)
    return report
