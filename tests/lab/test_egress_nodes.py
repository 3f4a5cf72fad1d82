"""Egress import node by node: two per-node instances (worker-1, worker-2), one cluster, one FRR ToR.

Scope (route import on every node): each node's bgpadv imports what the ToR sends into the routing table of every
selected network listed in `importRoutes` on its own node — a network with a short name and one whose name is longer
than 15 characters (its VRF would be `mp<networkID>-udn-vrf`; that name rule and the netlink table lookup are
unit-tested in tests/unit/importer/test_netlink.py) — with protocol 186 (`bgp`); a withdrawal at the ToR leaves both
nodes' tables; the main tables and a static route in the same table are untouched.

This kernel has no VRF devices (shared reference lab-kernel.md): plain routing tables 1001 and 1002, named
explicitly per network in the configuration (`importRoutes.networks[].table`, what an operator also uses for a VRF
that is not OVN-K's), stand in for the VRFs' tables. Assertions read the nodes' kernel tables only.
"""

from __future__ import annotations

import json

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, shared_api
from bgpadv_lab.netns import sh
from bgpadv_lab.topology import TOR_V4, Lab

pytestmark = pytest.mark.lab

ADVERTISED = {"bgpadv.io/advertise": "true"}
LONG = "tenant-blue-production"  # 22 characters: OVN-K names its VRF mp<id>-udn-vrf
TABLES = {"vmnet-a": 1001, LONG: 1002}
FABRIC = "198.51.100.0/24"
STATIC = "203.0.113.0/24"
IMPORTED = {"0.0.0.0/0": [TOR_V4], FABRIC: [TOR_V4]}


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.node("worker-2", "10.0.0.12", "fd00::12"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=ADVERTISED),
        k8s.cudn_layer2(LONG, ["192.168.200.0/24"], labels=ADVERTISED),
    ]


def config(lab: Lab, node: str, name: str) -> dict:
    return lab_config(
        lab.workdir / f"bgpadv-{node}" / "kubeconfig",
        node,
        nodeName=name,
        importRoutes={
            "enabled": True,
            "networks": [
                {"name": net, "table": number, "accept": [{"prefix": "0.0.0.0/0"}, {"prefix": FABRIC}]}
                for net, number in TABLES.items()
            ],
        },
    )


def table(ns: str, number: int | str) -> dict[str, tuple[str, list[str]]]:
    """The kernel table: destination -> (protocol, gateways); empty while the kernel has no such table yet."""
    out = {}
    listed = sh(["ip", "-4", "-j", "route", "show", "table", str(number)], netns=ns, check=False)
    for route in json.loads(listed.stdout or "[]") if listed.returncode == 0 else []:
        dst = "0.0.0.0/0" if route["dst"] == "default" else route["dst"]
        hops = [route["gateway"]] if "gateway" in route else [h["gateway"] for h in route.get("nexthops", [])]
        out[dst] = (str(route.get("protocol", "")), sorted(hops))
    return out


def imported(ns: str, number: int) -> dict[str, list[str]]:
    return {dst: hops for dst, (proto, hops) in table(ns, number).items() if proto == "bgp"}


@pytest.fixture(scope="module")
def nodes():
    with Lab("bgpen") as lab:
        namespaces = [lab.ns("w1"), lab.ns("w2")]
        for ns in namespaces:
            sh(["ip", "route", "add", STATIC, "via", TOR_V4, "table", str(TABLES[LONG]), "proto", "static"], netns=ns)
        mains = {ns: table(ns, "main") for ns in namespaces}
        api = shared_api(lab)
        with api:
            api.load(cluster())
            with (
                BgpadvInLab(lab, node="w1", config=config(lab, "w1", "worker-1"), api=api) as one,
                BgpadvInLab(lab, node="w2", config=config(lab, "w2", "worker-2"), api=api),
            ):
                yield one.frr, namespaces
        for ns in namespaces:
            assert table(ns, "main") == mains[ns], f"the main table of {ns} changed"


def test_each_node_imports_the_tors_routes_into_every_listed_networks_table(nodes):
    frr, namespaces = nodes
    frr.announce_to_cluster("0.0.0.0/0", FABRIC)
    for ns in namespaces:
        for number in TABLES.values():
            frr.wait_for(lambda ns=ns, n=number: imported(ns, n) == IMPORTED, 20, f"both routes in {ns} table {number}")
    for ns in namespaces:
        assert table(ns, TABLES[LONG])[STATIC] == ("static", [TOR_V4]), "a route of another protocol was touched"


def test_a_withdrawal_at_the_tor_leaves_every_nodes_tables(nodes):
    frr, namespaces = nodes
    frr.announce_to_cluster("0.0.0.0/0", FABRIC)
    for ns in namespaces:
        frr.wait_for(lambda ns=ns: imported(ns, TABLES[LONG]) == IMPORTED, 20, f"both routes in {ns}")
    frr.withdraw_from_cluster(FABRIC)
    for ns in namespaces:
        for number in TABLES.values():
            gone = f"{FABRIC} gone from {ns} table {number}"
            frr.wait_for(lambda ns=ns, n=number: imported(ns, n) == {"0.0.0.0/0": [TOR_V4]}, 5, gone)
        assert table(ns, TABLES[LONG])[STATIC] == ("static", [TOR_V4])
