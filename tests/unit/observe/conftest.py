"""Fixtures the observers' tests share."""

from __future__ import annotations

import pytest

from tests.doubles import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    """A clock the test moves by hand, at monotonic second 1000."""
    return ManualClock(1000.0)
