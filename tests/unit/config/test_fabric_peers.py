"""Peering a leaf-spine fabric: peers per node, session knobs per peer, IPv6 for real.

Scope: the configuration keys (`peers[].nodeSelector`, `port`, `ebgpMultihop`, `keepaliveTime`, `description`,
iBGP, 4-byte ASNs) and their field errors with paths; the ExaBGP neighbor block they render (checked by ExaBGP's own
parser through check-config's validation elsewhere, here line by line); which peers an instance serves for its
node's labels, per-node and cluster mode (`BGPADV_POD_NODE_NAME`); `next-hop self` for a family other than the
session's, from the node's global address on the session's interface or its InternalIP, never link-local; the guard
and the speaker using it per session; iBGP sessions getting no AS-path prepend; the controller reloading ExaBGP and
ending for a new controller when its node's labels select other peers, and only then. The lab proves the rest at
real FRR ToRs (tests/lab/test_fabric.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import pytest
import yaml

from bgpadv.config import Config, ConfigError, parse
from bgpadv.core import resources
from bgpadv.core.prefix import Address
from bgpadv.planner import checks, plan
from bgpadv.runtime import peering
from bgpadv.runtime.controller import MOVE_WITHDRAW_SECONDS, Controller, LoopSettings, watched_resources
from bgpadv.runtime.reload import Reloader
from bgpadv.safety.guard import Guard, GuardContext
from bgpadv.sources.decode.dispatch import decode
from bgpadv.sources.reflector import WatchEvent
from bgpadv.speaker.exabgp_config import render_exabgp_config
from bgpadv.speaker.session import Speaker
from bgpadv_lab import objects as k8s
from tests.doubles import RecordingObserver, RecordingSources, RecordingSpeaker

RACK = "topology.bgpadv.io/rack"
TOR_A = {"address": "10.0.0.1", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "a"}}}
TOR_B = {
    "address": "10.0.0.2",
    "asn": 64512,
    "nodeSelector": {"matchExpressions": [{"key": RACK, "operator": "In", "values": ["b"]}]},
}
SPINE = {"address": "192.0.2.1", "asn": 64600, "ebgpMultihop": 3}
RAW = {
    "localASN": 64513,
    "peers": [TOR_A, TOR_B, SPINE],
    "networks": {"selector": {"matchLabels": dict(k8s.ADVERTISED)}},
}
ARGV = ["/usr/bin/python3", "-m", "bgpadv", "controller", "--config", "/etc/bgpadv/bgpadv.yaml"]


def problems(raw: dict, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(raw, environ=environ or {})
    return e.value.problems


def peer(**fields: object) -> dict:
    return {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512, **fields}]}


# -- configuration ----------------------------------------------------------------------------------------------------


def test_every_knob_is_read_with_its_value():
    config = parse(
        peer(port=1179, ebgpMultihop=2, keepaliveTime=3, description="rack a ToR (leaf-1)", asn=4200000001),
        environ={},
    )
    [p] = config.peers
    assert (p.port, p.ebgp_multihop, p.keepalive_time, p.hold_time, p.description, p.asn) == (
        1179,
        2,
        3,
        9,  # holdTime omitted: 3 x keepaliveTime
        "rack a ToR (leaf-1)",
        4200000001,
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"port": 0}, "peers[0].port: must be between 1 and 65535, got 0", id="port-zero"),
        pytest.param({"port": "179"}, "peers[0].port: must be an integer, got '179'", id="port-string"),
        pytest.param(
            {"passive": True, "localAddress": "10.0.0.11", "port": 1179},
            "peers[0].port: is for active sessions: a passive peer connects to exabgp.listenPort on localAddress",
            id="port-on-a-passive-peer",
        ),
        pytest.param({"ebgpMultihop": 256}, "peers[0].ebgpMultihop: must be between 1 and 255, got 256", id="ttl"),
        pytest.param(
            {"keepaliveTime": 10, "holdTime": 9},
            "peers[0].keepaliveTime: must be holdTime / 3 (3): ExaBGP sends keepalives every negotiated hold time / "
            "3, got 10 (set holdTime: 30, or omit it)",
            id="keepalive-not-a-third-of-hold",
        ),
        pytest.param(
            {"connectRetry": 5},
            "peers[0].connectRetry: is not supported: ExaBGP (5.0.15 checked) has no connect-retry setting, per "
            "neighbor or per process (exabgp.tcp.attempts caps the attempts, exabgp.tcp.delay delays announcements): "
            "after a failed or closed connection it waits 0, 1, 2, 3, 4, 5, 7, 9, 11, 14 ... s (each delay 1 + 1.2 x "
            "the previous, at most 60 s; reactor/delay.py), back to 0 once a session is established; remove it",
            id="connect-retry",
        ),
        pytest.param(
            {"description": 'ToR "a"; evil { }'},
            "peers[0].description: must be 1-80 printable ASCII characters without quotes, backslashes, ';' or "
            "braces (no leading or trailing space), got 'ToR \"a\"; evil { }'",
            id="description-that-would-break-exabgp-syntax",
        ),
        pytest.param(
            {"nodeSelector": {"matchExpressions": [{"key": RACK, "operator": "in"}]}},
            "peers[0].nodeSelector.matchExpressions[0].operator: must be In, NotIn, Exists or DoesNotExist, got 'in'",
            id="selector-operator",
        ),
        pytest.param(
            {"asn": 64513, "ebgpMultihop": 2},
            "peers[0].ebgpMultihop: is for eBGP peers: AS 64513 is localASN (iBGP is not TTL-limited)",
            id="multihop-on-ibgp",
        ),
        pytest.param({"asn": 4294967296}, "peers[0].asn: must be between 1 and 4294967295, got 4294967296", id="asn"),
    ],
)
def test_a_bad_knob_is_an_error_at_its_path(fields, expected):
    assert expected in problems(peer(**fields))


# -- the ExaBGP neighbor block ----------------------------------------------------------------------------------------


def test_the_knobs_are_rendered_into_the_neighbor_block():
    config = parse(
        peer(port=1179, ebgpMultihop=2, keepaliveTime=3, description="rack a ToR (leaf-1)", asn=4200000001),
        environ={},
    )
    text = render_exabgp_config(config, ARGV)
    block = text[text.index("neighbor 10.0.0.1 {") :]
    for line in (
        'description "rack a ToR (leaf-1)";',
        "peer-as 4200000001;",
        "hold-time 9;",
        "connect 1179;",
        "outgoing-ttl 2;",
    ):
        assert f"    {line}\n" in block


def test_without_the_knobs_the_neighbor_block_is_as_before():
    text = render_exabgp_config(parse(peer(), environ={}), ARGV)
    assert not any(word in text for word in ("description", "connect ", "outgoing-ttl"))


# -- which peers an instance serves ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "served"),
    [
        pytest.param({RACK: "a"}, ["10.0.0.1", "192.0.2.1"], id="rack-a"),
        pytest.param({RACK: "b"}, ["10.0.0.2", "192.0.2.1"], id="rack-b"),
        pytest.param({"kubernetes.io/os": "linux"}, ["192.0.2.1"], id="no-rack-label"),
        pytest.param(None, ["192.0.2.1"], id="node-unknown-only-the-peers-without-selector"),
    ],
)
def test_an_instance_serves_the_peers_its_nodes_labels_select(labels, served):
    config = parse({**RAW, "nodeName": "worker-1"}, environ={})
    assert [p.name for p in config.serving(labels).peers] == served


def test_per_node_mode_matches_its_own_node_and_cluster_mode_the_node_the_replica_runs_on():
    per_node = parse(RAW, environ={"BGPADV_NODE_NAME": "worker-1", "BGPADV_POD_NODE_NAME": "ignored"})
    assert (per_node.node_name, per_node.speaker_node) == ("worker-1", "worker-1")
    cluster = parse(RAW, environ={"BGPADV_POD_NODE_NAME": "worker-3"})
    assert (cluster.node_name, cluster.speaker_node) == (None, "worker-3")
    assert parse(RAW, environ={}).speaker_node is None


# -- next-hop self for the other family --------------------------------------------------------------------------------


@pytest.fixture
def worker_1():
    """worker-1 of rack a, dual-stack, as the controller decodes it."""
    return decode(resources.NODE, k8s.node("worker-1", "10.0.0.11", "fd00::11", labels={RACK: "a"}), "worker-1")


def addresses(*texts: str):
    return lambda _peer, version: [Address.parse(t) for t in texts if Address.parse(t).version == version]


@pytest.mark.parametrize(
    ("on_interface", "known", "expected"),
    [
        pytest.param(addresses("fe80::1", "2a02:4780:1::11"), True, "2a02:4780:1::11", id="interface-global-first"),
        pytest.param(addresses("fe80::1"), True, "fd00::11", id="link-local-only-then-the-internal-ip"),
        pytest.param(addresses(), True, "fd00::11", id="no-interface-address-then-the-internal-ip"),
        pytest.param(addresses("fe80::1"), False, None, id="nothing-global-nothing-derived"),
    ],
)
def test_an_ipv6_self_over_an_ipv4_session_is_the_nodes_global_ipv6_address(on_interface, known, expected, worker_1):
    config = peering.effective(parse(peer(), environ={}), worker_1 if known else None, on_interface)
    assert config.peers[0].self_addresses == ((Address.parse(expected),) if expected else ())


def test_a_configured_next_hop_self_wins_and_the_sessions_own_family_needs_nothing(worker_1):
    config = parse({**peer(), "nextHopSelf": {"ipv6": "fd00::99"}}, environ={})
    assert peering.effective(config, worker_1, addresses("2a02:4780::11")).peers[0].self_addresses == ()
    v6 = parse(peer(address="fd00::1", families=["ipv6 unicast"]), environ={})
    assert peering.effective(v6, worker_1, addresses("192.0.2.11")).peers[0].self_addresses == ()


def test_an_unreadable_interface_falls_back_to_the_internal_ip(worker_1):
    def broken(_peer, _version):
        raise OSError("netlink says no")

    assert peering.effective(parse(peer(), environ={}), worker_1, broken).peers[0].self_addresses == (
        Address.parse("fd00::11"),
    )


def cluster():
    """worker-1, dual-stack, and the dual-stack network vmnet-a."""
    return k8s.state(
        [
            k8s.node("worker-1", "10.0.0.11", "fd00::11"),
            k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24", "fd10:100::/64"], labels=k8s.ADVERTISED),
        ]
    )


def test_the_guard_lets_the_ipv6_subnet_onto_the_ipv4_session_once_the_node_address_is_derived(worker_1):
    bare = parse(peer(), environ={})
    refused = Guard(bare).check(plan(cluster(), bare).routes, GuardContext.from_state(cluster(), bare))
    assert [(r.value, r.reason) for r in refused.rejected] == [("fd10:100::/64", checks.FAMILY_NOT_CARRIED)]
    derived = peering.effective(bare, worker_1, addresses())
    guarded = Guard(derived).check(plan(cluster(), derived).routes, GuardContext.from_state(cluster(), derived))
    assert guarded.rejected == ()
    assert sorted(str(r.prefix) for r in guarded.per_peer["10.0.0.1"]) == ["192.168.100.0/24", "fd10:100::/64"]


def ready_speaker(config) -> tuple[Speaker, list[str]]:
    lines: list[str] = []
    speaker = Speaker.from_config(config, lines.append)
    speaker.start()
    speaker.handle_line("[]")  # show neighbor json
    speaker.handle_line("done")
    speaker.handle_line("done")  # show adj-rib out
    lines.clear()
    return speaker, lines


def test_the_speaker_sends_the_derived_address_as_the_ipv6_next_hop_on_the_ipv4_session(worker_1):
    config = peering.effective(parse(peer(), environ={}), worker_1, addresses())
    routes = Guard(config).check(plan(cluster(), config).routes, GuardContext.from_state(cluster(), config)).per_peer
    speaker, lines = ready_speaker(config)
    speaker.set_desired(routes)
    [v6] = [line for line in lines if "fd10:100::/64" in line]
    assert "next-hop fd00::11 " in v6
    [v4] = [line for line in lines if "192.168.100.0/24" in line]
    assert "next-hop self " in v4


def test_an_ibgp_session_gets_local_preference_and_no_as_path_prepend():
    raw = {
        "localASN": 64513,
        "peers": [{"address": "10.0.0.1", "asn": 64513}, {"address": "10.0.0.2", "asn": 64512}],
        "networks": {"selector": {"matchLabels": dict(k8s.ADVERTISED)}},
        "attributes": {"localPreference": 200, "asPathPrepend": 2},
        "nextHopSelf": {"ipv6": "fd00::11"},
    }
    config = parse(raw, environ={})
    routes = Guard(config).check(plan(cluster(), config).routes, GuardContext.from_state(cluster(), config)).per_peer
    speaker, lines = ready_speaker(config)
    speaker.set_desired(routes)
    ibgp = [line for line in lines if line.startswith("neighbor 10.0.0.1 ") and "192.168.100.0/24" in line]
    ebgp = [line for line in lines if line.startswith("neighbor 10.0.0.2 ") and "192.168.100.0/24" in line]
    assert "local-preference 200" in ibgp[0] and "as-path" not in ibgp[0]
    assert "as-path [ 64513 64513 64513 ]" in ebgp[0]  # prepend 2: two copies more than the one eBGP adds
    assert "local-preference" not in ebgp[0]  # LOCAL_PREF is for internal peers only


# -- the controller follows its node's labels -------------------------------------------------------------------------


class FakeReloader:
    """The controller's side of ExaBGP's reload: what it was asked to run."""

    def __init__(self) -> None:
        self.reloaded: list[list[str]] = []

    def reload_exabgp(self, config) -> bool:
        self.reloaded.append([p.name for p in config.peers])
        return True

    def tick(self) -> None:
        pass


def node_event(labels: dict[str, str], kind: str = "MODIFIED", version: str = "2") -> WatchEvent:
    obj = k8s.node("worker-1", "10.0.0.11", "fd00::11", labels=labels)
    obj["metadata"]["resourceVersion"] = version
    return WatchEvent(resources.NODE, kind, obj, time.monotonic(), None)


def per_node_controller(
    *,
    speaker: RecordingSpeaker | None = None,
    clock: Callable[[], float] = time.monotonic,
    reloader: Reloader | None = None,
) -> tuple[Controller, FakeReloader]:
    """A per-node controller on worker-1 (rack a), its Node listed; ExaBGP's reloads go to the returned
    `FakeReloader`, or to `reloader` when given (a real one, whose ExaBGP reload is the fake's)."""
    configured = parse({**RAW, "nodeName": "worker-1"}, environ={})
    node = decode(resources.NODE, k8s.node("worker-1", "10.0.0.11", labels={RACK: "a"}), "worker-1")
    fake = FakeReloader()
    c = Controller(
        configured.serving(node.labels),
        speaker=speaker if speaker is not None else RecordingSpeaker(),
        sources=RecordingSources(),
        observer=RecordingObserver(),
        settings=LoopSettings(coalesce_window=0.0),
        clock=clock,
        reloader=reloader if reloader is not None else fake,  # type: ignore[arg-type]
        configured=configured,
        placement=lambda config, n: config.serving(n.labels if n is not None else None),
        node=node,
    )
    for res in watched_resources(configured):
        c.queue.put(WatchEvent(res, "SYNCED", None, time.monotonic(), None))
    c.queue.put(node_event({RACK: "a"}, "ADDED", "1"))
    assert c.step() is True
    return c, fake


def test_a_label_change_that_keeps_the_same_peers_changes_nothing():
    c, reloader = per_node_controller()
    c.queue.put(node_event({RACK: "a", "zone": "z1"}))
    assert c.step() is True
    assert (reloader.reloaded, c.restart_requested) == ([], False)


def test_a_node_moved_to_the_other_rack_reloads_exabgp_with_that_racks_peer_and_takes_it_on_live():
    c, reloader = per_node_controller()
    c.queue.put(node_event({RACK: "b"}))
    assert c.step() is True, "no new controller: the loop goes on"
    assert reloader.reloaded == [["10.0.0.2", "192.0.2.1"]]
    assert c.restart_requested is False
    speaker = c.speaker
    assert isinstance(speaker, RecordingSpeaker)
    withdrawn = next(i for i, d in enumerate(speaker.desired) if d.get("10.0.0.1") == ())
    assert speaker.peer_sets == [["10.0.0.2", "192.0.2.1"]], "the speaker learns the new peer set after the reload"
    assert [p.name for p in c.config.peers] == ["10.0.0.2", "192.0.2.1"]
    assert [p.name for p in c.guard.config.peers] == ["10.0.0.2", "192.0.2.1"]
    assert c.step() is True  # the next plan, for the new peer set
    last = speaker.desired[-1]
    assert not last.get("10.0.0.1") and withdrawn < len(speaker.desired) - 1, (
        "the leaving peer is withdrawn first, then a plan for the new peer set"
    )
    assert last["10.0.0.2"] == last["192.0.2.1"], "the new peer gets the whole desired set"


def test_a_move_that_changes_a_kept_peers_session_still_ends_for_a_new_controller():
    c, reloader = per_node_controller()
    changed = [p if p.name != "192.0.2.1" else dataclasses.replace(p, hold_time=30) for p in c.configured.peers]
    c.configured = dataclasses.replace(c.configured, peers=tuple(changed))
    c.queue.put(node_event({RACK: "b"}))
    assert c.step() is False and c.restart_requested is True
    assert reloader.reloaded == [["10.0.0.2", "192.0.2.1"]]


class HoldingSpeaker(RecordingSpeaker):
    """ExaBGP has not yet acknowledged the withdrawals for `holding` peers."""

    def __init__(self) -> None:
        super().__init__()
        self.holding: set[str] = set()

    def held(self, peer: str):
        return {(4, 1, 32)} if peer in self.holding else ()


def test_the_reload_waits_for_the_leaving_peers_withdrawals_then_goes_at_most_after_the_timeout():
    now = [1000.0]
    speaker = HoldingSpeaker()
    c, reloader = per_node_controller(speaker=speaker, clock=lambda: now[0])
    speaker.holding = {"10.0.0.1"}
    c.queue.put(node_event({RACK: "b"}))
    assert c.step() is True and reloader.reloaded == []  # withdrawals in flight
    speaker.holding = set()  # acknowledged
    assert c.step() is True and reloader.reloaded == [["10.0.0.2", "192.0.2.1"]]
    speaker = HoldingSpeaker()
    c2, reloader2 = per_node_controller(speaker=speaker, clock=lambda: now[0])
    speaker.holding = {"10.0.0.1"}
    c2.queue.put(node_event({RACK: "b"}))
    assert c2.step() is True
    now[0] += MOVE_WITHDRAW_SECONDS
    assert c2.step() is True and reloader2.reloaded == [["10.0.0.2", "192.0.2.1"]]


# -- render says which node serves which peer ------------------------------------------------------------------------


def test_render_names_the_nodes_that_serve_each_peer(tmp_path, capsys):
    import json

    import yaml

    from bgpadv.commands import render

    (tmp_path / "bgpadv.yaml").write_text(yaml.safe_dump(RAW))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    nodes = [
        k8s.node("worker-1", "10.0.0.11", labels={RACK: "a"}),
        k8s.node("worker-2", "10.0.0.12", labels={RACK: "b"}),
    ]
    (manifests / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    assert render.main(str(tmp_path / "bgpadv.yaml"), str(manifests), "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(p["peer"], p["nodeSelector"], p["nodes"]) for p in doc["peers"]] == [
        ("10.0.0.1", f"{RACK}=a", ["worker-1"]),
        ("10.0.0.2", f"{RACK} in (b)", ["worker-2"]),
        ("192.0.2.1", "", ["worker-1", "worker-2"]),
    ]
    assert render.main(str(tmp_path / "bgpadv.yaml"), str(manifests), "table") == 0
    table = capsys.readouterr().out
    assert "peers (3)" in table and "10.0.0.2   64512  eBGP     topology.bgpadv.io/rack in (b)  worker-2" in table


def test_status_names_this_nodes_peers_and_the_ones_it_does_not_serve():
    from bgpadv.commands.status import render_placement

    configured = parse({**RAW, "nodeName": "worker-1"}, environ={})
    placement = peering.placement_status(configured, configured.serving({RACK: "a"}))
    assert render_placement(placement) == [
        "node worker-1 serves: 10.0.0.1, 192.0.2.1",
        f"not served here: 10.0.0.2 ({RACK} in (b))",
        "",
    ]


def test_after_a_move_the_removed_peer_is_neither_held_nor_handed_to_the_speaker():
    c, _ = per_node_controller()
    c.queue.put(node_event({RACK: "b"}))
    assert c.step() is True
    assert c.step() is True  # the plan for the new peer set
    observer = c.observer
    assert isinstance(observer, RecordingObserver)
    assert "10.0.0.1" not in observer.held[-1], "no bgpadv_routes_held series comes back for the removed peer"
    assert "10.0.0.1" not in c.failstatic.held_counts()


# -- a changed file, decided (bgpadv.runtime.reload.Reloader.decide) ---------------------------------------------------


def file_reloader(tmp_path, raw: dict, **settings):
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(raw))
    return RecordingExaBGPReloader(str(path), **settings), path


@dataclasses.dataclass
class RecordingExaBGPReloader(Reloader):
    """A real reloader of the file, whose ExaBGP reloads are only recorded (the peers each would run)."""

    reloaded: list[list[str]] = dataclasses.field(default_factory=list)

    def reload_exabgp(self, config: Config) -> bool:
        self.reloaded.append([p.name for p in config.peers])
        return True


def on_rack(labels: dict[str, str]) -> Callable[[Config], Config]:
    """What a node with `labels` serves of a configuration (`Reloader.decide`'s `narrow`)."""
    return lambda config: config.serving(labels)


def test_decide_moves_live_when_the_file_only_adds_a_peer_this_node_serves(tmp_path):
    running = parse(RAW, environ={}).serving({RACK: "a"})
    reloader, path = file_reloader(tmp_path, RAW)
    path.write_text(yaml.safe_dump({**RAW, "peers": [*RAW["peers"], {"address": "10.0.0.9", "asn": 64512}]}))
    decision = reloader.decide(running, on_rack({RACK: "a"}))
    assert decision.action == "peers"
    assert decision.config is not None and [p.name for p in decision.config.peers] == [
        "10.0.0.1",
        "192.0.2.1",
        "10.0.0.9",
    ]


def test_a_file_adding_only_another_racks_peer_changes_nothing_here_but_is_not_forgotten(tmp_path):
    """The running peers are the same, but the configured ones are the file's: a later relabel of this node to
    that rack moves to the new peer."""
    tor_c = {"address": "10.0.0.3", "asn": 64512, "nodeSelector": {"matchLabels": {RACK: "c"}}}
    counted: list[str] = []
    reloader, path = file_reloader(tmp_path, {**RAW, "nodeName": "worker-1"}, counted=counted.append)
    c, _ = per_node_controller(reloader=reloader)
    path.write_text(yaml.safe_dump({**RAW, "nodeName": "worker-1", "peers": [TOR_A, TOR_B, SPINE, tor_c]}))
    from bgpadv.runtime.reload import ConfigFileChanged

    c.queue.put(ConfigFileChanged())
    assert c.step() is True
    assert (reloader.reloaded, [p.name for p in c.config.peers]) == ([], ["10.0.0.1", "192.0.2.1"])
    assert [p.name for p in c.configured.peers] == ["10.0.0.1", "10.0.0.2", "192.0.2.1", "10.0.0.3"]
    c.queue.put(node_event({RACK: "c"}))
    assert c.step() is True
    assert reloader.reloaded == [["192.0.2.1", "10.0.0.3"]]
