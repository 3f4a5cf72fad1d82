"""ExaBGP's entry point as bgpadv runs it (`bgpadv/speaker/exabgp_boot.py`), on changes ExaBGP's own parser makes.

Rules (the deepcopy): for a route whose next hop is an address, each peer's copy equals what ExaBGP's deepcopy gives,
and what ExaBGP later changes in one peer's copy (filing a withdrawal sets `nlri.action`) leaves the others alone; a
`next-hop self` route still takes ExaBGP's own path (the next hop is filled in per peer); ExaBGP launched through the
file is the ExaBGP installed beside bgpadv, and runs.

Rules (the echo): an UPDATE sent on a session configured as bgpadv renders it (`send { parsed; update; }`) is counted,
written to the peer unchanged, and echoed to each API process as ExaBGP's `packets` event, which bgpadv reads as the
same routes, without ExaBGP parsing it back; nothing is echoed while ExaBGP's API is silenced; every other case (a
message that is no UPDATE, ADD-PATH negotiated for sending, `packets` configured, no `parsed`) is ExaBGP's own path;
the hex is ExaBGP's `hexstring`, character for character.

Rules (the merged update stream): over any run of announcements, withdrawals, refresh requests (enhanced or not) and
sends, a peer reading bgpadv's stream from ExaBGP's outgoing RIB ends with exactly the routes (next hop, attributes)
it ends with reading ExaBGP's own, loses no route at an EoRR that ExaBGP's own did not lose, and reads no more
messages; a refresh answer and IPv6 routes go out a few hundred to a message, the answer between BoRR and EoRR; a
prefix already in a group starts the next one; a group holds at most `COALESCED_ROUTES`; with `group-updates false`
the stream is ExaBGP's own.
"""

from __future__ import annotations

import copy
import subprocess
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("exabgp")

from exabgp.bgp.message import Action, Update
from exabgp.bgp.message.direction import Direction
from exabgp.bgp.message.refresh import RouteRefresh
from exabgp.bgp.neighbor import Neighbor
from exabgp.configuration.configuration import Configuration
from exabgp.environment import getenv
from exabgp.logger import option
from exabgp.protocol.family import AFI, SAFI
from exabgp.reactor.api import API
from exabgp.rib.outgoing import OutgoingRIB
from exabgp.util import hexstring as exabgp_hexstring

from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker.exabgp_boot import (
    COALESCED_ROUTES,
    coalesce,
    coalesced_updates,
    hexstring,
    raw_update_echo,
    shallow_remove_self,
)
from bgpadv.speaker.exabgp_config import exabgp_argv
from bgpadv.speaker.protocol import UpdateEvent, parse_reply
from bgpadv_lab.exabgp_packing import Packer


@pytest.fixture(scope="module")
def api() -> API:
    option.setup(getenv())  # ExaBGP's parser logs through its own logger
    return API(Configuration([]))


def test_each_peer_gets_its_own_copy_of_a_bulk_announcement_equal_to_exabgps_deepcopy(api: API) -> None:
    line = "announce attributes next-hop 10.0.0.11 community [64512:100] nlri 10.64.0.1/32 10.64.0.2/32"
    changes = api.api_attributes(line, [])
    remove_self = shallow_remove_self(Neighbor.remove_self)
    tor_a, tor_b = Neighbor(), Neighbor()

    for change in changes:
        change.nlri.action = Action.ANNOUNCE  # as ExaBGP's `announce` command sets it before handing it to the peers
        a, b = remove_self(tor_a, change), remove_self(tor_b, change)
        assert a == Neighbor.remove_self(tor_a, change) == b
        assert a is not change and a.nlri is not change.nlri and a.nlri is not b.nlri
        a.nlri.action = Action.WITHDRAW  # what ExaBGP's outgoing RIB does to the change it files as a withdrawal
        assert b.nlri.action == Action.ANNOUNCE == change.nlri.action
        assert a.index() == change.index()


def test_a_next_hop_self_route_still_takes_exabgps_own_per_peer_path(api: API) -> None:
    [change] = api.api_route("announce route 10.64.0.3/32 next-hop self")
    seen: list[object] = []

    def original(neighbor: Neighbor, c: object) -> object:
        seen.append(c)
        return "filled in per peer"

    assert shallow_remove_self(original)(Neighbor(), change) == "filled in per peer"
    assert seen == [change]


def test_exabgp_started_through_the_boot_file_is_the_installed_one_and_runs() -> None:
    argv = exabgp_argv("/nonexistent.conf")
    assert argv[1].endswith("exabgp_boot.py") and argv[2].endswith("exabgp")
    version = subprocess.run([*argv[:3], "version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and "ExaBGP" in version.stdout


class Processes:
    """ExaBGP's API processes as `Protocol.send` sees them: the encoders, `silence`, and what `write` was given."""

    def __init__(self, packer: Packer) -> None:
        self._encoder = {"bgpadv": packer.encoder()}
        self.silence = False
        self.lines: list[str] = []

    def write(self, process: str, line: str, neighbor: object = None) -> bool:
        assert process == "bgpadv"
        self.lines.append(line)
        return True


def protocol_for(packer: Packer) -> Any:
    """A `Protocol` of one established session: its neighbor, peer (stats, reactor's processes), connection."""
    written: list[bytes] = []

    def writer(raw: bytes) -> Any:
        written.append(raw)
        yield False

    peer = SimpleNamespace(
        neighbor=packer.neighbor, stats=Counter(), reactor=SimpleNamespace(processes=Processes(packer))
    )
    return SimpleNamespace(
        neighbor=packer.neighbor,
        peer=peer,
        negotiated=packer.negotiated,
        connection=SimpleNamespace(writer=writer),
        written=written,
    )


def exabgps_own_send(protocol: Any, raw: bytes) -> Any:
    protocol.peer.stats["exabgp's own path"] += 1
    yield False


def test_an_update_is_sent_unchanged_and_echoed_as_its_bytes_which_read_as_its_routes() -> None:
    packer = Packer()
    [message] = packer.pack("announce attributes next-hop 10.0.0.11 nlri 10.64.0.1/32 10.64.0.2/32")
    protocol = protocol_for(packer)

    assert list(raw_update_echo(exabgps_own_send)(protocol, message)) == [False]

    assert protocol.written == [message]
    assert protocol.peer.stats == {"send-update": 1}
    [line] = protocol.peer.reactor.processes.lines
    hop = Address.parse("10.0.0.11")
    assert parse_reply(line) == UpdateEvent(
        peer="10.0.0.1",
        direction="send",
        announced=((Prefix.parse("10.64.0.1/32"), hop), (Prefix.parse("10.64.0.2/32"), hop)),
        withdrawn=(),
    )


def test_nothing_is_echoed_while_exabgps_api_is_silenced_but_the_update_is_sent() -> None:
    packer = Packer()
    [message] = packer.pack("withdraw attributes nlri 10.64.0.1/32")
    protocol = protocol_for(packer)
    protocol.peer.reactor.processes.silence = True

    list(raw_update_echo(exabgps_own_send)(protocol, message))

    assert protocol.written == [message] and protocol.peer.reactor.processes.lines == []


@pytest.mark.parametrize(
    "packer, message",
    [
        (lambda: Packer(), lambda p: bytes.fromhex("ff" * 16 + "001304")),  # a KEEPALIVE
        (
            lambda: Packer(add_path=True),
            lambda p: p.pack("announce attributes next-hop 10.0.0.11 nlri 10.64.0.1/32")[0],
        ),
        (lambda: Packer(send="packets; parsed; update;"), lambda p: p.end_of_rib(4)),
        (lambda: Packer(send="consolidate; parsed; update;"), lambda p: p.end_of_rib(4)),
        (lambda: Packer(send="packets; update;"), lambda p: p.end_of_rib(4)),
    ],
    ids=["keepalive", "add-path", "packets", "consolidate", "no-parsed"],
)
def test_every_other_case_takes_exabgps_own_path(packer: Any, message: Any) -> None:
    made = packer()
    protocol = protocol_for(made)

    list(raw_update_echo(exabgps_own_send)(protocol, message(made)))

    assert protocol.peer.stats == {"exabgp's own path": 1} and protocol.written == []


@given(st.binary(max_size=64))
def test_the_hex_is_exabgps_hexstring_character_for_character(value: bytes) -> None:
    assert hexstring(value) == exabgp_hexstring(value)


# The merged update stream (`coalesced_updates`): ExaBGP's outgoing RIB and a ToR that applies what it reads.

UNICAST = frozenset({(AFI.ipv4, SAFI.unicast), (AFI.ipv6, SAFI.unicast)})
FAMILIES = {4: (AFI.ipv4, SAFI.unicast), 6: (AFI.ipv6, SAFI.unicast)}
HOPS = {4: ("10.0.0.11", "10.0.0.12"), 6: ("fd00::11", "fd00::12")}


def host(version: int, i: int) -> str:
    return f"10.64.0.{i}/32" if version == 4 else f"fd00:64::{i:x}/128"


class Tor:
    """What a peer makes of the messages: routes by prefix (next hop, attributes), stale marks kept from an
    enhanced refresh's BoRR (RFC 7313) and dropped at its EoRR."""

    def __init__(self, packer: Packer) -> None:
        self.negotiated = packer.negotiated
        self.routes: dict[bytes, tuple[str, str]] = {}
        self.stale: set[bytes] = set()
        self.messages = 0
        self.dropped_stale: list[set[bytes]] = []  # per read: the routes an EoRR removed (a gap on the ToR)

    def read(self, stream: Any) -> None:
        self.dropped_stale.append(set())
        for item in stream:
            if isinstance(item, RouteRefresh):
                family = (item.afi, item.safi)
                of_family = {k for k in self.routes if k.startswith(b"%02x%02x" % family)}
                if item.reserved == RouteRefresh.start:
                    self.stale |= of_family
                else:
                    for key in self.stale & of_family:
                        del self.routes[key]
                        self.dropped_stale[-1].add(key)
                    self.stale -= of_family
                continue
            for raw in item.messages(self.negotiated, True):
                self.messages += 1
                update = Update.unpack_message(raw[19:], Direction.IN, self.negotiated)
                for nlri in update.nlris:
                    key = b"%02x%02x" % nlri.family().afi_safi() + nlri.index()
                    self.stale.discard(key)
                    if nlri.action == Action.WITHDRAW:
                        self.routes.pop(key, None)
                    else:
                        self.routes[key] = (str(nlri.nexthop), update.attributes.index())


operation = st.one_of(
    st.tuples(st.just("announce"), st.sampled_from([4, 6]), st.integers(1, 12), st.integers(0, 1), st.integers(0, 2)),
    st.tuples(st.just("withdraw"), st.sampled_from([4, 6]), st.integers(1, 12), st.just(0), st.just(0)),
    st.tuples(st.just("refresh"), st.sampled_from([4, 6, 0]), st.just(0), st.booleans(), st.just(0)),
    st.tuples(st.just("send"), st.just(0), st.just(0), st.just(0), st.just(0)),
)


@given(st.lists(operation, max_size=60))
def test_the_merged_stream_leaves_the_peer_with_exactly_the_routes_of_exabgps_own_in_no_more_messages(
    api: API, operations: list[tuple[str, int, int, int, int]]
) -> None:
    packer = Packer()
    merged_updates = coalesced_updates(OutgoingRIB.updates, Update, UNICAST)
    ribs = OutgoingRIB(True, list(packer.negotiated.families)), OutgoingRIB(True, list(packer.negotiated.families))
    own, merged = Tor(packer), Tor(packer)

    def send() -> None:
        own.read(OutgoingRIB.updates(ribs[0], True))
        merged.read(merged_updates(ribs[1], True))

    for kind, version, i, hop, community in [*operations, ("send", 0, 0, 0, 0)]:
        if kind == "send":
            send()
            continue
        if kind == "refresh":
            for rib in ribs:
                rib.resend(bool(hop), FAMILIES.get(version))  # enhanced (BoRR/EoRR) or not
            continue
        line = f"announce attributes next-hop {HOPS[version][hop]} community [64512:{community}] nlri "
        for rib in ribs:
            [change] = api.api_attributes(line + host(version, i), [])
            change.nlri.action = Action.ANNOUNCE
            rib.add_to_rib(change) if kind == "announce" else rib.del_from_rib(change)

    assert merged.routes == own.routes
    assert merged.dropped_stale == own.dropped_stale
    assert merged.messages <= own.messages


def test_a_refresh_answer_and_ipv6_routes_go_out_packed_and_the_answer_stays_between_borr_and_eorr(api: API) -> None:
    packer = Packer()
    rib = OutgoingRIB(True, list(packer.negotiated.families))
    for version in (4, 6):
        hosts = " ".join(host(version, i) for i in range(1, 201))
        line = f"announce attributes next-hop {HOPS[version][0]} nlri {hosts}"
        for change in api.api_attributes(line, []):
            change.nlri.action = Action.ANNOUNCE
            rib.add_to_rib(change)
    updates = coalesced_updates(OutgoingRIB.updates, Update, UNICAST)

    load = list(updates(rib, True))
    rib.resend(True)
    answer = list(updates(rib, True))

    assert [len(u.nlris) for u in load] == [200, 200]  # ExaBGP's own: 200, then 200 of 1
    inside = answer[2:-2]
    assert all(isinstance(u, Update) for u in inside) and sorted(len(u.nlris) for u in inside) == [200, 200]
    for markers, reserved in ((answer[:2], RouteRefresh.start), (answer[-2:], RouteRefresh.end)):
        assert all(isinstance(m, RouteRefresh) and m.reserved == reserved for m in markers)
        assert {m.afi for m in markers} == {AFI.ipv4, AFI.ipv6}


def test_a_prefix_already_in_a_group_starts_the_next_so_its_withdrawal_and_announcement_keep_their_order(
    api: API,
) -> None:
    [announce] = api.api_attributes("announce attributes next-hop fd00::11 nlri fd00:64::1/128", [])
    announce.nlri.action = Action.ANNOUNCE
    withdraw = copy.deepcopy(announce)
    withdraw.nlri.action = Action.WITHDRAW  # one UPDATE of both would carry the withdrawal first
    stream = [Update([announce.nlri], announce.attributes), Update([withdraw.nlri], withdraw.attributes)]

    assert [[n.action for n in u.nlris] for u in coalesce(iter(stream), Update, UNICAST)] == [
        [Action.ANNOUNCE],
        [Action.WITHDRAW],
    ]


def test_a_group_holds_at_most_coalesced_routes_and_group_updates_false_is_exabgps_stream(api: API) -> None:
    nlris = [f"fd00:64::{i:x}/128" for i in range(1, COALESCED_ROUTES + 2)]
    [*changes] = api.api_attributes("announce attributes next-hop fd00::11 nlri " + " ".join(nlris), [])
    stream = [Update([c.nlri], c.attributes) for c in changes]

    assert [len(u.nlris) for u in coalesce(iter(stream), Update, UNICAST)] == [COALESCED_ROUTES, 1]
    assert list(coalesced_updates(lambda rib, grouped: iter(stream), Update, UNICAST)(None, False)) == stream
