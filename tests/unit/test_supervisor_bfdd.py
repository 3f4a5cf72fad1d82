"""The supervisor's bfdd (`bgpadv.runtime.supervisor.Bfdd`) against fake bfdd binaries (`BGPADV_BFDD`): a bfdd that
exits at start-up for want of capabilities (FRR 8.4's `privs_init` failure, as measured in a non-root pod without
them) is reported once and never restarted; any other death is restarted with backoff. The real bfdd:
tests/lab/test_bfd.py.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from bgpadv.core import runfiles
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.runtime.shim import Backoff
from bgpadv.runtime.supervisor import Bfdd, missing_capabilities
from bgpadv.speaker import bfd

# what FRR 8.4.4's bfdd prints before exiting 1, run by a non-root user without file capabilities
NO_CAPS = [
    "privs_init: initial cap_set_proc failed: Operation not permitted",
    "Wanted caps: cap_net_bind_service,cap_net_raw,cap_sys_admin=p",
    "Have caps: =",
]


def fake_bfdd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str], code: int = 1) -> Path:
    """A `bfdd` printing `lines` on stderr and exiting with `code`; each start appends a line to `starts`."""
    starts = tmp_path / "starts"
    script = tmp_path / "fake-bfdd"
    echoes = "\n".join(f"echo '{line}' >&2" for line in lines)
    script.write_text(f"#!/bin/sh\necho started >> {starts}\n{echoes}\nexit {code}\n")
    script.chmod(0o755)
    monkeypatch.setenv(bfd.BFDD_BINARY_ENV, str(script))
    return starts


def run_for(bfdd: Bfdd, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        bfdd.poll(time.monotonic())
        time.sleep(0.02)


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    (d / runfiles.BFD_WANTED).touch()  # the controller asks for bfdd
    return d


def test_a_bfdd_without_its_capabilities_is_reported_once_and_not_restarted(tmp_path, runtime, monkeypatch, caplog):
    starts = fake_bfdd(tmp_path, monkeypatch, NO_CAPS)
    bfdd = Bfdd(runtime, {}, backoff=Backoff(first=0.01, cap=0.01, healthy_after=60.0))
    with caplog.at_level(logging.ERROR, logger="bgpadv.lifecycle"):
        run_for(bfdd, 1.5)  # a restarting supervisor would have started it ~50 times
    assert starts.read_text().splitlines() == ["started"]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "cap_net_bind_service,cap_net_raw,cap_sys_admin" in errors[0]
    assert "allowPrivilegeEscalation: true" in errors[0] and "setcap" in errors[0]
    assert bfdd.gave_up == errors[0]
    assert (runtime / runfiles.BFDD_FAILED).read_text().strip() == errors[0]


def test_a_bfdd_dying_for_another_reason_is_restarted_with_backoff(tmp_path, runtime, monkeypatch):
    starts = fake_bfdd(tmp_path, monkeypatch, ["bfdd: some other start-up error"])
    bfdd = Bfdd(runtime, {}, backoff=Backoff(first=0.01, cap=0.01, healthy_after=60.0))
    run_for(bfdd, 1.0)
    bfdd.stop()
    assert len(starts.read_text().splitlines()) >= 2
    assert bfdd.gave_up is None
    assert not (runtime / runfiles.BFDD_FAILED).exists()


@pytest.mark.parametrize(
    ("have", "missing"),
    [
        ("Have caps: =", ["cap_net_bind_service", "cap_net_raw", "cap_sys_admin"]),
        ("Have caps: cap_net_bind_service,cap_net_raw=p", ["cap_sys_admin"]),
    ],
)
def test_the_missing_capabilities_are_those_wanted_less_those_held(have, missing):
    assert missing_capabilities([*NO_CAPS[:2], have]) == missing


def test_an_output_without_the_privs_failure_names_no_capabilities():
    assert missing_capabilities(["bfdd: vty socket in use", "Wanted caps: cap_net_raw=p"]) is None


def test_the_bfd_client_finds_the_supervisors_reason_and_sets_the_cannot_start_gauge(tmp_path):
    (tmp_path / runfiles.BFDD_FAILED).write_text("bfdd cannot start: it lacks the capabilities cap_sys_admin\n")
    metrics = MetricsObserver(Metrics(process_collectors=False))
    metrics.bfd_peers(["tor-a"])
    control = bfd.BfdControl(tmp_path / "bfdd" / "bfdd.sock", bfd.BfdStates(), retry=0.01)
    control.failed_file = tmp_path / runfiles.BFDD_FAILED
    reasons: list[str] = []
    control.on_bfdd_failed = lambda reason: (reasons.append(reason), metrics.bfdd_failed(reason))
    control.start()
    try:
        deadline = time.monotonic() + 5
        while not reasons and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # more reconnect attempts: still one report
    finally:
        control.stop()
    assert reasons == ["bfdd cannot start: it lacks the capabilities cap_sys_admin"]
    registry = metrics.metrics.registry
    assert registry.get_sample_value("bgpadv_bfdd_cannot_start") == 1
    assert registry.get_sample_value("bgpadv_bfd_session_up", {"peer": "tor-a"}) == 0
