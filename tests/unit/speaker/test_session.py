"""The speaker state machine (bgpadv.speaker.session.Speaker) against a fake ExaBGP.

Scope: diffing whole desired sets against ExaBGP's RIB, batching, flow control on acks, supersession, error
recovery, families per peer, start-up resync from ExaBGP's adj-rib-out and End-of-RIB. The fake ExaBGP parses
every command the speaker writes back into objects (so a line that did not come from objects fails), keeps its
own adj-rib-out, answers `done`/`error` on demand, and checks invariants: never more than max_inflight unanswered
commands, no line over 1 MiB, no `next-hop self` for an IPv6 prefix on an IPv4 session.
"""

from __future__ import annotations

import json
from collections import deque

import pytest
from netaddr import IPAddress, IPNetwork

from bgpadv.config import PeerConfig
from bgpadv.core.model import Attributes, ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker.session import Speaker

PEER4 = PeerConfig(address=Address.parse("10.0.0.1"), asn=64512)
PEER6 = PeerConfig(address=Address.parse("fd00::1"), asn=64512, families=("ipv6 unicast",))
W1, W2 = Address.parse("10.0.0.11"), Address.parse("10.0.0.12")
W1_6 = Address.parse("fd00::11")
VMI = ObjectRef("VirtualMachineInstance", "vm-a", "tenant-blue", "8d0b5a0e-0c0f-4b8e-9a55-2f1e6a9d3c11")


PLAIN = Attributes()


def host(prefix: str, next_hop: Address | None = W1, attributes: Attributes = PLAIN) -> Route:
    return Route(
        prefix=Prefix.parse(prefix, strict=False),
        next_hop=next_hop,
        network="tenant-blue",
        kind=RouteKind.HOST,
        source=VMI,
        node="worker-1" if next_hop == W1 else "worker-2",
        attributes=attributes,
    )


def hosts(n: int, next_hop: Address = W1, base: str = "10.128.0.0") -> list[Route]:
    start = Address.parse(base)
    return [host(f"{Address(start.version, start.value + i)}/32", next_hop) for i in range(n)]


class FakeExaBGP:
    """Records command lines, keeps an adj-rib-out per peer, answers on demand; asserts the invariants."""

    def __init__(self, max_inflight: int) -> None:
        self.max_inflight = max_inflight
        self.lines: list[str] = []
        self.unanswered: deque[str] = deque()
        self.rib: dict[str, dict[IPNetwork, tuple[str, str]]] = {}
        self.refuse: set[IPNetwork] = set()  # announcements carrying one of these prefixes get `error`
        self.speaker: Speaker | None = None

    def write(self, line: str) -> None:
        assert "\n" not in line
        assert len(line.encode()) < 1024 * 1024
        self.lines.append(line)
        self.unanswered.append(line)
        assert len(self.unanswered) <= self.max_inflight, "more unacknowledged commands than max_inflight"
        words = line.split()
        if words[0] == "neighbor":
            IPAddress(words[1])  # a parsed address, not a name
            assert words[1] == str(IPAddress(words[1]))
        if "nlri" in words:
            for p in words[words.index("nlri") + 1 :]:
                assert p == str(IPNetwork(p).cidr), f"non-canonical prefix {p!r}"
            if "next-hop" in words and words[words.index("next-hop") + 1] == "self":
                assert all(IPNetwork(p).version == 4 for p in words[words.index("nlri") + 1 :]) or (
                    IPAddress(words[1]).version == 6
                ), "next-hop self for IPv6 on an IPv4 session"

    def answer(self, n: int | None = None) -> int:
        """Answer the oldest `n` commands (all by default), applying them to the fake RIB."""
        assert self.speaker is not None
        count = 0
        while self.unanswered and (n is None or count < n):
            line = self.unanswered.popleft()
            ok = self._apply(line)
            count += 1
            self.speaker.handle_line("done" if ok else "error")
        return count

    def _apply(self, line: str) -> bool:
        words = line.split()
        if words[0] == "show":
            return True
        peer, op = words[1], words[2]
        if words[3] == "eor":
            return True
        rib = self.rib.setdefault(peer, {})
        prefixes = [IPNetwork(p) for p in words[words.index("nlri") + 1 :]]
        if op == "announce" and any(p in self.refuse for p in prefixes):
            return False
        attrs = " ".join(words[words.index("next-hop") + 2 : words.index("nlri")]) if op == "announce" else ""
        for p in prefixes:
            if op == "announce":
                rib[p] = (words[words.index("next-hop") + 1], attrs)
            else:
                rib.pop(p, None)
        return True

    def route_commands(self) -> list[str]:
        return [x for x in self.lines if " announce attributes " in x or " withdraw attributes " in x]


def started(peers=(PEER4,), max_inflight=100, chunk=1000, rib_dump: list[str] = ()) -> tuple[Speaker, FakeExaBGP]:
    fake = FakeExaBGP(max_inflight)
    speaker = Speaker(list(peers), fake.write, max_inflight=max_inflight, chunk_prefixes=chunk, local_asn=64513)
    fake.speaker = speaker
    speaker.start()
    assert fake.lines == ["show neighbor json", "show adj-rib out json"][:max_inflight]
    speaker.handle_line(json.dumps([{"state": "up", "peer": {"address": str(p.address)}} for p in peers]))
    for line in rib_dump:
        speaker.handle_line(line)
    fake.answer()
    assert speaker.ready
    fake.lines.clear()
    return speaker, fake


def rib_of(fake: FakeExaBGP, peer: PeerConfig = PEER4) -> dict[str, str]:
    return {str(p): nh for p, (nh, _) in fake.rib.get(str(peer.address), {}).items()}


DIFF_CASES = [
    pytest.param([], [host("10.128.0.5/32")], {"10.128.0.5/32": "10.0.0.11"}, 1, id="add"),
    pytest.param([host("10.128.0.5/32")], [], {}, 1, id="remove"),
    pytest.param([host("10.128.0.5/32")], [host("10.128.0.5/32", W2)], {"10.128.0.5/32": "10.0.0.12"}, 1, id="move"),
    pytest.param(
        [host("10.128.0.5/32")],
        [host("10.128.0.5/32", attributes=Attributes(local_preference=200))],
        {"10.128.0.5/32": "10.0.0.11"},
        1,
        id="attribute-change",
    ),
    pytest.param([host("10.128.0.5/32")], [host("10.128.0.5/32")], {"10.128.0.5/32": "10.0.0.11"}, 0, id="no-change"),
    pytest.param(
        [host("10.128.0.5/32"), host("10.128.0.6/32")],
        [host("10.128.0.6/32"), host("10.128.0.7/32", W2)],
        {"10.128.0.6/32": "10.0.0.11", "10.128.0.7/32": "10.0.0.12"},
        2,
        id="mixed",
    ),
]


@pytest.mark.parametrize(("before", "after", "expected_rib", "commands"), DIFF_CASES)
def test_second_desired_set_sends_only_the_difference(before, after, expected_rib, commands):
    speaker, fake = started()
    speaker.set_desired({PEER4.name: before})
    fake.answer()
    fake.lines.clear()
    speaker.set_desired({PEER4.name: after})
    fake.answer()
    assert rib_of(fake) == expected_rib
    assert len(fake.route_commands()) == commands
    assert {str(p): r.next_hop and str(r.next_hop) for p, r in speaker.advertised(PEER4.name).items()} == expected_rib


def test_next_hop_move_is_a_reannouncement_without_withdrawal():
    speaker, fake = started()
    speaker.set_desired({PEER4.name: hosts(3)})
    fake.answer()
    fake.lines.clear()
    speaker.set_desired({PEER4.name: hosts(3, W2)})
    assert fake.route_commands() == [
        "neighbor 10.0.0.1 announce attributes next-hop 10.0.0.12 origin igp nlri 10.128.0.0/32 10.128.0.1/32 "
        "10.128.0.2/32"
    ]


def test_empty_desired_set_withdraws_everything_but_no_set_withdraws_nothing():
    speaker, fake = started(rib_dump=[_rib_line("10.128.0.9/32")])
    assert fake.route_commands() == []  # nothing desired yet: the learned route stays
    speaker.set_desired({PEER4.name: []})
    assert fake.route_commands() == ["neighbor 10.0.0.1 withdraw attributes nlri 10.128.0.9/32"]


def test_bulk_commands_are_chunked_and_flow_controlled_by_acks():
    speaker, fake = started(max_inflight=3, chunk=100)
    speaker.set_desired({PEER4.name: hosts(1000)})
    assert len(fake.route_commands()) == 3 and speaker.inflight == 3 and speaker.queued == 7
    assert all(len(x.split(" nlri ")[1].split()) == 100 for x in fake.route_commands())
    fake.answer(1)
    assert len(fake.route_commands()) == 4
    fake.answer()
    assert len(rib_of(fake)) == 1000 and speaker.inflight == 0 and speaker.queued == 0
    assert len(speaker.advertised(PEER4.name)) == 1000


def test_newer_desired_set_supersedes_queued_work_and_diffs_against_inflight():
    speaker, fake = started(max_inflight=1, chunk=10)
    speaker.set_desired({PEER4.name: hosts(30)})  # 3 commands: 1 written, 2 queued
    assert speaker.inflight == 1 and speaker.queued == 2
    speaker.set_desired({PEER4.name: hosts(5)})  # keep the first 5 (in flight), drop the rest
    assert speaker.queued == 1  # the withdrawal of the 5 in-flight prefixes that are no longer desired
    fake.answer()
    fake.answer()
    assert sorted(rib_of(fake)) == sorted(str(r.prefix) for r in hosts(5))
    assert not any("10.128.0.10/32" in x for x in fake.lines)  # never announced: superseded while queued


def test_error_ack_marks_prefixes_unknown_and_the_next_diff_retries_them():
    speaker, fake = started()
    fake.refuse = {IPNetwork("10.128.0.1/32")}
    speaker.set_desired({PEER4.name: hosts(2)})
    fake.answer()
    assert speaker.errors == 1 and speaker.unknown(PEER4.name) == 2 and speaker.needs_retry
    fake.refuse = set()
    fake.lines.clear()
    speaker.resync()
    fake.answer()
    assert len(fake.route_commands()) == 1 and sorted(rib_of(fake)) == ["10.128.0.0/32", "10.128.0.1/32"]
    assert not speaker.needs_retry


def test_what_a_peer_cannot_carry_is_never_sent_and_never_dropped_silently(caplog: pytest.LogCaptureFixture):
    """Defence in depth: the guard refuses these routes (`family-not-carried`) before they reach the speaker; if one
    gets past it anyway, the speaker still does not send it, counts it in `skipped` and logs an error."""
    peer = PeerConfig(address=Address.parse("10.0.0.1"), asn=64512)  # IPv4 session, both families
    speaker, fake = started(peers=(peer, PEER6))
    routes = [
        host("10.128.0.5/32"),
        host("fd00:10::5/128", W1_6),
        host("fd00:10::6/128", W1),  # IPv4 next hop for an IPv6 prefix: dropped
        host("fd00:10::7/128", None),  # next-hop self for IPv6 on an IPv4 session: dropped
        host("10.128.0.8/32", None),
    ]
    speaker.set_desired({peer.name: routes, PEER6.name: routes})
    fake.answer()
    assert sorted(rib_of(fake, peer)) == ["10.128.0.5/32", "10.128.0.8/32", "fd00:10::5/128"]
    assert sorted(rib_of(fake, PEER6)) == ["fd00:10::5/128", "fd00:10::7/128"]  # IPv6 session: self is fine
    assert speaker.skipped == 2 + 3
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "cannot carry" in r.getMessage()]
    assert [(r.peer, r.routes) for r in errors] == [(peer.name, 2), (PEER6.name, 3)]


def test_held_names_every_prefix_exabgp_holds_unknown_ones_included_as_guard_keys():
    """The guard keeps these first when a peer goes over safety.maxRoutes: the keys must be the guard's."""
    speaker, fake = started(rib_dump=[_rib_line("10.128.0.99/32")])
    speaker.set_desired({PEER4.name: hosts(2)})
    fake.answer()
    expected = {Prefix.parse(p).key for p in ("10.128.0.0/32", "10.128.0.1/32")}
    assert set(speaker.held(PEER4.name)) == expected
    learned, _ = started(rib_dump=[_rib_line("10.128.0.99/32")])
    assert set(learned.held(PEER4.name)) == {Prefix.parse("10.128.0.99/32").key}


def test_routes_through_the_guard_reach_the_speaker_without_a_skip():
    """The guard, not the speaker, decides what a peer cannot carry: a refusal with a reason, nothing skipped."""
    from bgpadv.planner import checks
    from bgpadv.safety.guard import Guard
    from bgpadv_lab import objects as k8s

    config = k8s.config(peers=[{"address": "10.0.0.1", "asn": 64512}])  # IPv4 session, both families
    state = k8s.state(
        k8s.node("worker-1", "10.0.0.11", "fd00::11"),
        k8s.cudn_layer2("tenant-blue", ["10.128.0.0/24", "fd00:10::/64"], labels=k8s.ADVERTISED),
    )
    wanted = [host("10.128.0.5/32"), host("fd00:10::5/128", W1_6), host("fd00:10::/64", None)]
    guard = Guard(config)
    from bgpadv.planner import plan

    guarded = guard.check(wanted, guard.context(plan(state, config)))
    assert [(r.value, r.reason) for r in guarded.rejected] == [("fd00:10::/64", checks.FAMILY_NOT_CARRIED)]
    speaker, fake = started(peers=config.peers)
    speaker.set_desired(guarded.per_peer)
    fake.answer()
    assert sorted(rib_of(fake, config.peers[0])) == ["10.128.0.5/32", "fd00:10::5/128"]
    assert speaker.skipped == 0


def test_startup_learns_exabgp_rib_keeps_desired_routes_and_withdraws_stale_ones():
    dump = [_rib_line("10.128.0.0/32"), _rib_line("10.128.0.1/32"), _rib_line("10.128.0.99/32")]
    speaker, fake = started(rib_dump=dump)
    speaker.set_desired({PEER4.name: hosts(2)})
    assert fake.route_commands() == [
        # ExaBGP drops an identical re-announcement without an UPDATE; a changed one replaces the path
        "neighbor 10.0.0.1 announce attributes next-hop 10.0.0.11 origin igp nlri 10.128.0.0/32 10.128.0.1/32",
        "neighbor 10.0.0.1 withdraw attributes nlri 10.128.0.99/32",
    ]


def test_startup_discards_acks_of_a_previous_instance_until_the_neighbor_list():
    fake = FakeExaBGP(100)
    speaker = Speaker([PEER4], fake.write)
    fake.speaker = speaker
    speaker.start()
    speaker.handle_line("done")  # late answers to the dead controller's commands
    speaker.handle_line("error")
    assert speaker.inflight == 2 and not speaker.ready
    speaker.set_desired({PEER4.name: hosts(1)})
    assert len(fake.lines) == 2  # recorded only
    speaker.handle_line(json.dumps([{"state": "down", "peer": {"address": "10.0.0.1"}}]))
    fake.answer()
    assert speaker.ready and rib_of(fake) == {"10.128.0.0/32": "10.0.0.11"}
    assert speaker.peer_states == {"10.0.0.1": "down"}


def test_end_of_rib_after_first_full_sync_and_after_each_session_up():
    speaker, fake = started(max_inflight=2, chunk=10)
    speaker.set_desired({PEER4.name: hosts(30)})
    assert not any(" eor " in x for x in fake.lines)
    fake.answer()
    eors = [x for x in fake.lines if " eor " in x]
    assert eors == ["neighbor 10.0.0.1 announce eor ipv4 unicast", "neighbor 10.0.0.1 announce eor ipv6 unicast"]
    fake.answer()
    fake.lines.clear()
    speaker.handle_line(_state("10.0.0.1", "down"))
    speaker.handle_line(_state("10.0.0.1", "up"))
    assert fake.lines == eors
    assert speaker.peer_states["10.0.0.1"] == "up"


def test_refused_end_of_rib_is_not_a_route_error():
    speaker, fake = started()
    speaker.set_desired({PEER4.name: []})
    assert fake.lines[0].endswith("eor ipv4 unicast")
    speaker.handle_line("error")
    speaker.handle_line("error")
    assert speaker.errors == 0 and speaker.inflight == 0


def test_shutdown_stops_writing():
    speaker, fake = started(max_inflight=1, chunk=1)
    speaker.handle_line('{ "exabgp": "5.0.0", "time": 1.0, "type": "notification", "notification": "shutdown" }')
    speaker.set_desired({PEER4.name: hosts(2)})
    assert speaker.closed and fake.lines == [] and speaker.queued == 2


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def test_observer_sees_writes_acks_sent_updates_and_sync():
    rec = Recorder()
    fake = FakeExaBGP(100)
    speaker = Speaker([PEER4], fake.write, rec)
    fake.speaker = speaker
    speaker.start()
    speaker.handle_line("[]")
    fake.answer()
    speaker.set_desired({PEER4.name: hosts(2)})
    fake.answer(1)
    speaker.handle_line(_sent_update("10.0.0.1", ["10.128.0.0/32", "10.128.0.1/32"]), at=5.0)
    names = [c[0] for c in rec.calls]
    assert names == ["commands_written", "command_acked", "synced", "updates_sent"]
    assert [ch.route.prefix for ch in rec.calls[0][2]] == [Prefix.parse("10.128.0.0/32"), Prefix.parse("10.128.0.1/32")]
    sent = [Prefix.parse("10.128.0.0/32"), Prefix.parse("10.128.0.1/32")]
    assert rec.calls[3] == ("updates_sent", "10.0.0.1", sent, [], 5.0)


def _rib_line(prefix: str, peer: str = "10.0.0.1", next_hop: str = "10.0.0.11") -> str:
    nlri = {"prefix": prefix, "nexthop": next_hop, "family": {"afi": "ipv4", "safi": "unicast"}}
    return json.dumps({"peer": {"address": peer}, "route": {"nlri": nlri, "attributes": {"origin": "igp"}}})


def _state(peer: str, state: str) -> str:
    return (
        '{ "exabgp": "5.0.0", "time": 1.0, "host" : "w1", "pid" : 1, "ppid" : 1, "counter": 1, "type": "state", '
        f'"neighbor": {{ "address": {{ "local": "10.0.0.11", "peer": "{peer}" }}, "asn": {{ "local": 64513, '
        f'"peer": 64512 }} , "state": "{state}" }} }}'
    )


def _sent_update(peer: str, prefixes: list[str]) -> str:
    update = {
        "attribute": {"origin": "igp"},
        "announce": {"ipv4 unicast": {"10.0.0.11": [{"nlri": p} for p in prefixes]}},
    }
    return json.dumps(
        {
            "exabgp": "5.0.0",
            "type": "update",
            "neighbor": {
                "address": {"local": "10.0.0.11", "peer": peer},
                "direction": "send",
                "message": {"update": update},
            },
        }
    )


def test_self_routes_use_the_configured_self_address_of_their_family():
    """nextHopSelf: an IPv6 `self` route over an IPv4 session goes out with the configured IPv6 address."""
    fake = FakeExaBGP(100)
    speaker = Speaker([PEER4], fake.write, local_asn=64513, self_addresses=[W1, W1_6])
    fake.speaker = speaker
    speaker.start()
    speaker.handle_line(json.dumps([{"state": "up", "peer": {"address": "10.0.0.1"}}]))
    fake.answer()
    fake.lines.clear()
    speaker.set_desired({PEER4.name: [host("fd00:10::/64", None), host("10.128.0.0/24", None)]})
    fake.answer()
    assert rib_of(fake) == {"10.128.0.0/24": "10.0.0.11", "fd00:10::/64": "fd00::11"}
    assert speaker.skipped == 0


def test_a_restarted_controller_reports_the_sessions_exabgp_already_has():
    """After a respawn no state event comes: the neighbor list at start-up is what tells readiness a peer is up."""
    rec = Recorder()
    fake = FakeExaBGP(100)
    speaker = Speaker([PEER4], fake.write, rec)
    fake.speaker = speaker
    speaker.start()
    speaker.handle_line(json.dumps([{"state": "up", "peer": {"address": "10.0.0.1"}}]), at=3.0)
    assert ("peer_state", "10.0.0.1", "up", 3.0) in rec.calls


# ---------------------------------------------------------------------------------------------------------------
# The fast paths of the diff: integer keys instead of netaddr hashing, the in-flight overlay, bulk rendering

PREFIXES = [
    "10.128.0.5/32",
    "10.128.0.5/24",  # host bits set: the same prefix as 10.128.0.0/24
    "0.0.0.0/0",
    "255.255.255.255/32",
    "fd00:10::5/128",
    "fd00:10::5/64",
    "::/0",
    "::ffff:10.1.2.3/128",  # IPv4-mapped: netaddr's IPv6 text form is kept
    "::1.2.3.4/128",
    "2001:db8:0:0:1::/80",
]


@pytest.mark.parametrize("text", PREFIXES)
def test_prefix_keys_and_rendering_agree_with_netaddr(text):
    # the key <-> prefix conversion and the protocol's prefix text themselves, on every prefix shape
    from bgpadv.speaker import protocol
    from bgpadv.speaker.session import _network

    n = IPNetwork(text)
    p = Prefix.parse(text, strict=False)
    assert p.key == (n.version, n.cidr.value, n.prefixlen)
    assert _network(p.key) == p and str(_network(p.key)) == str(n.cidr)
    assert protocol._prefix(p) == str(n.cidr)
    for other in PREFIXES:
        assert (p.key == Prefix.parse(other, strict=False).key) == (n == IPNetwork(other))


def test_bulk_lines_are_the_chunked_renderings():
    from bgpadv.speaker import protocol

    prefixes = [Prefix.parse(f"fd00:10::{i:x}/128") for i in range(2500)] + [Prefix.parse("10.1.2.3/24", strict=False)]
    for max_prefixes, max_bytes in ((1000, protocol.MAX_LINE_BYTES), (7, 1024 + 200), (1, 1024 + 1)):
        runs = list(protocol.chunks(prefixes, max_prefixes, max_bytes))
        attrs = Attributes(local_preference=200, communities=("65000:1",))
        assert list(protocol.announce_lines(PEER4.address, W1_6, attrs, prefixes, max_prefixes, max_bytes)) == [
            (len(r), protocol.render_announce(PEER4.address, W1_6, attrs, r)) for r in runs
        ]
        assert list(protocol.withdraw_lines(PEER4.address, prefixes, max_prefixes, max_bytes)) == [
            (len(r), protocol.render_withdraw(PEER4.address, r)) for r in runs
        ]


def test_equal_routes_built_anew_are_a_no_op_and_host_bits_do_not_matter():
    speaker, fake = started()
    speaker.set_desired({PEER4.name: [host("10.128.0.5/24"), host("10.128.1.7/32")]})
    fake.answer()
    assert rib_of(fake) == {"10.128.0.0/24": "10.0.0.11", "10.128.1.7/32": "10.0.0.11"}
    assert sorted(str(p) for p in speaker.advertised(PEER4.name)) == ["10.128.0.0/24", "10.128.1.7/32"]
    fake.lines.clear()
    again = [host("10.128.0.0/24", Address.parse("10.0.0.11")), host("10.128.1.7/32", Address.parse("10.0.0.11"))]
    speaker.set_desired({PEER4.name: again})  # equal but distinct objects, canonical this time
    assert fake.route_commands() == []
    speaker.set_desired({PEER4.name: [again[1]]})
    assert fake.route_commands() == ["neighbor 10.0.0.1 withdraw attributes nlri 10.128.0.0/24"]


def test_diff_against_in_flight_withdrawals_and_announcements():
    """A prefix whose withdrawal is in flight is announced again if desired; an in-flight announcement that is no
    longer desired is withdrawn; in-flight work that is still right is not repeated."""
    speaker, fake = started(max_inflight=10, chunk=2)
    speaker.set_desired({PEER4.name: hosts(4)})
    fake.answer()
    fake.lines.clear()
    speaker.set_desired({PEER4.name: [*hosts(2), host("10.128.9.9/32")]})  # withdraw .2 .3, announce 9.9
    assert speaker.inflight == 2
    speaker.set_desired({PEER4.name: hosts(3)})  # .2 back, 9.9 gone again, .3 stays withdrawn
    assert fake.route_commands()[2:] == [
        "neighbor 10.0.0.1 announce attributes next-hop 10.0.0.11 origin igp nlri 10.128.0.2/32",
        "neighbor 10.0.0.1 withdraw attributes nlri 10.128.9.9/32",
    ]
    fake.answer()
    assert sorted(rib_of(fake)) == ["10.128.0.0/32", "10.128.0.1/32", "10.128.0.2/32"]
    assert sorted(str(p) for p in speaker.advertised(PEER4.name)) == sorted(rib_of(fake))
    fake.lines.clear()
    speaker.set_desired({PEER4.name: hosts(3)})
    assert fake.route_commands() == []


def test_unknown_prefixes_after_an_error_are_withdrawn_with_their_canonical_text():
    speaker, fake = started()
    speaker.set_desired({PEER4.name: [host("10.128.0.5/24")]})
    speaker.handle_line("error")  # the announcement was refused: the prefix is unknown
    assert speaker.unknown(PEER4.name) == 1
    fake.unanswered.clear()
    fake.lines.clear()
    speaker.set_desired({PEER4.name: []})
    assert fake.route_commands() == ["neighbor 10.0.0.1 withdraw attributes nlri 10.128.0.0/24"]


def test_set_peers_alone_adds_and_removes_peers_and_leaves_the_kept_sessions_untouched():
    tor_b = PeerConfig(address=Address.parse("10.0.0.2"), asn=64512)
    tor_c = PeerConfig(address=Address.parse("10.0.0.3"), asn=64512)
    speaker, fake = started(peers=(PEER4, tor_b))
    routes = hosts(3)
    speaker.set_desired({PEER4.name: routes, tor_b.name: routes})
    fake.answer()
    fake.lines.clear()
    speaker.set_peers([PEER4, tor_c])  # ExaBGP was reloaded with these neighbors: tor_b leaves, tor_c comes
    assert fake.lines == [], "a peer move itself writes nothing: no withdrawal, no re-announcement"
    assert len(speaker.held(PEER4.name)) == 3 and not speaker.held(tor_b.name) and not speaker.held(tor_c.name)
    speaker.set_desired({PEER4.name: routes, tor_c.name: routes})
    fake.answer()
    assert {x.split()[1] for x in fake.route_commands()} == {"10.0.0.3"}, "the kept peer gets nothing again"
    assert rib_of(fake, tor_c) == rib_of(fake, PEER4) and len(rib_of(fake, PEER4)) == 3
    sent = len(fake.route_commands())
    speaker.set_peers([PEER4, tor_c])  # unchanged: nothing moves
    speaker.set_desired({PEER4.name: routes, tor_c.name: routes})
    assert len(fake.route_commands()) == sent
