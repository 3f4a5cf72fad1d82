"""IPv4 routes toward an interface peer only when its session negotiated Extended Next Hop (RFC 8950).

Scope: ExaBGP's `negotiated` message (`api { negotiated; }`, rendered for interface peers only) read into what the
session may carry; the speaker's per-session fact (unknown until told, reset by the session going down, inherited by
a restarted controller from the IPv4 routes ExaBGP still holds for the peer); the guard refusing an interface peer's
IPv4 routes `extended-next-hop-not-negotiated` while its session lacks the capability, on the whole and the delta
path, IPv6 routes and other peers untouched; the controller withdrawing and announcing them again as the sessions
change; /status and `bgpadv status` showing what the session negotiated. The lab proves it at a real FRR ToR
(tests/lab/test_unnumbered_enh.py).
"""

from __future__ import annotations

import json
import time

import pytest

from bgpadv.config import parse
from bgpadv.core import resources
from bgpadv.planner import checks, plan
from bgpadv.runtime import unnumbered
from bgpadv.runtime.controller import Controller, LoopSettings, _ExaBGPLine, watched_resources
from bgpadv.safety.guard import Guard, GuardContext
from bgpadv.sources.reflector import WatchEvent
from bgpadv.speaker import protocol
from bgpadv.speaker.exabgp_config import render_exabgp_config
from bgpadv.speaker.session import Speaker
from bgpadv_lab import objects as k8s
from tests.doubles import RecordingObserver, RecordingSources, RecordingSpeaker

TOR, NODE_LL, NUMBERED = "fe80::c80b:afff:fedd:a103", "fe80::6838:9bff:feb7:e120", "10.0.0.1"
ARGV = ["/usr/bin/python3", "-m", "bgpadv", "controller", "--config", "/etc/bgpadv/bgpadv.yaml"]
NETWORKS = {"selector": {"matchLabels": dict(k8s.ADVERTISED)}}
VM_V4, VM_V6 = "192.168.100.10", "fd10:100::10"
OBJECTS = [
    (resources.NODE, k8s.node("worker-1", "10.0.0.11", "fd00::11")),
    (resources.CUDN, k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED)),
    (
        resources.IPAM_CLAIM,
        k8s.ipam_claim(k8s.VM_NAMESPACE, "vm-a.default", "vm-a", "cluster_udn_vmnet-a", [f"{VM_V4}/24", f"{VM_V6}/64"]),
    ),
    (resources.VMI, k8s.vmi(k8s.VM_NAMESPACE, "vm-a", "worker-1", interfaces=[k8s.interface([VM_V4, VM_V6])])),
]
STATE = k8s.state([obj for _, obj in OBJECTS])


class Links:
    """worker-1's eth1: its own link-local address and the ToR answering on it."""

    def link_local(self, interface: str):
        return protocol.Address.parse(NODE_LL)

    def router(self, interface: str, timeout: float):
        return protocol.Address.parse(TOR)


def config(*, numbered: bool = True):
    peers = [{"interface": "eth1", "asn": 64512}]
    if numbered:
        peers.append({"address": NUMBERED, "asn": 64512, "families": ["ipv4 unicast"]})
    raw = {"localASN": 64513, "peers": peers, "networks": NETWORKS, "nodeName": "worker-1"}
    return unnumbered.with_links(parse(raw, environ={}), Links())


def negotiated(peer: str = TOR, nexthop: object = ("ipv4 unicast ipv6",)) -> str:
    """ExaBGP 5.0.15's message, as it wrote it to bgpadv against FRR 8.4 (the lab, captured)."""
    nh = list(nexthop) if isinstance(nexthop, tuple) else nexthop
    return json.dumps(
        {
            "exabgp": "5.0.0",
            "time": 1796603563.6,
            "host": "vm",
            "pid": 3997,
            "ppid": 3989,
            "counter": 2,
            "type": "negotiated",
            "neighbor": {
                "address": {"local": NODE_LL, "peer": peer},
                "asn": {"local": 64513, "peer": 64512},
                "router-id": "10.0.0.11",
                "negotiated": {
                    "message_size": 65535,
                    "hold_time": 9,
                    "asn4": True,
                    "multisession": False,
                    "operational": False,
                    "refresh": "enhanced",
                    "families": ["ipv4 unicast", "ipv6 unicast"],
                    "nexthop": nh,
                    "add_path": {"send": [], "receive": []},
                },
            },
        }
    )


def state_line(state: str, peer: str = TOR) -> str:
    return json.dumps({"exabgp": "5.0.0", "type": "state", "neighbor": {"address": {"peer": peer}, "state": state}})


# -- what ExaBGP says -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nexthop", "carried"),
    [
        pytest.param(("ipv4 unicast ipv6",), True, id="capability-negotiated"),
        pytest.param((), False, id="tor-did-not-advertise-it"),
        pytest.param(("ipv6 unicast ipv4",), False, id="another-entry-only"),
    ],
)
def test_the_negotiated_message_says_whether_ipv4_may_go_with_ipv6_next_hops(nexthop, carried):
    reply = protocol.parse_reply(negotiated(nexthop=nexthop))
    assert reply == protocol.Negotiated(TOR, nexthop)
    assert reply.extended_next_hop is carried


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(negotiated(nexthop="ipv4 unicast ipv6"), id="nexthop-not-a-list"),
        pytest.param(negotiated(nexthop=[4]), id="nexthop-not-strings"),
        pytest.param(negotiated(peer="not-an-address"), id="no-peer"),
        pytest.param('{"exabgp": "5.0.0", "type": "negotiated", "neighbor": {}}', id="empty"),
    ],
)
def test_a_negotiated_message_of_another_shape_is_not_taken_for_the_capability(line):
    assert isinstance(protocol.parse_reply(line), protocol.Other)


def neighbor_api(text: str, address: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    start = lines.index(f"neighbor {address} {{")
    api = lines.index("api {", start)
    return lines[api : lines.index("}", api)]


def test_only_an_interface_peer_asks_exabgp_what_its_session_negotiated():
    text = render_exabgp_config(config(), ARGV)
    assert "negotiated;" in neighbor_api(text, TOR)
    assert "negotiated;" not in neighbor_api(text, NUMBERED)


# -- the speaker's fact per session -----------------------------------------------------------------------------------


def ready_speaker(*dump: str) -> tuple[Speaker, list[str]]:
    """A speaker past its start-up: `dump` are the lines of ExaBGP's answers to `show neighbor json` and `show
    adj-rib out json` (before their two `done`)."""
    lines: list[str] = []
    speaker = Speaker.from_config(config(), lines.append)
    speaker.start()
    neighbors, *rib = dump or ("[]",)
    for reply in (neighbors, "done", *rib, "done"):
        speaker.handle_line(reply)
    assert speaker.ready
    return speaker, lines


def test_an_interface_peer_is_without_the_capability_until_its_session_negotiates_it_and_again_once_down():
    speaker, _ = ready_speaker()
    assert speaker.no_extended_next_hop == {TOR}, "no session yet: nothing IPv4 (the numbered peer never listed)"
    speaker.handle_line(negotiated())
    assert speaker.no_extended_next_hop == set()
    speaker.handle_line(state_line("up"))
    assert speaker.no_extended_next_hop == set()
    speaker.handle_line(state_line("down"))
    assert speaker.no_extended_next_hop == {TOR}, "the next session says again"
    speaker.handle_line(negotiated(nexthop=()))
    speaker.handle_line(state_line("up"))
    assert speaker.no_extended_next_hop == {TOR}


@pytest.mark.parametrize(
    ("lines", "shown", "note"),
    [
        pytest.param([], None, False, id="no-session-yet-unknown"),
        pytest.param([negotiated()], True, False, id="negotiated"),
        pytest.param([negotiated(nexthop=())], False, True, id="negotiated-without-it"),
    ],
)
def test_status_shows_what_the_interface_peers_session_negotiated(lines, shown, note):
    from bgpadv.commands.status import render_sessions
    from bgpadv.commands.statusdoc import PEER
    from bgpadv.observe.sessionstate import session_fields
    from bgpadv.runtime.wiring import session_info

    speaker, _ = ready_speaker()
    for line in lines:
        speaker.handle_line(line)
    status = {"peers": {TOR: {"state": "up"}, NUMBERED: {"state": "up"}}}
    session_fields(status, session_info(config(), speaker.extended_next_hop))
    peers = {name: PEER(peer, name) for name, peer in status["peers"].items()}
    assert peers[TOR]["interface"] == "eth1" and peers[TOR]["extended_next_hop"] is shown
    assert "extended_next_hop" not in peers[NUMBERED], "a numbered session carries IPv4 with IPv4 next hops"
    notes = [line for line in render_sessions(peers) if "Extended Next Hop" in line]
    assert notes == ([f"  {TOR} negotiated no Extended Next Hop: IPv4 routes are not sent to it"] if note else [])


def rib_line(prefix: str) -> str:
    nlri = {"prefix": prefix, "nexthop": NODE_LL}
    return json.dumps({"peer": {"address": TOR}, "route": {"nlri": nlri}})


@pytest.mark.parametrize(
    ("state", "rib", "without"),
    [
        pytest.param("up", [f"{VM_V4}/32", f"{VM_V6}/128"], set(), id="ipv4-held-so-negotiated"),
        pytest.param("up", [f"{VM_V6}/128"], {TOR}, id="no-ipv4-held-so-unknown"),
        pytest.param("down", [f"{VM_V4}/32"], {TOR}, id="session-down"),
    ],
)
def test_a_restarted_controller_infers_the_capability_from_what_exabgp_holds(state, rib, without):
    """ExaBGP says `negotiated` once per session, to the controller running then; its predecessor sent IPv4 to an
    interface peer only with the capability."""
    neighbors = json.dumps([{"peer": {"address": TOR}, "fsm": "ESTABLISHED" if state == "up" else "IDLE"}])
    speaker, _ = ready_speaker(neighbors, *(rib_line(p) for p in rib))
    assert speaker.no_extended_next_hop == without


# -- the guard --------------------------------------------------------------------------------------------------------


def test_the_guard_refuses_the_interface_peers_ipv4_routes_only():
    c = config()
    ctx = GuardContext.from_plan_context(plan(STATE, c).context, c, frozenset({TOR}))
    guarded = Guard(c).check(plan(STATE, c).routes, ctx)
    got = {peer: sorted(str(r.prefix) for r in routes) for peer, routes in guarded.per_peer.items()}
    assert got[TOR] == ["fd10:100::/64", f"{VM_V6}/128"]
    assert f"{VM_V4}/32" in got[NUMBERED], "the numbered peer keeps them"
    refused = {(r.value, r.reason) for r in guarded.rejected}
    reason = checks.EXTENDED_NEXT_HOP_NOT_NEGOTIATED
    assert refused == {("192.168.100.0/24", reason), (f"{VM_V4}/32", reason)}
    assert all(TOR in r.message and "Extended Next Hop" in r.message for r in guarded.rejected)


def test_with_the_capability_negotiated_the_guard_refuses_nothing():
    c = config()
    guarded = Guard(c).check(plan(STATE, c).routes, GuardContext.from_plan_context(plan(STATE, c).context, c))
    assert guarded.rejected == ()
    assert f"{VM_V4}/32" in {str(r.prefix) for r in guarded.per_peer[TOR]}


def test_a_numbered_peer_named_without_the_capability_keeps_its_ipv4_routes():
    """Only an interface peer's next hops are IPv6 for IPv4 prefixes: the rule is theirs alone."""
    c = config()
    ctx = GuardContext.from_plan_context(plan(STATE, c).context, c, frozenset({NUMBERED}))
    guarded = Guard(c).check(plan(STATE, c).routes, ctx)
    assert guarded.rejected == () and f"{VM_V4}/32" in {str(r.prefix) for r in guarded.per_peer[NUMBERED]}


# -- the controller ---------------------------------------------------------------------------------------------------


def controller() -> Controller:
    c = Controller(
        config(),
        speaker=RecordingSpeaker(),
        sources=RecordingSources(),
        observer=RecordingObserver(),
        settings=LoopSettings(coalesce_window=0.0),
    )
    now = time.monotonic()
    for res, obj in OBJECTS:
        c.queue.put(WatchEvent(res, "ADDED", obj, now, None))
    for res in watched_resources(c.config):
        c.queue.put(WatchEvent(res, "SYNCED", None, now, None))
    return c


def handed(c: Controller, peer: str) -> set[str]:
    assert isinstance(c.speaker, RecordingSpeaker)
    return {str(r.prefix) for r in c.speaker.desired[-1].get(peer, ())}


def test_the_controller_withdraws_and_announces_the_ipv4_routes_as_the_session_changes():
    c = controller()
    speaker = c.speaker
    assert isinstance(speaker, RecordingSpeaker) and isinstance(c.observer, RecordingObserver)
    speaker.no_extended_next_hop = frozenset({TOR})  # the speaker's start: no session yet
    c.guard.no_extended_next_hop = speaker.no_extended_next_hop
    assert c.step()
    assert handed(c, TOR) == {"fd10:100::/64", f"{VM_V6}/128"}
    reasons = {r.reason for r in c.observer.plans[-1].rejected}
    assert reasons == {checks.EXTENDED_NEXT_HOP_NOT_NEGOTIATED}, "counted as the guard's refusals are"

    speaker.no_extended_next_hop = frozenset()  # ExaBGP: negotiated with it
    c.queue.put(_ExaBGPLine(negotiated(), time.monotonic()))
    assert c.step()
    assert {f"{VM_V4}/32", "192.168.100.0/24"} <= handed(c, TOR)
    assert c.observer.plans[-1].rejected == ()

    speaker.no_extended_next_hop = frozenset({TOR})  # the session went down, or came back without it
    c.queue.put(_ExaBGPLine(state_line("down"), time.monotonic()))
    assert c.step()
    assert handed(c, TOR) == {"fd10:100::/64", f"{VM_V6}/128"}
    assert f"{VM_V4}/32" in handed(c, NUMBERED), "the numbered peer untouched"


def test_a_vm_added_while_the_capability_is_missing_is_refused_on_the_delta_path():
    c = controller()
    speaker = c.speaker
    assert isinstance(speaker, RecordingSpeaker) and isinstance(c.observer, RecordingObserver)
    speaker.no_extended_next_hop = c.guard.no_extended_next_hop = frozenset({TOR})
    assert c.step()
    deltas = speaker.deltas
    claim = k8s.ipam_claim(k8s.VM_NAMESPACE, "vm-b.default", "vm-b", "cluster_udn_vmnet-a", ["192.168.100.11/24"])
    vmi = k8s.vmi(k8s.VM_NAMESPACE, "vm-b", "worker-1", interfaces=[k8s.interface(["192.168.100.11"])])
    c.queue.put(WatchEvent(resources.IPAM_CLAIM, "ADDED", claim, time.monotonic(), None))
    c.queue.put(WatchEvent(resources.VMI, "ADDED", vmi, time.monotonic(), None))
    assert c.step()
    assert speaker.deltas > deltas, "handed as a change"
    assert "192.168.100.11/32" not in handed(c, TOR) and "192.168.100.11/32" in handed(c, NUMBERED)
    refused = {(r.value, r.reason) for r in c.observer.plans[-1].rejected}
    assert ("192.168.100.11/32", checks.EXTENDED_NEXT_HOP_NOT_NEGOTIATED) in refused


def test_the_ipv4_routes_are_queued_ahead_of_the_end_of_rib_of_the_session_that_negotiated_it():
    """ExaBGP says `negotiated` before `up`, and `up` makes the speaker send End-of-RIB: the IPv4 routes go first, or a
    ToR under graceful restart would drop them as stale at the End-of-RIB."""
    c_config = config()
    lines: list[str] = []
    speaker = Speaker.from_config(c_config, lines.append)
    c = Controller(
        c_config,
        speaker=speaker,
        sources=RecordingSources(),
        observer=RecordingObserver(),
        settings=LoopSettings(coalesce_window=0.0),
    )
    speaker.start()
    now = time.monotonic()
    for reply in ("[]", "done", "done"):  # show neighbor json, show adj-rib out json
        c.queue.put(_ExaBGPLine(reply, now))
    for res, obj in OBJECTS:
        c.queue.put(WatchEvent(res, "ADDED", obj, now, None))
    for res in watched_resources(c_config):
        c.queue.put(WatchEvent(res, "SYNCED", None, now, None))
    assert c.step()
    while speaker.inflight:  # the first desired set acknowledged: its End-of-RIB goes too
        c.queue.put(_ExaBGPLine("done", time.monotonic()))
        assert c.step()
    assert not [line for line in lines if line.startswith(f"neighbor {TOR} announce") and f" {VM_V4}/32" in line]
    lines.clear()
    c.queue.put(_ExaBGPLine(negotiated(), time.monotonic()))
    c.queue.put(_ExaBGPLine(state_line("up"), time.monotonic()))
    assert c.step()
    to_tor = [line for line in lines if line.startswith(f"neighbor {TOR} ")]
    ipv4 = next(i for i, line in enumerate(to_tor) if f" {VM_V4}/32" in line and " announce " in line)
    assert f"next-hop {NODE_LL} " in to_tor[ipv4]
    assert ipv4 < to_tor.index(f"neighbor {TOR} announce eor ipv4 unicast")
