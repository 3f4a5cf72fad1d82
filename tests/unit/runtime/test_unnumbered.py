"""Unnumbered peers: a session over an interface's IPv6 link-local addresses, IPv4 routes with IPv6 next hops.

Scope: the `peers[].interface` key and its field errors (with or without the ToR's link-local address, never with
localAddress, passive or ebgpMultihop); the ExaBGP neighbor block it renders (source-interface, the Extended Next
Hop capability, ipv6 unicast among the families, `nexthop { ipv4 unicast ipv6; }`; a peer still to be discovered left
out); the controller's resolution of each interface peer's link (`bgpadv.runtime.unnumbered`: the node's link-local
address as next hop, the ToR's discovered, clear reasons when the link fails, the peer then not served, tried again
on a jittered back-off off the loop, each reason logged once, and added by a live peer move once its link answers,
its routes imported, Node updates moving nothing meanwhile, /status showing it waiting); the speaker
sending every route to such a peer via the node's link-local address, and only to it; the import taking the peer's
routes via its own link-local address (IPv4 ones too), installed with the interface, and no other link-local or cross-
family next hop; the neighbour discovery messages (`bgpadv.speaker.ndp`) and the RA sender's bookkeeping. The lab proves
the session, the routes at a real FRR ToR and its kernel FIB (tests/lab/test_unnumbered.py).
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import pytest
from pyroute2.netlink.rtnl.rtmsg import rtmsg

from bgpadv.config import ConfigError, ImportNetwork, parse
from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.guard import context_of
from bgpadv.importer.netlink import RTPROT_BGP, Netlink, route_of_message
from bgpadv.importer.policy import desired_routes
from bgpadv.planner import plan
from bgpadv.runtime import unnumbered
from bgpadv.safety.guard import Guard, GuardContext
from bgpadv.speaker import ndp
from bgpadv.speaker.exabgp_config import render_exabgp_config
from bgpadv.speaker.router_adverts import RouterAdvertiser
from bgpadv.speaker.session import Speaker
from bgpadv_lab import objects as k8s

TOR, NODE_LL = "fe80::1", "fe80::a8c1:abff:fe11:2233"
ARGV = ["/usr/bin/python3", "-m", "bgpadv", "controller", "--config", "/etc/bgpadv/bgpadv.yaml"]
NETWORKS = {"selector": {"matchLabels": dict(k8s.ADVERTISED)}}


def config(*peers: dict, **extra: object):
    return parse({"localASN": 64513, "peers": list(peers), "networks": NETWORKS, **extra}, environ={})


def problems(*peers: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        config(*peers)
    return e.value.problems


class Links:
    """A node's links as a table: interface -> (own link-local, the router answering on it); None: fails so."""

    def __init__(self, **links: tuple[str | None, str | None]) -> None:
        self.links = links
        self.asked: list[str] = []

    def link_local(self, interface: str) -> Address:
        if interface not in self.links:
            raise ndp.LinkError(f"no interface {interface} on this node")
        own = self.links[interface][0]
        if own is None:
            raise ndp.LinkError(f"no IPv6 link-local address on {interface}")
        return Address.parse(own)

    def router(self, interface: str, timeout: float) -> Address:
        self.asked.append(interface)
        router = self.links[interface][1]
        if router is None:
            raise ndp.LinkError(f"no router answered a Router Solicitation on {interface} within {timeout:g} s")
        return Address.parse(router)


# -- configuration ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("peer", "address", "undiscovered"),
    [
        pytest.param({"interface": "eth1", "asn": 64512}, "::", True, id="address-left-to-discovery"),
        pytest.param({"interface": "eth1", "address": TOR, "asn": 64512}, TOR, False, id="the-tors-link-local"),
        pytest.param({"interface": "ens2f0.100", "asn": 64512}, "::", True, id="a-vlan-interface"),
    ],
)
def test_a_peer_given_by_interface_is_read(peer, address, undiscovered):
    [p] = config(peer).peers
    assert (p.interface, str(p.address), p.undiscovered, p.on_link) == (peer["interface"], address, undiscovered, None)


@pytest.mark.parametrize(
    ("peer", "expected"),
    [
        pytest.param(
            {"interface": "eth1", "address": "10.0.0.1", "asn": 64512},
            "peers[0].address: must be the peer's IPv6 link-local address on eth1 (fe80::/10), or omitted to "
            "discover it, got 10.0.0.1",
            id="a-global-address",
        ),
        pytest.param(
            {"interface": "eth1", "asn": 64512, "localAddress": "fe80::11"},
            "peers[0].localAddress: is not for an interface peer: the session leaves by eth1 from its link-local "
            "address",
            id="local-address",
        ),
        pytest.param(
            {"interface": "eth1", "asn": 64512, "passive": True},
            "peers[0].passive: is not for an interface peer: bgpadv connects to the ToR on the link",
            id="passive",
        ),
        pytest.param(
            {"interface": "eth1", "asn": 64512, "ebgpMultihop": 2},
            "peers[0].ebgpMultihop: is not for an interface peer: the peer is on the link (one hop)",
            id="multihop",
        ),
        pytest.param(
            {"interface": "eth1; }", "asn": 64512},
            "peers[0].interface: must be a Linux interface name: 1 to 15 characters, none of them '/', ':', "
            "whitespace or quotes, got 'eth1; }'",
            id="not-an-interface-name",
        ),
        pytest.param(
            {"interface": "a-very-long-name0", "asn": 64512},
            "peers[0].interface: must be a Linux interface name: 1 to 15 characters, none of them '/', ':', "
            "whitespace or quotes, got 'a-very-long-name0'",
            id="longer-than-the-kernel-takes",
        ),
    ],
)
def test_an_interface_peer_is_refused_with_the_reason(peer, expected):
    assert problems(peer) == [expected]


def test_a_link_local_peer_without_interface_is_told_about_interface():
    [message] = problems({"address": TOR, "asn": 64512})
    assert "set `interface` (an unnumbered session)" in message


def test_two_peers_left_to_discovery_are_two_peers():
    assert len(config({"interface": "eth1", "asn": 64512}, {"interface": "eth2", "asn": 64512}).peers) == 2


# -- ExaBGP -----------------------------------------------------------------------------------------------------------


def neighbor_block(text: str, address: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(f"neighbor {address} {{")
    return [line.strip() for line in lines[start : lines.index("}", start)]]


def test_an_interface_peer_renders_source_interface_extended_next_hop_and_both_families():
    text = render_exabgp_config(config({"interface": "eth1", "address": TOR, "asn": 64512}), ARGV)
    block = neighbor_block(text, TOR)
    assert "source-interface eth1;" in block
    assert "local-address auto;" in block  # never an address ExaBGP cannot bind (a link-local without its scope)
    capability = block[block.index("capability {") : block.index("family {")]
    assert "nexthop enable;" in capability
    assert block[block.index("family {") + 1 : block.index("family {") + 3] == ["ipv4 unicast;", "ipv6 unicast;"]
    assert block[block.index("nexthop {") + 1] == "ipv4 unicast ipv6;"


def test_ipv6_unicast_is_added_for_an_ipv4_only_interface_peer():
    """ExaBGP (5.0.15) sends the Extended Next Hop capability empty unless ipv6 unicast is negotiated too."""
    text = render_exabgp_config(
        config({"interface": "eth1", "address": TOR, "asn": 64512, "families": ["ipv4 unicast"]}), ARGV
    )
    block = neighbor_block(text, TOR)
    assert block[block.index("family {") + 1 : block.index("family {") + 3] == ["ipv4 unicast;", "ipv6 unicast;"]


def test_a_numbered_peer_renders_as_before():
    block = neighbor_block(render_exabgp_config(config({"address": "10.0.0.1", "asn": 64512}), ARGV), "10.0.0.1")
    assert not [line for line in block if "source-interface" in line or "nexthop" in line]


def test_a_peer_still_to_be_discovered_is_left_to_the_controller():
    text = render_exabgp_config(config({"interface": "eth1", "asn": 64512}), ARGV)
    assert "neighbor" not in text.replace("neighbor-changes", "")
    assert "# the peer on eth1: its link-local address is discovered at start" in text


def test_check_config_accepts_interface_peers_and_exabgp_takes_their_neighbor_block(tmp_path, capsys):
    from bgpadv.commands.cli import main

    path = tmp_path / "bgpadv.yaml"
    path.write_text(
        "localASN: 64513\npeers:\n  - interface: eth1\n    address: fe80::1\n    asn: 64512\n"
        "  - interface: eth2\n    asn: 64512\n"
    )
    assert main(["check-config", str(path)]) == 0
    assert capsys.readouterr().out == (
        f"{path}: valid — local AS64513, peers: fe80::1 (AS64512), %eth2 (AS64512); ExaBGP accepts the rendered "
        "configuration\n"
    )


# -- the controller's resolution ---------------------------------------------------------------------------------------


def test_the_tors_address_is_discovered_and_the_nodes_link_local_becomes_the_next_hop():
    links = Links(eth1=(NODE_LL, TOR))
    [p] = unnumbered.with_links(config({"interface": "eth1", "asn": 64512}), links).peers
    assert (str(p.address), str(p.on_link), p.undiscovered, links.asked) == (TOR, NODE_LL, False, ["eth1"])


def test_a_written_address_is_not_discovered_again():
    links = Links(eth1=(NODE_LL, "fe80::99"))
    [p] = unnumbered.with_links(config({"interface": "eth1", "address": TOR, "asn": 64512}), links).peers
    assert (str(p.address), str(p.on_link), links.asked) == (TOR, NODE_LL, [])


@pytest.mark.parametrize(
    ("links", "reason"),
    [
        pytest.param(Links(), "no interface eth1 on this node", id="no-such-interface"),
        pytest.param(Links(eth1=(None, TOR)), "no IPv6 link-local address on eth1", id="no-link-local"),
        pytest.param(Links(eth1=(NODE_LL, None)), "no router answered", id="no-router"),
        pytest.param(Links(eth1=(NODE_LL, "2001:db8::1")), "not a link-local address", id="a-global-answer"),
        pytest.param(Links(eth1=(NODE_LL, NODE_LL)), "this node's own", id="our-own-address"),
    ],
)
def test_an_interface_peer_whose_link_fails_is_not_served_and_the_reason_is_logged(links, reason, caplog):
    numbered = {"address": "10.0.0.1", "asn": 64512}
    resolved = unnumbered.with_links(config(numbered, {"interface": "eth1", "asn": 64512}), links)
    assert [p.name for p in resolved.peers] == ["10.0.0.1"]
    [record] = [r for r in caplog.records if r.name == "bgpadv.runtime.unnumbered"]
    assert reason in record.getMessage() and record.levelname == "ERROR"


def test_two_links_answering_with_one_address_serve_the_first_only():
    links = Links(eth1=(NODE_LL, TOR), eth2=("fe80::2", TOR))
    resolved = unnumbered.with_links(
        config({"interface": "eth1", "asn": 64512}, {"interface": "eth2", "asn": 64512}), links
    )
    assert [p.interface for p in resolved.peers] == ["eth1"]


# -- the speaker -------------------------------------------------------------------------------------------------------

STATE = k8s.state(
    [
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED),
        k8s.ipam_claim(k8s.VM_NAMESPACE, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", ["192.168.100.10/24"]),
        k8s.vmi(k8s.VM_NAMESPACE, "vm-a", "worker-1", interfaces=[k8s.interface(["192.168.100.10"])]),
    ]
)


def test_every_route_to_an_interface_peer_goes_via_the_nodes_link_local_address():
    raw = [{"interface": "eth1", "asn": 64512}, {"address": "10.0.0.1", "asn": 64512, "families": ["ipv4 unicast"]}]
    c = unnumbered.with_links(config(*raw, nodeName="worker-1"), Links(eth1=(NODE_LL, TOR)))
    routes = Guard(c).check(plan(STATE, c).routes, GuardContext.from_state(STATE, c))
    assert routes.rejected == ()
    lines: list[str] = []
    speaker = Speaker.from_config(c, lines.append)
    speaker.start()
    for reply in ("[]", "done", "done"):  # show neighbor json, show adj-rib out
        speaker.handle_line(reply)
    lines.clear()
    speaker.set_desired(routes.per_peer)
    unnumbered_lines = [line for line in lines if line.startswith(f"neighbor {TOR} ")]
    prefixes = " ".join(unnumbered_lines)
    assert {"192.168.100.0/24", "192.168.100.10/32", "fd10:100::/64"} <= set(prefixes.split())
    assert all(f"next-hop {NODE_LL} " in line for line in unnumbered_lines)
    numbered = [line for line in lines if line.startswith("neighbor 10.0.0.1 ")]
    assert numbered and not [line for line in numbered if "fe80:" in line], "a link-local next hop stays on its link"


# -- neighbour discovery -----------------------------------------------------------------------------------------------

MAC = bytes.fromhex("aac1ab112233")


def test_the_router_advertisement_makes_no_one_route_through_the_node():
    ra = ndp.router_advertisement(MAC)
    kind, code, _checksum, hops, flags, lifetime, reachable, retrans = struct.unpack("!BBHBBHII", ra[:16])
    assert (kind, code, hops, flags, lifetime, reachable, retrans) == (134, 0, 0, 0, 0, 0, 0)
    assert ra[16:] == bytes([1, 1]) + MAC, "only the source link-layer address option: no prefix information"


def test_the_router_solicitation_carries_the_source_link_layer_address():
    rs = ndp.router_solicitation(MAC)
    assert rs[0] == 133 and rs[8:] == bytes([1, 1]) + MAC
    assert ndp.router_solicitation(b"") == rs[:8], "no option without a link-layer address"


def test_the_nodes_link_local_address_is_read_past_duplicate_address_detection(tmp_path: Path):
    lo = socket.if_indextoname(1)
    table = tmp_path / "if_inet6"
    table.write_text(
        f"20010db8000000000000000000000011 01 40 00 80 {lo}\n"
        f"fe80000000000000a8c1abfffe112233 01 40 20 c0 {lo}\n"  # tentative: not yet
        f"fe80000000000000a8c1abfffe112244 01 40 20 80 {lo}\n"
    )
    assert ndp.link_local(lo, table) == Address.parse("fe80::a8c1:abff:fe11:2244")
    table.write_text(f"fe80000000000000a8c1abfffe112233 01 40 20 c0 {lo}\n")
    with pytest.raises(ndp.LinkError, match="duplicate address detection"):
        ndp.link_local(lo, table)
    table.write_text("")
    with pytest.raises(ndp.LinkError, match=f"no IPv6 link-local address on {lo}"):
        ndp.link_local(lo, table)
    with pytest.raises(ndp.LinkError, match="no interface nosuch0 on this node"):
        ndp.link_local("nosuch0", table)


def test_the_advertiser_reports_an_interface_it_cannot_use_and_counts_nothing():
    errors: list[tuple[str, str]] = []
    advertiser = RouterAdvertiser(["nosuch0"], interval=0.05, on_error=lambda i, why: errors.append((i, why)))
    advertiser.start()
    try:
        for _ in range(100):
            if errors:
                break
            time.sleep(0.01)
    finally:
        advertiser.stop()
    assert errors[0] == ("nosuch0", "no interface nosuch0 on this node")
    assert advertiser.sent == {} and advertiser.errors == {"nosuch0": "no interface nosuch0 on this node"}


# -- import: the ToR's routes via its link-local address ---------------------------------------------------------------


def imported(raw_peers: list[dict], learned: dict[str, dict[str, str]]):

    c = unnumbered.with_links(config(*raw_peers), Links(eth1=(NODE_LL, TOR)))
    paths = {peer: {Prefix.parse(p): Address.parse(h) for p, h in routes.items()} for peer, routes in learned.items()}
    return desired_routes(paths, ImportNetwork("vmnet-a"), [Prefix.parse("192.168.100.0/24")], 1000, context_of(c))


def test_the_unnumbered_peers_ipv4_default_via_its_link_local_address_is_imported():
    out = imported([{"interface": "eth1", "asn": 64512}], {TOR: {"0.0.0.0/0": TOR, "::/0": TOR}})
    assert {str(p): sorted(str(h) for h in hops) for p, hops in out.routes.items()} == {
        "0.0.0.0/0": [TOR],
        "::/0": [TOR],
    }
    assert out.refusals == []


@pytest.mark.parametrize(
    ("peers", "learned", "reason"),
    [
        pytest.param(
            [{"interface": "eth1", "asn": 64512}],
            {TOR: {"0.0.0.0/0": "fe80::99"}},
            "next-hop-special",
            id="another-link-local-address-than-the-peers",
        ),
        pytest.param(
            [{"address": "10.0.0.1", "asn": 64512}],
            {"10.0.0.1": {"0.0.0.0/0": "fd00::1"}},
            "next-hop",
            id="an-ipv6-next-hop-from-a-numbered-peer",
        ),
    ],
)
def test_other_link_local_or_cross_family_next_hops_stay_refused(peers, learned, reason):
    out = imported(peers, learned)
    assert out.routes == {} and [r.reason for r in out.refusals] == [reason]


class IPRoute:
    def __init__(self, links: dict[str, int]) -> None:
        self.links, self.calls = links, []

    def link_lookup(self, ifname: str) -> list[int]:
        return [self.links[ifname]] if ifname in self.links else []

    def route(self, command, **kwargs):
        self.calls.append((command, kwargs))


def test_a_link_local_next_hop_is_installed_on_its_interface_and_an_ipv4_route_uses_via():
    ipr = IPRoute({"eth1": 3})
    nl = Netlink(ipr, links={Address.parse(TOR): "eth1"})  # type: ignore[arg-type]
    nl.replace(1001, Prefix.parse("0.0.0.0/0"), [Address.parse(TOR)])
    nl.replace(1001, Prefix.parse("::/0"), [Address.parse(TOR)])
    assert [kwargs for _command, kwargs in ipr.calls] == [
        {
            "dst": "0.0.0.0/0",
            "table": 1001,
            "proto": 186,
            "family": socket.AF_INET,
            "via": {"family": socket.AF_INET6, "addr": TOR},
            "oif": 3,
        },
        {"dst": "::/0", "table": 1001, "proto": 186, "family": socket.AF_INET6, "gateway": TOR, "oif": 3},
    ]
    with pytest.raises(OSError, match="fe80::99 is on no known interface"):
        nl.replace(1001, Prefix.parse("0.0.0.0/0"), [Address.parse("fe80::99")])
    gone = Netlink(IPRoute({}), links={Address.parse(TOR): "eth1"})  # type: ignore[arg-type]
    with pytest.raises(OSError, match=r"\(eth1\)"):
        gone.replace(1001, Prefix.parse("0.0.0.0/0"), [Address.parse(TOR)])


def test_an_ipv4_route_via_an_ipv6_address_is_read_back_with_that_next_hop():
    msg = rtmsg()
    msg["family"], msg["dst_len"], msg["proto"], msg["table"] = socket.AF_INET, 0, RTPROT_BGP, 252
    msg["attrs"] = [("RTA_TABLE", 1001), ("RTA_VIA", {"family": socket.AF_INET6, "addr": TOR}), ("RTA_OIF", 3)]
    msg.encode()
    decoded = rtmsg(msg.data)
    decoded.decode()
    assert route_of_message(decoded) == (1001, Prefix.parse("0.0.0.0/0"), frozenset({Address.parse(TOR)}))


def test_an_interface_peer_whose_link_was_not_resolved_gets_no_route():
    """Defence in depth: the controller serves only resolved interface peers; one without the node's link-local
    address would otherwise get next hops that are not on its link."""
    c = config({"interface": "eth1", "address": TOR, "asn": 64512}, nodeName="worker-1")
    routes = Guard(c).check(plan(STATE, c).routes, GuardContext.from_state(STATE, c))
    lines: list[str] = []
    speaker = Speaker.from_config(c, lines.append)
    speaker.start()
    for reply in ("[]", "done", "done"):
        speaker.handle_line(reply)
    lines.clear()
    speaker.set_desired(routes.per_peer)
    assert not [line for line in lines if "nlri" in line], "EoR only"


# -- a link that fails at start is tried again -------------------------------------------------------------------------

UPLINK = {"interface": "eth1", "asn": 64512}
NUMBERED = {"address": "10.0.0.1", "asn": 64512}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def retrying(links: Links, clock: Clock, posted: list | None = None, shown: list | None = None) -> unnumbered.LinkRetry:
    """A LinkRetry on `links` without jitter, posting to `posted` and showing the waiting interfaces in `shown`."""
    return unnumbered.LinkRetry(
        links,
        posted.append if posted is not None else None,
        clock=clock,
        jitter=lambda delay: delay,
        on_waiting=(lambda interfaces: shown.append(list(interfaces))) if shown is not None else None,
    )


def tries_at(retry: unnumbered.LinkRetry, links: Links, clock: Clock, until: float) -> list[float]:
    """Run the retry on `clock` until `until` seconds after now: the offsets at which it solicited the link."""
    start, offsets = clock.now, []
    while clock.now - start <= until:
        asked = len(links.asked)
        retry.attempt()
        if len(links.asked) > asked:
            offsets.append(clock.now - start)
        clock.now += 0.5
    return offsets


def test_a_peer_whose_link_failed_is_tried_again_every_2_s_doubling_to_30_s():
    links, clock = Links(eth1=(NODE_LL, None)), Clock()
    retry = retrying(links, clock)
    placed = retry.place(config(NUMBERED, UPLINK))
    assert [p.name for p in placed.peers] == ["10.0.0.1"] and links.asked == ["eth1"]
    assert tries_at(retry, links, clock, 120) == [2, 6, 14, 30, 60, 90, 120]


def test_the_back_off_is_jittered_so_a_racks_nodes_do_not_solicit_together():
    links, clock = Links(eth1=(NODE_LL, None)), Clock()
    retry = unnumbered.LinkRetry(links, clock=clock)
    retry.place(config(UPLINK))
    due = retry.next_due()
    assert due is not None
    low, high = (1 - unnumbered.RETRY_JITTER) * 2, (1 + unnumbered.RETRY_JITTER) * 2
    assert low <= due - clock.now <= high


def test_each_reason_a_peer_waits_for_is_logged_once(caplog):
    links, clock = Links(eth1=(NODE_LL, None)), Clock()
    retry = retrying(links, clock)
    retry.place(config(UPLINK))
    tries_at(retry, links, clock, 40)
    del links.links["eth1"]  # the interface went away meanwhile
    tries_at(retry, links, clock, 70)
    retry.place(config(UPLINK))  # placed again (a label change): still waiting, not logged again
    logged = [r.getMessage() for r in caplog.records if r.name == "bgpadv.runtime.unnumbered"]
    assert len(logged) == 2
    assert "no router answered" in logged[0] and "no interface eth1 on this node" in logged[1]


def test_a_link_that_answers_is_handed_to_the_loop_and_the_next_placement_takes_it_without_soliciting():
    links, clock, posted, shown = Links(eth1=(NODE_LL, None)), Clock(), [], []
    retry = retrying(links, clock, posted, shown)
    configured = config(NUMBERED, UPLINK)
    retry.place(configured)
    assert shown == [["eth1"]] and retry.status()[0]["reason"].startswith("no router answered")
    links.links["eth1"] = (NODE_LL, TOR)  # the ToR's zebra answers now
    clock.now += 2
    assert retry.attempt() is True and posted == [unnumbered.LinksFound()]
    asked = len(links.asked)
    placed = retry.place(configured)
    assert len(links.asked) == asked, "the loop took the retry's answer: no Router Solicitation on its thread"
    assert [(p.name, p.on_link) for p in placed.peers] == [("10.0.0.1", None), (TOR, Address.parse(NODE_LL))]
    assert shown[-1] == [] and retry.status() == [] and retry.next_due() is None


def test_a_placement_leaves_a_waiting_peer_to_the_retry_instead_of_soliciting_on_the_loop():
    links, clock = Links(eth1=(NODE_LL, None)), Clock()
    retry = retrying(links, clock)
    retry.place(config(UPLINK))
    retry.place(config(UPLINK))
    assert links.asked == ["eth1"]


def test_a_peer_no_longer_placed_is_no_longer_tried():
    links, clock, shown = Links(eth1=(NODE_LL, None)), Clock(), []
    retry = retrying(links, clock, shown=shown)
    retry.place(config(NUMBERED, UPLINK))
    retry.place(config(NUMBERED))  # the node's labels no longer select it
    clock.now += 60
    assert retry.attempt() is False and links.asked == ["eth1"] and shown == [["eth1"], []]


def test_the_retry_thread_hands_a_found_peer_to_the_queue():
    import queue

    links, inbox = Links(eth1=(NODE_LL, None)), queue.SimpleQueue()
    retry = unnumbered.LinkRetry(links, inbox.put, jitter=lambda delay: delay / 1000)  # ms instead of seconds
    retry.place(config(UPLINK))
    retry.start()
    try:
        links.links["eth1"] = (NODE_LL, TOR)
        assert inbox.get(timeout=5) == unnumbered.LinksFound()
    finally:
        retry.stop()
    assert [p.name for p in retry.place(config(UPLINK)).peers] == [TOR]


class Reloads:
    """ExaBGP's reload as the controller sees it: the peer sets it was asked to run."""

    def __init__(self) -> None:
        self.reloaded: list[list[str]] = []

    def reload_exabgp(self, config) -> bool:
        self.reloaded.append([p.name for p in config.peers])
        return True

    def tick(self) -> None:
        pass


RACK = "topology.bgpadv.io/rack"


def rack_node(rack: str, version: str) -> dict:
    node = k8s.node("worker-1", "10.0.0.11", "fd00::11", labels={RACK: rack})
    node["metadata"]["resourceVersion"] = version
    return node


def controller_waiting_for_eth1(links: Links, clock: Clock):
    """A per-node controller on worker-1 (rack a) whose uplink peer (rack a's) waits for its link, beside a numbered
    peer for every node; ExaBGP's reloads are recorded (`Reloads`), the retry posts to the loop's queue."""
    import queue

    from bgpadv.core import resources
    from bgpadv.runtime.controller import Controller, LoopSettings, watched_resources
    from bgpadv.sources.decode.dispatch import decode
    from bgpadv.sources.reflector import WatchEvent
    from tests.doubles import RecordingObserver, RecordingSources, RecordingSpeaker

    inbox: queue.SimpleQueue = queue.SimpleQueue()
    retry = retrying(links, clock)
    retry.post = inbox.put
    uplink = {**UPLINK, "nodeSelector": {"matchLabels": {RACK: "a"}}}
    configured = config(NUMBERED, uplink, nodeName="worker-1")
    node = decode(resources.NODE, rack_node("a", "1"), "worker-1")
    assert node is not None

    def placement(file, n):
        return retry.place(file.serving(n.labels if n is not None else None))

    c = Controller(
        placement(configured, node),
        speaker=RecordingSpeaker(),
        sources=RecordingSources(),
        events=inbox,
        observer=RecordingObserver(),
        settings=LoopSettings(coalesce_window=0.0),
        clock=clock,
        reloader=Reloads(),  # type: ignore[arg-type]
        configured=configured,
        placement=placement,
        node=node,
    )
    for res in watched_resources(configured):
        inbox.put(WatchEvent(res, "SYNCED", None, clock.now, None))
    inbox.put(WatchEvent(resources.NODE, "ADDED", rack_node("a", "1"), clock.now, None))
    assert c.step() is True and [p.name for p in c.config.peers] == ["10.0.0.1"]
    return c, retry


def test_the_controller_adds_a_found_peer_by_a_live_move_and_keeps_the_other_sessions():
    links, clock = Links(eth1=(NODE_LL, None)), Clock()
    c, retry = controller_waiting_for_eth1(links, clock)
    links.links["eth1"] = (NODE_LL, TOR)
    clock.now += 2
    assert retry.attempt() is True
    assert c.step() is True and c.restart_requested is False, "a live move, not a new controller"
    assert c.reloader.reloaded == [["10.0.0.1", TOR]] and c.speaker.peer_sets == [["10.0.0.1", TOR]]
    assert [(p.name, p.on_link) for p in c.config.peers] == [("10.0.0.1", None), (TOR, Address.parse(NODE_LL))]
    assert c.guard.config is c.config


def test_node_events_that_select_the_same_peers_move_nothing_while_a_peer_waits_or_after():
    """The node's labels select the uplink peer all along: its discovered name, or its absence while it waits, is no
    reason to place the peers again (a Router Solicitation on the loop, ExaBGP reloaded) on every Node update."""
    from bgpadv.core import resources
    from bgpadv.sources.reflector import WatchEvent

    links, clock = Links(eth1=(NODE_LL, None)), Clock()
    c, retry = controller_waiting_for_eth1(links, clock)
    c.queue.put(WatchEvent(resources.NODE, "MODIFIED", rack_node("a", "2"), clock.now, None))
    assert c.step() is True and c.reloader.reloaded == [] and links.asked == ["eth1"]
    links.links["eth1"] = (NODE_LL, TOR)
    clock.now += 2
    retry.attempt()
    c.step()
    c.queue.put(WatchEvent(resources.NODE, "MODIFIED", rack_node("a", "3"), clock.now, None))
    assert c.step() is True and c.reloader.reloaded == [["10.0.0.1", TOR]], "the one move that added it"
    c.queue.put(WatchEvent(resources.NODE, "MODIFIED", rack_node("b", "4"), clock.now, None))
    assert c.step() is True and c.reloader.reloaded[-1] == ["10.0.0.1"], "another rack: the uplink peer leaves"


def test_status_shows_a_peer_waiting_for_its_link():
    from bgpadv.commands.status import render_placement
    from bgpadv.commands.statusdoc import STATUS
    from bgpadv.runtime.peering import placement_status

    links, clock = Links(eth1=(NODE_LL, None)), Clock()
    retry = retrying(links, clock)
    configured = config(NUMBERED, UPLINK, nodeName="worker-1")
    running = retry.place(configured)
    clock.now += 7
    retry.attempt()
    placement = placement_status(configured, running, retry.status())
    STATUS({"placement": placement}, "")
    assert render_placement(placement) == [
        "node worker-1 serves: 10.0.0.1",
        "waiting for its link: %eth1 on eth1 for 7 s (2 tries, next in 4 s): no router answered a Router "
        "Solicitation on eth1 within 5 s",
        "",
    ]


class Kernel:
    """The import's kernel side: its protocol-186 tables and the link of each link-local next hop."""

    def __init__(self) -> None:
        self.tables: dict[int, dict] = {}
        self.links: dict[Address, str] = {}

    def vrf_tables(self):
        return {}

    def interfaces(self):
        return []

    def installed(self, tables):
        return {t: dict(self.tables.get(t, {})) for t in tables}

    def replace(self, table, prefix, hops):
        self.tables.setdefault(table, {})[prefix] = frozenset(hops)

    def delete(self, table, prefix):
        del self.tables[table][prefix]


def test_a_peer_added_live_has_its_routes_imported_via_its_link():
    """A peer whose link answered later joins the import too: what it sends is learned, installed on its link."""
    from bgpadv.importer.reconciler import Importer, SelectedNetwork
    from bgpadv.speaker.protocol import NeighborList, RibInDone, UpdateEvent

    imports = {"enabled": True, "networks": [{"name": "vmnet-a", "table": 1001, "accept": [{"prefix": "0.0.0.0/0"}]}]}
    configured = config(UPLINK, importRoutes=imports)
    running = unnumbered.with_links(configured, Links(eth1=(NODE_LL, None)))
    kernel = Kernel()
    importer = Importer(running, kernel, None, 0.0)  # type: ignore[arg-type]
    importer.handle(NeighborList(()), 0.0)
    importer.handle(RibInDone(), 0.0)
    importer.set_networks({"vmnet-a": SelectedNetwork((Prefix.parse("192.168.100.0/24"),))}, 0.0)
    found = unnumbered.with_links(configured, Links(eth1=(NODE_LL, TOR)))
    importer.set_peers(found, unnumbered.next_hop_links(found))
    default = Prefix.parse("0.0.0.0/0")
    importer.handle(UpdateEvent(TOR, "receive", ((default, Address.parse(TOR)),), (), ()), 1.0)
    importer.tick(1.0, full=True)
    assert kernel.tables == {1001: {default: frozenset({Address.parse(TOR)})}}
    assert kernel.links == {Address.parse(TOR): "eth1"}
    importer.set_peers(running, unnumbered.next_hop_links(running))  # gone again: its routes are forgotten
    importer.tick(2.0, full=True)
    assert kernel.tables == {1001: {}}


def test_a_router_solicitation_raises_cap_net_raw_in_its_own_thread_first(monkeypatch):
    """The link retry's thread may predate the placement that raised CAP_NET_RAW (an interface peer added by a
    reload): capabilities are per thread, so each solicitation raises it where it runs."""
    order: list[str] = []
    monkeypatch.setattr(unnumbered, "raise_net_raw", lambda: order.append("raise"))
    monkeypatch.setattr(ndp, "discover_router", lambda interface, timeout: order.append(interface) or TOR)
    assert unnumbered.KernelLinks().router("eth1", 1.0) == TOR
    assert order == ["raise", "eth1"]
