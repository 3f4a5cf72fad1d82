"""The import's last guard (bgpadv.importer.guard, through bgpadv.importer.policy and the reconciler): a learned path
that may never reach a kernel table, whatever the import policy accepts.

Scope (what an imported route may never be): special destinations and destinations inside any selected network are
refused (the default routes themselves are not); next hops that are special (127.0.0.1, 224.0.0.9, 0.0.0.5, ff02::1,
::1, ...), this speaker's own, a node's, inside a VM network, or off the link shared with a single-hop eBGP peer are
refused, path by path: a bad path never joins a multipath route, the good paths are installed; a default route via a VM
address is refused under the default-only policy too; garbage in a `render --learned` file or in ExaBGP's echo is
refused and counted, never a traceback; refusals carry reason codes (`bgpadv.core.reasons` IMPORT_*), a gauge by reason,
and an Event on the CUDN. A hypothesis property: for any learned set, nothing installed breaks a rule (checked against
an oracle written with the standard library's `ipaddress`, not the guard's own tables).

The cluster: worker-1 (10.0.0.11, fd00::11, this node), worker-2 (10.0.0.12), worker-3 (10.0.0.13); ToRs 10.0.0.1
and 10.0.0.2 (eBGP, AS 64512) and fd00::1; selected networks vmnet-a (192.168.100.0/24, fd10:100::/64) and
vmnet-b (10.200.0.0/16); the node's interfaces 10.0.0.11/24 and fd00::11/64.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgpadv.commands import render
from bgpadv.config import AcceptRule, Config, ImportNetwork, parse
from bgpadv.core import reasons
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.guard import context_of, interfaces_of_annotations
from bgpadv.importer.policy import desired_routes
from bgpadv.importer.reconciler import Importer, SelectedNetwork
from bgpadv.observe.metrics import Metrics
from bgpadv.speaker import protocol
from bgpadv.speaker.protocol import NeighborList, RibInDone, UpdateEvent
from bgpadv_lab import objects as k8s
from bgpadv_lab.objects import VM_NAMESPACE as NS

TOR1, TOR2, TOR6 = "10.0.0.1", "10.0.0.2", "fd00::1"
W1, W2, W3 = "10.0.0.11", "10.0.0.12", "10.0.0.13"
VMNET_A = (Prefix.parse("192.168.100.0/24"), Prefix.parse("fd10:100::/64"))
VMNET_B = (Prefix.parse("10.200.0.0/16"),)
SELECTED_SUBNETS = (*VMNET_A, *VMNET_B)
NODES = [Address.parse(x) for x in (W1, W2, W3, "fd00::11", "fd00::12")]
ETH0, LO = 2, 1  # interface indexes: the node's fabric link holds both families
INTERFACES = [
    (Address.parse(W1), 24, ETH0),
    (Address.parse("fd00::11"), 64, ETH0),
    (Address.parse("fe80::11"), 64, ETH0),
    (Address.parse("127.0.0.1"), 8, LO),
]
DEFAULT4, DEFAULT6 = Prefix.parse("0.0.0.0/0"), Prefix.parse("::/0")

RAW = {
    "localASN": 64513,
    "peers": [
        {"address": TOR1, "asn": 64512, "localAddress": W1},
        {"address": TOR2, "asn": 64512, "localAddress": W1},
        {"address": TOR6, "asn": 64512, "localAddress": "fd00::11"},
    ],
    "nextHopSelf": {"ipv4": W1, "ipv6": "fd00::11"},
}
EVERYTHING = ImportNetwork(
    "vmnet-a", accept=(AcceptRule(Prefix.parse("0.0.0.0/0"), 32), AcceptRule(Prefix.parse("::/0"), 128))
)
DEFAULT_ONLY = ImportNetwork("vmnet-a")


def p(text: str) -> Prefix:
    return Prefix.parse(text)


def a(text: str) -> Address:
    return Address.parse(text)


def config() -> Config:
    """RAW parsed, afresh for each caller."""
    return parse(RAW, {})


def node_context(interfaces=INTERFACES, nodes=NODES):
    """What the import's guard knows of the node: its interfaces' addresses, every node address, the selected
    subnets, the configuration's peers."""
    return context_of(config(), SELECTED_SUBNETS, nodes, interfaces)


def desired(learned: dict, network: ImportNetwork = EVERYTHING, context=None):
    return desired_routes(learned, network, VMNET_A, 1000, context or node_context())


# --- destinations -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "via"),
    [
        pytest.param("169.254.0.0/17", TOR1, id="ovn-k-masquerade"),
        pytest.param("169.254.169.254/32", TOR1, id="link-local-metadata"),
        pytest.param("169.254.0.0/16", TOR1, id="link-local"),
        pytest.param("127.0.0.0/8", TOR1, id="loopback"),
        pytest.param("127.0.0.1/32", TOR1, id="loopback-host"),
        pytest.param("224.0.0.0/4", TOR1, id="multicast"),
        pytest.param("239.1.1.1/32", TOR1, id="multicast-group"),
        pytest.param("240.0.0.0/4", TOR1, id="reserved-class-e"),
        pytest.param("255.255.255.255/32", TOR1, id="limited-broadcast"),
        pytest.param("0.0.0.0/8", TOR1, id="this-network"),
        pytest.param("0.0.0.0/1", TOR1, id="half-default-covering-this-network-and-loopback"),
        pytest.param("fe80::/10", TOR6, id="ipv6-link-local"),
        pytest.param("fe80::1/128", TOR6, id="ipv6-link-local-host"),
        pytest.param("ff00::/8", TOR6, id="ipv6-multicast"),
        pytest.param("ff02::1/128", TOR6, id="ipv6-all-nodes"),
        pytest.param("::1/128", TOR6, id="ipv6-loopback"),
        pytest.param("::/128", TOR6, id="ipv6-unspecified"),
        pytest.param("::ffff:0:0/96", TOR6, id="ipv4-mapped"),
    ],
)
def test_a_special_destination_is_never_installed(prefix, via):
    peer = TOR6 if ":" in prefix else TOR1
    out = desired({peer: {p(prefix): a(via)}})
    assert out.routes == {}
    assert out.refused == {reasons.IMPORT_SPECIAL_DESTINATION: 1}
    assert [r.reason for r in out.refusals] == [reasons.IMPORT_SPECIAL_DESTINATION]


@pytest.mark.parametrize(
    ("prefix", "reason"),
    [
        pytest.param("192.168.100.0/25", reasons.IMPORT_OWN_SUBNET, id="own-network"),
        pytest.param("10.200.5.0/24", reasons.IMPORT_INSIDE_SELECTED_NETWORK, id="another-selected-network"),
        pytest.param("10.200.0.0/16", reasons.IMPORT_INSIDE_SELECTED_NETWORK, id="another-networks-whole-subnet"),
        pytest.param("10.200.0.7/32", reasons.IMPORT_INSIDE_SELECTED_NETWORK, id="a-host-of-another-network"),
    ],
)
def test_a_destination_inside_a_selected_network_is_never_installed(prefix, reason):
    out = desired({TOR1: {p(prefix): a(TOR1)}})
    assert (out.routes, out.refused) == ({}, {reason: 1})


@pytest.mark.parametrize(
    "prefix",
    [
        pytest.param("0.0.0.0/0", id="default-route"),
        pytest.param("198.51.100.0/24", id="fabric-subnet"),
        pytest.param("10.0.0.0/8", id="aggregate-covering-a-selected-network"),
        pytest.param("100.64.0.0/10", id="shared-address-space"),
    ],
)
def test_an_ordinary_destination_is_installed(prefix):
    assert desired({TOR1: {p(prefix): a(TOR1)}}).routes == {p(prefix): frozenset({a(TOR1)})}


def test_the_ipv6_default_route_is_installed():
    assert desired({TOR6: {DEFAULT6: a(TOR6)}}).routes == {DEFAULT6: frozenset({a(TOR6)})}


# --- next hops --------------------------------------------------------------------------------------------------

BAD_NEXT_HOPS = [
    pytest.param("127.0.0.1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="loopback"),
    pytest.param("224.0.0.9", reasons.IMPORT_NEXT_HOP_SPECIAL, id="rip-multicast"),
    pytest.param("0.0.0.5", reasons.IMPORT_NEXT_HOP_SPECIAL, id="this-network"),
    pytest.param("255.255.255.255", reasons.IMPORT_NEXT_HOP_SPECIAL, id="limited-broadcast"),
    pytest.param("240.0.0.1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="class-e"),
    pytest.param("169.254.0.1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="masquerade"),
    pytest.param("10.0.0.0", reasons.IMPORT_NEXT_HOP_SPECIAL, id="network-address-of-the-shared-subnet"),
    pytest.param("10.0.0.255", reasons.IMPORT_NEXT_HOP_SPECIAL, id="broadcast-of-the-shared-subnet"),
    pytest.param(W1, reasons.IMPORT_NEXT_HOP_LOCAL, id="this-nodes-own-address"),
    pytest.param(W2, reasons.IMPORT_NEXT_HOP_NODE, id="another-nodes-address"),
    pytest.param(W3, reasons.IMPORT_NEXT_HOP_NODE, id="a-third-nodes-address"),
    pytest.param("192.168.100.10", reasons.IMPORT_NEXT_HOP_VM_NETWORK, id="a-vm-address-of-its-own-network"),
    pytest.param("10.200.0.7", reasons.IMPORT_NEXT_HOP_VM_NETWORK, id="a-vm-address-of-another-network"),
    pytest.param("10.0.1.1", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="off-the-shared-subnet"),
    pytest.param("203.0.113.9", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="far-away"),
]


@pytest.mark.parametrize(("hop", "reason"), BAD_NEXT_HOPS)
def test_a_bad_next_hop_never_joins_the_multipath_default_route(hop, reason):
    out = desired({TOR1: {DEFAULT4: a(hop)}, TOR2: {DEFAULT4: a(TOR2)}})
    assert out.routes == {DEFAULT4: frozenset({a(TOR2)})}, "the good path stays, alone"
    assert out.refused == {reason: 1}
    (refusal,) = out.refusals
    assert (refusal.peer, refusal.prefix, refusal.next_hop, refusal.reason) == (TOR1, DEFAULT4, a(hop), reason)


@pytest.mark.parametrize(("hop", "reason"), BAD_NEXT_HOPS)
def test_a_default_route_whose_only_path_is_bad_is_not_installed_under_the_default_only_policy(hop, reason):
    out = desired({TOR1: {DEFAULT4: a(hop)}}, DEFAULT_ONLY)
    assert (out.routes, out.refused) == ({}, {reason: 1})


@pytest.mark.parametrize(
    ("hop", "reason"),
    [
        pytest.param("::1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="loopback"),
        pytest.param("ff02::1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="all-nodes"),
        pytest.param("fe80::1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="link-local-without-interface"),
        pytest.param("::ffff:10.0.0.1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="ipv4-mapped"),
        pytest.param("fd00::11", reasons.IMPORT_NEXT_HOP_LOCAL, id="own"),
        pytest.param("fd00::12", reasons.IMPORT_NEXT_HOP_NODE, id="another-node"),
        pytest.param("fd10:100::a", reasons.IMPORT_NEXT_HOP_VM_NETWORK, id="a-vm"),
        pytest.param("2001:db8::1", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="off-link"),
    ],
)
def test_a_bad_ipv6_next_hop_is_refused(hop, reason):
    out = desired({TOR6: {DEFAULT6: a(hop)}}, DEFAULT_ONLY)
    assert (out.routes, out.refused) == ({}, {reason: 1})


def test_a_third_party_next_hop_on_the_shared_subnet_is_installed():
    out = desired({TOR1: {DEFAULT4: a("10.0.0.3")}, TOR2: {DEFAULT4: a(TOR2)}})
    assert out.routes == {DEFAULT4: frozenset({a("10.0.0.3"), a(TOR2)})}


def test_a_node_claiming_the_tors_address_cannot_cut_the_egress():
    hostile = node_context(nodes=[*NODES, a(TOR1)])
    assert desired({TOR1: {DEFAULT4: a(TOR1)}}, context=hostile).routes == {DEFAULT4: frozenset({a(TOR1)})}


def test_without_the_nodes_interfaces_only_a_configured_peers_address_is_on_the_link():
    unknown = node_context(None)
    out = desired({TOR1: {DEFAULT4: a("10.0.0.3")}, TOR2: {DEFAULT4: a(TOR1)}}, context=unknown)
    assert out.routes == {DEFAULT4: frozenset({a(TOR1)})}
    assert out.refused == {reasons.IMPORT_NEXT_HOP_OFF_LINK: 1}


def test_an_ibgp_peers_next_hop_need_not_be_on_the_link():
    ibgp = parse({**RAW, "peers": [{"address": TOR1, "asn": 64513, "localAddress": W1}]}, {})
    context = context_of(ibgp, SELECTED_SUBNETS, NODES, INTERFACES)
    assert desired({TOR1: {DEFAULT4: a("198.51.100.1")}}, context=context).routes == {
        DEFAULT4: frozenset({a("198.51.100.1")})
    }


# --- the on-link rule per family ---------------------------------------------------------------------------------
# A next hop is on the link when it lies in a subnet the node shares with the peer on the session's link, in the
# next hop's family. worker-1's fabric link (eth0) holds 10.0.0.11/24, fd00::11/64 and fe80::11/64; a second link
# (eth1, storage) holds 172.16.0.11/24 and fd99::11/64; lo holds 127.0.0.1/8 and ::1/128.

ETH1 = 3
TWO_LINKS = [
    *INTERFACES,
    (a("::1"), 128, LO),
    (a("172.16.0.11"), 24, ETH1),
    (a("fd99::11"), 64, ETH1),
]


@pytest.mark.parametrize(
    ("peer", "prefix", "hop", "reason"),
    [
        # RFC 4760 MP_REACH: the ToR's IPv6 routes over its IPv4 session, next hop its global address on the link
        pytest.param(TOR1, "::/0", "fd00::2", None, id="v6-over-v4-via-the-routers-global-address-on-the-link"),
        pytest.param(TOR1, "2001:db8:1::/48", "fd00::2", None, id="v6-prefix-over-v4-on-the-link"),
        pytest.param(TOR1, "::/0", TOR6, None, id="v6-over-v4-via-a-configured-peer-on-the-link"),
        pytest.param(TOR1, "::/0", "fd99::1", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="v6-over-v4-another-links-subnet"),
        pytest.param(TOR1, "::/0", "fd01::1", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="v6-over-v4-far-away"),
        pytest.param(TOR1, "::/0", "fe80::1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="v6-over-v4-link-local"),
        pytest.param(TOR1, "::/0", "::ffff:10.0.0.1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="v6-over-v4-ipv4-mapped"),
        pytest.param(TOR1, "::/0", "::1", reasons.IMPORT_NEXT_HOP_SPECIAL, id="v6-over-v4-loopback"),
        pytest.param(TOR1, "::/0", "fd00::11", reasons.IMPORT_NEXT_HOP_LOCAL, id="v6-over-v4-own-address"),
        pytest.param(TOR1, "::/0", "fd00::12", reasons.IMPORT_NEXT_HOP_NODE, id="v6-over-v4-another-node"),
        pytest.param(TOR1, "::/0", "fd10:100::a", reasons.IMPORT_NEXT_HOP_VM_NETWORK, id="v6-over-v4-a-vm"),
        pytest.param(TOR1, "::/0", TOR2, reasons.IMPORT_NEXT_HOP, id="v6-prefix-v4-next-hop"),
        # the reverse: IPv4 routes over an IPv6 session with an IPv4 next hop
        pytest.param(TOR6, "0.0.0.0/0", "10.0.0.3", None, id="v4-over-v6-on-the-link"),
        pytest.param(TOR6, "0.0.0.0/0", "172.16.0.1", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="v4-over-v6-another-link"),
        pytest.param(TOR6, "0.0.0.0/0", "10.0.0.255", reasons.IMPORT_NEXT_HOP_SPECIAL, id="v4-over-v6-broadcast"),
        pytest.param(TOR6, "0.0.0.0/0", "10.0.0.0", reasons.IMPORT_NEXT_HOP_SPECIAL, id="v4-over-v6-network-address"),
        # the session's own family: as before, another link's subnet is not the peer's
        pytest.param(TOR1, "0.0.0.0/0", "10.0.0.3", None, id="v4-over-v4-on-the-link"),
        pytest.param(TOR1, "0.0.0.0/0", "172.16.0.1", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="v4-over-v4-another-link"),
        pytest.param(TOR6, "::/0", "fd00::2", None, id="v6-over-v6-on-the-link"),
        pytest.param(TOR6, "::/0", "fd99::1", reasons.IMPORT_NEXT_HOP_OFF_LINK, id="v6-over-v6-another-link"),
    ],
)
def test_a_next_hop_is_on_the_link_when_a_subnet_of_its_family_on_the_sessions_interface_holds_it(
    peer, prefix, hop, reason
):
    out = desired({peer: {p(prefix): a(hop)}}, context=node_context(TWO_LINKS))
    if reason is None:
        assert (out.routes, out.refused) == ({p(prefix): frozenset({a(hop)})}, {})
    else:
        assert (out.routes, out.refused) == ({}, {reason: 1})


def test_an_off_link_ipv6_next_hop_over_an_ipv4_session_names_the_links_ipv6_subnets():
    (refusal,) = desired({TOR1: {DEFAULT6: a("fd99::1")}}, context=node_context(TWO_LINKS)).refusals
    assert refusal.message == "the next hop fd99::1 is not on the IPv6 subnets of the link to 10.0.0.1: fd00::/64"


@pytest.mark.parametrize(
    ("interfaces", "accepted", "message"),
    [
        pytest.param(
            [(a(W1), 24, ETH0), (a("fe80::11"), 64, ETH0), (a("fd99::11"), 64, ETH1)],
            {TOR6},
            "no IPv6 subnet of this node is on the link to 10.0.0.1",
            id="the-link-has-only-a-link-local-ipv6-subnet",
        ),
        pytest.param(
            [(a(W1), 24), (a("fd00::11"), 64)],
            {TOR6},
            "no IPv6 subnet of this node is on the link to 10.0.0.1",
            id="which-interface-holds-what-is-unknown",
        ),
        pytest.param(None, {TOR6}, "no connected subnet of this node holds 10.0.0.1", id="the-interfaces-are-unknown"),
    ],
)
def test_without_an_ipv6_subnet_known_on_the_link_only_a_configured_peers_address_is_on_it(
    interfaces, accepted, message
):
    context = node_context(interfaces)
    out = desired({TOR1: {DEFAULT6: a("fd00::2")}, TOR2: {DEFAULT6: a(TOR6)}}, context=context)
    assert out.routes == {DEFAULT6: frozenset(a(x) for x in accepted)}
    (refusal,) = out.refusals
    assert (refusal.reason, refusal.message) == (
        reasons.IMPORT_NEXT_HOP_OFF_LINK,
        f"the next hop fd00::2 is not a configured peer and {message}",
    )


def test_the_node_annotations_tell_render_the_connected_subnets_and_which_are_on_the_primary_link():
    node = k8s.node("worker-1", W1, "fd00::11")
    assert set(interfaces_of_annotations(node["metadata"]["annotations"], "worker-1")) == {
        (a(W1), 24, "worker-1"),  # node-primary-ifaddr: both families on the primary interface
        (a("fd00::11"), 64, "worker-1"),
        (a(W1), 24, None),  # host-cidrs: the interface is not said
        (a("fd00::11"), 64, None),
    }
    assert interfaces_of_annotations({"k8s.ovn.org/host-cidrs": "not json", "k8s.ovn.org/node-primary-ifaddr": 7}) == []


# --- the reconciler: the kernel table, the gauge, the Events --------------------------------------------------------


class Kernel:
    def __init__(self) -> None:
        self.tables: dict[int, dict] = {}

    def vrf_tables(self):
        return {}

    def interfaces(self):
        return list(INTERFACES)

    def installed(self, tables):
        return {t: dict(self.tables.get(t, {})) for t in tables}

    def replace(self, table, prefix, hops):
        self.tables.setdefault(table, {})[prefix] = frozenset(hops)

    def delete(self, table, prefix):
        del self.tables[table][prefix]


def importer(kernel: Kernel, on_refusals: Callable[[list], None] | None = None) -> tuple[Importer, Metrics, list]:
    """An importer of vmnet-a into table 1001, its peers up and their adj-rib-in read. Its refusals go to
    `on_refusals`, or to the list returned."""
    cfg = parse({**RAW, "importRoutes": {"enabled": True, "networks": [{"name": "vmnet-a", "table": 1001}]}}, {})
    metrics = Metrics(process_collectors=False)
    reported: list = []
    imp = Importer(cfg, kernel, metrics, 0.0, on_refusals=on_refusals if on_refusals is not None else reported.append)
    imp.handle(NeighborList(((TOR1, "up"), (TOR2, "up"), (TOR6, "up"))), 0.0)
    imp.handle(RibInDone(), 0.0)
    imp.set_networks({"vmnet-a": SelectedNetwork(VMNET_A), "vmnet-b": SelectedNetwork(VMNET_B)}, 0.0, NODES)
    return imp, metrics, reported


def received(peer: str, *paths: tuple[Prefix, str]) -> UpdateEvent:
    return UpdateEvent(peer, "receive", tuple((pfx, a(hop)) for pfx, hop in paths), ())


def test_only_the_good_path_reaches_the_kernel_table_and_the_bad_one_is_counted_and_reported():
    kernel = Kernel()
    imp, metrics, reported = importer(kernel)
    imp.handle(received(TOR1, (DEFAULT4, TOR1)), 1.0)
    imp.handle(received(TOR2, (DEFAULT4, W2)), 1.0)  # ToR 2's path points at worker-2
    assert kernel.tables[1001] == {DEFAULT4: frozenset({a(TOR1)})}
    gauge = metrics.registry.get_sample_value(
        "bgpadv_import_refused", {"network": "vmnet-a", "reason": reasons.IMPORT_NEXT_HOP_NODE}
    )
    assert gauge == 1
    (refusal,) = reported[-1]
    assert (refusal.source.kind, refusal.source.name) == ("ClusterUserDefinedNetwork", "vmnet-a")
    assert (refusal.value, refusal.reason) == (f"0.0.0.0/0 via {W2} from {TOR2}", reasons.IMPORT_NEXT_HOP_NODE)
    status = imp.status()["networks"]["vmnet-a"]
    assert status["installed"] == {"0.0.0.0/0": [TOR1]}
    assert status["refusals"][0]["reason"] == reasons.IMPORT_NEXT_HOP_NODE
    # the bad path goes away: the Event's refusal leaves the set
    imp.handle(received(TOR2, (DEFAULT4, TOR2)), 2.0)
    assert kernel.tables[1001] == {DEFAULT4: frozenset({a(TOR1), a(TOR2)})}
    assert reported[-1] == []


def test_a_node_appearing_with_the_next_hops_address_takes_the_path_out():
    kernel = Kernel()
    imp, _, _ = importer(kernel)
    imp.handle(received(TOR1, (DEFAULT4, "10.0.0.3")), 1.0)
    assert kernel.tables[1001] == {DEFAULT4: frozenset({a("10.0.0.3")})}
    imp.set_networks(
        {"vmnet-a": SelectedNetwork(VMNET_A), "vmnet-b": SelectedNetwork(VMNET_B)}, 2.0, [*NODES, a("10.0.0.3")]
    )
    assert kernel.tables[1001] == {}


# --- garbage: ExaBGP's echo and the learned-routes file -------------------------------------------------------------


def echo(announce: object = None, withdraw: object = None, peer: object = TOR1) -> str:
    update: dict = {}
    if announce is not None:
        update["announce"] = announce
    if withdraw is not None:
        update["withdraw"] = withdraw
    neighbor = {"address": {"peer": peer}, "direction": "receive", "message": {"update": update}}
    return json.dumps({"exabgp": "5.0.0", "type": "update", "neighbor": neighbor})


GARBAGE_ECHOES = [
    pytest.param(echo({"ipv4 unicast": {"not-an-ip": ["0.0.0.0/0"]}}), 1, 1, id="next-hop-garbage"),
    pytest.param(echo({"ipv4 unicast": {TOR1: ["0.0.0.0/0", "bogus", 7, None]}}), 1, 3, id="prefix-garbage"),
    pytest.param(echo({"ipv4 unicast": {TOR1: "0.0.0.0/0"}}), 0, 1, id="nlri-not-a-list"),
    pytest.param(echo({"ipv4 unicast": {TOR1: 12}}), 0, 1, id="nlri-an-integer"),
    pytest.param(echo({"ipv4 unicast": ["0.0.0.0/0"]}), 0, 1, id="family-not-a-mapping"),
    pytest.param(echo(["0.0.0.0/0"]), 0, 1, id="announce-not-a-mapping"),
    pytest.param(echo(withdraw={"ipv4 unicast": 5}), 0, 1, id="withdraw-an-integer"),
    pytest.param(echo(withdraw="0.0.0.0/0"), 0, 1, id="withdraw-a-string"),
    pytest.param(echo({"ipv4 unicast": {TOR1: [{"nlri": ["x"]}]}}), 0, 1, id="nlri-object-of-a-list"),
]


@pytest.mark.parametrize(("line", "announced", "malformed"), GARBAGE_ECHOES)
def test_garbage_in_exabgps_echo_is_dropped_and_counted_never_raised(line, announced, malformed):
    reply = protocol.parse_reply(line)
    assert isinstance(reply, UpdateEvent)
    assert (len(reply.announced), reply.malformed) == (announced, malformed)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(echo({"ipv4 unicast": {TOR1: ["0.0.0.0/0"]}}, peer="evil"), id="peer-garbage"),
        pytest.param(echo({"ipv4 unicast": {TOR1: ["0.0.0.0/0"]}}, peer=["10.0.0.1"]), id="peer-a-list"),
        pytest.param(echo({"ipv4 unicast": {TOR1: ["0.0.0.0/0"]}}, peer="10.9.9.9"), id="peer-not-configured"),
    ],
)
def test_an_echo_from_a_garbage_or_unknown_peer_is_counted_and_learns_nothing(line):
    kernel = Kernel()
    imp, metrics, _ = importer(kernel)
    imp.handle(protocol.parse_reply(line), 1.0)
    assert kernel.tables.get(1001, {}) == {}
    assert metrics.registry.get_sample_value("bgpadv_import_malformed_total", {"part": "peer"}) == 1


def test_garbage_echo_parts_reach_the_malformed_counter_and_the_good_part_is_installed():
    kernel = Kernel()
    imp, metrics, _ = importer(kernel)
    imp.handle(protocol.parse_reply(echo({"ipv4 unicast": {TOR1: ["0.0.0.0/0", "bogus"]}})), 1.0)
    assert kernel.tables[1001] == {DEFAULT4: frozenset({a(TOR1)})}
    assert metrics.registry.get_sample_value("bgpadv_import_malformed_total", {"part": "update"}) == 1


@pytest.mark.parametrize(
    "line",
    [
        '{"exabgp": "5", "type": "notification", "neighbor": {"notification": {"code": "x", "subcode": []}}}',
        '{"exabgp": "5", "type": "update", "neighbor": {"message": {"update": {"announce": {"a": {"b": {}}}}}}}',
        '{"exabgp": "5", "type": "state", "neighbor": []}',
        '[1, 2, {"peer": 5}]',
        '{"peer": {"address": 1}, "route": {"nlri": {"prefix": [1]}}}',
    ],
)
def test_no_shape_of_an_echo_line_raises(line):
    protocol.parse_reply(line)


def write_dump(tmp_path, learned_text: str) -> tuple[str, str, str]:
    advertised = {"bgpadv.io/advertise": "true"}
    objects = [
        k8s.node("worker-1", W1, "fd00::11"),
        k8s.node("worker-2", W2, "fd00::12"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], labels=advertised),
        k8s.cudn_layer2("vmnet-b", ["10.200.0.0/16"], labels=advertised),
        k8s.ipam_claim(NS, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.10/24"]),
        k8s.vmi(NS, "vm-a", "worker-1", "Running", interfaces=[k8s.interface(["192.168.100.10"])]),
        k8s.namespace(NS),
    ]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    config = {
        **RAW,
        "networks": {"selector": {"matchLabels": advertised}},
        "importRoutes": {"enabled": True, "networks": [{"name": "vmnet-a", "table": 1001}]},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "l.yaml").write_text(learned_text)
    return str(tmp_path / "c.yaml"), str(tmp_path / "m"), str(tmp_path / "l.yaml")


def test_render_learned_refuses_a_default_route_via_a_vm_and_keeps_the_good_path(tmp_path, capsys):
    c, m, learned = write_dump(tmp_path, f"{TOR1}: {{0.0.0.0/0: {TOR1}}}\n{TOR2}: {{0.0.0.0/0: 192.168.100.10}}\n")
    assert render.main(c, m, "json", learned) == 0
    (row,) = json.loads(capsys.readouterr().out)["imports"]
    assert row["routes"] == [{"prefix": "0.0.0.0/0", "nextHops": [TOR1]}]
    assert row["refused"] == {reasons.IMPORT_NEXT_HOP_VM_NETWORK: 1}


def test_render_learned_refuses_a_next_hop_of_another_node_known_from_the_manifests(tmp_path, capsys):
    c, m, learned = write_dump(tmp_path, f"{TOR1}: {{0.0.0.0/0: {W2}}}\n")
    assert render.main(c, m, "table", learned) == 0
    out = capsys.readouterr().out
    assert f"refused 0.0.0.0/0 via {W2} from {TOR1}: {reasons.IMPORT_NEXT_HOP_NODE}" in out


def test_render_learned_installs_an_ipv6_default_over_an_ipv4_session_via_the_routers_address_on_the_link(
    tmp_path, capsys
):
    """The nodes' `node-primary-ifaddr` annotations put 10.0.0.0/24 and fd00::/64 on one link: fd00::2 is on the
    link of the IPv4 session with 10.0.0.1; fd99::1 is on no link of theirs."""
    c, m, learned = write_dump(tmp_path, f"{TOR1}: {{'::/0': 'fd00::2'}}\n{TOR2}: {{'::/0': 'fd99::1'}}\n")
    assert render.main(c, m, "json", learned) == 0
    (row,) = json.loads(capsys.readouterr().out)["imports"]
    assert row["routes"] == [{"prefix": "::/0", "nextHops": ["fd00::2"]}]
    assert [(r["peer"], r["reason"]) for r in row["refusals"]] == [(TOR2, reasons.IMPORT_NEXT_HOP_OFF_LINK)]


GARBAGE_FILES = [
    pytest.param(
        f"evil: {{0.0.0.0/0: {TOR1}}}\n{TOR1}: {{0.0.0.0/0: {TOR1}}}\n", "peer 'evil': not an IP address", id="peer"
    ),
    pytest.param(
        f"10.9.9.9: {{0.0.0.0/0: {TOR1}}}\n{TOR1}: {{0.0.0.0/0: {TOR1}}}\n", "not a configured peer", id="unknown-peer"
    ),
    pytest.param(
        f"7: {{0.0.0.0/0: {TOR1}}}\n{TOR1}: {{0.0.0.0/0: {TOR1}}}\n", "peer 7: not an IP address", id="peer-int"
    ),
    pytest.param(f"{TOR1}: {{0.0.0.0/0: {TOR1}, bogus: {TOR1}}}\n", "prefix 'bogus': not an IP prefix", id="prefix"),
    pytest.param(f"{TOR1}: {{0.0.0.0/0: {TOR1}, 10.1.0.0/16: nope}}\n", "next hop 'nope': not an IP address", id="hop"),
    pytest.param(f"{TOR1}: {{0.0.0.0/0: {TOR1}, 10.1.0.0/16: [1, 2]}}\n", "next hop [1, 2]", id="hop-list"),
    pytest.param(f"{TOR1}: {{0.0.0.0/0: {TOR1}, 10.1.0.0/16: 5}}\n", "next hop 5", id="hop-int"),
    pytest.param(
        f"{TOR1}: {{0.0.0.0/0: {TOR1}}}\n{TOR2}: [0.0.0.0/0]\n", "must map prefixes to next hops", id="routes-list"
    ),
    pytest.param(f"{TOR1}: {{0.0.0.0/0: {TOR1}}}\n{TOR2}: 5\n", "must map prefixes to next hops", id="routes-int"),
    pytest.param(f"{TOR1}: {{0.0.0.0/0: {TOR1}, 10.0.0.0/99: {TOR1}}}\n", "not an IP prefix", id="prefix-length"),
]


@pytest.mark.parametrize(("text", "problem"), GARBAGE_FILES)
def test_garbage_in_a_learned_file_is_refused_and_counted_and_the_rest_is_rendered(tmp_path, capsys, text, problem):
    c, m, learned = write_dump(tmp_path, text)
    assert render.main(c, m, "json", learned) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["imports"][0]["routes"] == [{"prefix": "0.0.0.0/0", "nextHops": [TOR1]}]
    assert len(doc["malformed"]) == 1 and problem in doc["malformed"][0]
    assert f"refused ({reasons.IMPORT_MALFORMED})" in captured.err
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    "text",
    [pytest.param("[1, 2]\n", id="a-list"), pytest.param("just text\n", id="a-string"), pytest.param("", id="empty")],
)
def test_a_learned_file_that_is_no_mapping_is_an_input_error_with_exit_2(tmp_path, capsys, text):
    c, m, learned = write_dump(tmp_path, text)
    assert render.main(c, m, "table", learned) == 2
    assert "must map peer addresses" in capsys.readouterr().err


def test_a_learned_file_that_is_not_utf8_is_an_input_error_with_exit_2(tmp_path, capsys):
    c, m, learned = write_dump(tmp_path, "")
    with open(learned, "wb") as f:
        f.write(b"\xff\xfe10.0.0.1: {}")
    assert render.main(c, m, "table", learned) == 2
    assert "not UTF-8" in capsys.readouterr().err


# --- the property -------------------------------------------------------------------------------------------------

_SPECIAL_ORACLE = [
    ipaddress.ip_network(x)
    for x in (
        "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
        "::/128", "::1/128", "::ffff:0:0/96", "fe80::/10", "ff00::/8",
    )
]  # fmt: skip
_SELECTED_ORACLE = [ipaddress.ip_network(str(s)) for s in SELECTED_SUBNETS]
_NODES_ORACLE = {ipaddress.ip_address(str(n)) for n in NODES}
_OWN_ORACLE = {ipaddress.ip_address(x) for x in (W1, "fd00::11", "127.0.0.1")}
_PEERS_ORACLE = {ipaddress.ip_address(x) for x in (TOR1, TOR2, TOR6)}
_FABRIC_LINK = {4: ipaddress.ip_network("10.0.0.0/24"), 6: ipaddress.ip_network("fd00::/64")}
_LINK = {TOR1: _FABRIC_LINK, TOR2: _FABRIC_LINK, TOR6: _FABRIC_LINK}  # every ToR on the node's fabric link (eth0)

_HOPS4 = [TOR1, TOR2, "10.0.0.3", "10.0.0.0", "10.0.0.255", W1, W2, W3, "127.0.0.1", "224.0.0.9", "0.0.0.5",
          "169.254.0.1", "192.168.100.10", "10.200.0.7", "203.0.113.9", "240.0.0.1", "255.255.255.255"]  # fmt: skip
_HOPS6 = [TOR6, "fd00::3", "fd00::11", "fd00::12", "::1", "ff02::1", "fe80::1", "fd10:100::a", "2001:db8::1",
          "::ffff:10.0.0.1"]  # fmt: skip
_DESTS4 = ["0.0.0.0/0", "0.0.0.0/1", "198.51.100.0/24", "10.0.0.0/8", "169.254.0.0/17", "127.0.0.0/8",
           "224.0.0.0/4", "255.255.255.255/32", "10.200.1.0/24", "192.168.100.0/25", "240.0.0.0/4",
           "0.0.0.0/8"]  # fmt: skip
_DESTS6 = ["::/0", "2001:db8:1::/48", "fe80::/10", "ff00::/8", "::1/128", "fd10:100::/80", "::/128"]

paths = st.one_of(  # over any session, routes of either family (RFC 4760), next hops of either family
    st.tuples(st.sampled_from([TOR1, TOR2, TOR6]), st.sampled_from(_DESTS4), st.sampled_from(_HOPS4 + _HOPS6[:3])),
    st.tuples(st.sampled_from([TOR1, TOR2, TOR6]), st.sampled_from(_DESTS6), st.sampled_from(_HOPS6 + _HOPS4[:3])),
)


def _violations(peer: str, dest: str, hop: str) -> list[str]:
    net, nh = ipaddress.ip_network(dest), ipaddress.ip_address(hop)
    out = []
    if net.prefixlen > 0 and any(net.version == s.version and net.overlaps(s) for s in _SPECIAL_ORACLE):
        out.append("special destination")
    if any(net.version == s.version and net.subnet_of(s) for s in _SELECTED_ORACLE):  # type: ignore[arg-type]
        out.append("destination in a selected network")
    if nh.version != net.version or any(nh in s for s in _SPECIAL_ORACLE if s.version == nh.version):
        out.append("special next hop")
    if nh not in _PEERS_ORACLE and (nh in _NODES_ORACLE or nh in _OWN_ORACLE):
        out.append("own or node next hop")
    if nh not in _PEERS_ORACLE and any(nh in s for s in _SELECTED_ORACLE if s.version == nh.version):
        out.append("VM next hop")
    link = _LINK[peer][nh.version]
    if nh not in link or nh in (link.network_address, link.broadcast_address):
        out.append("off the peer's link")
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(paths, max_size=25), st.booleans())
def test_for_any_learned_set_nothing_installed_breaks_a_rule(learned_paths, default_only):
    learned: dict[str, dict[Prefix, Address]] = {}
    for peer, dest, hop in learned_paths:
        learned.setdefault(peer, {})[p(dest)] = a(hop)
    network = DEFAULT_ONLY if default_only else EVERYTHING
    out = desired(learned, network)
    for prefix, hops in out.routes.items():
        assert hops, "an installed route has a next hop"
        for hop in hops:
            senders = [peer for peer, routes in learned.items() if routes.get(prefix) == hop]
            assert senders, "every installed next hop was learned for that prefix"
            assert any(not _violations(peer, str(prefix), str(hop)) for peer in senders), (prefix, hop)
    # and nothing good was lost: a path without a violation that the policy takes is installed
    for peer, routes in learned.items():
        for prefix, hop in routes.items():
            taken = prefix.length == 0 or not default_only
            if taken and not _violations(peer, str(prefix), str(hop)):
                assert hop in out.routes.get(prefix, ()), (peer, prefix, hop)
    assert sum(out.refused.values()) + sum(len(h) for h in out.routes.values()) >= len(out.routes)


def test_a_refused_path_becomes_a_warning_event_on_the_cudn():
    from kubernetes import client as k8s_client

    from bgpadv.observe.events import EventRecorder
    from bgpadv_lab.fakeapi import FakeApiServer

    with FakeApiServer() as api, k8s_client.ApiClient(k8s_client.Configuration(host=api.url)) as client:
        recorder = EventRecorder(client, verb="not importing").start()
        try:
            imp, _, _ = importer(Kernel(), on_refusals=recorder.record)
            imp.handle(received(TOR2, (DEFAULT4, W2)), 1.0)
            assert recorder.flush()
            (event,) = api.events()
        finally:
            recorder.stop()
    assert event["reason"] == "NextHopNode"
    assert event["involvedObject"]["kind"] == "ClusterUserDefinedNetwork"
    assert event["involvedObject"]["name"] == "vmnet-a"
    assert event["message"] == (
        f"not importing 0.0.0.0/0 via {W2} from {TOR2}: the next hop {W2} is a cluster node's address (network vmnet-a)"
    )
