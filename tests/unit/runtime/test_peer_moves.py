"""Peer moves (bgpadv.runtime.peer_moves): the bookkeeping of one instance moving between two peer sets.

Scope: which configuration a relabelled node moves to (none when its labels select the same peers, or the Node did
not change); the leaving peers of a move and whether it waits for their withdrawals (only when routes are out);
when a waiting move is due (ExaBGP holds nothing more for the leaving peers, or `MOVE_WITHDRAW_SECONDS` passed);
what the leaving peers are handed meanwhile (nothing); a changed file narrowed to this node's placement. The loop
that carries a move out is tested through the controller in tests/unit/config/test_fabric_peers.py, and at real FRR
ToRs in tests/lab/test_fabric.py.
"""

from __future__ import annotations

import pytest

from bgpadv.config import Config, parse
from bgpadv.core import resources
from bgpadv.core.views import Node
from bgpadv.runtime.peer_moves import MOVE_WITHDRAW_SECONDS, PeerMoves
from bgpadv.sources.decode.dispatch import decode
from bgpadv_lab import objects as k8s
from tests.doubles import ManualClock

RACK = "topology.bgpadv.io/rack"
TOR_A = {"address": "10.0.0.1", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "a"}}}
TOR_B = {"address": "10.0.0.2", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "b"}}}
SPINE = {"address": "192.0.2.1", "asn": 64600, "ebgpMultihop": 3}


def configured() -> Config:
    """worker-1's instance, two ToRs by rack and a spine everywhere; parsed afresh for each caller."""
    return parse({"localASN": 64513, "nodeName": "worker-1", "peers": [TOR_A, TOR_B, SPINE]}, environ={})


def worker(rack: str, version: str = "1") -> Node:
    obj = k8s.node("worker-1", "10.0.0.11", labels={RACK: rack})
    obj["metadata"]["resourceVersion"] = version
    node = decode(resources.NODE, obj, "worker-1")
    assert isinstance(node, Node)
    return node


def on_labels(configured: Config, node: Node | None) -> Config:
    return configured.serving(node.labels if node is not None else None)


def moves_on_rack_a(clock: ManualClock | None = None) -> PeerMoves:
    node = worker("a")
    return PeerMoves(
        on_labels(configured(), node),
        node=node,
        placement=on_labels,
        clock=clock if clock is not None else ManualClock(1000.0),
    )


def names(config: Config) -> list[str]:
    return [p.name for p in config.peers]


@pytest.mark.parametrize(
    ("rack", "moves_to"),
    [
        pytest.param("a", None, id="same-labels-no-move"),
        pytest.param("b", ["10.0.0.2", "192.0.2.1"], id="other-rack-moves"),
        pytest.param("c", ["192.0.2.1"], id="no-rack-keeps-the-spine-only"),
    ],
)
def test_a_relabelled_node_moves_only_when_its_labels_select_other_peers(rack: str, moves_to: list[str] | None):
    moves = moves_on_rack_a()
    new = moves.node_changed(configured(), worker(rack, "2"))
    assert (names(new) if new is not None else None) == moves_to


def test_the_same_node_object_again_changes_nothing():
    moves = moves_on_rack_a()
    node = moves.node
    assert node is not None and moves.node_changed(configured(), node) is None


def test_a_move_started_is_not_started_again_on_the_next_node_event():
    moves = moves_on_rack_a()
    new = moves.node_changed(configured(), worker("b", "2"))
    assert new is not None
    moves.begin(on_labels(configured(), worker("a")), new, configured(), from_file=False, withdraw=True)
    assert moves.node_changed(configured(), worker("b", "3")) is None


@pytest.mark.parametrize(
    ("withdraw", "rack", "waits"),
    [
        pytest.param(True, "b", True, id="routes-out-and-a-peer-leaves-waits"),
        pytest.param(False, "b", False, id="nothing-out-yet-goes-at-once"),
        pytest.param(True, "a", False, id="no-peer-leaves-goes-at-once"),
    ],
)
def test_a_move_waits_for_withdrawals_only_when_routes_are_out_and_a_peer_leaves(withdraw, rack, waits):
    moves = moves_on_rack_a()
    running = on_labels(configured(), worker("a"))
    move = moves.begin(running, on_labels(configured(), worker(rack)), configured(), from_file=False, withdraw=withdraw)
    assert move.leaving == (frozenset({"10.0.0.1"}) if rack == "b" else frozenset())
    assert (moves.moving is move) is waits


def test_a_waiting_move_is_due_once_exabgp_holds_nothing_for_the_leaving_peers(clock):
    moves = moves_on_rack_a(clock)
    running = on_labels(configured(), worker("a"))
    move = moves.begin(running, on_labels(configured(), worker("b")), configured(), from_file=True, withdraw=True)
    held = {"10.0.0.1": {(4, 1, 32)}}
    assert moves.due(lambda peer: held.get(peer, ())) is None
    held.clear()  # ExaBGP acknowledged the withdrawals
    assert moves.due(lambda peer: held.get(peer, ())) is move
    assert moves.moving is None and moves.due(lambda peer: ()) is None


def test_a_waiting_move_is_due_after_the_timeout_even_while_withdrawals_are_unacknowledged(clock):
    moves = moves_on_rack_a(clock)
    running = on_labels(configured(), worker("a"))
    move = moves.begin(running, on_labels(configured(), worker("b")), configured(), from_file=False, withdraw=True)
    clock.now += MOVE_WITHDRAW_SECONDS - 0.1
    assert moves.due(lambda peer: {(4, 1, 32)}) is None
    clock.now += 0.1
    assert moves.due(lambda peer: {(4, 1, 32)}) is move


def test_the_leaving_peers_are_handed_nothing_while_the_move_waits():
    moves = moves_on_rack_a()
    desired = {"10.0.0.1": ("r1", "r2"), "192.0.2.1": ("r1", "r2")}
    assert moves.without_leaving(desired) is desired  # no move: as it is
    running = on_labels(configured(), worker("a"))
    moves.begin(running, on_labels(configured(), worker("b")), configured(), from_file=False, withdraw=True)
    assert moves.without_leaving(desired) == {"10.0.0.1": (), "192.0.2.1": ("r1", "r2")}
    assert moves.leaving("10.0.0.1") and not moves.leaving("192.0.2.1")


def test_a_changed_file_is_narrowed_to_this_nodes_placement_or_kept_whole_without_one(clock):
    moves = moves_on_rack_a()
    assert names(moves.narrow(configured())) == ["10.0.0.1", "192.0.2.1"]
    unplaced = PeerMoves(configured(), node=None, placement=None, clock=clock)
    whole = configured()
    assert unplaced.narrow(whole) is whole
