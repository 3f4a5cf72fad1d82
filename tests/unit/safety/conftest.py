"""Fixtures the safety tests share."""

from __future__ import annotations

import pytest

from tests.doubles import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    """The hold's clock, moved by hand from monotonic second 1000."""
    return ManualClock(1000.0)
