"""A leaf-spine fabric against real routers: two racks, each with its own FRR ToR, per-node instances.

Scope, asserted on FRR's own tables (`show bgp ... json`, `show bgp neighbors ... json`), never on bgpadv's logs:

- peers per rack: worker-1 (rack a) peers with ToR A (10.0.0.1, eBGP AS 64512) only, worker-2 (rack b) with ToR B
  (10.0.0.2, iBGP) only; each ToR holds exactly its rack's VM /32s and the subnet via its rack's node. worker-2
  relabelled to both racks (`ab`) brings up its session with ToR A while its ToR B session keeps its uptime;
  relabelled to rack a it leaves ToR B, and its ToR A session again keeps its uptime. worker-1's sessions are never
  reset. No configuration file changes: the node's labels alone move the sessions.
- IPv6 for real: worker-1's IPv6 session (fd00::11 → fd00::1) carries the VM's /128 and the IPv6 subnet with the
  global next hop fd00::11; its IPv4 session carries them too, with the node's IPv6 address fd00::11 as next hop and
  no `nextHopSelf` in the configuration.
- knobs: the 4-byte local AS 4200000001 in ToR A's AS paths, the iBGP ToR B seeing `localPreference` 200 and an
  empty AS path although `asPathPrepend: 1` is set (our AS in an iBGP path would make ToR B drop the route),
  `holdTime 9`/`keepaliveTime 3` negotiated against ToR B's 30 s, and ToR B's bgpd on port 1179 (`port`).

Simplified from the issue's four nodes: two nodes (the lab's w1 and w2), one per rack, both racks on one L2 segment
(the second ToR hangs off the first ToR's bridge), which is what per-node selection needs; cluster mode's selection
is the same code with the node from BGPADV_POD_NODE_NAME (unit tests).
"""

from __future__ import annotations

import contextlib
import os
import shutil
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
TOR_A, TOR_A6, TOR_B, TOR_B6 = "10.0.0.1", "fd00::1", "10.0.0.2", "fd00::2"
RACK = "topology.bgpadv.io/rack"
LOCAL_AS = 4200000001
SUBNET, SUBNET6 = "192.168.100.0/24", "fd10:100::/64"


def peers(v4: str, v6: str) -> list[dict[str, Any]]:
    def rack(*values: str) -> dict[str, Any]:  # a fresh dict each time: yaml.safe_dump writes no alias
        return {"matchExpressions": [{"key": RACK, "operator": "In", "values": list(values)}]}

    return [
        # rack a: eBGP over IPv4 carrying both families (IPv6 next hop: the node's own IPv6 address), and IPv6
        {"address": TOR_A, "asn": 64512, "localAddress": v4, "holdTime": 9, "nodeSelector": rack("a", "ab")},
        {
            "address": TOR_A6,
            "asn": 64512,
            "localAddress": v6,
            "holdTime": 9,
            "families": ["ipv6 unicast"],
            "nodeSelector": rack("a", "ab"),
        },
        # rack b: iBGP on port 1179, keepalive 3 / hold 9
        {
            "address": TOR_B,
            "asn": LOCAL_AS,
            "localAddress": v4,
            "port": 1179,
            "keepaliveTime": 3,
            "description": "rack b ToR (iBGP, port 1179)",
            "nodeSelector": rack("b", "ab"),
        },
    ]


def config(role: str) -> dict[str, Any]:
    v4, v6 = WORKERS[role]
    return {
        "localASN": LOCAL_AS,
        "routerID": v4,
        "peers": peers(v4, v6),
        "networks": {"selector": {"matchLabels": dict(k8s.ADVERTISED)}},
        "nextHop": "node",
        "attributes": {"localPreference": 200, "asPathPrepend": 1},
        "kubernetes": {"kubeconfig": f"/nonexistent-{role}"},  # replaced below with the instance's own
        "metrics": {"listen": "127.0.0.1:9179"},
    }


def vm(name: str, ips: tuple[str, str], node: str) -> list[dict]:
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [f"{ips[0]}/24", f"{ips[1]}/64"]),
        k8s.vmi(NS, name, node, interfaces=[k8s.interface(list(ips))]),
        k8s.launcher_pod(NS, name, node, suffix="src01"),
    ]


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, W1_6, labels={RACK: "a"}),
        k8s.node("worker-2", W2, W2_6, labels={RACK: "b"}),
        k8s.cudn_layer2("vmnet-a", [SUBNET, SUBNET6], labels=k8s.ADVERTISED),
        *vm("vm-a", ("192.168.100.10", "fd10:100::10"), "worker-1"),
        *vm("vm-b", ("192.168.100.20", "fd10:100::20"), "worker-2"),
    ]


def session(frr: FrrRouter, address: str) -> tuple[str, int, int]:
    """(state, connections established, connections dropped) of FRR's neighbor `address`. A reset session shows as a
    count that grew; its uptime does not say it: FRR 8.4 keeps a peer's uptime in whole seconds (`bgpTimerUpMsec` is
    seconds x 1000), so two reads within the same second are equal although the session never dropped."""
    n = frr.neighbor(address)
    return str(n.get("bgpState", "")), int(n.get("connectionsEstablished", 0)), int(n.get("connectionsDropped", 0))


@pytest.fixture(scope="module")
def fabric():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    ranges = ("10.0.0.0/24", "fd00::/64")
    tor_a = TorSettings(asn=64512, cluster_asn=LOCAL_AS, cluster_ranges=ranges, listen_also=(TOR_A6,))
    with Lab("bgpfab", tor=tor_a) as lab, contextlib.ExitStack() as stack:
        keep = os.environ.get("BGPADV_LAB_KEEP")  # a directory: FRR's and bgpadv's logs are copied there at the end
        if keep:
            sockets = shutil.ignore_patterns("*.vty", "zserv.api", "*.sock")
            kept = os.path.join(keep, lab.prefix)
            stack.callback(shutil.copytree, lab.workdir, kept, ignore=sockets, dirs_exist_ok=True)
        settings_b = TorSettings(
            asn=LOCAL_AS,
            router_id=TOR_B,
            listen=TOR_B,
            cluster_asn=LOCAL_AS,
            cluster_ranges=ranges,
            keepalive=10,
            hold=30,
            port=1179,
        )
        tor_b = lab.add_tor("torb", (f"{TOR_B}/24", f"{TOR_B6}/64"), settings_b)
        api = shared_api(lab)
        stack.enter_context(api)
        api.load(cluster())
        instances = {}
        for role, node in (("w1", "worker-1"), ("w2", "worker-2")):
            conf = config(role)
            conf["kubernetes"] = {"kubeconfig": str(lab.workdir / f"bgpadv-{role}" / "kubeconfig")}
            b = BgpadvInLab(lab, node=role, config=conf, api=api, env={"BGPADV_NODE_NAME": node})
            stack.callback(b.stop)
            instances[role] = b.start(wait_established=False)
        assert lab.frr is not None
        tor_a_frr = lab.frr
        try:
            tor_a_frr.wait_valid_paths({SUBNET: [(W1, W1)], "192.168.100.10/32": [(W1, W1)]}, timeout=60)
            tor_b.wait_valid_paths({SUBNET: [(W2, W2)], "192.168.100.20/32": [(W2, W2)]}, timeout=60)
        except TimeoutError as e:
            logs = "\n".join(f"--- {role}:\n{b.log_tail(60)}" for role, b in instances.items())
            raise TimeoutError(f"{e}\n{logs}") from None
        yield lab, api, tor_a_frr, tor_b, instances


def relabel(api, rack: str) -> None:
    api.patch("v1", "Node", "worker-2", None, {"metadata": {"labels": {RACK: rack}}})


def test_each_tor_holds_exactly_its_racks_vms_and_the_subnet_via_its_racks_node(fabric):
    _, _, tor_a, tor_b, _ = fabric
    assert tor_a.valid_paths() == {SUBNET: [(W1, W1)], "192.168.100.10/32": [(W1, W1)]}
    assert tor_b.valid_paths() == {SUBNET: [(W2, W2)], "192.168.100.20/32": [(W2, W2)]}
    assert session(tor_a, W2)[0] != "Established" and session(tor_b, W1)[0] != "Established"


def test_an_ipv6_session_carries_the_128s_and_the_ipv6_subnet_with_a_global_next_hop(fabric):
    _, _, tor_a, _, _ = fabric
    # the fixture waits for the IPv4 tables: the IPv6 session may still be coming up on a loaded machine
    tor_a.wait_for(lambda: session(tor_a, W1_6)[0] == "Established", 30, "the IPv6 session to worker-1")

    def carried() -> dict | None:
        paths = tor_a.valid_paths("ipv6")
        return paths if "fd10:100::10/128" in paths and SUBNET6 in paths else None

    v6 = tor_a.wait_for(carried, 30, "worker-1's IPv6 routes at ToR A")
    assert (W1_6, W1_6) in v6["fd10:100::10/128"]
    assert (W1_6, W1_6) in v6[SUBNET6]
    assert "fd10:100::20/128" not in v6  # rack b's VM


def test_an_ipv4_session_carries_the_ipv6_routes_with_the_nodes_ipv6_address_and_no_next_hop_self(fabric):
    _, _, tor_a, tor_b, instances = fabric
    assert "nextHopSelf" not in instances["w1"].config
    v6 = tor_a.valid_paths("ipv6")
    assert (W1, W1_6) in v6[SUBNET6]  # learned over the IPv4 session 10.0.0.11, next hop its global IPv6 address
    assert (W1, W1_6) in v6["fd10:100::10/128"]
    tor_b.wait_valid_paths({SUBNET6: [(W2, W2_6)], "fd10:100::20/128": [(W2, W2_6)]}, afi="ipv6")


def test_the_knobs_as_the_tors_see_them(fabric):
    _, _, tor_a, tor_b, _ = fabric
    a = tor_a.vtysh_json("show bgp ipv4 unicast json")["routes"]["192.168.100.10/32"][0]
    # the 4-byte AS heads the path, twice: `asPathPrepend: 1` is one copy more than the one eBGP adds
    assert a["path"].split() == [str(LOCAL_AS), str(LOCAL_AS)]
    b = tor_b.vtysh_json("show bgp ipv4 unicast json")["routes"]["192.168.100.20/32"][0]
    assert (b["path"], b.get("locPrf")) == ("", 200)  # iBGP: local preference carried, no prepend
    n = tor_b.neighbor(W2)
    assert (n["remoteAs"], n["localAs"], n.get("nbrInternalLink")) == (LOCAL_AS, LOCAL_AS, True)
    assert (n["bgpTimerHoldTimeMsecs"], n["bgpTimerKeepAliveIntervalMsecs"]) == (9000, 3000)
    assert n.get("portForeign") == 1179 or n.get("portLocal") == 1179


def test_a_node_relabelled_moves_its_session_and_leaves_the_others_untouched(fabric):
    _, api, tor_a, tor_b, _ = fabric
    w1_before = session(tor_a, W1)
    w2b_before = session(tor_b, W2)
    assert w1_before[0] == w2b_before[0] == "Established"
    relabel(api, "ab")  # both racks: a session with ToR A too
    tor_a.wait_valid_paths(
        {SUBNET: [(W1, W1), (W2, W2)], "192.168.100.10/32": [(W1, W1)], "192.168.100.20/32": [(W2, W2)]}
    )
    w2b = session(tor_b, W2)
    assert w2b == w2b_before, "the untouched ToR B session was reset"
    w2a_before = session(tor_a, W2)
    relabel(api, "a")  # rack a only: the ToR B session goes
    tor_b.wait_for(lambda: session(tor_b, W2)[0] != "Established", 30, "ToR B's session with worker-2 to end")
    tor_b.wait_valid_paths({}, timeout=90)
    w2a = session(tor_a, W2)
    assert w2a == w2a_before, "the untouched ToR A session was reset"
    assert session(tor_a, W1) == w1_before, "worker-1's session was reset"


def test_the_sessions_interface_gives_the_nodes_global_ipv6_address_and_never_its_link_local_one(fabric):
    from bgpadv.core.prefix import Address
    from bgpadv.runtime.peering import kernel_interface_addresses
    from bgpadv_lab.netns import in_netns

    lab = fabric[0]
    with in_netns(lab.ns("w1")):
        found = kernel_interface_addresses(Address.parse(TOR_A), 6)
    assert found == [Address.parse(W1_6)]  # eth0 also holds an fe80:: address, skipped
