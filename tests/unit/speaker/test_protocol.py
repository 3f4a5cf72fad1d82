"""ExaBGP's text protocol (bgpadv.speaker.protocol): command lines rendered from objects, and replies parsed.

Rendered lines are compared with golden files in tests/unit/golden/protocol_*.txt; run with BGPADV_UPDATE_GOLDEN=1
to rewrite them after an intended change (and review the diff). The command syntax was checked against ExaBGP
5.0.15 (every golden line is accepted by it; see tests/lab/test_speaker_frr.py for the real thing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bgpadv.core.model import Attributes
from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker import protocol
from bgpadv.speaker.protocol import Ack, NeighborList, Notification, Other, PeerState, RibRoute, Shutdown, UpdateEvent

GOLDEN = Path(__file__).parent / "golden"
PEER = Address.parse("10.0.0.1")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / f"protocol_{name}.txt"
    if os.environ.get("BGPADV_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs (BGPADV_UPDATE_GOLDEN=1 rewrites it)"


def test_announcements_render_as_golden():
    lines = [
        protocol.render_announce(PEER, Address.parse("10.0.0.11"), Attributes(), [Prefix.parse("10.128.0.5/32")]),
        protocol.render_announce(
            PEER,
            Address.parse("10.0.0.12"),
            Attributes(
                local_preference=200,
                med=10,
                communities=("65000:100", "65000:200"),
                large_communities=("65000:1:2",),
                as_path_prepend=2,
            ),
            [Prefix.parse("10.128.0.5/32"), Prefix.parse("10.128.1.0/24")],
            local_asn=64513,
        ),
        protocol.render_announce(Address.parse("fd00::1"), None, Attributes(), [Prefix.parse("fd00:10::5/128")]),
        protocol.render_announce(PEER, Address.parse("fd00::11"), Attributes(), [Prefix.parse("fd00:10:0:0::5/128")]),
        protocol.render_announce(
            PEER, None, Attributes(med=0), [Prefix.parse("10.128.0.7/24", strict=False)]
        ),  # host bits dropped
        protocol.render_withdraw(PEER, [Prefix.parse("10.128.0.5/32"), Prefix.parse("fd00:10::5/128")]),
        protocol.render_eor(PEER, "ipv4 unicast"),
        protocol.render_eor(PEER, "ipv6 unicast"),
    ]
    check_golden("commands", "\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        pytest.param(lambda: protocol.render_announce(PEER, "10.0.0.11", Attributes(), []), ValueError, id="no-nlri"),
        pytest.param(
            lambda: protocol.render_announce(PEER, "10.0.0.11 med 5", Attributes(), [Prefix.parse("10.1.0.0/32")]),
            TypeError,
            id="string-next-hop",
        ),
        pytest.param(
            lambda: protocol.render_announce("10.0.0.1", None, Attributes(), [Prefix.parse("10.1.0.0/32")]),
            TypeError,
            id="string-peer",
        ),
        pytest.param(
            lambda: protocol.render_withdraw(PEER, ["10.1.0.0/32 next-hop 203.0.113.9"]), TypeError, id="string-nlri"
        ),
        pytest.param(
            lambda: protocol.render_announce(
                PEER, None, Attributes(communities=("65000:1 ] med [ 5",)), [Prefix.parse("10.1.0.0/32")]
            ),
            ValueError,
            id="community-injection",
        ),
        pytest.param(
            lambda: protocol.render_announce(PEER, None, Attributes(as_path_prepend=1), [Prefix.parse("10.1.0.0/32")]),
            ValueError,
            id="prepend-without-asn",
        ),
        pytest.param(lambda: protocol.render_eor(PEER, "ipv4 flow"), KeyError, id="unknown-family"),
    ],
)
def test_rendering_refuses_anything_but_parsed_objects(call, error):
    with pytest.raises(error):
        call()


def test_chunks_respect_count_and_byte_limits():
    prefixes = [Prefix.parse(f"fd00:10::{i:x}/128") for i in range(2500)]
    runs = list(protocol.chunks(prefixes, 1000))
    assert [len(r) for r in runs] == [1000, 1000, 500]
    small = list(protocol.chunks(prefixes, 1000, max_bytes=1024 + 200))
    assert all(sum(len(str(p)) + 1 for p in r) <= 200 for r in small)
    assert sum(len(r) for r in small) == 2500
    line = protocol.render_announce(PEER, Address.parse("fd00::11"), Attributes(), runs[0])
    assert len(line) < protocol.MAX_LINE_BYTES < 1024 * 1024


STATE_UP = (
    '{ "exabgp": "5.0.0", "time": 1796049598.16, "host" : "w1", "pid" : 5980, "ppid" : 5979, "counter": 9, '
    '"type": "state", "neighbor": { "address": { "local": "10.0.0.11", "peer": "10.0.0.1" }, "asn": { "local": 64513,'
    ' "peer": 64512 }, "router-id": "10.0.0.11" , "state": "up" } }'
)
STATE_DOWN = STATE_UP.replace('"state": "up"', '"state": "down", "reason": "closing connection"')
UPDATE_SENT = json.dumps(
    {
        "exabgp": "5.0.0",
        "type": "update",
        "neighbor": {
            "address": {"local": "10.0.0.11", "peer": "10.0.0.1"},
            "direction": "send",
            "message": {
                "update": {
                    "attribute": {"origin": "igp"},
                    "announce": {"ipv6 unicast": {"fd00::11": [{"nlri": "fd00:10::5/128"}]}},
                    "withdraw": {"ipv4 unicast": [{"nlri": "10.128.0.5/32"}]},
                }
            },
        },
    }
)
EOR_SENT = json.dumps(
    {
        "exabgp": "5.0.0",
        "type": "update",
        "neighbor": {
            "address": {"local": "10.0.0.11", "peer": "10.0.0.1"},
            "direction": "send",
            "message": {"eor": {"afi": "ipv4", "safi": "unicast"}},
        },
    }
)
NOTIFICATION = json.dumps(
    {
        "exabgp": "5.0.0",
        "type": "notification",
        "neighbor": {
            "address": {"local": "10.0.0.11", "peer": "10.0.0.1"},
            "direction": "receive",
            "notification": {"code": 6, "subcode": 2, "data": "", "message": "shut"},
        },
    }
)
PACKED_UPDATE_SENT = (  # what bgpadv's ExaBGP writes for an UPDATE it sends (exabgp_boot's echo)
    '{ "exabgp": "5.0.0", "time": 1796323689.488926, "host" : "vm", "pid" : 1664, "ppid" : 1661, "counter": 1, '
    '"type": "update", "neighbor": { "address": { "local": "10.0.0.11", "peer": "10.0.0.1" }, "asn": { "local": '
    '64512, "peer": 64513 }, "router-id": "10.0.0.11" , "direction": "send", "message": { "category": 2, "header": '
    '"0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF003002", "body": '
    '"0x000000144001010040020602010000FC004003040A00000B200A400001" }  } }'
)
RIB_V2 = (
    '{"peer": {"address": "10.0.0.1"}, "route": {"nlri": {"prefix": "fd00:100::1/128", "nexthop": "fd00::11", '
    '"family": {"afi": "ipv6", "safi": "unicast"}}, "attributes": {"origin": "igp"}}}'
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("done", Ack(True), id="done"),
        pytest.param("error", Ack(False), id="error"),
        pytest.param('{ "answer": "done", "message": "command completed" }', Ack(True), id="json-done"),
        pytest.param("shutdown", Shutdown(), id="text-shutdown"),
        pytest.param(
            '{ "exabgp": "5.0.0", "time": 1.0, "type": "notification", "notification": "shutdown" }',
            Shutdown(),
            id="json-shutdown",
        ),
        pytest.param(STATE_UP, PeerState("10.0.0.1", "up"), id="state-up"),
        pytest.param(STATE_DOWN, PeerState("10.0.0.1", "down", "closing connection"), id="state-down"),
        pytest.param(
            UPDATE_SENT,
            UpdateEvent(
                "10.0.0.1",
                "send",
                ((Prefix.parse("fd00:10::5/128"), Address.parse("fd00::11")),),
                (Prefix.parse("10.128.0.5/32"),),
            ),
            id="update-sent",
        ),
        pytest.param(EOR_SENT, UpdateEvent("10.0.0.1", "send", (), (), ("ipv4 unicast",)), id="eor-sent"),
        pytest.param(
            PACKED_UPDATE_SENT,
            UpdateEvent(
                "10.0.0.1",
                "send",
                ((Prefix.parse("10.64.0.1/32"), Address.parse("10.0.0.11")),),
                (),
            ),
            id="update-sent-as-bytes",
        ),
        pytest.param(NOTIFICATION, Notification("10.0.0.1", "receive", 6, 2, "shut"), id="notification"),
        pytest.param(
            RIB_V2, RibRoute("10.0.0.1", Prefix.parse("fd00:100::1/128"), Address.parse("fd00::11")), id="rib"
        ),
        pytest.param(
            '[{"state": "up", "peer": {"address": "10.0.0.1"}}, {"state": "down", "peer": {"address": "fd00::1"}}]',
            NeighborList((("10.0.0.1", "up"), ("fd00::1", "down"))),
            id="neighbors",
        ),
        pytest.param("exabgp 5.0.15", Other("exabgp 5.0.15"), id="version"),
        pytest.param("{not json", Other("{not json"), id="garbage"),
    ],
)
def test_replies_are_classified(line, expected):
    assert protocol.parse_reply(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param(
            '{ "exabgp": "5.0.0", "type": "update", "neighbor": "10.0.0.1" }',
            UpdateEvent("", "", (), ()),
            id="neighbor-not-an-object",
        ),
        pytest.param(
            '{ "exabgp": "5.0.0", "type": "update", "neighbor": { "address": { "peer": "10.0.0.1" }, "direction": '
            '"receive", "message": { "update": { "announce": { "ipv4 unicast": { "10.0.0.1": [ "10.1.2.3/24", '
            '"no prefix", { "nlri": "fd00::1/64" } ] } }, "withdraw": { "ipv4 unicast": [ 7, "10.9.0.0/16" ] } } } } }',
            UpdateEvent(
                "10.0.0.1",
                "receive",
                (
                    (Prefix.parse("10.1.2.0/24"), Address.parse("10.0.0.1")),
                    (Prefix.parse("fd00::/64"), Address.parse("10.0.0.1")),
                ),
                (Prefix.parse("10.9.0.0/16"),),
                malformed=2,
            ),
            id="host-bits-masked-and-what-is-no-prefix-skipped",
        ),
        pytest.param(
            PACKED_UPDATE_SENT.replace('"0x0000', '"0xZZ00'),
            UpdateEvent("10.0.0.1", "send", (), (), malformed=1),
            id="update-bytes-not-hex",
        ),
        pytest.param(
            PACKED_UPDATE_SENT.replace("003002", "003004"),
            UpdateEvent("10.0.0.1", "send", (), (), malformed=1),
            id="update-bytes-of-another-message-type",
        ),
        pytest.param(
            PACKED_UPDATE_SENT.replace("FC004003040A00000B200A400001", "FC004003040A00000B200A40"),
            UpdateEvent("10.0.0.1", "send", (), (), malformed=1),
            id="update-bytes-cut-short",
        ),
        pytest.param(
            '{ "peer": "10.0.0.1", "route": { "nlri": "10.1.0.0/16" } }',
            Other('{ "peer": "10.0.0.1", "route": { "nlri": "10.1.0.0/16" } }'),
            id="rib-line-of-another-shape",
        ),
    ],
)
def test_malformed_replies_are_parsed_as_far_as_they_go_never_raising(line, expected):
    """ExaBGP's JSON is parsed once, into Prefix/Address values; a part that is not what it should be is skipped."""
    assert protocol.parse_reply(line) == expected
