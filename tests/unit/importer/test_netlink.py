"""The kernel seam of the import: OVN-K's VRF name rule, a VRF's table read from its link message, protocol-186
routes read back from route messages, and the requests sent for ECMP and single-path routes.

Messages are built with pyroute2's own classes (ifinfmsg, rtmsg), encoded and decoded as the kernel's would be, so
the attribute names the seam reads (IFLA_INFO_KIND `vrf`, IFLA_VRF_TABLE, RTA_TABLE, RTA_MULTIPATH) are checked
against pyroute2 itself. This kernel has no VRF devices (shared reference lab-kernel.md), hence no live lookup.
"""

from __future__ import annotations

import socket

from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
from pyroute2.netlink.rtnl.rtmsg import rtmsg

from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.netlink import RTPROT_BGP, Netlink, route_of_message, vrf_name, vrf_of_link


def link(name: str, kind: str, table: int | None = None) -> ifinfmsg:
    info: list = [("IFLA_INFO_KIND", kind)]
    if table is not None:
        info.append(("IFLA_INFO_DATA", {"attrs": [("IFLA_VRF_TABLE", table)]}))
    msg = ifinfmsg()
    msg["family"] = 0
    msg["attrs"] = [("IFLA_IFNAME", name), ("IFLA_LINKINFO", {"attrs": info})]
    msg.encode()
    decoded = ifinfmsg(msg.data)
    decoded.decode()
    return decoded


def route(dst: str, length: int, proto: int, table: int, gateways: list[str]) -> rtmsg:
    msg = rtmsg()
    msg["family"] = socket.AF_INET
    msg["dst_len"] = length
    msg["proto"] = proto
    msg["table"] = 252  # RT_TABLE_COMPAT: the real number is in RTA_TABLE
    attrs: list = [("RTA_TABLE", table)]
    if length:
        attrs.append(("RTA_DST", dst))
    if len(gateways) == 1:
        attrs.append(("RTA_GATEWAY", gateways[0]))
    else:
        attrs.append(("RTA_MULTIPATH", [{"attrs": [("RTA_GATEWAY", g)]} for g in gateways]))
    msg["attrs"] = attrs
    msg.encode()
    decoded = rtmsg(msg.data)
    decoded.decode()
    return decoded


class FakeIPRoute:
    def __init__(self, links=(), routes=()) -> None:
        self.links, self.routes, self.calls = list(links), list(routes), []

    def get_links(self):
        return iter(self.links)

    def get_routes(self, family):
        return iter(r for r in self.routes if r["family"] == family)

    def route(self, command, **kwargs):
        self.calls.append((command, kwargs))


def test_a_cudn_name_of_at_most_15_characters_is_its_vrf_name():
    assert vrf_name("vmnet-a", None) == "vmnet-a"
    assert vrf_name("a" * 15, None) == "a" * 15


def test_a_longer_cudn_name_gives_mp_network_id_udn_vrf_and_none_without_the_id():
    assert vrf_name("tenant-blue-production", 7) == "mp7-udn-vrf"
    assert vrf_name("a" * 16, 12) == "mp12-udn-vrf"
    assert vrf_name("tenant-blue-production", None) is None


def test_a_vrf_link_message_gives_its_name_and_table():
    assert vrf_of_link(link("mp7-udn-vrf", "vrf", 1007)) == ("mp7-udn-vrf", 1007)


def test_links_that_are_not_vrfs_give_nothing():
    assert vrf_of_link(link("eth0", "veth")) is None
    assert vrf_of_link(link("vrf-without-table", "vrf")) is None


def test_vrf_tables_maps_every_vrf_device_to_its_table_over_netlink():
    ipr = FakeIPRoute(links=[link("vmnet-a", "vrf", 1001), link("eth0", "veth"), link("mp7-udn-vrf", "vrf", 1007)])
    assert Netlink(ipr).vrf_tables() == {"vmnet-a": 1001, "mp7-udn-vrf": 1007}


def test_only_protocol_186_routes_of_the_asked_tables_are_read_back_with_all_their_next_hops():
    ipr = FakeIPRoute(
        routes=[
            route("0.0.0.0", 0, RTPROT_BGP, 1001, ["10.0.0.1", "10.0.0.2"]),
            route("198.51.100.0", 24, RTPROT_BGP, 1001, ["10.0.0.1"]),
            route("203.0.113.0", 24, 4, 1001, ["10.0.0.1"]),  # proto static
            route("192.0.2.0", 24, RTPROT_BGP, 1002, ["10.0.0.1"]),  # another table
        ]
    )
    assert Netlink(ipr).installed([1001]) == {
        1001: {
            Prefix.parse("0.0.0.0/0"): frozenset({Address.parse("10.0.0.1"), Address.parse("10.0.0.2")}),
            Prefix.parse("198.51.100.0/24"): frozenset({Address.parse("10.0.0.1")}),
        }
    }
    assert route_of_message(route("203.0.113.0", 24, 4, 1001, ["10.0.0.1"])) is None


def test_equal_paths_are_installed_as_one_multipath_route_with_protocol_186():
    ipr = FakeIPRoute()
    nl = Netlink(ipr)
    nl.replace(1001, Prefix.parse("0.0.0.0/0"), [Address.parse("10.0.0.2"), Address.parse("10.0.0.1")])
    nl.replace(1001, Prefix.parse("198.51.100.0/24"), [Address.parse("10.0.0.1")])
    nl.delete(1001, Prefix.parse("198.51.100.0/24"))
    assert ipr.calls == [
        (
            "replace",
            {
                "dst": "0.0.0.0/0",
                "table": 1001,
                "proto": 186,
                "family": socket.AF_INET,
                "multipath": [{"gateway": "10.0.0.1"}, {"gateway": "10.0.0.2"}],
            },
        ),
        (
            "replace",
            {"dst": "198.51.100.0/24", "table": 1001, "proto": 186, "family": socket.AF_INET, "gateway": "10.0.0.1"},
        ),
        ("del", {"dst": "198.51.100.0/24", "table": 1001, "proto": 186, "family": socket.AF_INET}),
    ]


def test_the_interfaces_carry_the_index_of_the_link_they_are_on():
    """Read from this namespace's kernel (a dump, nothing changed): the loopback's 127.0.0.1/8 is on `lo`."""
    netlink = Netlink()
    try:
        interfaces = netlink.interfaces()
    finally:
        netlink.close()
    assert (Address.parse("127.0.0.1"), 8, socket.if_nametoindex("lo")) in interfaces
