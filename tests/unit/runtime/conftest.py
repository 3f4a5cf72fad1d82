"""Fixtures the controller's tests share."""

from __future__ import annotations

import pytest

from tests.doubles import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    """The controller's clock, moved by hand from the real clock's reading (events carry real receive times)."""
    return ManualClock()
