"""A relist forced by 410 Gone waits a random delay first, so that instances that lost their history together do
not LIST in lockstep.

Scope: `relist_delay`, the draw (uniform over [0, relist_spread), full jitter): 0 when no spread is set (cluster
mode lists at once); over a DaemonSet's worth of instances the delays fill the window evenly, none lands outside it,
and no short stretch of it gets much more than its share. Against the fake API, the reflectors' own relists after an
apiserver restart: tests/fakeapi/test_reflector.py.
"""

from __future__ import annotations

import random

import pytest

from bgpadv.sources.reflector import ReflectorSettings, relist_delay

SPREAD = 5.0


def delays(instances: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    settings = ReflectorSettings(relist_spread=SPREAD)
    return sorted(relist_delay(settings, rng.uniform) for _ in range(instances))


def test_without_a_spread_a_relist_starts_at_once() -> None:
    assert relist_delay(ReflectorSettings()) == 0.0


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed-{s}") for s in (1, 2, 3)])
def test_a_hundred_instances_spread_their_relists_over_the_whole_window(seed: int) -> None:
    ds = delays(100, seed)
    assert ds[0] >= 0.0 and ds[-1] < SPREAD
    assert ds[0] < 0.1 * SPREAD and ds[-1] > 0.9 * SPREAD  # the window is used end to end
    tenths = [sum(1 for d in ds if k * SPREAD / 10 <= d < (k + 1) * SPREAD / 10) for k in range(10)]
    assert all(3 <= n <= 20 for n in tenths), tenths  # about 10 each; never a lockstep bunch
    # at most a fifth of the fleet lists within any half second (the old behaviour: all within 0.25 s)
    assert max(sum(1 for d in ds if t <= d < t + 0.5) for t in ds) <= 20


def test_the_delays_are_independent_per_instance() -> None:
    ds = delays(2, 7)
    assert ds[0] != ds[1]
