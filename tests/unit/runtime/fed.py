"""A controller fed by hand: the real loop, store, planner and guard, with one recording peer around them.

Shared by the controller's tests that drive fail static through watch events and LISTs.
"""

from __future__ import annotations

from bgpadv.config import Config
from bgpadv.core import resources
from bgpadv.runtime.controller import Controller, LoopSettings
from bgpadv.sources.reflector import WatchEvent
from tests.doubles import ManualClock, OnePeerSpeaker, RecordingObserver, RecordingSources


class FedController:
    """`c` is the controller; tests put events on its queue, `synced` completes a LIST, `step` runs one iteration
    of the loop over what was delivered (and the timers, on `clock`)."""

    def __init__(self, config: Config, clock: ManualClock, peer: str, resync_interval: float) -> None:
        self.clock = clock
        self.observer = RecordingObserver()
        self.c = Controller(
            config,
            speaker=OnePeerSpeaker(peer),
            sources=RecordingSources(),
            observer=self.observer,
            settings=LoopSettings(coalesce_window=0.0, resync_interval=resync_interval),
            clock=clock,  # the timers' and the withdrawal hold's
        )

    def step(self) -> None:
        assert self.c.step()

    def synced(self, res: resources.Resource, listed_at: float | None = None) -> None:
        at = self.clock.now if listed_at is None else listed_at
        self.c.queue.put(WatchEvent(res, "SYNCED", None, self.clock.now, None, listed_at=at))

    @property
    def handed(self) -> list[str]:
        """The prefixes the speaker was last handed."""
        return self.c.speaker.desired[-1]

    @property
    def history(self) -> list[list[str]]:
        """Every set of prefixes the speaker was handed, oldest first."""
        return self.c.speaker.desired
