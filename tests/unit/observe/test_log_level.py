"""BGPADV_LOG_LEVEL: the documented levels, in any case, and an error at start for anything else.

Scope: `bgpadv.observe.logs.parse_level` and `setup_logging` (the levels debug, info, warning, error; empty is the
default, info), and `bgpadv run` with an unknown value: it exits before ExaBGP starts, naming the allowed values,
instead of silently logging at INFO.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bgpadv.observe.logs import LogLevelError, parse_level, setup_logging

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("value", "level"),
    [
        pytest.param("debug", logging.DEBUG, id="debug"),
        pytest.param("INFO", logging.INFO, id="upper-case"),
        pytest.param(" Warning ", logging.WARNING, id="blanks-around"),
        pytest.param("error", logging.ERROR, id="error"),
        pytest.param("", logging.INFO, id="empty-is-the-default"),
    ],
)
def test_the_documented_levels_are_taken_in_any_case(value: str, level: int) -> None:
    assert parse_level(value) == level


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("verbose", id="a-word-of-another-tool"),
        pytest.param("warn", id="an-abbreviation"),
        pytest.param("10", id="a-number"),
        pytest.param("critical", id="a-python-level-bgpadv-does-not-offer"),
    ],
)
def test_an_unknown_level_is_an_error_naming_the_allowed_values(value: str) -> None:
    before = logging.getLogger().level
    with pytest.raises(LogLevelError) as raised:
        setup_logging(value)
    assert str(raised.value) == (
        f"bgpadv: BGPADV_LOG_LEVEL={value!r} is not a log level: use one of debug, info, warning, error"
    )
    assert logging.getLogger().level == before  # nothing changed


def test_bgpadv_run_refuses_an_unknown_level_before_exabgp_starts(tmp_path: Path) -> None:
    env = {**os.environ, "BGPADV_LOG_LEVEL": "verbose", "BGPADV_NODE_IP": "127.0.0.1"}
    config = ROOT / "deploy" / "examples" / "bgpadv.yaml"
    runtime = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "bgpadv", "run", "--config", str(config), "--runtime-dir", str(runtime)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "bgpadv: BGPADV_LOG_LEVEL='verbose' is not a log level: use one of debug, info, warning, error"
    )
    assert not (runtime / "exabgp.pid").exists()  # ExaBGP never started
