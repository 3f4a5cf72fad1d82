"""Live configuration reload (bgpadv/runtime/reload.py and the controller's side in bgpadv/runtime/controller.py).

Scope: which changes apply live, which need a new controller and which reload ExaBGP (`classify`); the file watch
seeing kubelet's `..data` symlink swap and ignoring a mere touch; a refused file leaving the running configuration
and being counted; the last good configuration kept for a controller that starts while the file is invalid; a live
change replanning through the new planner and guard, whatever it withdraws, and never restarting the controller.
The lab proves the rest at the ToR (tests/lab/test_reload.py).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from bgpadv.config import parse
from bgpadv.core import resources
from bgpadv.runtime.controller import Controller, LoopSettings, watched_resources
from bgpadv.runtime.reload import LAST_GOOD, ConfigFileChanged, ConfigFileWatch, Reloader, classify, fingerprint
from bgpadv.sources.reflector import WatchEvent
from bgpadv.speaker.exabgp_config import render_exabgp_config
from tests.doubles import RecordingObserver, RecordingSources, RecordingSpeaker
from tests.unit.runtime.test_controller import CUDN as SERVICE_CUDN

RAW = {
    "localASN": 64513,
    "peers": [{"address": "10.0.0.1", "asn": 64512}],
    "networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}},
}
ARGV = ["/usr/bin/python3", "-m", "bgpadv", "controller", "--config", "/etc/bgpadv/bgpadv.yaml"]


def with_(**changes: object) -> dict:
    return {**RAW, **changes}


def render(config) -> str:
    return render_exabgp_config(config, ARGV)


# -- classify -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"attributes": {"communities": ["64513:100"]}},
        {"networks": {"selector": {"matchLabels": {"tier": "gold"}}}},
        {"networks": {"selector": {"matchLabels": {"bgpadv.io/advertise": "true"}}, "hostRoutes": False}},
        {"nextHop": "self"},
        {"safety": {"maxRoutes": 10, "maxWithdrawFraction": 0.9}},
    ],
)
def test_networks_selectors_attributes_next_hop_and_safety_apply_live(changes):
    assert classify(parse(RAW), parse(with_(**changes)), render) == "live"


@pytest.mark.parametrize(
    "changes",
    [
        {"peers": [{"address": "10.0.0.1", "asn": 64512}, {"address": "10.0.0.2", "asn": 64512}]},
        {"peers": [{"address": "10.0.0.1", "asn": 64512, "holdTime": 30}]},
        {"localASN": 64599},
        {"routerID": "10.0.0.11"},
    ],
)
def test_peers_local_as_and_router_id_reload_exabgp(changes):
    assert classify(parse(RAW), parse(with_(**changes)), render) == "exabgp"
    assert classify(parse(RAW), parse(with_(**changes))) == "exabgp"  # without a renderer: compared directly


@pytest.mark.parametrize(
    "changes",
    [
        {"metrics": {"listen": "0.0.0.0:9200"}},
        {"kubernetes": {"kubeconfig": "/tmp/kubeconfig"}},
        {"networks": {"followRouteAdvertisements": True}},
    ],
)
def test_what_only_the_controller_uses_is_applied_by_a_new_controller(changes):
    assert classify(parse(RAW), parse(with_(**changes)), render) == "controller"


def test_an_identical_configuration_is_unchanged():
    assert classify(parse(RAW), parse(dict(RAW)), render) == "unchanged"


# -- the file watch ---------------------------------------------------------------------------------------------------


def kubelet_volume(root: Path, text: str, version: int) -> Path:
    """Lay out (or update) a ConfigMap volume as kubelet does: a timestamped directory, then swap `..data`."""
    data = root / f"..2026_12_01_00_00_00.{version}"
    data.mkdir(parents=True)
    (data / "bgpadv.yaml").write_text(text)
    tmp = root / "..data_tmp"
    tmp.symlink_to(data.name)
    os.replace(tmp, root / "..data")
    path = root / "bgpadv.yaml"
    if not path.is_symlink():
        path.symlink_to("..data/bgpadv.yaml")
    return path


def test_the_watch_sees_kubelets_symlink_swap_once_and_ignores_a_touch(tmp_path):
    path = kubelet_volume(tmp_path, yaml.safe_dump(RAW), 1)
    seen: list[object] = []
    watch = ConfigFileWatch(str(path), seen.append)
    assert watch.poll() is False
    kubelet_volume(tmp_path, yaml.safe_dump(with_(nextHop="self")), 2)
    assert watch.poll() is True
    assert watch.poll() is False
    os.utime(path)  # same bytes, new mtime
    assert watch.poll() is False
    assert seen == [ConfigFileChanged()]


def test_a_change_made_after_the_starting_fingerprint_is_seen(tmp_path):
    path = kubelet_volume(tmp_path, yaml.safe_dump(RAW), 1)
    seen = fingerprint(path)
    kubelet_volume(tmp_path, yaml.safe_dump(with_(nextHop="self")), 2)  # while the controller was starting
    events: list[object] = []
    assert ConfigFileWatch(str(path), events.append, seen=seen).poll() is True
    assert events == [ConfigFileChanged()]


def test_the_watch_keeps_quiet_while_the_file_is_missing(tmp_path):
    seen: list[object] = []
    watch = ConfigFileWatch(str(tmp_path / "absent.yaml"), seen.append)
    assert watch.poll() is False
    assert seen == []


# -- the reloader ------------------------------------------------------------------------------------------------


def reloader(tmp_path: Path, counted: list[str]) -> tuple[Reloader, Path]:
    path = tmp_path / "bgpadv.yaml"
    runtime = tmp_path / "run"
    runtime.mkdir()
    return Reloader(str(path), ARGV, runtime, counted=counted.append), path


def test_an_invalid_file_is_refused_and_counted(tmp_path):
    counted: list[str] = []
    r, path = reloader(tmp_path, counted)
    path.write_text(yaml.safe_dump(with_(localASN="not a number")))
    assert r.load() is None
    assert counted == ["refused"]
    path.write_text("peers: [")
    assert r.load() is None
    assert counted == ["refused", "refused"]


def test_a_controller_starting_on_an_invalid_file_runs_the_last_good_one(tmp_path):
    counted: list[str] = []
    r, path = reloader(tmp_path, counted)
    path.write_text(yaml.safe_dump(RAW))
    assert r.start_config() == parse(RAW)
    assert (tmp_path / "run" / LAST_GOOD).read_text() == yaml.safe_dump(RAW)
    path.write_text(yaml.safe_dump(with_(localASN=-1)))
    assert r.start_config() == parse(RAW)
    assert counted == ["refused"]


def test_without_a_last_good_configuration_an_invalid_file_cannot_start(tmp_path):
    r, path = reloader(tmp_path, [])
    path.write_text(yaml.safe_dump(with_(localASN=-1)))
    assert r.start_config() is None


def test_a_peer_change_rewrites_exabgps_configuration_and_signals_its_reload(tmp_path, monkeypatch):
    r, _ = reloader(tmp_path, [])
    (tmp_path / "run" / "exabgp.pid").write_text("4242\n")
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    new = parse(with_(peers=[{"address": "10.0.0.1", "asn": 64512}, {"address": "10.0.0.2", "asn": 64512}]))
    assert r.reload_exabgp(new) is True
    conf = tmp_path / "run" / "exabgp.conf"
    assert conf.read_text() == render(new)
    assert conf.stat().st_mode & 0o777 == 0o600
    assert sent == [(4242, signal.SIGUSR1)]


def test_the_reload_signal_is_repeated_because_exabgp_may_drop_it(tmp_path, monkeypatch):
    """ExaBGP 5.0 forgets a SIGUSR1 that comes while it handles the previous one or while some peer has updates
    queued; reloading an unchanged file keeps every session, so the signal is simply repeated a few times."""
    r, _ = reloader(tmp_path, [])
    now = [100.0]
    r.clock = lambda: now[0]
    (tmp_path / "run" / "exabgp.pid").write_text("4242\n")
    sent: list[float] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append(now[0]))
    assert r.reload_exabgp(parse(with_(peers=[{"address": "10.0.0.1", "asn": 64512}])))
    for _ in range(400):  # the controller's timers, every 0.25 s for 100 s
        now[0] += 0.25
        r.tick()
    assert [round(t - 100.0, 1) for t in sent] == [0.0, *r.resignal_after]
    r.tick()
    assert len(sent) == 1 + len(r.resignal_after)  # then no more, until the next reload


# -- the controller ---------------------------------------------------------------------------------------------------

CUDN = SERVICE_CUDN  # the controller tests' realistic Layer2 network (tests/unit/runtime/test_controller.py)


def running_controller(tmp_path: Path, counted: list[str], importer: object = None) -> tuple[Controller, Path]:
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(RAW))
    speaker = RecordingSpeaker()
    c = Controller(
        parse(RAW),
        speaker=speaker,
        sources=RecordingSources(),
        observer=RecordingObserver(),
        settings=LoopSettings(coalesce_window=0.0),
        reloader=Reloader(str(path), counted=counted.append),  # no runtime directory: not under `bgpadv run`
        importer=importer,  # type: ignore[arg-type]
    )
    c.queue.put(WatchEvent(resources.CUDN, "ADDED", CUDN, time.monotonic(), None))
    for res in watched_resources(parse(RAW)):
        c.queue.put(WatchEvent(res, "SYNCED", None, time.monotonic(), None))
    c.step()
    return c, path


def communities(c: Controller) -> set[tuple[str, ...]]:
    return {r.attributes.communities for routes in c.speaker.desired[-1].values() for r in routes}


def test_a_live_change_replans_with_the_new_attributes_and_keeps_the_controller(tmp_path):
    counted: list[str] = []
    c, path = running_controller(tmp_path, counted)
    assert communities(c) == {()}
    path.write_text(yaml.safe_dump(with_(attributes={"communities": ["64513:100"]})))
    c.queue.put(ConfigFileChanged())
    assert c.step() is True
    assert communities(c) == {("64513:100",)}
    assert (counted, c.restart_requested) == (["applied"], False)


def test_a_live_change_withdraws_what_it_deselects_at_once(tmp_path):
    c, path = running_controller(tmp_path, [])
    assert [str(r.prefix) for r in c.speaker.desired[-1]["10.0.0.1"]] == ["192.168.100.0/24"]
    path.write_text(yaml.safe_dump(with_(networks={"selector": {"matchLabels": {"tier": "gold"}}})))
    c.queue.put(ConfigFileChanged())
    c.step()
    assert c.speaker.desired[-1] == {"10.0.0.1": ()}, "a deliberate edit is not held back as a bulk withdrawal"


def test_an_invalid_change_keeps_the_running_configuration(tmp_path):
    counted: list[str] = []
    c, path = running_controller(tmp_path, counted)
    plans = len(c.speaker.desired)
    path.write_text(yaml.safe_dump(with_(peers="nope")))
    c.queue.put(ConfigFileChanged())
    assert c.step() is True
    assert (c.config, len(c.speaker.desired), counted) == (parse(RAW), plans, ["refused"])


def test_a_change_only_a_new_controller_can_apply_ends_the_loop(tmp_path):
    c, path = running_controller(tmp_path, [])
    path.write_text(yaml.safe_dump(with_(metrics={"listen": "0.0.0.0:9200"})))
    c.queue.put(ConfigFileChanged())
    assert c.step() is False
    assert c.restart_requested is True


class RecordingImporter:
    """The controller's side of the egress importer: the selected networks it is handed."""

    def __init__(self) -> None:
        self.selected: list[set[str]] = []

    def tick(self, now: float) -> None:
        pass

    def set_networks(self, networks: dict, now: float, node_addresses=None) -> None:
        self.selected.append(set(networks))


def test_a_live_change_of_the_selection_reaches_the_egress_importer(tmp_path):
    importer = RecordingImporter()
    c, path = running_controller(tmp_path, [], importer)
    assert importer.selected and importer.selected[-1], "the first plan hands the selected network to the importer"
    path.write_text(yaml.safe_dump(with_(networks={"selector": {"matchLabels": {"tier": "gold"}}})))
    c.queue.put(ConfigFileChanged())
    c.step()
    assert importer.selected[-1] == set(), "the deselected network's VRF table is no longer the importer's to fill"
