"""Graceful shutdown in the speaker and the controller loop (RFC 8326 GRACEFUL_SHUTDOWN, 65535:0).

Rules: `Speaker.drain()` re-announces every advertised route with 65535:0 added to its communities (an attribute
change, so one announcement per route and no withdrawal); routes desired during the drain carry it from the start;
a route no longer desired is still withdrawn; a drain asked before the start-up resync applies once it is done;
a second drain sends nothing. The controller loop hands a drain request (SIGUSR1, queued) to the speaker.
"""

from __future__ import annotations

import json

from bgpadv.config import PeerConfig, parse
from bgpadv.core.model import Attributes, ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.runtime.controller import Controller
from bgpadv.speaker.session import GRACEFUL_SHUTDOWN, Speaker

PEER = PeerConfig(address=Address.parse("10.0.0.1"), asn=64512)
W1 = Address.parse("10.0.0.11")
VMI = ObjectRef("VirtualMachineInstance", "vm-a", "tenant-blue")
TAGGED = Attributes(communities=("64513:100",))


def route(prefix: str, attributes: Attributes = Attributes()) -> Route:  # noqa: B008 - frozen value
    return Route(Prefix.parse(prefix), W1, "tenant-blue", RouteKind.HOST, VMI, "worker-1", attributes)


class Exa:
    """Records the speaker's lines and answers `done` to each on demand."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.unanswered = 0
        self.speaker = Speaker([PEER], self.write, local_asn=64513)

    def write(self, line: str) -> None:
        self.lines.append(line)
        self.unanswered += 1

    def answer(self) -> None:
        while self.unanswered:
            self.unanswered -= 1
            self.speaker.handle_line("done")

    def start(self) -> Speaker:
        self.speaker.start()
        self.speaker.handle_line(json.dumps([{"state": "up", "peer": {"address": "10.0.0.1"}}]))
        self.answer()
        return self.speaker

    def take(self) -> list[str]:
        """The route commands written since the last take (End-of-RIB left out)."""
        out = [x for x in self.lines if " eor " not in x and not x.startswith("show ")]
        self.lines.clear()
        return out


def test_drain_re_announces_every_route_with_graceful_shutdown_added_and_withdraws_nothing():
    exa = Exa()
    speaker = exa.start()
    speaker.set_desired({PEER.name: [route("10.128.0.1/32"), route("10.128.0.2/32"), route("10.128.0.3/32", TAGGED)]})
    exa.answer()
    exa.take()
    speaker.drain()
    assert exa.take() == [
        "neighbor 10.0.0.1 announce attributes next-hop 10.0.0.11 origin igp community [ 64513:100 65535:0 ] "
        "nlri 10.128.0.3/32",
        "neighbor 10.0.0.1 announce attributes next-hop 10.0.0.11 origin igp community [ 65535:0 ] "
        "nlri 10.128.0.1/32 10.128.0.2/32",
    ]
    exa.answer()
    held = speaker.advertised(PEER.name)
    assert {str(p): r.attributes.communities for p, r in held.items()} == {
        "10.128.0.1/32": (GRACEFUL_SHUTDOWN,),
        "10.128.0.2/32": (GRACEFUL_SHUTDOWN,),
        "10.128.0.3/32": ("64513:100", GRACEFUL_SHUTDOWN),
    }


def test_routes_desired_during_the_drain_carry_graceful_shutdown_and_removed_ones_are_withdrawn():
    exa = Exa()
    speaker = exa.start()
    speaker.set_desired({PEER.name: [route("10.128.0.1/32"), route("10.128.0.2/32")]})
    exa.answer()
    speaker.drain()
    exa.answer()
    exa.take()
    speaker.set_desired({PEER.name: [route("10.128.0.1/32"), route("10.128.0.9/32")]})
    assert exa.take() == [
        "neighbor 10.0.0.1 announce attributes next-hop 10.0.0.11 origin igp community [ 65535:0 ] nlri 10.128.0.9/32",
        "neighbor 10.0.0.1 withdraw attributes nlri 10.128.0.2/32",
    ]


def test_a_drain_asked_before_the_start_up_resync_applies_once_it_is_done():
    exa = Exa()
    exa.speaker.drain()
    speaker = exa.start()
    speaker.set_desired({PEER.name: [route("10.128.0.1/32")]})
    assert exa.take() == [
        "neighbor 10.0.0.1 announce attributes next-hop 10.0.0.11 origin igp community [ 65535:0 ] nlri 10.128.0.1/32"
    ]


def test_a_route_already_carrying_graceful_shutdown_is_not_changed_and_a_second_drain_sends_nothing():
    exa = Exa()
    speaker = exa.start()
    marked = Attributes(communities=(GRACEFUL_SHUTDOWN,))
    speaker.set_desired({PEER.name: [route("10.128.0.1/32", marked)]})
    exa.answer()
    exa.take()
    speaker.drain()
    speaker.drain()
    assert exa.take() == []


def test_a_drain_request_reaches_the_speaker_through_the_loop():
    from tests.doubles import RecordingSources, RecordingSpeaker

    config = parse({"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]})
    speaker = RecordingSpeaker()
    controller = Controller(config, speaker=speaker, sources=RecordingSources())
    controller.request_drain()
    assert controller.step()
    assert speaker.drains == 1
