"""Per-node mode, trust: an address from a launcher pod annotation on a network with persistent IPs needs a claim.

Scope (`planner/pod_networks.py`, `claim-required`): on a Layer2 CUDN with `ipam.lifecycle: Persistent` every VM's
address comes from an IPAMClaim, and a per-node instance holds only the claims of its own node's VMs. A tenant who
may patch pods can list another node's VM's claimed address in the `k8s.ovn.org/pod-networks` annotation of its own
claimless VM's launcher pod: cluster mode refuses it `outranked-address` (it sees the claim), and per node the
instance refuses it `claim-required` whether or not a claim elsewhere holds it, so the ToR never gets a second path.
A claimless VM on a network without persistent IPs (Layer2 without the lifecycle, Layer3, which has no claims) and a
claimed VM keep their routes per node. Each plan is made by `plan()` and the incremental planner alike; `explain`
and the per-node instances (`render --per-node`) give the instance's answer.
"""

from __future__ import annotations

import pytest

from bgpadv.commands.explain_engine import Explainer
from bgpadv.commands.explain_query import parse_query
from bgpadv.commands.outcome import instances, node_view
from bgpadv.core import reasons
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import host_routes, planned_both_ways, refused
from tests.unit.planner.test_trust import FLAT, L3, OLD, SECONDARY, TENANT_B, W1, W2, claimed, claimless, guest, nodes

ADV = k8s.ADVERTISED
# the imported VMs' network: primary Layer2 with persistent IPs (every VM's address is its IPAMClaim's)
PERSISTENT = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADV, namespaces=[NS, TENANT_B])
# the same without `ipam.lifecycle`: OVN-K allocates addresses to pods and keeps no claims
EPHEMERAL = k8s.cudn_layer2("pods-b", ["192.168.200.0/24"], labels=ADV, namespaces=[NS, TENANT_B], persistent=False)
SQUATTER = f"VirtualMachineInstance {TENANT_B}/squatter"


def attack() -> list[dict]:
    """Tenant A's VM db on worker-2 holds 192.168.100.10 by its claim; tenant B's older claimless VM on worker-1
    lists that address in its launcher pod's annotation (edited)."""
    return [
        *nodes(),
        PERSISTENT,
        *claimed("db", "192.168.100.10/24", W2),
        *claimless("squatter", ["192.168.100.10/24"], W1, ns=TENANT_B, created=OLD),
    ]


def per_node(node: str, *objects, **config):
    """The plan of the instance on `node`, from the objects it holds (`outcome.node_view`: its node's VMIs, their
    launcher pods and claims), made both ways."""
    state = node_view(k8s.state(*objects), node)
    return planned_both_ways(state, k8s.config(nodeName=node, **config))


# --- the attack -------------------------------------------------------------------------------------------------------


def test_per_node_an_edited_annotation_listing_another_nodes_claimed_address_is_refused_claim_required():
    p = per_node(W1, attack())
    assert host_routes(p) == set()
    assert refused(p) == {(SQUATTER, "192.168.100.10/24", reasons.CLAIM_REQUIRED)}
    message = p.rejected[0].message
    assert "no IPAMClaim on CUDN vmnet-a" in message and "launcher pod virt-launcher-squatter" in message


def test_per_node_the_fabric_gets_one_path_the_claims_node():
    """Every node's instance, as the DaemonSet runs them: only worker-2 announces the /32, from the claim."""
    state = k8s.state(attack())
    found = instances(state, k8s.config(mode="per-node", nodeName=W1))
    announced = {(i.name, *route) for i in found for route in host_routes(i.plan)}
    assert announced == {(W2, "192.168.100.10/32", "10.0.0.12", f"IPAMClaim {NS}/db.default")}
    (w1,) = (i for i in found if i.name == W1)
    assert refused(w1.plan) == {(SQUATTER, "192.168.100.10/24", reasons.CLAIM_REQUIRED)}


def test_cluster_mode_still_refuses_it_outranked_address():
    p = planned_both_ways(k8s.state(attack()), k8s.config())
    assert host_routes(p) == {("192.168.100.10/32", "10.0.0.12", f"IPAMClaim {NS}/db.default")}
    assert refused(p) == {(SQUATTER, "192.168.100.10/24", reasons.OUTRANKED_ADDRESS)}


def test_explain_per_node_gives_the_instances_answer():
    state = k8s.state(attack())
    cfg = k8s.config(nodeName=W1)
    result = Explainer(state, cfg, instances(state, cfg)).explain(parse_query(f"{TENANT_B}/squatter"))
    assert result.verdict == "refused"
    assert {v.reason for v in result.rules if v.verdict == "refused"} == {reasons.CLAIM_REQUIRED}


# --- what per-node mode still announces, and what it refuses ----------------------------------------------------------


@pytest.mark.parametrize(
    ("objects", "routes", "refusals"),
    [
        pytest.param(
            [PERSISTENT, *claimed("db", "192.168.100.10/24", W1)],
            {("192.168.100.10/32", f"IPAMClaim {NS}/db.default")},
            set(),
            id="claimed-vm-on-the-persistent-network",
        ),
        pytest.param(
            [PERSISTENT, *claimless("vm-a", ["192.168.100.20/24"], W1)],
            set(),
            {(f"VirtualMachineInstance {NS}/vm-a", "192.168.100.20/24", reasons.CLAIM_REQUIRED)},
            id="claimless-vm-on-the-persistent-network-even-uncontested",
        ),
        pytest.param(
            [PERSISTENT, *claimless("vm-a", ["192.168.100.20/24", "fd10:100::20/64"], W1)],
            set(),
            {
                (f"VirtualMachineInstance {NS}/vm-a", "192.168.100.20/24", reasons.CLAIM_REQUIRED),
                (f"VirtualMachineInstance {NS}/vm-a", "fd10:100::20/64", reasons.CLAIM_REQUIRED),
            },
            id="each-address-refused",
        ),
        pytest.param(
            [EPHEMERAL, *claimless("vm-a", ["192.168.200.20/24"], W1, nad="pods-b")],
            {("192.168.200.20/32", f"VirtualMachineInstance {NS}/vm-a")},
            set(),
            id="claimless-vm-on-layer2-without-persistent-ips",
        ),
        pytest.param(
            [L3, *claimless("vm-a", ["10.132.1.5/24"], W1, nad="apps")],
            {("10.132.1.5/32", f"VirtualMachineInstance {NS}/vm-a")},
            set(),
            id="claimless-vm-on-layer3",
        ),
        pytest.param(
            [FLAT, *guest("vm-a", ["10.150.0.20"], W1)],
            {("10.150.0.20/32", f"VirtualMachineInstance {NS}/vm-a")},
            set(),
            id="guest-report-on-an-ipamless-secondary-network",
        ),
    ],
)
def test_per_node_what_a_vm_on_each_kind_of_network_gets(objects, routes, refusals):
    p = per_node(W1, nodes(), objects, networks=SECONDARY)
    assert {(prefix, source) for prefix, _hop, source in host_routes(p)} == routes
    assert refused(p) == refusals


def test_the_claim_arriving_later_brings_the_route_back():
    """A VM whose claim the instance reads after its pod (or whose claim is created late): refused until the claim
    is there, then announced from it, in both planners."""
    vm = claimless("vm-a", ["192.168.100.20/24"], W1)
    claim = k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.20/24"])
    cfg = k8s.config(nodeName=W1)
    state = k8s.state(nodes(), PERSISTENT, vm)
    incremental = IncrementalPlanner(cfg)
    assert incremental.plan(state, None) == plan(state, cfg)
    state.ipam_claims.update(k8s.state(claim).ipam_claims)
    got = incremental.plan(state, {("ipam_claims", (NS, "vm-a.default"))})
    assert got == plan(state, cfg)
    assert {(prefix, source) for prefix, _hop, source in host_routes(got)} == {
        ("192.168.100.20/32", f"IPAMClaim {NS}/vm-a.default")
    }
    assert got.rejected == ()
