"""The speaker's import hook (`Speaker.on_received`): what the speaker hands on to the egress import, and the
adj-rib-in dump it asks for at start-up when the hook is set (ExaBGP replays nothing received to a new API
process). Lines are ExaBGP 5.0's JSON, as in shared reference exabgp.md."""

from __future__ import annotations

import json

from bgpadv.config import PeerConfig
from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker import protocol
from bgpadv.speaker.protocol import NeighborList, PeerState, RibInDone, RibRoute, UpdateEvent
from bgpadv.speaker.session import Speaker

PEER = PeerConfig(address=Address.parse("10.0.0.1"), asn=64512)


def received(announce: dict | None = None, eor: dict | None = None) -> str:
    message = {"eor": eor} if eor else {"update": {"announce": announce or {}}}
    neighbor = {"address": {"local": "10.0.0.11", "peer": "10.0.0.1"}, "direction": "receive", "message": message}
    return json.dumps({"exabgp": "5.0.0", "type": "update", "neighbor": neighbor})


def rib_line(prefix: str) -> str:
    return json.dumps({"peer": {"address": "10.0.0.1"}, "route": {"nlri": {"prefix": prefix, "nexthop": "10.0.0.1"}}})


def test_with_the_hook_set_start_up_asks_for_the_adj_rib_in_after_the_adj_rib_out():
    written: list[str] = []
    speaker = Speaker([PEER], written.append, on_received=lambda reply, at: None)
    speaker.start()
    assert written == [protocol.SHOW_NEIGHBORS, protocol.SHOW_ADJ_RIB_OUT, protocol.SHOW_ADJ_RIB_IN]


def test_without_the_hook_nothing_received_is_asked_for():
    written: list[str] = []
    Speaker([PEER], written.append).start()
    assert written == [protocol.SHOW_NEIGHBORS, protocol.SHOW_ADJ_RIB_OUT]


def test_the_hook_gets_the_neighbor_list_the_adj_rib_in_its_end_and_every_received_update():
    got: list[object] = []
    speaker = Speaker([PEER], lambda line: None, on_received=lambda reply, at: got.append(reply))
    speaker.start()
    speaker.handle_line('[{"peer": {"address": "10.0.0.1"}, "fsm": "ESTABLISHED"}]', 1.0)
    speaker.handle_line("done", 1.0)
    speaker.handle_line(rib_line("192.168.100.10/32"), 1.0)  # adj-rib-OUT: the speaker's own, not handed on
    speaker.handle_line("done", 1.0)
    speaker.handle_line(rib_line("0.0.0.0/0"), 1.0)  # adj-rib-IN
    speaker.handle_line("done", 1.0)
    speaker.handle_line(received({"ipv4 unicast": {"10.0.0.1": [{"nlri": "198.51.100.0/24"}]}}), 2.0)
    speaker.handle_line(received(eor={"afi": "ipv4", "safi": "unicast"}), 2.0)
    speaker.handle_line(
        json.dumps(
            {"exabgp": "5.0.0", "type": "state", "neighbor": {"address": {"peer": "10.0.0.1"}, "state": "down"}}
        ),
        3.0,
    )
    tor = Address.parse("10.0.0.1")
    assert got == [
        NeighborList((("10.0.0.1", "up"),)),
        RibRoute("10.0.0.1", Prefix.parse("0.0.0.0/0"), tor),
        RibInDone(),
        UpdateEvent("10.0.0.1", "receive", ((Prefix.parse("198.51.100.0/24"), tor),), ()),
        UpdateEvent("10.0.0.1", "receive", (), (), ("ipv4 unicast",)),
        PeerState("10.0.0.1", "down", ""),
    ]
    assert speaker.ready
