"""The controller's typed seams (bgpadv.runtime.seams, bgpadv.observe.observers): the real classes and every test
double implement
them, and a part that lacks something its seam declares is refused when the controller is built, instead of being
probed for (`getattr(..., None)`) later.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from bgpadv.config import Config, parse
from bgpadv.observe.events import EventRecorder
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.observe.observers import (
    ControllerObserver,
    Fanout,
    NullObserver,
    Observer,
    PlannerObserver,
    SourcesObserver,
    SpeakerObserver,
)
from bgpadv.runtime.controller import Controller
from bgpadv.runtime.seams import ControllerSources, ControllerSpeaker
from bgpadv.sources.watches import Sources
from bgpadv.speaker.session import Speaker
from tests.doubles import RecordingObserver, RecordingSources, RecordingSpeaker

RAW = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


def config() -> Config:
    """RAW parsed, afresh for each caller."""
    return parse(RAW)


def test_the_real_speaker_and_the_recording_double_implement_the_speaker_seam():
    assert isinstance(Speaker.from_config(config(), lambda line: None), ControllerSpeaker)
    assert isinstance(RecordingSpeaker(), ControllerSpeaker)


def test_the_real_sources_and_the_recording_double_implement_the_sources_seam():
    assert isinstance(Sources(client.ApiClient(), (), lambda event: None), ControllerSources)
    assert isinstance(RecordingSources(), ControllerSources)


@pytest.mark.parametrize("seam", [SourcesObserver, PlannerObserver, SpeakerObserver, ControllerObserver, Observer])
def test_every_observer_implements_every_observer_seam(seam):
    metrics = MetricsObserver(Metrics(process_collectors=False))
    events = EventRecorder(client.ApiClient())
    for observer in (metrics, events, NullObserver(), RecordingObserver(), Fanout(metrics, events)):
        assert isinstance(observer, seam), type(observer).__name__


class SpeakerWithoutClosed:
    """A double written before ExaBGP's shutdown notice existed: everything but `closed`."""

    ready = True
    needs_retry = False

    def held(self, peer: str) -> tuple[()]:
        return ()

    def start(self) -> None:
        pass

    def set_desired(self, desired, cause=None) -> None:
        pass

    def handle_line(self, line: str, at: float | None = None) -> None:
        pass

    def resync(self) -> None:
        pass

    def drain(self) -> None:
        pass


def test_a_speaker_double_lacking_what_the_real_speaker_has_is_refused():
    with pytest.raises(TypeError, match=r"the speaker SpeakerWithoutClosed does not implement .*'closed'"):
        Controller(config(), speaker=SpeakerWithoutClosed(), sources=RecordingSources())


class SourcesWithoutRelist:
    def __init__(self) -> None:
        self.synced = True

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


def test_sources_that_cannot_relist_are_refused():
    with pytest.raises(TypeError, match=r"the sources SourcesWithoutRelist does not implement .*'relist'"):
        Controller(config(), speaker=RecordingSpeaker(), sources=SourcesWithoutRelist())


class OnlyPlanned:
    def planned(self, plan, cause, seconds, full_resync) -> None:
        pass


def test_an_observer_implementing_one_seam_only_is_refused_by_the_controller_and_the_fanout():
    with pytest.raises(TypeError, match="does not implement Observer"):
        Controller(config(), speaker=RecordingSpeaker(), sources=RecordingSources(), observer=OnlyPlanned())
    with pytest.raises(TypeError, match=r"OnlyPlanned does not implement bgpadv\.observe\.observers\.Observer"):
        Fanout(NullObserver(), OnlyPlanned())


class Failing(NullObserver):
    def heartbeat(self) -> None:
        raise RuntimeError("observer bug")


def test_the_fanout_hands_each_observation_to_every_observer_and_a_failing_one_stops_nobody():
    first, last = RecordingObserver(), RecordingObserver()
    Fanout(first, Failing(), last).heartbeat()
    assert (first.heartbeats, last.heartbeats) == (1, 1)
