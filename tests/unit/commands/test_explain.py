"""`bgpadv explain`: why an address, a VM or a network is (or is not) announced, read off the plan and the guard.

Scope: one table over realistic clusters (`bgpadv_lab.objects`) — an announced VM, a refused address, a stopped VM,
a pending VM, a VM being stopped, an unknown address, an address only inside an announced subnet, a live migration
before and after its target is ready, a duplicate claim, a network not selected, a CUDN being deleted — each with its
verdict, exit code, routes (next hop, peers) and the rules that met it; per-node mode (which instance announces a
migrating VM); the reason codes explained from `bgpadv.core.reasons` alone (every published code, and no code spelt
out in the command); the JSON document; the command's exit codes and usage errors; the example dump explained as
`render` sees it; each of the command's modules keeping to its job (parse, answer, print, read), and a table cell
made printable exactly once.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from bgpadv.commands import explain, explain_render
from bgpadv.commands.explain_engine import Explainer, meaning, reason_meanings
from bgpadv.commands.explain_query import parse_query
from bgpadv.commands.outcome import instances
from bgpadv.commands.table import Column, table
from bgpadv.core import reasons
from bgpadv.core.printable import printable
from bgpadv_lab import objects as k8s
from tests import guide

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config" / "bgpadv.yaml"
EXAMPLES = ROOT / "config" / "examples"
NS = k8s.VM_NAMESPACE
NET = "cluster_udn_vmnet-a"


def cluster(*extra: dict) -> list[dict]:
    """Three workers (worker-3 IPv4 only), the selected Layer2 vmnet-a, and VM web-1 running on worker-1."""
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.node("worker-2", "10.0.0.12", "fd00::12"),
        k8s.node("worker-3", "10.0.0.13"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        k8s.ipam_claim(NS, "web-1.default", "web-1", NET, ["192.168.100.10/24"]),
        k8s.vmi(NS, "web-1", "worker-1", interfaces=[k8s.interface(["192.168.100.10"])]),
        k8s.launcher_pod(NS, "web-1", "worker-1"),
        *extra,
    ]


def migrating(target_ready: bool) -> list[dict]:
    """VM mover, live-migrating worker-1 -> worker-2; the target pod says ready when `target_ready`."""
    ready = "2025-03-01T10:00:05Z" if target_ready else None
    return [
        k8s.ipam_claim(NS, "mover.default", "mover", NET, ["192.168.100.20/24"]),
        k8s.vmi(
            NS,
            "mover",
            "worker-1",
            interfaces=[k8s.interface(["192.168.100.20"])],
            migration_state=k8s.migration_state("worker-1", "worker-2", target_ready=ready, vmi="mover"),
        ),
        k8s.launcher_pod(NS, "mover", "worker-1", suffix="src01"),
        k8s.launcher_pod(NS, "mover", "worker-2", suffix="tgt01", target_ready=ready, migration_job="job-1"),
    ]


def explained(objects: list[dict], query: str, **config):
    state = k8s.state(objects)
    cfg = k8s.config(**config)
    return Explainer(state, cfg, instances(state, cfg)).explain(parse_query(query))


def hops(result) -> set[tuple[str, str, tuple[str, ...]]]:
    return {
        (str(a.route.prefix), "self" if a.route.next_hop is None else str(a.route.next_hop), a.peers)
        for a in result.routes
    }


def rules(result) -> set[tuple[str, str]]:
    return {(v.verdict, v.reason or v.message) for v in result.rules if v.verdict != "admitted"}


PEER = ("10.0.0.1",)

CASES = [
    pytest.param(
        cluster(),
        "192.168.100.10",
        "announced",
        {("192.168.100.10/32", "10.0.0.11", PEER)},
        set(),
        id="announced-vm-address",
    ),
    pytest.param(
        cluster(),
        f"{NS}/web-1",
        "announced",
        {("192.168.100.10/32", "10.0.0.11", PEER)},
        set(),
        id="announced-vm-by-name",
    ),
    pytest.param(
        cluster(
            k8s.ipam_claim(NS, "gw.default", "gw", NET, ["192.168.100.1/24"]),
            k8s.vmi(NS, "gw", "worker-2"),
        ),
        "192.168.100.1",
        "refused",
        set(),
        {("refused", reasons.DEFAULT_GATEWAY_ADDRESS)},
        id="refused-gateway-address",
    ),
    pytest.param(
        cluster(k8s.ipam_claim(NS, "off.default", "off", NET, ["192.168.100.40/24"])),
        "192.168.100.40",
        "not announced",
        set(),
        {("skipped", "VM stopped: no VirtualMachineInstance")},
        id="stopped-vm-no-vmi",
    ),
    pytest.param(
        cluster(
            k8s.ipam_claim(NS, "done.default", "done", NET, ["192.168.100.41/24"]),
            k8s.vmi(NS, "done", None, phase="Succeeded"),
        ),
        f"{NS}/done",
        "not announced",
        set(),
        {("skipped", "VM stopped: its VirtualMachineInstance is Succeeded")},
        id="stopped-vm-succeeded",
    ),
    pytest.param(
        cluster(
            k8s.ipam_claim(NS, "new.default", "new", NET, []),
            k8s.vmi(NS, "new", None, phase="Scheduling"),
        ),
        f"{NS}/new",
        "not announced",
        set(),
        {("skipped", "no address allocated yet (status.ips is empty): pending")},
        id="pending-vm",
    ),
    pytest.param(
        cluster(),
        "192.168.100.77",
        "covered",
        set(),
        set(),
        id="unclaimed-address-inside-an-announced-subnet",
    ),
    pytest.param(cluster(), "203.0.113.9", "unknown", set(), set(), id="unknown-ip"),
    pytest.param(cluster(), f"{NS}/ghost", "unknown", set(), set(), id="unknown-vm"),
    pytest.param(cluster(), "vmnet-zz", "unknown", set(), set(), id="unknown-network"),
    pytest.param(
        cluster(*migrating(target_ready=False)),
        f"{NS}/mover",
        "announced",
        {("192.168.100.20/32", "10.0.0.11", PEER)},
        set(),
        id="migrating-vm-target-not-ready-stays-on-the-source",
    ),
    pytest.param(
        cluster(*migrating(target_ready=True)),
        "192.168.100.20",
        "announced",
        {("192.168.100.20/32", "10.0.0.12", PEER)},
        set(),
        id="migrating-vm-target-ready-points-at-the-target",
    ),
    pytest.param(
        cluster(
            k8s.ipam_claim(NS, "copy.default", "copy", NET, ["192.168.100.10/24"], created="2025-03-05T00:00:00Z"),
            k8s.vmi(NS, "copy", "worker-2"),
        ),
        f"{NS}/copy",
        "refused",
        set(),
        {("refused", reasons.DUPLICATE_ADDRESS)},
        id="younger-duplicate-claimant-refused",
    ),
    pytest.param(
        cluster(
            k8s.cudn_layer2("vmnet-lab", ["192.168.150.0/24"], namespaces=["lab-vms"]),
            k8s.ipam_claim("lab-vms", "vm-lab.default", "vm-lab", "cluster_udn_vmnet-lab", ["192.168.150.10/24"]),
            k8s.vmi("lab-vms", "vm-lab", "worker-1"),
        ),
        "192.168.150.10",
        "refused",
        set(),
        {("refused", reasons.NETWORK_NOT_SELECTED)},
        id="network-not-selected",
    ),
    pytest.param(
        cluster(
            k8s.ipam_claim(NS, "c-only.default", "c-only", NET, ["192.168.100.30/24", "fd10:100::1e/64"]),
            k8s.vmi(NS, "c-only", "worker-3"),
        ),
        f"{NS}/c-only",
        "refused",
        {("192.168.100.30/32", "10.0.0.13", PEER)},
        {("refused", reasons.OUTSIDE_NETWORK_SUBNETS)},
        id="one-address-announced-one-refused",
    ),
    pytest.param(
        cluster(),
        "vmnet-a",
        "announced",
        {("192.168.100.0/24", "self", PEER), ("192.168.100.10/32", "10.0.0.11", PEER)},
        set(),
        id="network-announced",
    ),
]


@pytest.mark.parametrize(("objects", "query", "verdict", "routes", "met"), CASES)
def test_explain_table(objects, query, verdict, routes, met):
    result = explained(objects, query)
    assert result.verdict == verdict, result.summary
    assert result.exit_code == (0 if verdict == "announced" else 1)
    assert hops(result) == routes
    assert rules(result) == met


def test_an_announced_address_names_every_object_that_mentions_it():
    result = explained(cluster(*migrating(target_ready=True)), "192.168.100.20")
    mentioned = {str(m.ref) for m in result.objects}
    assert mentioned == {
        f"IPAMClaim {NS}/mover.default",
        f"VirtualMachineInstance {NS}/mover",
        f"Pod {NS}/virt-launcher-mover-src01",
        f"Pod {NS}/virt-launcher-mover-tgt01",
        "Node worker-1",
        "Node worker-2",
        "ClusterUserDefinedNetwork vmnet-a",
    }
    vmi = next(m for m in result.objects if m.ref.kind == "VirtualMachineInstance")
    assert "migration worker-1 -> worker-2 (target ready)" in vmi.says
    assert [v.message for v in result.rules if v.verdict == "admitted"] == [
        "host route, next hop 10.0.0.12 (node worker-2)",
        "sent to peer(s) 10.0.0.1",
    ]


def test_an_address_only_inside_a_subnet_lists_the_subnet_route_that_holds_it():
    result = explained(cluster(), "192.168.100.77")
    assert [str(a.route.prefix) for a in result.covering] == ["192.168.100.0/24"]
    assert "lies in announced 192.168.100.0/24" in result.summary


def test_per_node_mode_names_the_instance_of_each_route_and_both_during_a_migration():
    objects = cluster(*migrating(target_ready=True))
    state = k8s.state(objects)
    cfg = k8s.config(mode="per-node", nodeName="worker-1")
    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(f"{NS}/mover"))
    # rule 6b: the source's instance keeps the route until the migration completes; the target's announces it too
    assert {(a.instance, str(a.route.next_hop)) for a in result.routes} == {
        ("worker-1", "10.0.0.11"),
        ("worker-2", "10.0.0.12"),
    }
    assert result.verdict == "announced"
    assert "INSTANCE" in explain_render.render(result, "table")


RACK = "topology.bgpadv.io/rack"
TOR_A = {"address": "10.0.0.1", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "a"}}}
TOR_B = {"address": "10.0.0.2", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "b"}}}
SPINE = {"address": "192.0.2.1", "asn": 64600, "ebgpMultihop": 3}  # no nodeSelector: every node's instance


def racks() -> list[dict]:
    """worker-1 in rack a, worker-2 in rack b; web-1 on worker-1, web-2 on worker-2 (vmnet-a)."""
    return [
        k8s.node("worker-1", "10.0.0.11", labels={RACK: "a"}),
        k8s.node("worker-2", "10.0.0.12", labels={RACK: "b"}),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        k8s.ipam_claim(NS, "web-1.default", "web-1", NET, ["192.168.100.10/24"]),
        k8s.vmi(NS, "web-1", "worker-1", interfaces=[k8s.interface(["192.168.100.10"])]),
        k8s.launcher_pod(NS, "web-1", "worker-1"),
        k8s.ipam_claim(NS, "web-2.default", "web-2", NET, ["192.168.100.11/24"]),
        k8s.vmi(NS, "web-2", "worker-2", interfaces=[k8s.interface(["192.168.100.11"])]),
        k8s.launcher_pod(NS, "web-2", "worker-2"),
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("192.168.100.10", {("worker-1", "10.0.0.11", ("10.0.0.1", "192.0.2.1"))}, id="rack-a-vm"),
        pytest.param("192.168.100.11", {("worker-2", "10.0.0.12", ("10.0.0.2", "192.0.2.1"))}, id="rack-b-vm"),
    ],
)
def test_per_node_explain_names_only_the_peers_the_nodes_labels_select(query, expected):
    """Each node's instance peers with the peers whose nodeSelector its labels match (as render and the controller
    do): a rack's VM goes to its rack's ToR and the unselective spine, never to the other rack's ToR."""
    state = k8s.state(racks())
    cfg = k8s.config(mode="per-node", nodeName="worker-1", peers=[TOR_A, TOR_B, SPINE])
    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(query))
    host = {(a.instance, str(a.route.next_hop), a.peers) for a in result.routes if a.route.kind == "host"}
    assert (result.verdict, host) == ("announced", expected)


UNNUMBERED_A = {"interface": "eth1", "address": "fe80::1", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "a"}}}
UNNUMBERED_B = {"interface": "eth2", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "b"}}}  # discovered at start


@pytest.mark.parametrize(
    ("query", "peers"),
    [
        pytest.param("192.168.100.10", ("fe80::1%eth1", "192.0.2.1"), id="link-local-address-scoped-to-its-link"),
        pytest.param("192.168.100.11", ("%eth2", "192.0.2.1"), id="left-to-discovery-named-by-its-link"),
    ],
)
def test_explain_names_an_unnumbered_peer_with_its_interface(query, peers):
    """A peer given by interface is reached over that link: its link-local address alone does not say which one, so
    explain scopes it (`fe80::1%eth1`, as `status` does); a peer whose address is discovered when the controller
    starts is its interface (`%eth2`). Numbered peers read as before, in the table and the JSON document."""
    state = k8s.state(racks())
    cfg = k8s.config(mode="per-node", nodeName="worker-1", peers=[UNNUMBERED_A, UNNUMBERED_B, SPINE])
    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(query))
    assert result.verdict == "announced"
    assert {a.peers for a in result.routes if a.route.kind == "host"} == {peers}
    assert ", ".join(peers) in explain_render.render(result, "table")
    (host,) = (r for r in json.loads(explain_render.render(result, "json"))["routes"] if r["kind"] == "host")
    assert host["peers"] == list(peers)


def test_every_published_reason_code_is_explained_from_its_docstring():
    meanings = reason_meanings()
    missing = [code for code in reasons.ALL_REASONS if not meanings.get(code)]
    assert missing == []
    assert meaning(reasons.NO_NODE_ADDRESS).startswith("The node the route must point at is unknown")
    assert meaning("a-code-nobody-published") == ""


def test_the_command_spells_out_no_reason_code():
    """explain reads the codes generically: a code another change adds to core/reasons.py is explained as is."""
    modules = sorted((ROOT / "bgpadv" / "commands").glob("explain*.py"))
    assert len(modules) >= 4  # the entry point, the query, the engine, the rendering
    spelt = [(m.name, c) for m in modules for c in reasons.ALL_REASONS if f'"{c}"' in m.read_text()]
    assert spelt == []


def _commands_imported(module: str) -> set[str]:
    tree = ast.parse((ROOT / "bgpadv" / "commands" / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "bgpadv.commands":  # from bgpadv.commands import x
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bgpadv.commands."):
            found.add(node.module.removeprefix("bgpadv.commands.").partition(".")[0])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("bgpadv.commands.")}
    return found


@pytest.mark.parametrize(
    ("module", "never"),
    [
        pytest.param("explain_query", {"explain", "explain_engine", "explain_objects", "explain_render"}, id="query"),
        pytest.param("explain_objects", {"explain", "explain_engine", "explain_render"}, id="objects"),
        pytest.param("explain_engine", {"explain", "explain_render", "statusclient", "inputs"}, id="engine"),
        pytest.param("explain_render", {"explain", "statusclient", "inputs", "outcome"}, id="rendering"),
    ],
)
def test_each_part_of_the_command_keeps_to_its_job(module, never):
    """The question is parsed without the engine, answered without printing or reading, printed without reading:
    only the entry point reads the cluster (`inputs`) and the live instances (`statusclient`)."""
    assert _commands_imported(module) & never == set()


def test_a_table_cell_is_made_printable_exactly_once():
    """A value escaped twice would print `\\\\n` where the cluster wrote a newline: the operator could not tell."""
    hostile = "vm\nannounce route 0.0.0.0/0\\x"
    lines = table([Column("NAME", str), Column("SAYS", lambda _: "-")], [hostile])
    assert lines == [f"  NAME{' ' * (len(printable(hostile)) - 4)}  SAYS", f"  {printable(hostile)}  -"]


def test_the_table_carries_verdict_objects_rules_meanings_and_routes():
    text = explain_render.render(
        explained(cluster(k8s.ipam_claim(NS, "gw.default", "gw", NET, ["192.168.100.1/24"])), "192.168.100.1"), "table"
    )
    lines = text.splitlines()
    assert lines[0] == "192.168.100.1: refused"
    assert {"objects", "rules", "routes"} <= set(lines)
    assert f"  {reasons.DEFAULT_GATEWAY_ADDRESS}: {meaning(reasons.DEFAULT_GATEWAY_ADDRESS)}" in lines


def test_the_json_document():
    doc = json.loads(explain_render.render(explained(cluster(), "192.168.100.10"), "json"))
    assert set(doc) == {"query", "kind", "verdict", "summary", "objects", "rules", "routes", "covering", "instances"}
    assert (doc["query"], doc["kind"], doc["verdict"]) == ("192.168.100.10", "address", "announced")
    route = doc["routes"][0]
    assert {k: route[k] for k in ("prefix", "nextHop", "node", "peers", "instance")} == {
        "prefix": "192.168.100.10/32",
        "nextHop": "10.0.0.11",
        "node": "worker-1",
        "peers": ["10.0.0.1"],
        "instance": "cluster",
    }
    assert set(route["attributes"]) == {"localPreference", "med", "communities", "largeCommunities", "asPathPrepend"}


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("192.168.100.10", "address", id="ipv4"),
        pytest.param("fd10:100::a", "address", id="ipv6"),
        pytest.param("192.168.100.10/32", "address", id="host-cidr"),
        pytest.param("192.168.100.0/24", "prefix", id="cidr"),
        pytest.param("imported-vms/vm-a", "vm", id="vm"),
        pytest.param("vmnet-a", "network", id="network"),
        pytest.param("cluster_udn_vmnet-a", "network", id="network-as-claims-name-it"),
    ],
)
def test_what_can_be_asked(text, kind):
    assert parse_query(text).kind == kind


@pytest.mark.parametrize(
    ("target", "code", "verdict"),
    [
        pytest.param("192.168.100.205", 0, "announced", id="announced-vm-a"),
        pytest.param("192.168.100.40", 1, "not announced", id="vm-stopped"),
        pytest.param("imported-vms/vm-pending", 1, "not announced", id="vm-pending"),
        pytest.param("tenant-b/web-3", 1, "not announced", id="web-3-succeeded"),
        pytest.param("imported-vms/vm-migrating", 0, "announced", id="vm-migrating"),
        pytest.param("192.168.100.1", 1, "refused", id="gateway"),
        pytest.param("10.1.2.3", 1, "unknown", id="unknown-ip"),
        pytest.param("vmnet-lab", 1, "not announced", id="network-not-selected"),
    ],
)
def test_the_example_dump(capsys, target, code, verdict):
    assert explain.main(target, str(CONFIG), [str(EXAMPLES)]) == code
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == f"{target}: {verdict}"
    assert err == ""


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        pytest.param(("  ", str(CONFIG), [str(EXAMPLES)]), {}, "give an IP", id="empty-query"),
        pytest.param(("a/b/c", str(CONFIG), [str(EXAMPLES)]), {}, "NAMESPACE/NAME", id="bad-vm"),
        pytest.param(("vmnet-a", str(CONFIG), []), {}, "--manifests", id="no-input"),
        pytest.param(("vmnet-a", str(CONFIG), ["/nonexistent/dump"]), {}, "/nonexistent/dump", id="missing-input"),
        pytest.param(("vmnet-a", "/nonexistent.yaml", [str(EXAMPLES)]), {}, "nonexistent", id="missing-config"),
        pytest.param(("vmnet-a", str(CONFIG), [str(EXAMPLES)]), {"output": "yaml"}, "--output", id="bad-output"),
        pytest.param(
            ("vmnet-a", str(CONFIG)), {"kubeconfig": "/nonexistent/kubeconfig"}, "kubeconfig", id="bad-kubeconfig"
        ),
    ],
)
def test_usage_and_input_errors_exit_2(capsys, args, kwargs, message):
    assert explain.main(*args, **kwargs) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert message in err


def test_an_unreachable_instance_is_reported_not_fatal(capsys):
    code = explain.main("192.168.100.205", str(CONFIG), [str(EXAMPLES)], status_urls=["http://127.0.0.1:9"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "http://127.0.0.1:9: unreachable" in out


def test_the_guides_example_is_what_explain_prints(capsys):
    readme = guide.page("cli.md")
    command = "$ bgpadv explain 192.168.100.40 --config config/bgpadv.yaml --manifests config/examples\n"
    block = readme[readme.index(command) + len(command) :]
    block = block[: block.index("```")]
    assert explain.main("192.168.100.40", str(CONFIG), [str(EXAMPLES)]) == 1
    assert capsys.readouterr().out == block


def test_each_refusal_names_the_stage_that_made_it(capsys):
    """The guard's refusal of vmnet-a's IPv6 subnet (an IPv6 `self` over the IPv4 session) is the guard's; the
    claims' are the planner's — read from which list the refusal came from, not guessed from its value."""
    assert explain.main("vmnet-a", str(CONFIG), [str(EXAMPLES)], output="json") == 0
    doc = json.loads(capsys.readouterr().out)
    stages = {(r["value"], r["stage"]) for r in doc["rules"] if r["verdict"] == "refused"}
    assert ("fd10:100::/64", "guard") in stages
    assert ("192.168.100.1/24", "planner") in stages
    assert {s for v, s in stages if v != "fd10:100::/64"} == {"planner"}
