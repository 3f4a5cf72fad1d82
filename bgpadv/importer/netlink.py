"""The kernel side of the import, over netlink (pyroute2): find a VRF's table, dump, install and delete routes.

Only routes with protocol 186 (RTPROT_BGP, what OVN-K's route-import controller mirrors) are ever dumped, replaced
or deleted, and only in the tables the reconciler names; a route of any other protocol is never touched. Equal paths
go in as one multipath route (RTA_MULTIPATH), a single path as a plain gateway route.

VRF names: `bgpadv.importer.vrfs` (re-exported here).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from bgpadv.core.prefix import Address, Prefix
from bgpadv.importer.guard import Interface
from bgpadv.importer.vrfs import MAX_IFNAME, Routes, vrf_name

__all__ = ["MAX_IFNAME", "RTPROT_BGP", "Netlink", "Routes", "route_of_message", "vrf_name", "vrf_of_link"]

RTPROT_BGP = 186


def vrf_of_link(msg: object) -> tuple[str, int] | None:
    """(name, table) of an RTM_NEWLINK message for a VRF device (IFLA_INFO_KIND `vrf`, IFLA_VRF_TABLE); None for
    any other link."""
    get = getattr(msg, "get_attr", None)
    if get is None:
        return None
    info = get("IFLA_LINKINFO")
    if info is None or info.get_attr("IFLA_INFO_KIND") != "vrf":
        return None
    data = info.get_attr("IFLA_INFO_DATA")
    table = data.get_attr("IFLA_VRF_TABLE") if data is not None else None
    name = get("IFLA_IFNAME")
    if not name or not table:
        return None
    return str(name), int(table)


def route_of_message(msg: object) -> tuple[int, Prefix, frozenset[Address]] | None:
    """(table, prefix, next hops) of an RTM_NEWROUTE message with protocol 186; None otherwise."""
    if msg["proto"] != RTPROT_BGP:  # type: ignore[index]
        return None
    get = msg.get_attr  # type: ignore[attr-defined]
    table = get("RTA_TABLE") or msg["table"]  # type: ignore[index]
    family = msg["family"]  # type: ignore[index]
    dst = get("RTA_DST") or ("0.0.0.0" if family == socket.AF_INET else "::")
    prefix = Prefix.parse(f"{dst}/{msg['dst_len']}", strict=False)  # type: ignore[index]
    hops = set()
    for gateway in (get("RTA_GATEWAY"), _via(get("RTA_VIA"))):
        if gateway:
            hops.add(Address.parse(gateway))
    for hop in get("RTA_MULTIPATH") or ():
        for gw in (hop.get_attr("RTA_GATEWAY"), _via(hop.get_attr("RTA_VIA"))):
            if gw:
                hops.add(Address.parse(gw))
    return int(table), prefix, frozenset(hops)


def _via(value: object) -> str | None:
    """RTA_VIA's address (a next hop of the other family: an IPv4 route via an IPv6 address, RFC 8950)."""
    return str(value["addr"]) if isinstance(value, dict) and value.get("addr") else None


class Netlink:
    """One netlink socket (pyroute2's IPRoute) in the namespace the process runs in."""

    def __init__(self, ipr: IPRoute | None = None, links: Mapping[Address, str] | None = None) -> None:
        self._ipr = ipr if ipr is not None else IPRoute()
        # a link-local next hop → the interface it is on (an unnumbered peer's address: its session's interface)
        self.links = dict(links or {})

    def close(self) -> None:
        self._ipr.close()

    def vrf_tables(self) -> dict[str, int]:
        """Every VRF device's name → its routing table."""
        out = {}
        try:
            links = list(self._ipr.get_links())
        except NetlinkError as e:
            raise OSError(e.code, f"link dump: {e}") from e
        for msg in links:
            vrf = vrf_of_link(msg)
            if vrf is not None:
                out[vrf[0]] = vrf[1]
        return out

    def interfaces(self) -> list[Interface]:
        """Every interface address of the namespace with its prefix length and interface index (the node's
        connected subnets per link, for the import guard's on-link rule)."""
        out: list[Interface] = []
        try:
            messages = list(self._ipr.get_addr())
        except NetlinkError as e:
            raise OSError(e.code, f"address dump: {e}") from e
        for msg in messages:
            text = msg.get_attr("IFA_ADDRESS") or msg.get_attr("IFA_LOCAL")
            try:
                out.append((Address.parse(str(text)), int(msg["prefixlen"]), int(msg["index"])))
            except (ValueError, TypeError, KeyError):
                continue  # a zone-indexed link-local address and the like: never a shared subnet
        return out

    def installed(self, tables: Iterable[int]) -> dict[int, Routes]:
        """The protocol-186 routes of each of `tables` (IPv4 and IPv6)."""
        wanted = set(tables)
        out: dict[int, Routes] = {t: {} for t in wanted}
        for family in (socket.AF_INET, socket.AF_INET6):
            try:
                messages = list(self._ipr.get_routes(family=family))
            except NetlinkError as e:
                raise OSError(e.code, f"route dump: {e}") from e
            for msg in messages:
                parsed = route_of_message(msg)
                if parsed is not None and parsed[0] in wanted:
                    out[parsed[0]][parsed[1]] = parsed[2]
        return out

    def replace(self, table: int, prefix: Prefix, next_hops: Iterable[Address]) -> None:
        hops = sorted(next_hops)
        kwargs: dict[str, object] = {"dst": str(prefix), "table": table, "proto": RTPROT_BGP}
        kwargs["family"] = socket.AF_INET if prefix.version == 4 else socket.AF_INET6
        try:
            if len(hops) == 1:
                kwargs.update(self._hop(prefix, hops[0]))
            else:
                kwargs["multipath"] = [self._hop(prefix, h) for h in hops]
            self._ipr.route("replace", **kwargs)
        except NetlinkError as e:
            raise OSError(e.code, f"replace {prefix} in table {table}: {e}") from e

    def _hop(self, prefix: Prefix, hop: Address) -> dict[str, object]:
        """One next hop as netlink takes it: `via` for an IPv6 next hop of an IPv4 route (RFC 8950), and the
        interface of a link-local one (`links`; raises OSError when it is unknown or gone)."""
        if hop.version == prefix.version:
            out: dict[str, object] = {"gateway": str(hop)}
        else:
            out = {"via": {"family": socket.AF_INET6 if hop.version == 6 else socket.AF_INET, "addr": str(hop)}}
        if hop.version == 6 and hop.value >> 118 == 0x3FA:  # fe80::/10
            interface = self.links.get(hop)
            index = self._ipr.link_lookup(ifname=interface) if interface is not None else []
            if not index:
                raise OSError(f"the link-local next hop {hop} is on no known interface ({interface or 'none'})")
            out["oif"] = index[0]
        return out

    def delete(self, table: int, prefix: Prefix) -> None:
        family = socket.AF_INET if prefix.version == 4 else socket.AF_INET6
        try:
            self._ipr.route("del", dst=str(prefix), table=table, proto=RTPROT_BGP, family=family)
        except NetlinkError as e:
            raise OSError(e.code, f"delete {prefix} from table {table}: {e}") from e
