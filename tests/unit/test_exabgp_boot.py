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
"""

from __future__ import annotations

import subprocess
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("exabgp")

from exabgp.bgp.message import Action
from exabgp.bgp.neighbor import Neighbor
from exabgp.configuration.configuration import Configuration
from exabgp.environment import getenv
from exabgp.logger import option
from exabgp.reactor.api import API
from exabgp.util import hexstring as exabgp_hexstring

from bgpadv.core.prefix import Address, Prefix
from bgpadv.speaker.exabgp_boot import hexstring, raw_update_echo, shallow_remove_self
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
