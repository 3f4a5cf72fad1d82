"""Planner, node and infrastructure space: a network over it is refused whole, and no other network notices.

Scope: one table per class of node and infrastructure space (`bgpadv.planner.space`), each from realistic Node and
CUDN objects (the annotations as OVN-K writes them): a selected network of any topology whose subnets (or Layer3 host
subnets) contain a node address (InternalIP, ExternalIP, `node-primary-ifaddr`, `host-cidrs`), overlap a node's
connected network, the default pod network, an OVN-K internal range (the defaults, and a configured one), a BGP
session's address or a session's connected subnet is refused whole with the class's reason code, with every claim on
it; every other network's routes stay exactly as they were without it; `plan()` and the incremental planner agree;
`bgpadv render` shows the refusal. Then next hops: a node whose own address another node also reports keeps another
valid source as next hop (the rule itself: test_node_duplicates.py), a node on the ToR's address is no next
hop, and a CUDN on NAT64 space is refused. Last, the property: for any generated cluster, adding one bad network
leaves every other network's routes unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgpadv.commands import render
from bgpadv.core import reasons
from bgpadv.core.state import ClusterState
from bgpadv.planner import plan
from bgpadv.planner.incremental import IncrementalPlanner
from bgpadv.sources.decode.nodes import decode_node
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

ADV = k8s.ADVERTISED
OLD = "2024-01-01T00:00:00Z"  # bad networks are the oldest: age must not let them win anything


def _nodes() -> list[dict]:
    """Three workers on the ToR's 10.0.0.0/24 (ToR 10.0.0.1), a storage NIC on 172.30.0.0/24 (host-cidrs),
    worker-3 with an ExternalIP, the default pod network 10.128.0.0/14 (one /23 each), OVN-K's per-node join and
    transit addresses."""
    return [
        k8s.node(
            f"worker-{n}",
            f"10.0.0.{10 + n}",
            f"fd00::{10 + n}",
            pod_subnets=[f"10.128.{2 * (n - 1)}.0/23", f"fd01:0:0:{n}::/64"],
            host_cidrs=[f"172.30.0.{10 + n}/24"],
            external_ips=["203.0.113.13"] if n == 3 else (),
            ovn_internal=True,
            node_subnets={"cluster_udn_vmnet-l3": f"10.132.{n}.0/24"},
        )
        for n in (1, 2, 3)
    ]


def _good() -> list[dict]:
    """Two good networks with a VM each: Layer2 vmnet-a (on worker-1), Layer3 vmnet-l3 (host subnets per node)."""
    return [
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=ADV),
        k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=ADV),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.10/24", "fd10:100::a/64"]),
        k8s.vmi(NS, "vm-a", "worker-1"),
    ]


def _bad_layer2(name: str, subnets: list[str], vm_ip: str | None = None, **kwargs: Any) -> list[dict]:
    objects = [k8s.cudn_layer2(name, subnets, labels=ADV, created_at=OLD, **kwargs)]
    if vm_ip is not None:
        objects += [
            k8s.ipam_claim(NS, f"vm-{name}.default", f"vm-{name}", f"cluster_udn_{name}", [vm_ip], created=OLD),
            k8s.vmi(NS, f"vm-{name}", "worker-2"),
        ]
    return objects


def _other_routes(p, bad: str) -> set[tuple[str, str, str, str]]:
    return {(str(r.prefix), str(r.next_hop or "self"), r.network, str(r.node)) for r in p.routes if r.network != bad}


def _refused(p, name: str) -> set[tuple[str, str]]:
    return {(x.source.kind, x.reason) for x in p.rejected if x.network == name}


CLASSES = [
    pytest.param(
        _bad_layer2("infra", ["10.0.0.8/29"], "10.0.0.9/29"),
        k8s.config(),
        reasons.CONTAINS_PEER_ADDRESS,
        "the session subnet 10.0.0.0/24 of BGP peer 10.0.0.1",
        id="a-block-of-the-node-network-the-sessions-subnet",
    ),
    pytest.param(
        _bad_layer2("infra", ["10.0.0.0/24"]),
        k8s.config(),
        reasons.CONTAINS_PEER_ADDRESS,
        "BGP peer 10.0.0.1",
        id="the-tors-address",
    ),
    pytest.param(
        _bad_layer2("infra", ["10.9.0.0/24"]),
        k8s.config(peers=[{"address": "10.0.0.1", "asn": 64512, "localAddress": "10.9.0.11"}]),
        reasons.CONTAINS_PEER_ADDRESS,
        "the local address 10.9.0.11",
        id="a-sessions-local-address",
    ),
    pytest.param(
        _bad_layer2("infra", ["10.2.0.0/24"]),
        k8s.config(nextHopSelf={"ipv4": "10.2.0.11"}),
        reasons.CONTAINS_PEER_ADDRESS,
        "the nextHopSelf address 10.2.0.11",
        id="a-next-hop-self-address",
    ),
    pytest.param(
        _bad_layer2("infra", ["172.30.0.8/29"], "172.30.0.10/29"),
        k8s.config(),
        reasons.OVERLAPS_NODE_NETWORK,
        "the address 172.30.0.1",  # 172.30.0.11-13, of worker-1 to worker-3
        id="a-host-cidrs-address",
    ),
    pytest.param(
        _bad_layer2("infra", ["172.30.0.128/25"], "172.30.0.130/25"),
        k8s.config(),
        reasons.OVERLAPS_NODE_NETWORK,
        "the network 172.30.0.0/24 node worker-1 is connected to",
        id="a-nodes-connected-network-without-a-node-address",
    ),
    pytest.param(
        _bad_layer2("infra", ["203.0.113.0/24"]),
        k8s.config(),
        reasons.SPECIAL_PREFIX,  # documentation space (unless allowed): refused before node space is looked at
        "documentation",
        id="an-external-ip-in-documentation-space",
    ),
    pytest.param(
        _bad_layer2("infra", ["10.128.4.0/24"], "10.128.4.10/24"),
        k8s.config(),
        reasons.OVERLAPS_CLUSTER_NETWORK,
        "the default pod subnet 10.128.4.0/23 of node worker-3",
        id="inside-a-nodes-default-pod-subnet",
    ),
    pytest.param(
        [k8s.cudn_layer3("infra", [("10.128.0.0/14", 23)], labels=ADV, created_at=OLD)],
        k8s.config(),
        reasons.OVERLAPS_CLUSTER_NETWORK,
        "default pod subnet",
        id="layer3-over-the-whole-default-pod-network",
    ),
    pytest.param(
        _bad_layer2("infra", ["fd01:0:0:2::/64"]),
        k8s.config(),
        reasons.OVERLAPS_CLUSTER_NETWORK,
        "fd01:0:0:2::/64",
        id="ipv6-default-pod-subnet",
    ),
    pytest.param(
        _bad_layer2("infra", ["100.64.0.0/20"], "100.64.0.10/20"),
        k8s.config(),
        reasons.OVERLAPS_OVN_INTERNAL,
        "OVN-K's join subnet 100.64.0.0/16",
        id="ovn-join",
    ),
    pytest.param(
        _bad_layer2("infra", ["100.88.0.0/24"]),
        k8s.config(),
        reasons.OVERLAPS_OVN_INTERNAL,
        "OVN-K's transit subnet 100.88.0.0/16",
        id="ovn-transit",
    ),
    pytest.param(
        _bad_layer2("infra", ["fd69::/64"]),
        k8s.config(),
        reasons.OVERLAPS_OVN_INTERNAL,
        "OVN-K's masquerade subnet fd69::/112",
        id="ovn-masquerade-ipv6",
    ),
    pytest.param(
        _bad_layer2("infra", ["fd98::/64"]),
        k8s.config(),
        reasons.OVERLAPS_OVN_INTERNAL,
        "OVN-K's join subnet fd98::/64",
        id="ovn-join-ipv6",
    ),
    pytest.param(
        _bad_layer2("infra", ["100.65.0.0/24"]),
        k8s.config(ovnKubernetes={"joinSubnets": ["100.65.0.0/16", "fd98::/64"]}),
        reasons.OVERLAPS_OVN_INTERNAL,
        "OVN-K's join subnet 100.65.0.0/16",
        id="a-configured-join-subnet",
    ),
    pytest.param(
        [k8s.cudn_layer3("infra", [("172.30.0.0/16", 24)], labels=ADV, created_at=OLD)],
        k8s.config(),
        reasons.OVERLAPS_NODE_NETWORK,
        "the address 172.30.0.1",
        id="layer3-whose-host-subnets-hold-node-addresses",
    ),
    pytest.param(
        _bad_layer2("infra", ["10.0.0.0/26"], role="Secondary", ipam_mode="Disabled"),
        k8s.config(),
        reasons.CONTAINS_PEER_ADDRESS,
        "BGP peer 10.0.0.1",
        id="ipam-less-secondary-layer2",
    ),
    pytest.param(
        _bad_layer2("infra", None, role="Secondary", ipam_mode="Disabled"),
        k8s.config(networks={"secondary": [{"name": "infra", "allowedPrefixes": ["172.30.0.0/24"]}]}),
        reasons.OVERLAPS_NODE_NETWORK,
        "172.30.0.0/24",
        id="ipam-less-secondary-bounded-by-allowed-prefixes-over-a-node-nic",
    ),
    pytest.param(
        [k8s.cudn_localnet("infra", "physnet", ["10.0.0.0/24"], labels=ADV)],
        k8s.config(),
        reasons.NETWORK_NOT_ADVERTISABLE,
        "",
        id="localnet-is-never-advertised",
    ),
    pytest.param(
        _bad_layer2("infra", ["64:ff9b::/96"]),
        k8s.config(),
        reasons.INVALID_NETWORK_DEFINITION,
        "the NAT64 well-known prefix",
        id="nat64-well-known-prefix",
    ),
]


@pytest.mark.parametrize(("bad", "config", "reason", "names"), CLASSES)
def test_a_network_over_infrastructure_space_is_refused_whole_and_the_others_do_not_notice(bad, config, reason, names):
    without = plan(k8s.state(_nodes(), _good()), config)
    p = plan(k8s.state(_nodes(), _good(), bad), config)
    assert not any(r.network == "infra" for r in p.routes)
    assert ("ClusterUserDefinedNetwork", reason) in _refused(p, "infra")
    assert {r for r in _refused(p, "infra") if r[0] == "IPAMClaim"} <= {("IPAMClaim", reason)}
    assert names in " ".join(x.message for x in p.rejected if x.network == "infra")
    assert _other_routes(p, "infra") == _other_routes(without, "infra")
    assert {"192.168.100.10/32", "10.132.1.0/24", "10.132.2.0/24", "10.132.3.0/24"} <= {str(r.prefix) for r in p.routes}
    # the incremental planner, fed the bad network after the good cluster, agrees
    state = k8s.state(_nodes(), _good())
    incremental = IncrementalPlanner(config)
    incremental.plan(state, None)
    grown = k8s.state(_nodes(), _good(), bad)
    for field in ("cudns", "ipam_claims", "vmis"):
        getattr(state, field).update(getattr(grown, field))
    assert incremental.plan(state, None) == p


def test_render_shows_the_refused_network_with_its_reason(tmp_path, capsys):
    (tmp_path / "cluster").mkdir()
    cluster = tmp_path / "cluster" / "cluster.json"
    cluster.write_text(json.dumps(k8s.as_list([*_nodes(), *_good(), *_bad_layer2("infra", ["100.64.0.0/20"])])))
    conf = tmp_path / "bgpadv.yaml"
    conf.write_text(json.dumps({"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}))
    assert render.main(str(conf), str(tmp_path / "cluster"), "table") == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "ClusterUserDefinedNetwork infra" in line)
    assert "100.64.0.0/20" in line and "overlaps-ovn-internal" in line


# --- next hops ------------------------------------------------------------------------------------------------------


def _vm(name: str, ip: str, node: str) -> list[dict]:
    return [
        k8s.ipam_claim(NS, f"{name}.default", name, "cluster_udn_vmnet-a", [ip]),
        k8s.vmi(NS, name, node),
    ]


def test_an_address_two_nodes_report_spares_a_node_with_another_valid_source():
    # worker-2's InternalIP is worker-1's, but its primary-ifaddr is its own: that is its next hop
    worker_2 = k8s.node("worker-2", "10.0.0.12")
    worker_2["status"]["addresses"].insert(0, {"type": "InternalIP", "address": "10.0.0.11"})
    nodes = [k8s.node("worker-1", "10.0.0.11", primary_ifaddr=False), worker_2]
    p = plan(k8s.state(nodes, _good()[0], _vm("vm-b", "192.168.100.11/24", "worker-2")), k8s.config())
    assert {(str(r.prefix), str(r.next_hop)) for r in p.routes if r.kind == "host"} == {
        ("192.168.100.11/32", "10.0.0.12")
    }


@pytest.mark.parametrize(
    ("address", "settings", "part"),
    [
        pytest.param("10.0.0.1", {}, "BGP peer 10.0.0.1", id="the-tors-address"),
        pytest.param(
            "10.0.0.5",
            dict(
                mode="per-node",
                nodeName="worker-2",
                peers=[{"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.5"}],
            ),
            "the local address 10.0.0.5",
            id="per-node-another-nodes-speaker-address",
        ),
        pytest.param(
            "10.0.0.7",
            dict(mode="per-node", nodeName="worker-2", nextHopSelf={"ipv4": "10.0.0.7"}),
            "nextHopSelf",
            id="per-node-another-nodes-next-hop-self",
        ),
        pytest.param("198.18.0.11", {}, "benchmarking", id="benchmarking"),
    ],
)
def test_a_node_on_a_peer_another_speakers_or_a_special_address_is_no_next_hop(address, settings, part):
    node = k8s.node("worker-1", address, primary_ifaddr=False)
    p = plan(k8s.state(node, _good()[0], _vm("vm-a", "192.168.100.10/24", "worker-1")), k8s.config(**settings))
    assert not [r for r in p.routes if r.kind == "host"]
    (refusal,) = p.rejected
    assert refusal.reason == reasons.INVALID_NODE_ADDRESS and part in refusal.message


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param(dict(peers=[{"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11"}]), id="local"),
        pytest.param(dict(nextHopSelf={"ipv4": "10.0.0.11"}), id="next-hop-self"),
        pytest.param(
            dict(mode="per-node", nodeName="worker-1", nextHopSelf={"ipv4": "10.0.0.11"}), id="per-node-own-node"
        ),
    ],
)
def test_the_speakers_own_node_address_is_that_nodes_next_hop(settings):
    """bgpadv on worker-1 peers from worker-1's address: VMs on worker-1 keep it as next hop."""
    nodes = [k8s.node("worker-1", "10.0.0.11"), k8s.node("worker-2", "10.0.0.12")]
    p = plan(k8s.state(nodes, _good()[0], _vm("vm-a", "192.168.100.10/24", "worker-1")), k8s.config(**settings))
    assert [(str(r.prefix), str(r.next_hop)) for r in p.routes if r.kind == "host"] == [
        ("192.168.100.10/32", "10.0.0.11")
    ]
    assert p.rejected == ()


@pytest.mark.parametrize(
    "subnet",
    [
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "2002::/16",
        "2001::/32",
        "2001:db8::/32",
        "3fff::/20",
        "100::/64",
        "2001:20::/28",
    ],
)
def test_a_cudn_on_special_purpose_ipv6_space_is_refused(subnet):
    p = plan(k8s.state(_nodes(), _good(), _bad_layer2("infra", [subnet])), k8s.config())
    # documentation space may be allowed (networks.allowSpecialRanges): the planner refuses it, the decoder the rest
    opt_in = subnet in ("2001:db8::/32", "3fff::/20")
    reason = reasons.SPECIAL_PREFIX if opt_in else reasons.INVALID_NETWORK_DEFINITION
    assert ("ClusterUserDefinedNetwork", reason) in _refused(p, "infra")
    assert not any(r.network == "infra" for r in p.routes)


def test_the_decoder_reads_connected_networks_and_the_default_pod_subnets_as_ovn_k_writes_them():
    view = decode_node(_nodes()[0])
    assert [str(p) for p in view.connected] == ["10.0.0.0/24", "172.30.0.0/24", "fd00::/64"]
    assert [str(p) for p in view.pod_subnets] == ["10.128.0.0/23", "fd01:0:0:1::/64"]
    single = k8s.node("worker-9", "10.0.0.19")
    single["metadata"]["annotations"]["k8s.ovn.org/node-subnets"] = json.dumps({"default": "10.128.8.0/23"})
    assert [str(p) for p in decode_node(single).pod_subnets] == ["10.128.8.0/23"]


# --- the property: one bad network never refuses routes of another ---------------------------------------------------

BAD = {
    "session-subnet": lambda: _bad_layer2("bad", ["10.0.0.64/26"], "10.0.0.70/26"),
    "node-nic": lambda: _bad_layer2("bad", ["172.30.0.0/28"], "172.30.0.5/28"),
    "pod-network": lambda: _bad_layer2("bad", ["10.128.0.0/16"], "10.128.0.10/16"),
    "ovn-join": lambda: _bad_layer2("bad", ["100.64.0.0/24", "fd98::/64"], "100.64.0.10/24"),
    "layer3-over-nodes": lambda: [k8s.cudn_layer3("bad", [("10.0.0.0/16", 24)], labels=ADV, created_at=OLD)],
    # over a good network's space and its VM's address as well: older, yet it takes nothing from the good one
    "over-a-good-network": lambda: _bad_layer2("bad", ["192.168.0.0/16", "10.0.0.0/24"], "192.168.100.20/16"),
}


@st.composite
def clusters(draw: st.DrawFn) -> list[dict]:
    """Two to four nodes (some sharing an address or on the ToR's), one to three good Layer2 networks with VMs on
    random nodes (some addresses claimed twice), optionally the Layer3 network."""
    objects: list[dict] = []
    count = draw(st.integers(2, 4))
    for n in range(1, count + 1):
        address = draw(st.sampled_from([f"10.0.0.{10 + n}"] * 4 + ["10.0.0.11", "10.0.0.1"]))
        objects.append(
            k8s.node(
                f"worker-{n}",
                address,
                f"fd00::{10 + n}",
                pod_subnets=[f"10.128.{2 * n}.0/23"],
                host_cidrs=[f"172.30.0.{10 + n}/24"],
                node_subnets={"cluster_udn_vmnet-l3": f"10.132.{n}.0/24"},
            )
        )
    for i in range(draw(st.integers(1, 3))):
        name = f"vmnet-{i}"
        objects.append(k8s.cudn_layer2(name, [f"192.168.{100 + i}.0/24", f"fd10:{100 + i}::/64"], labels=ADV))
        for v in range(draw(st.integers(0, 3))):
            host = draw(st.sampled_from([10, 11, 12, 20]))
            vm = f"vm-{i}-{v}"
            objects.append(
                k8s.ipam_claim(NS, f"{vm}.default", vm, f"cluster_udn_{name}", [f"192.168.{100 + i}.{host}/24"])
            )
            objects.append(k8s.vmi(NS, vm, f"worker-{draw(st.integers(1, count))}"))
    if draw(st.booleans()):
        objects.append(k8s.cudn_layer3("vmnet-l3", [("10.132.0.0/16", 24)], labels=ADV))
    return objects


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(sorted(BAD)), st.sampled_from(["node", "self"]))
def test_adding_one_bad_network_leaves_every_other_networks_routes_unchanged(cluster, bad, next_hop):
    config = k8s.config(nextHop=next_hop)
    without = plan(k8s.state(cluster), config)
    with_bad = plan(k8s.state(cluster, BAD[bad]()), config)
    assert not any(r.network == "bad" for r in with_bad.routes)
    assert with_bad.routes == without.routes
    assert {x for x in with_bad.rejected if x.network != "bad"} == set(without.rejected)
    state: ClusterState = k8s.state(cluster)
    incremental = IncrementalPlanner(config)
    incremental.plan(state, None)
    grown = k8s.state(cluster, BAD[bad]())
    for field in ("cudns", "ipam_claims", "vmis"):
        getattr(state, field).update(getattr(grown, field))
    assert incremental.plan(state, None) == with_bad
