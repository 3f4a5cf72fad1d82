"""Unnumbered peer whose ToR does not negotiate Extended Next Hop: no IPv4 route with an IPv6 next hop (RFC 8950).

Scope: one per-node instance (worker-1 in w1) peers with the FRR ToR over a point-to-point veth holding no IPv4 address
(ToR `swp1`, w1's `eth1`), configured by interface and the ToR's link-local address (`peers: [{interface: eth1,
address: fe80::TOR, asn: 64512}]`). The ToR knows the node by its link-local address (`neighbor fe80::NODE
peer-group CLUSTER` + `neighbor fe80::NODE interface swp1`, not `neighbor swp1 interface`, which turns the capability
on by itself): FRR then only receives the Extended Next Hop capability and does not advertise it, so the session does
not negotiate it. What the fabric must see: the session Established; the VM's IPv6 /128 valid at the ToR, its IPv4 /32
absent from FRR's IPv4 table (refused `extended-next-hop-not-negotiated`, counted); then, with `neighbor fe80::NODE
capability extended-nexthop` configured and the session reset, the /32 valid and best via the node's link-local
address and in the ToR kernel's FIB `via inet6 … dev swp1`; and the capability removed again: the /32 withdrawn.
"""

from __future__ import annotations

import sys

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, shared_api
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab
from tests.lab.test_unnumbered import best, fib, link_local, metric

pytestmark = pytest.mark.lab

VM_V4, VM_V6 = "192.168.100.10", "fd10:100::10"
REFUSED = 'bgpadv_routes_rejected_total{reason="extended-next-hop-not-negotiated"}'


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", [f"{VM_V4}/24", f"{VM_V6}/64"]),
        k8s.vmi(NS, "vm-a", "worker-1", interfaces=[k8s.interface([VM_V4, VM_V6])]),
        k8s.launcher_pod(NS, "vm-a", "worker-1", suffix="src01"),
    ]


def best_v6(frr: FrrRouter, prefix: str) -> bool:
    """`prefix` has a valid best path in FRR's IPv6 table."""
    paths = (frr.vtysh_json("show bgp ipv6 unicast json").get("routes") or {}).get(prefix, [])
    return any(p.get("valid") and p.get("bestpath") for p in paths)


@pytest.fixture(scope="module")
def fabric():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    settings = TorSettings(cluster_ranges=(), listen="::", hold=9, keepalive=3)
    with Lab("bgpenh", tor=settings, start_frr=False) as lab:
        lab.net.veth(lab.ns("tor"), "swp1", lab.ns("w1"), "eth1")  # point-to-point, link-local addresses only
        lab.frr = FrrRouter(lab.net, lab.ns("tor"), lab.workdir / "frr", settings)
        lab.frr.start()
        node = FrrRouter.wait_for(lambda: _link_local(lab, "w1", "eth1"), 15, "eth1's link-local address")
        tor = FrrRouter.wait_for(lambda: _link_local(lab, "tor", "swp1"), 15, "swp1's link-local address")
        lab.frr.configure(
            f"router bgp {settings.asn}", f"neighbor {node} peer-group CLUSTER", f"neighbor {node} interface swp1"
        )
        api = shared_api(lab)
        with api:
            api.load(cluster())
            config = lab_config(lab.workdir / "bgpadv-w1" / "kubeconfig", "w1", nodeName="worker-1")
            config["peers"] = [{"interface": "eth1", "address": tor, "asn": 64512, "holdTime": 9}]
            del config["nextHopSelf"]
            running = BgpadvInLab(lab, node="w1", config=config, api=api)
            try:
                running.start(wait_established=False)
                FrrRouter.wait_for(lambda: lab.frr.neighbor_state(node) == "Established", 60, "the session up")
                yield lab, running, node
            finally:
                running.stop()


def _link_local(lab: Lab, role: str, dev: str) -> str | None:
    try:
        return link_local(lab, role, dev)
    except StopIteration:  # still tentative
        return None


def test_ipv4_routes_wait_for_the_extended_next_hop_capability(fabric):
    lab, running, node = fabric
    frr = lab.frr
    capability = frr.neighbor(node)["neighborCapabilities"]
    assert capability.get("extendedNexthop") == "received", "FRR does not advertise it to this neighbour"
    FrrRouter.wait_for(lambda: best_v6(frr, f"{VM_V6}/128"), 30, f"{VM_V6}/128 at the ToR")
    FrrRouter.wait_for(lambda: metric(running, REFUSED) >= 1, 15, "the /32 refused, counted")
    assert best(frr, f"{VM_V4}/32") == [] and fib(frr, VM_V4) == [], "no IPv4 route without the capability"

    frr.configure(f"router bgp {frr.settings.asn}", f"neighbor {node} capability extended-nexthop")
    frr.vtysh(f"clear bgp {node}")
    FrrRouter.wait_for(lambda: best(frr, f"{VM_V4}/32") == [(node, "ipv6")], 60, f"{VM_V4}/32 via {node}")
    FrrRouter.wait_for(lambda: fib(frr, VM_V4) == [("inet6", node, "swp1")], 15, f"{VM_V4} in the ToR's FIB")
    assert frr.neighbor(node)["neighborCapabilities"]["extendedNexthop"] == "advertisedAndReceived"

    frr.configure(f"router bgp {frr.settings.asn}", f"no neighbor {node} capability extended-nexthop")
    frr.vtysh(f"clear bgp {node}")
    FrrRouter.wait_for(lambda: frr.neighbor_state(node) == "Established", 60, "the session back")
    # the reset took every route away: the /128 comes back with the new session (waited for, not read at once), and
    # only then is the /32's absence the capability's doing rather than the session's youth
    FrrRouter.wait_for(lambda: best_v6(frr, f"{VM_V6}/128"), 30, "the IPv6 route back with the session")
    FrrRouter.wait_for(lambda: best(frr, f"{VM_V4}/32") == [] and not fib(frr, VM_V4), 30, f"{VM_V4}/32 gone")
    assert best_v6(frr, f"{VM_V6}/128"), "the IPv6 route stays"
