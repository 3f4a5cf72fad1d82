"""Unnumbered fabric against a real router: BGP over each link's IPv6 link-local addresses, IPv4 routes with IPv6 next
hops (RFC 8950).

Scope: two per-node instances (worker-1 in w1, worker-2 in w2) each peer with the FRR ToR over a point-to-point veth
that holds no IPv4 address (ToR `swp1` to w1's `eth1`, `swp2` to w2's `eth1`), configured by interface only (`peers:
[{interface: eth1, asn: 64512}]`: the ToR's link-local address is discovered); the ToR runs zebra and `neighbor swpN
interface peer-group CLUSTER` (Extended Next Hop on, as for every FRR interface neighbour). What the fabric must see:
the session Established with Extended Next Hop advertised and received; each VM's /32 valid and best in FRR's IPv4 table
with the node's link-local address on that link as next hop, and in the ToR kernel's FIB `via inet6 fe80::… dev swpN`; a
live migration worker-1 → worker-2 moving the /32 from swp1 to swp2; the session dropped (the link down) and back,
routes included; the ToR's IPv4 default route imported (`importRoutes`) into worker-1's table 1001 `via inet6 <the ToR's
link-local> dev eth1` (table 1001 stands in for the network's VRF: this kernel has no VRF devices, lab-kernel.md); and,
last, worker-1's instance started while the ToR's port is down (its peer waiting for its link, in /status and the
metric), then the port up: the session comes up and the VM's /32 reaches FRR's RIB and FIB with the same controller
process, no restart. BFD
is not exercised: bgpadv refuses it on an interface peer. The Kubernetes API is a fake one on the management network
(br0, 10.0.0.0/24, as the standard lab's), which carries no BGP here.
"""

from __future__ import annotations

import json
import sys

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab, lab_config, metric, shared_api
from bgpadv_lab.frr import FrrRouter, TorSettings
from bgpadv_lab.netns import sh
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import Lab, link_local

pytestmark = pytest.mark.lab

TABLE = 1001  # stands in for the network's VRF table (this kernel has no VRF devices: lab-kernel.md)
LINKS = {"w1": "swp1", "w2": "swp2"}  # the ToR's port toward each worker's eth1
VM_A, VM_M = "192.168.100.10", "192.168.100.30"
READY = "2025-03-01T10:00:10Z"
TARGET_LABEL = "kubevirt.io/migrationTargetNodeName"


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.node("worker-2", "10.0.0.12", "fd00::12"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=k8s.ADVERTISED),
        *vm("vm-a", VM_A, "worker-1"),
        *vm("vm-m", VM_M, "worker-1"),
    ]


def vm(name: str, ip: str, node: str) -> list[dict]:
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ip}/24"]),
        k8s.vmi(NS, name, node, interfaces=[k8s.interface([ip])]),
        k8s.launcher_pod(NS, name, node, suffix="src01"),
    ]


def best(frr: FrrRouter, prefix: str) -> list[tuple[str, str]]:
    """(next hop, its address family) of the best path of `prefix` in FRR's IPv4 table (`[]`: none valid)."""
    for path in (frr.vtysh_json("show bgp ipv4 unicast json").get("routes") or {}).get(prefix, []):
        if path.get("valid") and path.get("bestpath"):
            return [(h.get("ip", ""), h.get("afi", "")) for h in path.get("nexthops", []) if h.get("ip") != "::"]
    return []


def fib(frr: FrrRouter, prefix: str) -> list[tuple[str, str, str]]:
    """(family, gateway, device) of each next hop of `prefix` in the ToR kernel's IPv4 table: an RFC 8950 route is
    `via inet6 fe80::… dev swp1`, which `ip -j` gives as `"via": {"family": "inet6", "host": …}`."""
    routes = json.loads(sh(["ip", "-4", "-j", "route", "show", prefix], netns=frr.ns).stdout or "[]")
    out = []
    for r in routes:
        for hop in r.get("nexthops") or [r]:
            via = hop.get("via") or {"family": "inet", "host": hop.get("gateway", "")}
            out.append((via.get("family", ""), via.get("host", ""), hop.get("dev", "")))
    return out


@pytest.fixture(scope="module")
def fabric():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    settings = TorSettings(cluster_ranges=(), listen="::", interfaces=tuple(LINKS.values()), hold=9, keepalive=3)
    with Lab("bgpun", tor=settings, start_frr=False) as lab:
        for role, port in LINKS.items():  # point-to-point, link-local addresses only
            lab.net.veth(lab.ns("tor"), port, lab.ns(role), "eth1")
        lab.frr = FrrRouter(lab.net, lab.ns("tor"), lab.workdir / "frr", settings)
        lab.frr.start()
        api = shared_api(lab)  # on the management network (br0)
        with api:
            api.load(cluster())
            instances = []
            for role, node in (("w1", "worker-1"), ("w2", "worker-2")):
                config = lab_config(lab.workdir / f"bgpadv-{role}" / "kubeconfig", role, nodeName=node)
                config["peers"] = [{"interface": "eth1", "asn": 64512, "holdTime": 9, "gracefulRestart": 60}]
                del config["nextHopSelf"]
                config["importRoutes"] = {"enabled": True, "networks": [{"name": "vmnet-a", "table": TABLE}]}
                instances.append(BgpadvInLab(lab, node=role, config=config, api=api))
            try:
                for running in instances:
                    running.start(wait_established=False)
                for running in instances:
                    port = LINKS[running.node]
                    FrrRouter.wait_for(lambda p=port: lab.frr.neighbor_state(p) == "Established", 60, f"{port} up")
                yield lab, api, instances
            finally:
                for running in instances:
                    running.stop()


def test_the_session_runs_over_the_link_local_addresses_with_extended_next_hop(fabric):
    lab, _api, (one, _two) = fabric
    neighbor = lab.frr.neighbor("swp1")
    assert neighbor["bgpState"] == "Established"
    assert neighbor["bgpNeighborAddr"] == link_local(lab, "w1", "eth1"), "discovered by the ToR from the node's RAs"
    assert neighbor["neighborCapabilities"]["extendedNexthop"] == "advertisedAndReceived"
    assert metric(one, "bgpadv_router_adverts_sent_total") >= 1
    code, body = one.get("/status")
    [peer] = json.loads(body)["peers"].values()
    assert code == 200 and (peer["interface"], peer["extended_next_hop"]) == ("eth1", True)


def test_vm_host_routes_are_best_at_the_tor_via_the_nodes_link_local_address(fabric):
    lab, *_ = fabric
    w1 = link_local(lab, "w1", "eth1")
    FrrRouter.wait_for(lambda: best(lab.frr, f"{VM_A}/32") == [(w1, "ipv6")], 30, f"{VM_A}/32 via {w1}")
    FrrRouter.wait_for(lambda: fib(lab.frr, VM_A) == [("inet6", w1, "swp1")], 15, f"{VM_A} in the ToR's FIB")


def test_a_live_migration_moves_the_vm_route_to_the_target_nodes_link(fabric):
    lab, api, _instances = fabric
    w1, w2 = link_local(lab, "w1", "eth1"), link_local(lab, "w2", "eth1")
    FrrRouter.wait_for(lambda: best(lab.frr, f"{VM_M}/32") == [(w1, "ipv6")], 30, f"{VM_M}/32 via worker-1")
    vmi = api.get("kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS)
    target = k8s.launcher_pod(NS, "vm-m", "worker-2", suffix="tgt01", migration_job="migration-vm-m")
    k8s.owned_by(target, vmi["metadata"]["uid"])
    api.create(target)
    state = k8s.migration_state("worker-1", "worker-2", vmi="vm-m")
    patch = {"metadata": {"labels": {TARGET_LABEL: "worker-2"}}, "status": {"migrationState": state}}
    api.patch("kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS, patch)
    annotation = {"kubevirt.io/migration-target-ready-timestamp": READY}
    api.patch("v1", "Pod", target["metadata"]["name"], NS, {"metadata": {"annotations": annotation}})
    both = sorted([("inet6", w1, "swp1"), ("inet6", w2, "swp2")])
    FrrRouter.wait_for(lambda: sorted(fib(lab.frr, VM_M)) == both, 30, f"{VM_M} via both links (ECMP)")
    done = k8s.migration_state("worker-1", "worker-2", vmi="vm-m", target_ready=READY, completed=True)
    patch = {"metadata": {"labels": {"kubevirt.io/nodeName": "worker-2"}}, "status": {"migrationState": done}}
    patch["status"]["nodeName"] = "worker-2"
    api.patch("kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS, patch)
    api.patch("kubevirt.io/v1", "VirtualMachineInstance", "vm-m", NS, {"metadata": {"labels": {TARGET_LABEL: None}}})
    api.delete("v1", "Pod", "virt-launcher-vm-m-src01", NS)
    FrrRouter.wait_for(lambda: best(lab.frr, f"{VM_M}/32") == [(w2, "ipv6")], 30, f"{VM_M}/32 via worker-2")
    FrrRouter.wait_for(lambda: fib(lab.frr, VM_M) == [("inet6", w2, "swp2")], 15, f"{VM_M} via swp2 in the FIB")


def test_the_session_drops_with_its_link_and_comes_back_with_the_routes(fabric):
    lab, *_ = fabric
    w1 = link_local(lab, "w1", "eth1")
    FrrRouter.wait_for(lambda: fib(lab.frr, VM_A) == [("inet6", w1, "swp1")], 30, f"{VM_A} via swp1")
    sh(["ip", "link", "set", "eth1", "down"], netns=lab.ns("w1"))
    try:
        FrrRouter.wait_for(lambda: lab.frr.neighbor_state("swp1") != "Established", 15, "swp1's session down")
        FrrRouter.wait_for(lambda: not fib(lab.frr, VM_A), 15, f"{VM_A} out of the ToR's FIB")
    finally:
        sh(["ip", "link", "set", "eth1", "up"], netns=lab.ns("w1"))
    FrrRouter.wait_for(lambda: lab.frr.neighbor_state("swp1") == "Established", 60, "swp1's session back")
    FrrRouter.wait_for(lambda: fib(lab.frr, VM_A) == [("inet6", w1, "swp1")], 30, f"{VM_A} back via swp1")


def test_the_tors_default_route_is_installed_via_its_link_local_address_on_the_uplink(fabric):
    lab, *_ = fabric
    tor = link_local(lab, "tor", "swp1")
    lab.frr.announce_to_cluster("0.0.0.0/0")
    try:
        want = [{"dst": "default", "via": {"family": "inet6", "host": tor}, "dev": "eth1"}]

        def installed() -> list[dict]:
            argv = ["ip", "-4", "-j", "route", "show", "table", str(TABLE), "proto", "bgp"]
            out = sh(argv, netns=lab.ns("w1"), check=False)  # the table exists once a route is in it
            routes = json.loads((out.stdout if out.returncode == 0 else "") or "[]")
            return [{k: r.get(k) for k in ("dst", "via", "dev")} for r in routes]

        FrrRouter.wait_for(lambda: installed() == want, 30, f"0.0.0.0/0 via inet6 {tor} dev eth1 in table {TABLE}")
    finally:
        lab.frr.withdraw_from_cluster("0.0.0.0/0")


def test_an_instance_started_while_the_tors_port_is_down_peers_once_it_comes_up(fabric):
    """Last in the module: it restarts worker-1's instance."""
    lab, _api, (one, _two) = fabric
    w1 = link_local(lab, "w1", "eth1")
    one.stop()
    sh(["ip", "link", "set", "swp1", "down"], netns=lab.ns("tor"))
    try:
        FrrRouter.wait_for(lambda: not fib(lab.frr, VM_A), 15, f"{VM_A} out of the ToR's FIB")
        one.spawn()

        def waiting() -> list[dict]:
            placement = one.status().get("placement") if one.answers("/status") else None
            return (placement or {}).get("waitingForLink") or []

        FrrRouter.wait_for(lambda: [w.get("attempts", 0) >= 2 for w in waiting()] == [True], 60, "eth1 tried again")
        assert metric(one, 'bgpadv_interface_peer_waiting{interface="eth1"}') == 1
        controllers = one.controller_pids()
    finally:
        sh(["ip", "link", "set", "swp1", "up"], netns=lab.ns("tor"))
    FrrRouter.wait_for(lambda: lab.frr.neighbor_state("swp1") == "Established", 60, "swp1's session up")
    FrrRouter.wait_for(lambda: best(lab.frr, f"{VM_A}/32") == [(w1, "ipv6")], 30, f"{VM_A}/32 via {w1}")
    FrrRouter.wait_for(lambda: fib(lab.frr, VM_A) == [("inet6", w1, "swp1")], 15, f"{VM_A} in the ToR's FIB")
    assert one.controller_pids() == controllers, "taken on live: the controller was not restarted"
    assert waiting() == [] and metric(one, "bgpadv_interface_peer_waiting") == 0
