"""Duplicate node addresses against a real router: one node's annotation never takes another node's next hops.

Scope, asserted on FRR's BGP table (`show bgp ipv4 unicast json`) and on the Events bgpadv writes, never on its logs:
`bgpadv run` in worker-1 (cluster mode, next hop `node`) announces vm-a (on worker-1) and vm-b (on worker-2) via
their nodes. A third node joins as a clone of worker-1's image (its `k8s.ovn.org/node-primary-ifaddr` is worker-1's
address) whose `k8s.ovn.org/host-cidrs` lists every other node's address too; then worker-2's own host-cidrs is
edited to list worker-1's address. Both times the ToR keeps vm-a via worker-1 and vm-b via worker-2 (neither moved nor
withdrawn, watched for seconds after bgpadv saw the change), and the later node is refused `duplicate-node-address`
in a Warning Event on the Node naming both nodes.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab

pytestmark = pytest.mark.lab

W1, W2, W3 = "10.0.0.11", "10.0.0.12", "10.0.0.13"
OLD, NEW = "2024-01-01T00:00:00Z", "2025-06-01T00:00:00Z"
NET = "cluster_udn_vmnet-a"


def vm(name: str, node: str, ip: str) -> list[dict]:
    return [k8s.ipam_claim(NS, f"{name}.default", name, NET, [ip]), k8s.vmi(NS, name, node)]


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, created=OLD),
        k8s.node("worker-2", W2, created="2024-02-01T00:00:00Z"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        *vm("vm-a", "worker-1", "192.168.100.10/24"),
        *vm("vm-b", "worker-2", "192.168.100.11/24"),
    ]


@pytest.fixture(scope="module")
def chain():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgpndup") as lab, BgpadvInLab(lab, cluster()) as running:
        running.frr.wait_route("192.168.100.10/32", [W1], timeout=60)
        running.frr.wait_route("192.168.100.11/32", [W2], timeout=30)
        yield running


def node_event(chain, node: str) -> dict | None:
    """The newest Event bgpadv wrote on Node `node` with reason duplicate-node-address."""
    found = [
        e
        for e in chain.api.events()
        if (e.get("involvedObject") or {}).get("kind") == "Node"
        and e["involvedObject"].get("name") == node
        and e.get("reason") == "DuplicateNodeAddress"  # the code, as an Event reason (CamelCase)
    ]
    return found[-1] if found else None


def routes_stay(chain, seconds: float) -> None:
    """For `seconds`, the ToR's best paths of both VMs stay on their own nodes (a withdrawal or a move fails)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert chain.frr.best_next_hops("192.168.100.10/32") == [W1]
        assert chain.frr.best_next_hops("192.168.100.11/32") == [W2]
        time.sleep(0.2)


def test_a_node_claiming_other_nodes_addresses_moves_and_withdraws_none_of_their_vms(chain):
    # a clone of worker-1's image: its primary interface address is worker-1's; host-cidrs lists every other node
    clone = k8s.node("worker-3", W1, created=NEW, internal_ip=False)
    clone["status"]["addresses"] = [{"type": "InternalIP", "address": W1}, {"type": "Hostname", "address": "worker-3"}]
    clone["metadata"]["annotations"]["k8s.ovn.org/host-cidrs"] = json.dumps([f"{W1}/24", f"{W2}/24", f"{W3}/24"])
    chain.api.create(clone)
    event = chain.frr.wait_for(lambda: node_event(chain, "worker-3"), 15, "an Event on the clone node")
    assert event["type"] == "Warning"
    assert W1 in event["message"] and "worker-1" in event["message"] and "worker-3" in event["message"]
    routes_stay(chain, 3.0)

    # an existing node's annotation edited to list worker-1's address: worker-1 reported it first
    host_cidrs = json.dumps([f"{W2}/24", f"{W1}/24"])
    chain.api.patch(
        "v1", "Node", "worker-2", None, {"metadata": {"annotations": {"k8s.ovn.org/host-cidrs": host_cidrs}}}
    )
    event = chain.frr.wait_for(lambda: node_event(chain, "worker-2"), 15, "an Event on worker-2")
    assert "worker-1" in event["message"] and "worker-2" in event["message"]
    routes_stay(chain, 3.0)
