"""Cluster mode across two racks: each replica peers with its own rack's ToR, chosen by the node it runs on
(cluster mode selects peers by node labels as per-node mode does).

Scope, asserted on FRR's own tables (`show bgp ipv4 unicast json`, `show bgp neighbors json`), never on bgpadv's logs.
Two cluster-mode replicas watch one fake API; each learns its node only from `BGPADV_POD_NODE_NAME` (the downward
API's `spec.nodeName`, as deploy/base's Deployment sets it): replica 1 on worker-1 (rack a), replica 2 on worker-2
(rack b). The configuration is the same file for both: ToR A (10.0.0.1, eBGP) selects rack a, ToR B (10.0.0.2, iBGP,
port 1179) rack b.

- each ToR peers with its rack's replica only, and holds the whole cluster's routes from it (cluster mode: every
  replica announces every route, the /32s with the next hop of the node the VM runs on, so ToR A holds worker-2's VM
  via 10.0.0.12 from replica 1, a third-party next hop on the shared segment);
- worker-1 relabelled to rack b: replica 1 leaves ToR A and peers with ToR B, without restarting (the process id is
  the same) and without a configuration change; replica 2's ToR B session is not reset; back to rack a, it returns.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, shared_api
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import WORKERS, Lab

pytestmark = pytest.mark.lab

W1, W1_6 = WORKERS["w1"]
W2, W2_6 = WORKERS["w2"]
TOR_A, TOR_B = "10.0.0.1", "10.0.0.2"
RACK = "topology.bgpadv.io/rack"
LOCAL_AS, TOR_A_AS = 64513, 64512
SUBNET = "192.168.100.0/24"
VM_A, VM_B = "192.168.100.10/32", "192.168.100.20/32"


def config() -> dict[str, Any]:
    """One configuration for both replicas: the rack selection comes from the node each runs on."""
    return {
        "localASN": LOCAL_AS,
        "peers": [
            {
                "address": TOR_A,
                "asn": TOR_A_AS,
                "holdTime": 9,
                "families": ["ipv4 unicast"],
                "nodeSelector": {"matchLabels": {RACK: "a"}},
            },
            {
                "address": TOR_B,
                "asn": LOCAL_AS,
                "port": 1179,
                "holdTime": 9,
                "families": ["ipv4 unicast"],
                "nodeSelector": {"matchLabels": {RACK: "b"}},
            },
        ],
        "networks": {"selector": {"matchLabels": dict(k8s.ADVERTISED)}},
        "nextHop": "node",
        "kubernetes": {"kubeconfig": "/nonexistent"},  # replaced with the instance's own
        "metrics": {"listen": "127.0.0.1:9179"},
    }


def cluster() -> list[dict]:
    objs = [
        k8s.node("worker-1", W1, W1_6, labels={RACK: "a"}),
        k8s.node("worker-2", W2, W2_6, labels={RACK: "b"}),
        k8s.cudn_layer2("vmnet-a", [SUBNET], labels=k8s.ADVERTISED),
    ]
    for name, ip, node in (("vm-a", VM_A, "worker-1"), ("vm-b", VM_B, "worker-2")):
        address = ip.split("/")[0]
        objs += [
            k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{address}/24"]),
            k8s.vmi(NS, name, node, interfaces=[k8s.interface([address])]),
            k8s.launcher_pod(NS, name, node, suffix="src01"),
        ]
    return objs


def via(replica: str) -> dict[str, list[tuple[str, str]]]:
    """The whole cluster's routes as one replica announces them (the subnet via itself, each /32 via its VM's node)."""
    return {SUBNET: [(replica, replica)], VM_A: [(replica, W1)], VM_B: [(replica, W2)]}


def established(frr: FrrRouter) -> set[str]:
    return {
        a for a, n in (frr.vtysh_json("show bgp neighbors json") or {}).items() if n.get("bgpState") == "Established"
    }


def counts(frr: FrrRouter, address: str) -> tuple[int, int]:
    n = frr.neighbor(address)
    return int(n.get("connectionsEstablished", 0)), int(n.get("connectionsDropped", 0))


@pytest.fixture(scope="module")
def racks():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    tor_a = TorSettings(asn=TOR_A_AS, cluster_asn=LOCAL_AS, cluster_ranges=("10.0.0.0/24",))
    with Lab("bgpcra", tor=tor_a) as lab, contextlib.ExitStack() as stack:
        settings_b = TorSettings(
            asn=LOCAL_AS,
            router_id=TOR_B,
            listen=TOR_B,
            cluster_asn=LOCAL_AS,
            cluster_ranges=("10.0.0.0/24",),
            port=1179,
        )
        tor_b = lab.add_tor("torb", (f"{TOR_B}/24",), settings_b)
        api = shared_api(lab)
        stack.enter_context(api)
        api.load(cluster())
        replicas = {}
        for role, node in (("w1", "worker-1"), ("w2", "worker-2")):
            conf = config()
            conf["kubernetes"] = {"kubeconfig": str(lab.workdir / f"bgpadv-{role}" / "kubeconfig")}
            b = BgpadvInLab(lab, node=role, config=conf, api=api, env={"BGPADV_POD_NODE_NAME": node})
            stack.callback(b.stop)
            replicas[role] = b.start(wait_established=False)
        assert lab.frr is not None
        try:
            lab.frr.wait_valid_paths(via(W1), timeout=60)
            tor_b.wait_valid_paths(via(W2), timeout=60)
        except TimeoutError as e:
            logs = "\n".join(f"--- {role}:\n{b.log_tail(60)}" for role, b in replicas.items())
            raise TimeoutError(f"{e}\n{logs}") from None
        yield api, lab.frr, tor_b, replicas


def relabel(api, node: str, rack: str) -> None:
    api.patch("v1", "Node", node, None, {"metadata": {"labels": {RACK: rack}}})


def test_each_tor_peers_with_its_racks_replica_only_and_holds_the_whole_cluster_from_it(racks):
    _, tor_a, tor_b, _ = racks
    assert established(tor_a) == {W1}
    assert established(tor_b) == {W2}
    assert tor_a.valid_paths() == via(W1)  # worker-2's VM via worker-2: cluster mode's third-party next hop
    assert tor_b.valid_paths() == via(W2)


def test_a_replicas_node_relabelled_moves_its_session_without_a_restart_or_a_reset_of_the_other(racks):
    api, tor_a, tor_b, replicas = racks
    pid = replicas["w1"].proc.pid
    w2_before = counts(tor_b, W2)

    relabel(api, "worker-1", "b")  # replica 1's node moves to rack b: ToR A loses it, ToR B gains it
    tor_a.wait_valid_paths({})
    tor_b.wait_valid_paths({p: sorted(via(W1)[p] + via(W2)[p]) for p in via(W1)})
    assert established(tor_b) == {W1, W2}
    assert counts(tor_b, W2) == w2_before, "replica 2's session with ToR B was reset"
    assert replicas["w1"].proc.pid == pid and replicas["w1"].proc.poll() is None, "replica 1 was restarted"

    relabel(api, "worker-1", "a")  # and back
    tor_a.wait_valid_paths(via(W1))
    tor_b.wait_valid_paths(via(W2))
    assert counts(tor_b, W2) == w2_before
    assert replicas["w1"].proc.poll() is None
