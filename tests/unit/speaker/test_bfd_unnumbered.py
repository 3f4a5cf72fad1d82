"""BFD on an interface peer (`peers[].interface` with `bfd.enabled`): the session bfdd runs over the link-local
addresses and the host route that keeps it on its link.

Scope: the peer is accepted with BFD; its session is given to bfdd by the ToR's link-local address alone (bfdd,
without zebra, refuses an interface or a link-local local address); the client writes the host route
`fe80::<ToR>/128 dev <uplink>` before it asks bfdd for the session, deletes it with the session, and refuses the
session (state `refused`, the reason in /status) when CAP_NET_ADMIN cannot be raised, the numbered peers' sessions
untouched; the route keeper (`bgpadv.speaker.bfd_routes`) puts back what the kernel lost, deletes only its own
protocol's routes, leaves another's route for the address alone, and treats a link that is down as the usual case;
what it reads of the kernel: the main table's IPv6 host routes out of a dump, and which notifications wake it.
The real bfdd, a real FRR ToR with `neighbor swp1 bfd`, a link flap and two uplinks: tests/lab/test_unnumbered_bfd.py.
"""

from __future__ import annotations

import errno
import logging
import socket
import struct

import pytest
from pyroute2.netlink.rtnl.rtmsg import rtmsg

from bgpadv.config import parse
from bgpadv.speaker import bfd
from bgpadv.speaker.bfd_routes import RTPROT_BGPADV, LinkRoutes, concerns_ours, routes_of
from tests.unit.speaker.test_bfd import FakeBfdd

TOR_A, TOR_B = "fe80::1", "fe80::2"
NETWORKS = {"selector": {"matchLabels": {"bgp.example.com/advertise": "true"}}}
BFD = {"enabled": True, "minRx": 100, "minTx": 100, "multiplier": 3}


def config(*peers: dict):
    raw = {"mode": "per-node", "nodeName": "worker-1", "localASN": 64513, "peers": list(peers), "networks": NETWORKS}
    return parse(raw, environ={})


def uplink(interface: str, address: str, **extra: object) -> dict:
    return {"interface": interface, "address": address, "asn": 64512, "bfd": BFD, **extra}


class Table:
    """The node's main table as `LinkRoutes` sees it: our host routes, others' (address → interface), links down."""

    def __init__(self, others: dict[str, str] | None = None) -> None:
        self.routes: dict[str, str] = {}
        self.others_routes = dict(others or {})
        self.down: set[str] = set()
        self.calls: list[tuple[str, str, str]] = []

    def ours(self) -> dict[str, str]:
        return dict(self.routes)

    def others(self, address: str) -> bool:
        return address in self.others_routes

    def add(self, address: str, interface: str) -> None:
        self.calls.append(("add", address, interface))
        if interface in self.down:
            raise OSError(errno.ENETDOWN, "Network is down")
        if address in self.others_routes or address in self.routes:
            raise OSError(errno.EEXIST, "File exists")
        self.routes[address] = interface

    def delete(self, address: str, interface: str) -> None:
        self.calls.append(("delete", address, interface))
        del self.routes[address]

    def link_down(self, interface: str) -> None:
        self.down.add(interface)
        self.routes = {a: i for a, i in self.routes.items() if i != interface}


# -- configuration ----------------------------------------------------------------------------------------------------


def test_an_interface_peer_runs_bfd_by_the_tors_link_local_address_alone():
    [session] = bfd.sessions_of(config(uplink("eth1", TOR_A)).peers).values()
    assert session == bfd.BfdSession(TOR_A, TOR_A, None, 100, 100, 3, interface="eth1")
    assert session.key() == {
        "peer-address": TOR_A,
        "multihop": False,
        "receive-interval": 100,
        "transmit-interval": 100,
        "detect-multiplier": 3,
    }


# -- the client: host route first, then the session; refused without CAP_NET_ADMIN -------------------------------------


class Routes:
    """The client's host route keeper, recording each desired set in order with bfdd's requests (`log`)."""

    def __init__(self, log: list[object]) -> None:
        self.log = log

    def set_desired(self, routes):
        self.log.append(("routes", dict(routes)))

    def start(self):
        return self

    def stop(self):
        pass


NUMBERED = bfd.BfdSession("10.0.0.1", "10.0.0.1", "10.0.0.11", 300, 300, 3)
LINKED = bfd.BfdSession(TOR_A, TOR_A, None, 100, 100, 3, interface="eth1")


def test_the_host_route_is_written_before_the_session_is_asked_for_and_deleted_after_it_goes(tmp_path):
    fake = FakeBfdd(tmp_path / "bfdd.sock")
    order: list[object] = []
    control = bfd.BfdControl(tmp_path / "bfdd.sock", bfd.BfdStates(), host_routes=Routes(order))
    control.start()
    try:
        fake.wait_requests(1)  # subscribed
        control.set_desired({TOR_A: LINKED, "10.0.0.1": NUMBERED})
        added = fake.wait_requests(2)[1]
        assert order == [("routes", {TOR_A: "eth1"})]
        assert added == (bfd.REQUEST_ADD, {"ipv6": [LINKED.key()], "ipv4": [NUMBERED.key()]})
        control.set_desired({"10.0.0.1": NUMBERED})
        assert fake.wait_requests(3)[2] == (bfd.REQUEST_DEL, {"ipv6": [LINKED.key(timers=False)]})
        assert order[-1] == ("routes", {})
    finally:
        control.stop()


def test_without_cap_net_admin_the_interface_peers_session_is_refused_and_the_numbered_ones_run(tmp_path, caplog):
    fake = FakeBfdd(tmp_path / "bfdd.sock")
    seen: list[tuple[str, str]] = []
    order: list[object] = []
    control = bfd.BfdControl(
        tmp_path / "bfdd.sock",
        bfd.BfdStates(),
        lambda peer, state: seen.append((peer, state.state)),
        host_routes=Routes(order),
        net_admin=lambda: "NET_ADMIN is not in this process' permitted set",
    )
    control.start()
    try:
        fake.wait_requests(1)
        with caplog.at_level(logging.ERROR, logger="bgpadv.speaker.bfd"):
            control.set_desired({TOR_A: LINKED, "10.0.0.1": NUMBERED})
            control.set_desired({TOR_A: LINKED, "10.0.0.1": NUMBERED})  # logged once
        assert fake.wait_requests(2)[1] == (bfd.REQUEST_ADD, {"ipv4": [NUMBERED.key()]})
        state = control.states.snapshot()[TOR_A]
        assert state.as_json() == {
            "state": "refused",
            "diagnostic": 0,
            "since": 0.0,
            "failed": False,
            "reason": "its host route to the peer on eth1 needs CAP_NET_ADMIN: NET_ADMIN is not in this process' "
            "permitted set",
        }
        assert seen == [(TOR_A, "refused")]
        assert [r.getMessage() for r in caplog.records].count(
            f"BFD: the session with the peer is not run: {state.reason}"
        ) == 1
        assert order == [("routes", {}), ("routes", {})]
    finally:
        control.stop()


def test_a_refused_peer_stays_refused_while_bfdd_restarts_and_is_watched_once_it_can_run():
    states = bfd.BfdStates()
    states.set_peers(["10.0.0.1"], {TOR_A: "its host route to the peer on eth1 needs CAP_NET_ADMIN: ..."})
    states.update("10.0.0.1", "up", 0, 1.0)
    assert states.unreachable(2.0) == ["10.0.0.1"]
    assert states.update(TOR_A, "up", 0, 3.0) is None  # bfdd's word on a session nobody asked for
    assert states.snapshot()[TOR_A].state == "refused"
    states.set_peers([TOR_A, "10.0.0.1"])
    assert states.snapshot()[TOR_A] == bfd.BfdPeerState("unknown")


# -- the route keeper --------------------------------------------------------------------------------------------------


def test_the_keeper_writes_the_desired_host_routes_and_deletes_only_its_own_that_are_no_longer_wanted():
    table = Table()
    table.routes = {"fe80::9": "eth7"}  # left by an earlier configuration
    routes = LinkRoutes(table)
    routes.set_desired({TOR_A: "eth1", TOR_B: "eth2"})
    assert table.routes == {TOR_A: "eth1", TOR_B: "eth2"}
    routes.set_desired({TOR_A: "eth2"})  # the ToR moved to another uplink
    assert table.routes == {TOR_A: "eth2"}
    routes.set_desired({})
    assert table.routes == {}


def test_a_link_down_takes_the_route_and_the_next_repair_after_it_comes_up_puts_it_back(caplog):
    table = Table()
    routes = LinkRoutes(table)
    routes.set_desired({TOR_A: "eth1"})
    table.link_down("eth1")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bgpadv.speaker.bfd_routes"):
        routes.repair()
        routes.repair()
    assert table.routes == {} and routes.errors == 0
    told = [(r.levelname, r.getMessage()) for r in caplog.records if "down" in r.getMessage()]
    assert told == [("INFO", "BFD: host route to the peer: eth1 is down")]  # once, not a warning
    table.down.clear()
    routes.repair()
    assert table.routes == {TOR_A: "eth1"}


def test_another_protocols_route_for_the_address_is_left_alone():
    table = Table(others={TOR_A: "eth1"})
    routes = LinkRoutes(table)
    routes.set_desired({TOR_A: "eth1"})
    routes.set_desired({})
    assert table.others_routes == {TOR_A: "eth1"} and table.routes == {}
    assert ("delete", TOR_A, "eth1") not in table.calls and routes.errors == 0


@pytest.mark.parametrize("failure", [OSError(errno.EPERM, "Operation not permitted"), OSError("no interface eth9")])
def test_a_route_that_cannot_be_written_is_an_error_logged_once_and_tried_again(failure, caplog):
    table = Table()
    tries: list[str] = []

    def add(address: str, interface: str) -> None:
        tries.append(address)
        raise failure

    table.add = add  # type: ignore[method-assign]
    routes = LinkRoutes(table)
    with caplog.at_level(logging.WARNING, logger="bgpadv.speaker.bfd_routes"):
        routes.set_desired({TOR_A: "eth9"})
        routes.repair()
    assert tries == [TOR_A, TOR_A] and routes.errors == 2
    assert len(caplog.records) == 1


# -- what the keeper reads of the kernel: a route dump the kernel filters, and the notifications ---------------------


def route_message(kind: int, dst: str, *, dst_len: int = 128, proto: int = RTPROT_BGPADV, table: int = 254) -> bytes:
    """One RTM_NEWROUTE (24) or RTM_DELROUTE (25) as the kernel sends it (encoded by pyroute2)."""
    msg = rtmsg()
    msg["header"]["type"] = kind
    msg["family"] = socket.AF_INET6 if ":" in dst else socket.AF_INET
    msg["dst_len"], msg["proto"], msg["table"], msg["type"] = dst_len, proto, min(table, 255), 1
    msg["attrs"] = [("RTA_TABLE", table), ("RTA_DST", dst), ("RTA_OIF", 3)]
    msg.encode()
    return bytes(msg.data)


def control(kind: int, code: int = 0) -> bytes:
    """NLMSG_DONE (3) or NLMSG_ERROR (2) with `code` (a negative errno)."""
    return struct.pack("=IHHIIi", 20, kind, 0, 1, 0, code)


def test_a_dump_read_keeps_the_main_tables_ipv6_host_routes_and_ends_with_done():
    dump = route_message(24, TOR_A) + route_message(24, "fe80::", dst_len=64, proto=2)
    dump += route_message(24, "2001:db8::5", table=1001, proto=186) + route_message(24, "10.0.0.1", dst_len=32)
    out: list[tuple[str, int, int]] = []
    assert routes_of(dump, out) is False  # more to read
    assert routes_of(route_message(24, TOR_B, proto=4) + control(3), out) is True
    assert out == [(TOR_A, 3, RTPROT_BGPADV), (TOR_B, 3, 4)]


def test_a_dump_the_kernel_refuses_is_an_oserror_with_its_errno():
    with pytest.raises(OSError) as e:
        routes_of(control(2, -errno.EINVAL), [])
    assert e.value.errno == errno.EINVAL


@pytest.mark.parametrize(
    ("notification", "concerns"),
    [
        pytest.param(route_message(24, "2001:db8::", dst_len=64, proto=186, table=1001), False, id="import-write"),
        pytest.param(route_message(25, "2001:db8::", dst_len=64, proto=186, table=1001), False, id="import-delete"),
        pytest.param(route_message(24, TOR_A), False, id="our-own-add"),
        pytest.param(route_message(25, TOR_A), True, id="ours-deleted"),
        pytest.param(route_message(25, TOR_A, proto=4) + route_message(25, TOR_B), True, id="ours-second-in-a-read"),
        pytest.param(struct.pack("=IHHII", 32, 16, 0, 0, 0) + bytes(16), True, id="a-link-changed"),
    ],
)
def test_only_a_link_change_or_one_of_our_routes_deleted_wakes_the_keeper(notification, concerns):
    assert concerns_ours(notification) is concerns


def test_each_write_raises_cap_net_admin_in_its_thread_and_opens_its_own_socket_after(monkeypatch):
    """Capabilities are per thread and the kernel checks a netlink write against the socket's opener too: a socket
    opened, or a thread started, before the raise could never write (measured as a non-root user with the
    interpreter's file capability: EPERM)."""
    import pyroute2

    from bgpadv.speaker.bfd_routes import NetlinkKernel

    order: list[object] = []

    class FakeIPRoute:
        def __init__(self) -> None:
            order.append("open")

        def __enter__(self) -> FakeIPRoute:
            return self

        def __exit__(self, *_: object) -> None:
            order.append("close")

        def route(self, command: str, **route: object) -> None:
            order.append((command, route["dst"], route["proto"], route["table"]))

    monkeypatch.setattr(pyroute2, "IPRoute", FakeIPRoute)
    monkeypatch.setattr(socket, "if_nametoindex", lambda name: 3)
    kernel = NetlinkKernel(net_admin=lambda: order.append("raise"))  # type: ignore[arg-type,func-returns-value]
    kernel.add(TOR_A, "eth1")
    kernel.delete(TOR_A, "eth1")
    route = (f"{TOR_A}/128", RTPROT_BGPADV, 254)
    assert order == ["raise", "open", ("add", *route), "close", "raise", "open", ("del", *route), "close"]


def test_a_node_without_ipv6_is_no_error_while_no_interface_peer_runs_bfd(caplog):
    """Every BFD client starts its keeper, numbered peers only included: a node booted with ipv6.disable=1 refuses the
    IPv6 route dump, which says nothing while no host route is wanted."""
    table = Table()

    def no_ipv6() -> dict[str, str]:
        raise OSError(errno.EAFNOSUPPORT, "route dump: Address family not supported by protocol")

    table.ours = no_ipv6  # type: ignore[method-assign]
    routes = LinkRoutes(table)
    with caplog.at_level(logging.INFO, logger="bgpadv.speaker.bfd_routes"):
        routes.set_desired({})
    assert routes.errors == 0 and not caplog.records
    with caplog.at_level(logging.WARNING, logger="bgpadv.speaker.bfd_routes"):
        routes.set_desired({TOR_A: "eth1"})
    assert routes.errors == 1 and "reading the main table failed" in caplog.records[-1].getMessage()
