"""`bgpadv render`: the example cluster dump's routes, refusals and addresses without a route, the JSON contract,
the table, the inputs (directories, files, `-`), exit codes.

Scope: golden files of both output forms for `config/bgpadv.yaml` + `config/examples/` (regenerate with
`BGPADV_UPDATE_GOLDEN=1`, then review the diff); the example dump's semantics spelled out route by route, refusal by
refusal and silent address by silent address (the ground truth the golden files must agree with), after the last
guard as the controller applies it, with each route's peers and attributes; the JSON keys scripts rely on (`refused`,
and its former name `rejected`); the table's layout; exit codes 0 / 2 with the reason on stderr.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bgpadv.commands.render import main, render_plan
from bgpadv.core.model import ObjectRef, Plan, Refusal, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv_lab import objects as k8s

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config" / "bgpadv.yaml"
EXAMPLES = ROOT / "config" / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("BGPADV_UPDATE_GOLDEN") == "1"


# the example dump's IPAM-less secondary network has no node-side path in any OVN-K release bgpadv knows
# (core/datapath.py): render says so on stderr, whatever the input form
GUESTNET_DATAPATH = (
    "warning: network guestnet: IPAM-less secondary Layer2 CUDN: no OVN-Kubernetes release bgpadv knows "
    "(v1.0.0, v1.1.0, v1.2.0, v1.3.0) provides the node-side path for routed ingress and egress; "
    "RouteAdvertisements refuses secondary networks in every known release: announced routes have no node-side "
    "path until OVN-K ships routed ingress for them\n"
)
# its IPv6 subnet over the IPv4 session: the live replica takes next-hop self from its node, which render cannot know
FAMILY_NOTE = (
    "warning: 1 route(s) refused family-not-carried (e.g. fd10:100::/64): a live cluster-mode replica takes next-hop "
    "self for the other family from the node it runs on (the address on the session's interface, else the Node's "
    "InternalIP of that family), which render cannot know; pass --node NAME to judge the replica on NAME, or set "
    "nextHopSelf for the family\n"
)
EXAMPLE_WARNINGS = GUESTNET_DATAPATH + FAMILY_NOTE


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(*args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("output", "golden"),
    [pytest.param("json", "render_examples.json", id="json"), pytest.param("table", "render_examples.txt", id="table")],
)
def test_render_of_the_example_dump_matches_the_golden_file(capsys, output, golden):
    code, out, err = run(capsys, str(CONFIG), str(EXAMPLES), output)
    assert (code, err) == (0, EXAMPLE_WARNINGS)
    path = GOLDEN / golden
    if UPDATE:
        path.write_text(out)
    assert out == path.read_text(), f"render output changed; if intended: BGPADV_UPDATE_GOLDEN=1 and review {path}"


# The example dump's ground truth: every route and every refusal, and why.
EXPECTED_ROUTES = {
    # vmnet-a: Layer2, subnets from the speaker; the IPv6 one is refused by the guard (see below)
    ("192.168.100.0/24", "self", "subnet", "ClusterUserDefinedNetwork vmnet-a"),
    # vm-a on worker-1, inside reservedSubnets (allowed)
    ("192.168.100.205/32", "10.0.0.11", "host", "IPAMClaim imported-vms/vm-a.default"),
    ("fd10:100::cd/128", "fd00::11", "host", "IPAMClaim imported-vms/vm-a.default"),
    # vm-b on worker-2
    ("192.168.100.10/32", "10.0.0.12", "host", "IPAMClaim imported-vms/vm-b.default"),
    ("fd10:100::a/128", "fd00::12", "host", "IPAMClaim imported-vms/vm-b.default"),
    # vm-c on IPv4-only worker-3: IPv4 only (IPv6 refused)
    ("192.168.100.70/32", "10.0.0.13", "host", "IPAMClaim imported-vms/vm-c.default"),
    # vm-migrating: worker-1 -> worker-2 with the target live: worker-2 already
    ("192.168.100.20/32", "10.0.0.12", "host", "IPAMClaim imported-vms/vm-migrating.default"),
    ("fd10:100::14/128", "fd00::12", "host", "IPAMClaim imported-vms/vm-migrating.default"),
    # vm-moving: worker-2 -> worker-1, target not live yet: still worker-2
    ("192.168.100.21/32", "10.0.0.12", "host", "IPAMClaim imported-vms/vm-moving.default"),
    # vm-failed: worker-2 -> worker-1 failed: back on worker-2
    ("192.168.100.30/32", "10.0.0.12", "host", "IPAMClaim imported-vms/vm-failed.default"),
    # vm-linklocal: the IPv4 half
    ("192.168.100.50/32", "10.0.0.11", "host", "IPAMClaim imported-vms/vm-linklocal.default"),
    # duplicate .60: the older claim keeps it
    ("192.168.100.60/32", "10.0.0.11", "host", "IPAMClaim imported-vms/vm-dup-old.default"),
    # vmnet-b: subnet and web-1 on worker-3
    ("192.168.200.0/24", "self", "subnet", "ClusterUserDefinedNetwork vmnet-b"),
    ("192.168.200.23/32", "10.0.0.13", "host", "IPAMClaim tenant-b/web-1.default"),
    # vmnet-l3: one host subnet per node and family, next hop that node
    ("10.132.1.0/24", "10.0.0.11", "subnet", "Node worker-1"),
    ("10.132.2.0/24", "10.0.0.12", "subnet", "Node worker-2"),
    ("10.132.3.0/24", "10.0.0.13", "subnet", "Node worker-3"),
    ("fd10:132:0:1::/64", "fd00::11", "subnet", "Node worker-1"),
    ("fd10:132:0:2::/64", "fd00::12", "subnet", "Node worker-2"),
    # db-1 on the Layer3 apps network has no IPAMClaim (OVN-K honours none on Layer3): its launcher pod's
    # k8s.ovn.org/pod-networks entry for l3-apps/<cudn> is OVN-K's own assignment, on worker-2
    ("10.132.2.5/32", "10.0.0.12", "host", "VirtualMachineInstance l3-apps/db-1"),
    ("fd10:132:0:2::5/128", "fd00::12", "host", "VirtualMachineInstance l3-apps/db-1"),
    # guestnet: IPAM-less secondary, no subnet; vm-static's guest agent reports 10.60.0.15 (allowed, on worker-2)
    ("10.60.0.15/32", "10.0.0.12", "host", "VirtualMachineInstance static-vms/vm-static"),
}
EXPECTED_REFUSALS = {
    ("ClusterUserDefinedNetwork physnet", "Localnet/Secondary", "network-not-advertisable"),
    ("IPAMClaim imported-vms/vm-broadcast.default", "192.168.100.255/24", "network-or-broadcast-address"),
    ("IPAMClaim imported-vms/vm-c.default", "fd10:100::46/64", "no-node-address"),
    ("IPAMClaim imported-vms/vm-dup-new.default", "192.168.100.60/24", "duplicate-address"),
    ("IPAMClaim imported-vms/vm-gateway.default", "192.168.100.1/24", "default-gateway-address"),
    ("IPAMClaim imported-vms/vm-ghost.default", "cluster_udn_vmnet-ghost", "unknown-network"),
    ("IPAMClaim imported-vms/vm-infra.default", "192.168.100.2/24", "infrastructure-address"),
    ("IPAMClaim imported-vms/vm-infra.default", "fd10:100::2/64", "infrastructure-address"),
    ("IPAMClaim imported-vms/vm-inject.default", "10.0.0.1/32 next-hop 203.0.113.9", "malformed-address"),
    ("IPAMClaim imported-vms/vm-inject.default", "192.168.100.80/24\nannounce route 0.0.0.0/0", "malformed-address"),
    ("IPAMClaim imported-vms/vm-linklocal.default", "fe80::5054:ff:fe12:3456/64", "link-local"),
    ("IPAMClaim imported-vms/vm-outside.default", "10.9.9.9/24", "outside-network-subnets"),
    ("IPAMClaim imported-vms/vm-udn.default", "imported-vms_tenantnet", "namespaced-udn-not-advertisable"),
    ("IPAMClaim lab-vms/vm-lab.default", "cluster_udn_vmnet-lab", "network-not-selected"),
    ("IPAMClaim legacy/vm-legacy.physnet", "cluster_udn_physnet", "network-not-advertisable"),
    ("IPAMClaim tenant-b/web-2.default", "192.168.200.1/24", "default-gateway-address"),
    # the guest's other reports: outside the allowed prefixes (the network's only ranges), link-local
    ("VirtualMachineInstance static-vms/vm-static", "10.61.0.9", "outside-network-subnets"),
    ("VirtualMachineInstance static-vms/vm-static", "fe80::7b:4cff:fe00:22", "link-local"),
    # the guard: the only peer is an IPv4 session without nextHopSelf, where an IPv6 `self` cannot be expressed
    ("ClusterUserDefinedNetwork vmnet-a", "fd10:100::/64", "family-not-carried"),
}


def test_the_example_dump_gives_exactly_the_expected_routes_and_refusals(capsys):
    code, out, _ = run(capsys, str(CONFIG), str(EXAMPLES), "json")
    assert code == 0
    doc = json.loads(out)
    assert {(r["prefix"], r["nextHop"], r["kind"], r["source"]) for r in doc["routes"]} == EXPECTED_ROUTES
    assert len(doc["routes"]) == len(EXPECTED_ROUTES)
    assert {(x["source"], x["value"], x["reason"]) for x in doc["refused"]} == EXPECTED_REFUSALS
    assert len(doc["refused"]) == len(EXPECTED_REFUSALS)
    assert doc["rejected"] == doc["refused"], "the former key stays, for scripts written against it"
    assert {(x["source"], x["value"], x["why"]) for x in doc["unrouted"]} == EXPECTED_UNROUTED
    assert all(r["peers"] == ["10.0.0.1"] for r in doc["routes"]), "the lab's one peer gets every route"


# Claim and VMI addresses that yield neither a route nor a refusal, and why (the planner's silent skips).
EXPECTED_UNROUTED = {
    ("IPAMClaim imported-vms/vm-pending.default", "-", "no address allocated yet (status.ips is empty): pending"),
    ("IPAMClaim imported-vms/vm-stopped.default", "192.168.100.40/24", "VM stopped: no VirtualMachineInstance"),
    ("IPAMClaim imported-vms/vm-stopped.default", "fd10:100::28/64", "VM stopped: no VirtualMachineInstance"),
    ("IPAMClaim tenant-b/web-3.default", "192.168.200.24/24", "VM stopped: its VirtualMachineInstance is Succeeded"),
    # vm-static's guest agent also reports its pod network address (masquerade): a claimless VM's primary address is
    # OVN-K's (the launcher pod's annotation), never the guest's report
    (
        "VirtualMachineInstance static-vms/vm-static",
        "10.0.2.2",
        "status.interfaces default, reported by the guest agent: interface default is the pod network's (no Multus "
        "attachment): only an IPAMClaim or OVN-K's assignment on the launcher pod is announced there, never the "
        "guest's report",
    ),
}


def test_json_keeps_the_contract_keys(capsys):
    _, out, _ = run(capsys, str(CONFIG), str(EXAMPLES), "json")
    doc = json.loads(out)
    assert set(doc) >= {"routes", "refused", "rejected", "unrouted"}
    for route in doc["routes"]:
        assert {"prefix", "nextHop", "network", "kind", "source", "attributes", "peers"} <= set(route)
        assert route["kind"] in ("subnet", "host")
    for refusal in doc["refused"]:
        assert {"source", "value", "reason"} <= set(refusal)
    for item in doc["unrouted"]:
        assert {"source", "value", "why", "network"} <= set(item)


def test_json_of_a_hand_built_plan():
    claim = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms", "u1")
    plan = Plan.build(
        [
            Route(
                Prefix.parse("192.168.100.5/32"),
                Address.parse("10.0.0.11"),
                "vmnet-a",
                RouteKind.HOST,
                claim,
                "worker-1",
            ),
            Route(
                Prefix.parse("192.168.100.0/24"),
                None,
                "vmnet-a",
                RouteKind.SUBNET,
                ObjectRef("ClusterUserDefinedNetwork", "vmnet-a"),
            ),
        ],
        [Refusal(ObjectRef("IPAMClaim", "vm-b.default", "imported-vms"), "10.9.9.9/24", "outside-network-subnets")],
    )
    doc = json.loads(render_plan(plan, "json"))
    assert doc["routes"][0] == {
        "prefix": "192.168.100.0/24",
        "nextHop": "self",
        "network": "vmnet-a",
        "kind": "subnet",
        "source": "ClusterUserDefinedNetwork vmnet-a",
        "node": None,
        "family": 4,
        "attributes": {
            "localPreference": None,
            "med": None,
            "communities": [],
            "largeCommunities": [],
            "asPathPrepend": 0,
        },
        "peers": [],
    }
    assert doc["routes"][1]["nextHop"] == "10.0.0.11"
    assert doc["routes"][1]["source"] == "IPAMClaim imported-vms/vm-a.default"
    assert (
        doc["refused"]
        == doc["rejected"]
        == [
            {
                "source": "IPAMClaim imported-vms/vm-b.default",
                "value": "10.9.9.9/24",
                "reason": "outside-network-subnets",
                "message": "",
                "network": "",
            }
        ]
    )


def test_table_groups_by_network_aligns_columns_and_lists_refusals_last(capsys):
    _, out, _ = run(capsys, str(CONFIG), str(EXAMPLES), "table")
    lines = out.splitlines()
    groups = [line for line in lines if line.startswith("network ")]
    assert [g.split()[1] for g in groups] == ["guestnet", "vmnet-a", "vmnet-b", "vmnet-l3"]
    refused_at = next(i for i, line in enumerate(lines) if line.startswith("refused"))
    assert all(lines.index(g) < refused_at for g in groups)
    headers = [line for line in lines[:refused_at] if line.strip().startswith("PREFIX")]
    assert len(set(headers)) == 1, "every group has the same column layout"
    column = headers[0].index("NEXT HOP")
    for line in lines[:refused_at]:
        if line.startswith("  ") and not line.strip().startswith("PREFIX"):
            assert line[column - 2 : column] == "  " and line[column] != " "
    assert "\\nannounce route" in out, "control characters are escaped, one refusal per line"
    assert lines[-1].endswith("19 refused; 5 without a route")
    silent_at = next(i for i, line in enumerate(lines) if line.startswith("no route ("))
    assert refused_at < silent_at, "the addresses without a route come after the refusals"
    assert "VM stopped: no VirtualMachineInstance" in out


def test_empty_plan_renders():
    assert "no routes" in render_plan(Plan(), "table")
    assert json.loads(render_plan(Plan(), "json")) == {"routes": [], "refused": [], "rejected": [], "unrouted": []}


def test_unknown_output_is_an_error(capsys):
    code, out, err = run(capsys, str(CONFIG), str(EXAMPLES), "yaml")
    assert (code, out) == (2, "")
    assert "--output" in err
    with pytest.raises(ValueError):
        render_plan(Plan(), "yaml")


def test_configuration_errors_exit_2_naming_each_field(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("localASN: -1\npeers:\n  - address: 10.0.0.999\n    asn: 64512\nnextHop: router\n")
    code, out, err = run(capsys, str(bad), str(EXAMPLES), "table")
    assert (code, out) == (2, "")
    assert "localASN" in err and "peers[0].address" in err and "nextHop" in err


def test_missing_configuration_file_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, str(tmp_path / "absent.yaml"), str(EXAMPLES), "table")
    assert code == 2 and "absent.yaml" in err


def test_missing_manifests_exit_2(capsys, tmp_path):
    code, out, err = run(capsys, str(CONFIG), str(tmp_path / "absent"), "json")
    assert (code, out) == (2, "")
    assert "absent" in err


def test_manifests_without_any_watched_object_exit_2_instead_of_an_empty_plan(capsys, tmp_path):
    (tmp_path / "deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    code, out, err = run(capsys, str(CONFIG), str(tmp_path), "table")
    assert (code, out) == (2, "")
    assert "no object bgpadv reads" in err


def _doc(out: str) -> dict:
    return json.loads(out)


@pytest.mark.parametrize(
    "form",
    [
        pytest.param("directory", id="directory"),
        pytest.param("files", id="files-in-any-order-and-name"),
        pytest.param("stdin-yaml", id="stdin-yaml"),
        pytest.param("stdin-json", id="stdin-json"),
    ],
)
def test_files_directories_and_stdin_give_the_same_plan(capsys, monkeypatch, tmp_path, form):
    _, expected, _ = run(capsys, str(CONFIG), str(EXAMPLES), "json")
    files = sorted(EXAMPLES.iterdir())
    if form == "directory":
        args: list[str] = [str(EXAMPLES)]
    elif form == "files":
        for f in files:  # named explicitly, a file is read whatever its suffix
            (tmp_path / (f.stem + ".dump")).write_text(f.read_text())
        args = [str(tmp_path / (f.stem + ".dump")) for f in files]
    else:
        import io

        import yaml

        docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d is not None]
        text = (
            "\n---\n".join(yaml.safe_dump(d) for d in docs) if form == "stdin-yaml" else json.dumps(k8s.as_list(docs))
        )
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        args = ["-"]
    code, out, err = run(capsys, str(CONFIG), args, "json")
    assert (code, err) == (0, EXAMPLE_WARNINGS)
    assert _doc(out) == _doc(expected)


def test_routes_carry_the_configured_attributes_and_their_peers(capsys, tmp_path):
    cfg = tmp_path / "bgpadv.yaml"
    text = CONFIG.read_text()
    cfg.write_text(
        text.replace(
            "nextHop: node", "nextHop: node\nattributes: {localPreference: 200, communities: ['64513:100']}"
        ).replace(
            "  - address: 10.0.0.1\n    asn: 64512",
            "  - address: 10.0.0.1\n    asn: 64512\n  - address: 10.0.0.2\n    asn: 64513",  # iBGP: local-pref
            1,
        )
    )
    code, out, err = run(capsys, str(cfg), str(EXAMPLES), "json")
    assert code == 0, err
    route = next(r for r in _doc(out)["routes"] if r["prefix"] == "192.168.100.205/32")
    assert route["attributes"]["localPreference"] == 200 and route["attributes"]["communities"] == ["64513:100"]
    assert route["peers"] == ["10.0.0.1", "10.0.0.2"]
    _, table, _ = run(capsys, str(cfg), str(EXAMPLES), "table")
    line = next(x for x in table.splitlines() if x.strip().startswith("192.168.100.205/32"))
    assert "local-pref 200 community 64513:100" in line and line.endswith("10.0.0.1, 10.0.0.2")


def test_manifest_warnings_go_to_stderr_and_the_plan_still_renders(capsys, tmp_path):
    (tmp_path / "broken.yaml").write_text("kind: [\n")
    (tmp_path / "node.json").write_text(json.dumps(k8s.node("worker-1", "10.0.0.11")))
    code, out, err = run(capsys, str(CONFIG), str(tmp_path), "json")
    assert code == 0
    assert json.loads(out) == {"routes": [], "refused": [], "rejected": [], "unrouted": []}
    assert err.startswith("warning: ") and "broken.yaml" in err


def test_render_needs_no_node_address_for_a_listener_it_never_opens(capsys, monkeypatch, tmp_path):
    """deploy/base's configuration listens on ${BGPADV_NODE_IP}:9179, which only the pod sets: render reads it as is."""
    monkeypatch.delenv("BGPADV_NODE_IP", raising=False)
    base = (ROOT / "deploy" / "base" / "bgpadv.yaml").read_text().replace("REPLACE-WITH-YOUR-TOR-ADDRESS", "192.0.2.1")
    (tmp_path / "bgpadv.yaml").write_text(base)
    code, out, err = run(capsys, str(tmp_path / "bgpadv.yaml"), str(EXAMPLES), "json")
    assert (code, err) == (0, EXAMPLE_WARNINGS)
    assert json.loads(out)["routes"]
