"""Lab fixtures: a running Lab (FRR ToR, two workers, an external host) per test session, torn down by PID."""

from __future__ import annotations

import os
import shutil

import pytest

from bgpadv_lab.topology import Lab


def _lab_possible() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not shutil.which("ip") or not os.path.exists("/usr/lib/frr/bgpd"):
        return "needs iproute2 and FRR"
    return None


@pytest.fixture(scope="session")
def lab():
    reason = _lab_possible()
    if reason:
        pytest.skip(reason)
    with Lab("bgpsp") as running:
        yield running
