"""Planner, duplicate node addresses: the node that reported an address first keeps it as its next hop.

Scope: two nodes report one address (InternalIP, ExternalIP, `k8s.ovn.org/node-primary-ifaddr`,
`k8s.ovn.org/host-cidrs`: a cloned image, or one node's hostile annotation). The oldest node (creationTimestamp, then
name; a node without creationTimestamp is the youngest) keeps it as its next hop and its VMs' routes stay as they
were; every later node is refused `duplicate-node-address` on the Node, once, naming the address and the node that
keeps it, and its own VMs lose that next hop (refused with the same code when the family has no other valid
candidate). One annotation listing every other node's address (and thousands more) takes no other node's next hop
and costs one refusal. `plan()` and the incremental planner agree while such a node comes and goes; the guard
applies the same rule from the plan's node ages; `explain ADDRESS` lists the later node's refusal.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from bgpadv.commands import explain_render
from bgpadv.commands.explain_engine import Explainer
from bgpadv.commands.explain_query import parse_query
from bgpadv.commands.outcome import instances
from bgpadv.core import reasons
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.safety.guard import GuardContext, check_peer
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS
from tests.unit.planner.facts import refused

OLD, NEW = "2024-01-01T00:00:00Z", "2025-06-01T00:00:00Z"
VMNET_A = k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED)


def vm(name: str, ip: str, node: str) -> list[dict]:
    return [k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [ip]), k8s.vmi(NS, name, node)]


def hosts(p) -> set[tuple[str, str]]:
    return {(str(r.prefix), str(r.next_hop)) for r in p.routes if r.kind == "host"}


def hostile(name: str, address: str, where: str, created: str = NEW) -> dict:
    """A node whose own address is 10.0.0.12, which also reports `address` as `where` says."""
    node = k8s.node(name, "10.0.0.12", created=created)
    annotations = node["metadata"]["annotations"]
    if where == "internal-ip":
        node["status"]["addresses"].insert(0, {"type": "InternalIP", "address": address})
    elif where == "external-ip":
        node["status"]["addresses"].append({"type": "ExternalIP", "address": address})
    elif where == "primary-ifaddr":
        annotations["k8s.ovn.org/node-primary-ifaddr"] = json.dumps({"ipv4": f"{address}/24"})
        node["status"]["addresses"] = [a for a in node["status"]["addresses"] if a["type"] != "InternalIP"]
    else:
        annotations["k8s.ovn.org/host-cidrs"] = json.dumps(["10.0.0.12/24", f"{address}/24"])
    return node


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("internal-ip", id="internal-ip"),
        pytest.param("external-ip", id="external-ip"),
        pytest.param("primary-ifaddr", id="primary-ifaddr-annotation"),
        pytest.param("host-cidrs", id="host-cidrs-annotation"),
    ],
)
def test_a_younger_node_reporting_an_older_nodes_address_takes_nothing_from_it(where):
    older = k8s.node("worker-1", "10.0.0.11", created=OLD)
    p = plan(
        k8s.state(older, hostile("worker-2", "10.0.0.11", where), VMNET_A, vm("vm-a", "192.168.100.10/24", "worker-1")),
        k8s.config(),
    )
    assert hosts(p) == {("192.168.100.10/32", "10.0.0.11")}
    assert refused(p) == {("Node worker-2", "10.0.0.11", reasons.DUPLICATE_NODE_ADDRESS)}
    (refusal,) = p.rejected
    assert "node worker-1" in refusal.message and "node worker-2" in refusal.message


def test_the_younger_nodes_vms_lose_only_the_address_it_does_not_own():
    """worker-2 (a clone of worker-1's image) reports worker-1's address as its only IPv4 one: its VM has no IPv4
    next hop (refused with the rule's code); worker-1's VM keeps its route; worker-3 is not concerned."""
    nodes = [
        k8s.node("worker-1", "10.0.0.11", created=OLD),
        k8s.node("worker-2", "10.0.0.11", created=NEW),
        k8s.node("worker-3", "10.0.0.13"),
    ]
    vms = [*vm("vm-a", "192.168.100.10/24", "worker-1"), *vm("vm-b", "192.168.100.11/24", "worker-2")]
    p = plan(k8s.state(nodes, VMNET_A, vms, vm("vm-c", "192.168.100.12/24", "worker-3")), k8s.config())
    assert hosts(p) == {("192.168.100.10/32", "10.0.0.11"), ("192.168.100.12/32", "10.0.0.13")}
    assert refused(p) == {
        ("Node worker-2", "10.0.0.11", reasons.DUPLICATE_NODE_ADDRESS),
        (f"IPAMClaim {NS}/vm-b.default", "192.168.100.11/24", reasons.DUPLICATE_NODE_ADDRESS),
    }
    vm_b = next(x for x in p.rejected if x.source.name == "vm-b.default")
    assert "also an address of node worker-1, which reported it first" in vm_b.message


@pytest.mark.parametrize(
    ("first", "second", "keeper"),
    [
        pytest.param(("worker-b", OLD), ("worker-a", NEW), "worker-b", id="older-timestamp-wins-over-name"),
        pytest.param(("worker-b", OLD), ("worker-a", OLD), "worker-a", id="same-age-the-name-decides"),
        pytest.param(("worker-a", ""), ("worker-b", NEW), "worker-b", id="no-timestamp-is-the-youngest"),
    ],
)
def test_the_oldest_node_then_the_name_keeps_the_address(first, second, keeper):
    nodes = []
    for name, created in (first, second):
        node = k8s.node(name, "10.0.0.11", created=created or OLD)
        if not created:
            del node["metadata"]["creationTimestamp"]
        nodes.append(node)
    p = plan(k8s.state(nodes, VMNET_A, vm("vm-a", "192.168.100.10/24", keeper)), k8s.config())
    assert hosts(p) == {("192.168.100.10/32", "10.0.0.11")}
    (loser,) = {first[0], second[0]} - {keeper}
    assert refused(p) == {(f"Node {loser}", "10.0.0.11", reasons.DUPLICATE_NODE_ADDRESS)}


def test_one_annotation_listing_every_other_nodes_address_takes_none_of_them_at_bounded_cost():
    """200 nodes with a VM each; the youngest node's host-cidrs lists all their addresses and 20,000 more: every VM
    keeps its route, the hostile node gets one refusal (a few addresses named, the rest counted), in well under a
    second."""
    count = 200
    nodes = [k8s.node(f"worker-{n}", f"10.0.{n // 250}.{n % 250 + 2}", created=OLD) for n in range(count)]
    listed = [f"10.0.{n // 250}.{n % 250 + 2}/16" for n in range(count)]
    listed += [f"10.1{n // 65536}.{n // 256 % 256}.{n % 256}/8" for n in range(20_000)]
    rogue = k8s.node("rogue", "10.9.0.1")
    rogue["metadata"]["annotations"]["k8s.ovn.org/host-cidrs"] = json.dumps(listed)
    vms = [obj for n in range(count) for obj in vm(f"vm-{n}", f"192.168.100.{n + 10}/24", f"worker-{n}")]
    state = k8s.state(nodes, rogue, VMNET_A, vms)
    started = time.perf_counter()
    p = plan(state, k8s.config())
    elapsed = time.perf_counter() - started
    assert len(hosts(p)) == count
    (refusal,) = p.rejected
    assert (str(refusal.source), refusal.reason) == ("Node rogue", reasons.DUPLICATE_NODE_ADDRESS)
    assert "and 196 more" in refusal.message and len(refusal.message) < 400 and len(refusal.value) < 100
    assert elapsed < 2.0


def test_the_incremental_planner_agrees_as_a_hostile_node_comes_and_goes():
    base = k8s.state(
        k8s.node("worker-1", "10.0.0.11", created=OLD),
        k8s.node("worker-3", "10.0.0.13", created=OLD),
        VMNET_A,
        vm("vm-a", "192.168.100.10/24", "worker-1"),
        vm("vm-c", "192.168.100.12/24", "worker-3"),
    )
    incremental = IncrementalPlanner(k8s.config())
    assert incremental.plan(base, None) == plan(base, k8s.config())
    rogue = k8s.state(hostile("worker-2", "10.0.0.11", "host-cidrs"))
    rogue_too = k8s.state(hostile("worker-2", "10.0.0.13", "internal-ip"))
    for step in (rogue, rogue_too, ClusterState()):
        base.nodes.pop("worker-2", None)
        base.nodes.update(step.nodes)
        p = incremental.plan(base, None)
        assert p == plan(base, k8s.config())
        assert hosts(p) == {("192.168.100.10/32", "10.0.0.11"), ("192.168.100.12/32", "10.0.0.13")}


# --- the guard applies the same rule (its rule 6, from the plan's node ages); explain shows it ------------------------


def listed_by_a_younger_node():
    """vm-a on worker-1, whose address the younger worker-2's host-cidrs lists."""
    return k8s.state(
        k8s.node("worker-1", "10.0.0.11", created=OLD),
        hostile("worker-2", "10.0.0.11", "host-cidrs"),
        VMNET_A,
        vm("vm-a", "192.168.100.10/24", "worker-1"),
    )


def test_the_guard_passes_the_older_nodes_routes_and_refuses_the_younger_nodes_use_of_its_address():
    """The plan's host route passes the guard; a route (from any planner) that points at worker-1's address as
    the younger worker-2's next hop is refused `invalid-next-hop`."""
    state = listed_by_a_younger_node()
    config = k8s.config()
    p = plan(state, config)
    ctx = GuardContext.from_plan(p, config)
    (route,) = [r for r in p.routes if r.kind == "host"]
    accepted, refused = check_peer(p.routes, ctx)
    assert route in accepted and not [r for r in refused if r.reason == reasons.INVALID_NEXT_HOP]
    stolen = dataclasses.replace(route, node="worker-2")
    accepted, (refusal,) = check_peer([stolen], ctx)
    assert accepted == () and refusal.reason == reasons.INVALID_NEXT_HOP
    assert "node worker-1 first" in refusal.message


def test_explain_shows_the_later_nodes_refusal_on_the_address():
    state = listed_by_a_younger_node()
    config = k8s.config()
    result = Explainer(state, config, instances(state, config)).explain(parse_query("10.0.0.11"))
    assert {(str(v.source), v.reason) for v in result.rules if v.verdict == "refused"} == {
        ("Node worker-2", reasons.DUPLICATE_NODE_ADDRESS)
    }
    assert "node worker-1, which reported it first" in explain_render.render(result, "table")
