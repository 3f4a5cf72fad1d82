"""Planner, trust ranking of VM address sources: who can write an address decides who keeps it, before any age.

Scope (`planner/conflicts.py`, `planner/pod_networks.py`, `planner/host_subnets.py`): the ranks are an IPAMClaim's
status (written by OVN-K's allocator; tenants cannot write it) > the launcher pod's `k8s.ovn.org/pod-networks`
annotation (tenants may patch their pods) > a guest report (VMI `status.interfaces`). Across ranks the higher always
keeps a contested address whatever the ages, and the loser is refused `outranked-address` naming the winner and both
ranks; within a rank the oldest wins (`duplicate-address`). The issue's example: an older claimless VM whose pod
annotation a tenant edited to list another tenant's claimed address gets nothing, and the claimed /32 stays on the
claim's node. Layer3: a pod-networks address must lie in a host subnet its launcher pod's node holds
(`k8s.ovn.org/node-subnets`), else `outside-node-subnet` before the duplicate rule. Every table row is planned by
`plan()` and the incremental planner alike; `render` and `explain` show the refusal. Last, the property: in any
mix of claims (running or stopped), claimless VMs with any annotation and guest reports of any age, an address a
claim holds is announced from that claim or not at all.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgpadv.commands import render
from bgpadv.commands.explain_engine import Explainer
from bgpadv.commands.explain_query import parse_query
from bgpadv.commands.outcome import instances
from bgpadv.core import reasons
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import host_routes, planned_both_ways, refused

ADV = k8s.ADVERTISED
W1, W2, W3 = "worker-1", "worker-2", "worker-3"
OLD, NEW = "2024-01-01T00:00:00Z", "2025-06-01T00:00:00Z"
TENANT_B = "tenant-b"


def nodes() -> list[dict]:
    """Three workers with their host subnets of the Layer3 CUDN `apps` (worker-3 has none yet)."""
    return [
        k8s.node(
            W1, "10.0.0.11", "fd00::11", node_subnets={"cluster_udn_apps": ["10.132.1.0/24", "fd10:132:0:1::/64"]}
        ),
        k8s.node(
            W2, "10.0.0.12", "fd00::12", node_subnets={"cluster_udn_apps": ["10.132.2.0/24", "fd10:132:0:2::/64"]}
        ),
        k8s.node(W3, "10.0.0.13", "fd00::13"),
    ]


L2 = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespaces=[NS, TENANT_B])
L3 = k8s.cudn_layer3("apps", [("10.132.0.0/16", 24), ("fd10:132::/48", 64)], labels=ADV, namespaces=[NS, TENANT_B])
# an IPAM-less secondary network whose addresses the guests report (and a hand-written claim may hold)
FLAT = k8s.cudn_layer2(
    "flat", ["10.150.0.0/24"], labels=ADV, role="Secondary", ipam_mode="Disabled", namespaces=[NS, TENANT_B]
)
SECONDARY = {"secondary": [{"name": "flat"}]}


def claimed(name: str, ip: str, node: str, *, ns: str = NS, net: str = "vmnet-a", created: str = NEW) -> list[dict]:
    """A VM with an IPAMClaim (allocated) running on `node`."""
    claim = k8s.ipam_claim(ns, f"{name}.default", name, f"cluster_udn_{net}", [ip], created=created)
    return [claim, k8s.vmi(ns, name, node, created=created)]


def claimless(name: str, ips: list[str], node: str, *, ns: str = NS, nad: str = "vmnet-a", created: str = NEW):
    """A VM without a claim: its addresses are its launcher pod's k8s.ovn.org/pod-networks (as edited, perhaps)."""
    return [k8s.vmi(ns, name, node, created=created), k8s.launcher_pod(ns, name, node, ips=ips, nad=nad)]


def guest(name: str, ips: list[str], node: str, *, ns: str = NS, created: str = NEW) -> list[dict]:
    """A VM on the flat network whose guest agent reports `ips`."""
    iface = k8s.interface(ips, name="data")
    return [k8s.vmi(ns, name, node, interfaces=[iface], secondary=[("data", "flat")], created=created)]


def run(*objects, **config):
    state = k8s.state(nodes(), *objects)
    return planned_both_ways(state, k8s.config(**config))


# --- the example: an edited pod annotation against a claimed address --------------------------------------


def test_an_older_claimless_vm_whose_annotation_lists_a_claimed_address_takes_nothing():
    victim = claimed("db", "192.168.100.10/24", W2)  # tenant A's VM, younger
    editor = claimless("squatter", ["192.168.100.10/24"], W1, ns=TENANT_B, created=OLD)
    p = run(L2, victim, editor)
    assert host_routes(p) == {("192.168.100.10/32", "10.0.0.12", f"IPAMClaim {NS}/db.default")}
    (refusal,) = p.rejected
    assert (str(refusal.source), refusal.reason) == (f"VirtualMachineInstance {TENANT_B}/squatter", "outranked-address")
    assert f"IPAMClaim {NS}/db.default" in refusal.message
    assert "trust rank 1" in refusal.message and "trust rank 2" in refusal.message


def test_a_stopped_claims_address_stays_reserved_against_an_edited_annotation():
    stopped = [k8s.ipam_claim(NS, "db.default", "db", "cluster_udn_vmnet-a", ["192.168.100.10/24"], created=NEW)]
    p = run(L2, stopped, claimless("squatter", ["192.168.100.10/24"], W1, ns=TENANT_B, created=OLD))
    assert host_routes(p) == set()
    assert refused(p) == {(f"VirtualMachineInstance {TENANT_B}/squatter", "192.168.100.10/24", "outranked-address")}


# --- the table: across ranks the higher wins whatever the ages, within a rank the oldest -----------------------------


@pytest.mark.parametrize(
    ("objects", "winner", "loser", "reason"),
    [
        pytest.param(
            [*claimed("a", "192.168.100.10/24", W2), *claimless("b", ["192.168.100.10/24"], W1, created=OLD)],
            f"IPAMClaim {NS}/a.default",
            f"VirtualMachineInstance {NS}/b",
            "outranked-address",
            id="claim-beats-older-pod-annotation",
        ),
        pytest.param(
            [*claimed("a", "192.168.100.10/24", W2, created=OLD), *claimless("b", ["192.168.100.10/24"], W1)],
            f"IPAMClaim {NS}/a.default",
            f"VirtualMachineInstance {NS}/b",
            "outranked-address",
            id="claim-beats-younger-pod-annotation",
        ),
        pytest.param(
            [*claimed("a", "10.150.0.20/24", W2, net="flat"), *guest("b", ["10.150.0.20"], W1, created=OLD)],
            f"IPAMClaim {NS}/a.default",
            f"VirtualMachineInstance {NS}/b",
            "outranked-address",
            id="claim-beats-older-guest-report",
        ),
        pytest.param(
            [*claimless("a", ["192.168.100.10/24"], W2, created=OLD), *claimless("b", ["192.168.100.10/24"], W1)],
            f"VirtualMachineInstance {NS}/a",
            f"VirtualMachineInstance {NS}/b",
            "duplicate-address",
            id="two-pod-annotations-the-oldest",
        ),
        pytest.param(
            [*guest("a", ["10.150.0.20"], W2, created=OLD), *guest("b", ["10.150.0.20"], W1)],
            f"VirtualMachineInstance {NS}/a",
            f"VirtualMachineInstance {NS}/b",
            "duplicate-address",
            id="two-guest-reports-the-oldest",
        ),
        pytest.param(
            [
                *claimed("a", "192.168.100.10/24", W2, created=OLD),
                *claimed("b", "192.168.100.10/24", W1, ns=TENANT_B),
            ],
            f"IPAMClaim {NS}/a.default",
            f"IPAMClaim {TENANT_B}/b.default",
            "duplicate-address",
            id="two-claims-the-oldest",
        ),
    ],
)
def test_the_more_trusted_source_keeps_the_address_then_the_oldest(objects, winner, loser, reason):
    p = run(L2, FLAT, objects, networks=SECONDARY)
    ((_prefix, next_hop, source),) = host_routes(p)
    assert (source, next_hop) == (winner, "10.0.0.12")
    assert {(s, why) for s, _value, why in refused(p)} == {(loser, reason)}
    assert winner in p.rejected[0].message


# --- Layer3: a pod-networks address lies in its node's own host subnet ------------------------------------------------


@pytest.mark.parametrize(
    ("ips", "node", "reason", "part"),
    [
        pytest.param(["10.132.1.5/24", "fd10:132:0:1::5/64"], W1, None, "", id="own-host-subnet-dual-stack"),
        pytest.param(
            ["10.132.2.5/24"],
            W1,
            "outside-node-subnet",
            "host subnet 10.132.2.0/24 of node worker-2",
            id="another-nodes-host-subnet",
        ),
        pytest.param(["fd10:132:0:2::5/64"], W1, "outside-node-subnet", "of node worker-2", id="another-nodes-ipv6"),
        pytest.param(["10.132.7.5/24"], W1, "outside-node-subnet", "in no node's host subnet", id="no-nodes-subnet"),
        pytest.param(
            ["10.132.1.5/24"],
            W3,
            "outside-node-subnet",
            "host subnets of CUDN apps: none",
            id="node-without-host-subnets",
        ),
        pytest.param(["10.99.0.5/24"], W1, "outside-network-subnets", "", id="outside-the-network-its-own-reason"),
    ],
)
def test_a_layer3_pod_address_must_lie_in_its_nodes_host_subnet(ips, node, reason, part):
    p = run(L3, claimless("vm-a", ips, node, nad="apps"))
    vmi = f"VirtualMachineInstance {NS}/vm-a"
    if reason is None:
        assert {(prefix, source) for prefix, _hop, source in host_routes(p)} == {
            ("10.132.1.5/32", vmi),
            ("fd10:132:0:1::5/128", vmi),
        }
        assert p.rejected == ()
        return
    assert host_routes(p) == set()
    assert refused(p) == {(vmi, ips[0], reason)}
    assert part in p.rejected[0].message


def test_an_edited_layer3_annotation_never_contests_the_real_owners_address():
    owner = claimless("web", ["10.132.2.5/24"], W2, nad="apps")
    editor = claimless("squatter", ["10.132.2.5/24"], W1, ns=TENANT_B, nad="apps", created=OLD)  # older, elsewhere
    p = run(L3, owner, editor)
    assert host_routes(p) == {("10.132.2.5/32", "10.0.0.12", f"VirtualMachineInstance {NS}/web")}
    assert refused(p) == {(f"VirtualMachineInstance {TENANT_B}/squatter", "10.132.2.5/24", "outside-node-subnet")}


def test_a_host_subnet_an_older_node_holds_is_not_the_younger_nodes():
    # worker-2 also names worker-1's host subnet (host-subnet-conflict): a pod on worker-2 in it is refused
    both = nodes()
    both[1] = k8s.node(W2, "10.0.0.12", node_subnets={"cluster_udn_apps": ["10.132.1.0/24"]}, created=NEW)
    state = k8s.state(both, L3, claimless("vm-a", ["10.132.1.5/24"], W2, nad="apps"))
    p = planned_both_ways(state, k8s.config())
    assert host_routes(p) == set()
    assert (f"VirtualMachineInstance {NS}/vm-a", "10.132.1.5/24", "outside-node-subnet") in refused(p)
    assert ("Node worker-2", "10.132.1.0/24", "host-subnet-conflict") in refused(p)


def test_the_incremental_planner_follows_a_node_whose_host_subnet_arrives_later():
    """OVN-K annotates a new node's host subnet after it joins: the VM's route appears then, in both planners."""
    cfg = k8s.config()
    state = k8s.state(
        nodes(), L3, claimless("vm-a", ["10.132.3.5/24"], W3, nad="apps"), claimed("x", "192.168.100.9/24", W1)
    )
    incremental = IncrementalPlanner(cfg)
    assert incremental.plan(state, None) == plan(state, cfg)
    assert reasons.OUTSIDE_NODE_SUBNET in {r.reason for r in plan(state, cfg).rejected}
    annotated = k8s.node(W3, "10.0.0.13", "fd00::13", node_subnets={"cluster_udn_apps": "10.132.3.0/24"})
    for node in (annotated, nodes()[2]):  # the annotation arrives, then is gone again
        state.nodes[W3] = k8s.state(node).nodes[W3]
        got = incremental.plan(state, {("nodes", W3)})
        assert got == plan(state, cfg)
    state.nodes[W3] = k8s.state(annotated).nodes[W3]
    got = incremental.plan(state, {("nodes", W3)})
    assert ("10.132.3.5/32", "10.0.0.13", f"VirtualMachineInstance {NS}/vm-a") in host_routes(got)


# --- what operators see -------------------------------------------------------------------------------------------


def _example() -> list[dict]:
    return [
        *nodes(),
        L2,
        *claimed("db", "192.168.100.10/24", W2),
        *claimless("squatter", ["192.168.100.10/24"], W1, ns=TENANT_B, created=OLD),
    ]


def test_render_shows_the_outranked_refusal_with_its_winner(tmp_path, capsys):
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "cluster.json").write_text(json.dumps(k8s.as_list(_example())))
    conf = tmp_path / "bgpadv.yaml"
    conf.write_text(json.dumps({"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}))
    assert render.main(str(conf), str(tmp_path / "cluster"), "table") == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if f"{TENANT_B}/squatter" in line)
    assert "outranked-address" in line and f"IPAMClaim {NS}/db.default" in line


def test_explain_names_the_rule_and_the_winner():
    state = k8s.state(_example())
    cfg = k8s.config()
    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(f"{TENANT_B}/squatter"))
    assert result.verdict == "refused"
    assert {(v.reason, "db.default" in v.message) for v in result.rules if v.verdict == "refused"} == {
        ("outranked-address", True)
    }


# --- the property: an address a claim holds is never announced from a less trusted source --------------------------

CREATED = ("2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z", "2025-06-01T00:00:00Z")
L2_POOL = ("192.168.100.10/24", "192.168.100.11/24", "192.168.100.12/24")
FLAT_POOL = ("10.150.0.20", "10.150.0.21")
NAMES = ("vm-a", "vm-b", "vm-c", "vm-d")

vm_objects = st.one_of(
    st.builds(  # a VM with a claim on the primary Layer2 network (perhaps stopped: its claim still holds)
        lambda name, ip, node, created, running: [
            k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [ip], created=created),
            *([k8s.vmi(NS, name, node, created=created)] if running else []),
        ],
        st.sampled_from(NAMES),
        st.sampled_from(L2_POOL),
        st.sampled_from((W1, W2)),
        st.sampled_from(CREATED),
        st.booleans(),
    ),
    st.builds(  # a hand-written claim on the flat network
        lambda name, ip, node, created: claimed(name, f"{ip}/24", node, net="flat", created=created),
        st.sampled_from(NAMES),
        st.sampled_from(FLAT_POOL),
        st.sampled_from((W1, W2)),
        st.sampled_from(CREATED),
    ),
    st.builds(  # a claimless VM whose pod annotation lists any address (edited or not), in either tenant
        lambda name, ips, node, created, ns: claimless(name, ips, node, ns=ns, created=created),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(L2_POOL), min_size=1, max_size=1),
        st.sampled_from((W1, W2)),
        st.sampled_from(CREATED),
        st.sampled_from((NS, TENANT_B)),
    ),
    st.builds(  # a guest reporting addresses on the flat network
        lambda name, ips, node, created: guest(name, ips, node, ns=TENANT_B, created=created),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(FLAT_POOL), min_size=1, max_size=2, unique=True),
        st.sampled_from((W1, W2)),
        st.sampled_from(CREATED),
    ),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(vm_objects, min_size=1, max_size=6))
def test_a_claimed_address_is_announced_from_its_claim_or_not_at_all(vms):
    p = run(L2, FLAT, *vms, networks=SECONDARY)
    claims = k8s.state(*vms).ipam_claims.values()  # as stored: a later object of the same key replaces one
    claimed_addresses = {a.address for claim in claims for a in claim.ips}
    for route in p.routes:
        if route.kind.value == "host" and route.prefix.network_address in claimed_addresses:
            assert route.source.kind == "IPAMClaim", route
    for refusal in p.rejected:
        if refusal.reason == "outranked-address":
            assert refusal.source.kind == "VirtualMachineInstance"
            assert "IPAMClaim" in refusal.message
