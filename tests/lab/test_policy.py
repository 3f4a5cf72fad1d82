"""`policies[]` and `peers[].exportFilter` against a real FRR ToR.

Scope, asserted on FRR's own tables (`show bgp ipv4 unicast json`, `show bgp ipv4 unicast PREFIX json`,
`show bgp neighbors json`), never on bgpadv's logs. One lab for the module: the standard ToR (AS 64512), one bgpadv
(AS 64513, cluster mode) on worker-1, two advertised CUDNs:

- per network: vmnet-a's subnet and host routes carry community 64513:100 and large community 64513:1:100,
  vmnet-b's carry 64513:200 only.
- per VM label: vm-a2's VMI labelled `bgpadv.io/wave: "3"` gets MED 50 and community 64513:3 on its /32 only.
- `asPathPrepend: 2` on vmnet-b: FRR's `path` shows the local AS three times (two copies plus the one eBGP adds).
- the peer's exportFilter denies vm-b2's /32: the ToR never has it, the rest of vmnet-b is there.
- relabelling vm-a's VMI through the fake apiserver re-tags that one /32; the session is not reset
  (`connectionsEstablished` unchanged, `bgpTimerUpMsec` grows).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from bgpadv_lab import objects as k8s
from bgpadv_lab.chain import BgpadvInLab
from bgpadv_lab.frr import FrrRouter
from bgpadv_lab.objects import VM_NAMESPACE as NS
from bgpadv_lab.topology import TOR_V4, WORKERS, Lab

pytestmark = pytest.mark.lab

W1, W1_6 = WORKERS["w1"]
LOCAL_AS = 64513
WAVE = "bgpadv.io/wave"
SUBNET_A, SUBNET_B = "192.168.100.0/24", "192.168.200.0/24"
VM_A, VM_A2 = "192.168.100.10/32", "192.168.100.11/32"
VM_B, VM_B2 = "192.168.200.20/32", "192.168.200.21/32"
DENIED = VM_B2

POLICIES: list[dict[str, Any]] = [
    {
        "name": "vmnet-a",
        "match": {"networks": ["vmnet-a"]},
        "set": {"communities": ["64513:100"], "largeCommunities": ["64513:1:100"]},
    },
    {"name": "vmnet-b", "match": {"networks": ["vmnet-b"]}, "set": {"communities": ["64513:200"], "asPathPrepend": 2}},
    {
        "name": "wave-3",
        "match": {"kinds": ["host"], "vmSelector": {"matchLabels": {WAVE: "3"}}},
        "set": {"med": 50, "communities": ["64513:3"]},
    },
]


def config(kubeconfig: str) -> dict[str, Any]:
    return {
        "localASN": LOCAL_AS,
        "routerID": W1,
        "peers": [
            {
                "address": TOR_V4,
                "asn": 64512,
                "localAddress": W1,
                "holdTime": 9,
                "exportFilter": {"rules": [{"prefix": DENIED, "action": "deny"}], "defaultAction": "allow"},
            }
        ],
        "networks": {"selector": {"matchLabels": dict(k8s.ADVERTISED)}},
        "nextHop": "node",
        "policies": POLICIES,
        "kubernetes": {"kubeconfig": kubeconfig},
        "metrics": {"listen": "127.0.0.1:9179"},
    }


def vm(name: str, network: str, ip: str, labels: dict[str, str] | None = None) -> list[dict]:
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, f"cluster_udn_{network}", [f"{ip}/24"]),
        k8s.vmi(NS, name, "worker-1", interfaces=[k8s.interface([ip])], labels=labels),
        k8s.launcher_pod(NS, name, "worker-1", suffix="src01"),
    ]


def cluster() -> list[dict]:
    return [
        k8s.node("worker-1", W1, W1_6),
        k8s.cudn_layer2("vmnet-a", [SUBNET_A], labels=k8s.ADVERTISED),
        k8s.cudn_layer2("vmnet-b", [SUBNET_B], labels=k8s.ADVERTISED),
        *vm("vm-a", "vmnet-a", "192.168.100.10", labels={WAVE: "1"}),
        *vm("vm-a2", "vmnet-a", "192.168.100.11", labels={WAVE: "3"}),
        *vm("vm-b", "vmnet-b", "192.168.200.20"),
        *vm("vm-b2", "vmnet-b", "192.168.200.21"),
    ]


def best(frr: FrrRouter, prefix: str) -> dict[str, Any]:
    """FRR's path for `prefix` (`show bgp ipv4 unicast PREFIX json`), {} when it has none."""
    paths = frr.vtysh_json(f"show bgp ipv4 unicast {prefix} json").get("paths") or []
    return paths[0] if paths else {}


def tags(path: dict[str, Any]) -> tuple[list[str], list[str], int | None]:
    """(communities, large communities, MED) of one FRR path; each list sorted."""
    communities = sorted((path.get("community") or {}).get("list", []))
    large = sorted((path.get("largeCommunity") or {}).get("list", []))
    return communities, large, path.get("metric")


def session(frr: FrrRouter) -> tuple[str, int, int]:
    n = frr.neighbor(W1)
    return str(n.get("bgpState", "")), int(n.get("connectionsEstablished", 0)), int(n.get("bgpTimerUpMsec", 0))


@pytest.fixture(scope="module")
def policy_lab():
    if sys.platform != "linux":
        pytest.skip("needs Linux network namespaces")
    with Lab("bgppol") as lab:
        kubeconfig = lab.workdir / "bgpadv-w1" / "kubeconfig"
        with BgpadvInLab(lab, cluster(), config=config(str(kubeconfig))) as b:
            assert lab.frr is not None
            frr = lab.frr
            expected = {SUBNET_A, SUBNET_B, VM_A, VM_A2, VM_B}
            try:
                frr.wait_for(lambda: set(frr.bgp_routes()) == expected, 60, f"the ToR to hold {expected}", every=0.2)
            except TimeoutError as e:
                raise TimeoutError(f"{e}; FRR has {sorted(frr.bgp_routes())}\n{b.log_tail(60)}") from None
            yield lab, b, frr


@pytest.mark.parametrize(
    ("prefix", "communities", "large"),
    [
        pytest.param(SUBNET_A, ["64513:100"], ["64513:1:100"], id="vmnet-a-subnet"),
        pytest.param(VM_A, ["64513:100"], ["64513:1:100"], id="vmnet-a-host"),
        pytest.param(SUBNET_B, ["64513:200"], [], id="vmnet-b-subnet"),
        pytest.param(VM_B, ["64513:200"], [], id="vmnet-b-host"),
    ],
)
def test_a_networks_communities_reach_its_subnet_and_host_routes(policy_lab, prefix, communities, large):
    _, _, frr = policy_lab
    got = tags(best(frr, prefix))
    assert got[:2] == (communities, large)
    assert got[2] in (None, 0)  # no MED policy matches these


def test_a_vm_label_policy_sets_med_and_a_community_on_that_vms_host_route_only(policy_lab):
    _, _, frr = policy_lab
    assert tags(best(frr, VM_A2)) == (["64513:100", "64513:3"], ["64513:1:100"], 50)
    assert tags(best(frr, VM_A))[2] in (None, 0)
    assert "64513:3" not in tags(best(frr, SUBNET_A))[0]


def test_as_path_prepend_2_shows_the_local_as_three_times(policy_lab):
    _, _, frr = policy_lab
    routes = frr.vtysh_json("show bgp ipv4 unicast json")["routes"]
    assert routes[VM_B][0]["path"].split() == [str(LOCAL_AS)] * 3
    assert routes[SUBNET_B][0]["path"].split() == [str(LOCAL_AS)] * 3
    assert routes[VM_A][0]["path"].split() == [str(LOCAL_AS)]  # vmnet-a: no prepend


def test_an_export_filter_deny_keeps_that_prefix_off_the_tor(policy_lab):
    _, _, frr = policy_lab
    routes = frr.vtysh_json("show bgp ipv4 unicast json")["routes"]
    assert DENIED not in routes
    assert best(frr, DENIED) == {}
    assert VM_B in routes and SUBNET_B in routes  # the rest of vmnet-b is there


def test_relabelling_a_vmi_retags_its_host_route_without_resetting_the_session(policy_lab):
    _, b, frr = policy_lab
    before = session(frr)
    assert before[0] == "Established"
    a2_before = tags(best(frr, VM_A2))
    b.api.patch("kubevirt.io/v1", "VirtualMachineInstance", "vm-a", NS, {"metadata": {"labels": {WAVE: "3"}}})
    frr.wait_for(lambda: tags(best(frr, VM_A))[2] == 50, 30, f"{VM_A} to get MED 50", every=0.2)
    assert tags(best(frr, VM_A)) == (["64513:100", "64513:3"], ["64513:1:100"], 50)
    assert tags(best(frr, VM_A2)) == a2_before  # the other routes are untouched
    assert tags(best(frr, SUBNET_A)) == (["64513:100"], ["64513:1:100"], tags(best(frr, SUBNET_A))[2])

    # FRR's bgpTimerUpMsec counts whole seconds: wait for it to move past its value before the relabel
    def grown() -> tuple[str, int, int] | None:
        now = session(frr)
        return now if now[2] > before[2] else None

    after = frr.wait_for(grown, 10, "the session's uptime to grow", every=0.2)
    assert after[:2] == before[:2], f"the session was reset: {before} → {after}"
