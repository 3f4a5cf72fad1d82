"""Structured logging: one JSON object per line with ts, level, logger, msg and the record's extra fields.

bgpadv runs as ExaBGP's API process, whose stdout is the command channel to ExaBGP: logs go to stderr, always.

The level comes from the environment variable `BGPADV_LOG_LEVEL` (`debug`, `info` — the default —, `warning`,
`error`; any case, surrounding blanks ignored), read by every process `bgpadv run` starts. Any other value is an
error at start (`LogLevelError`: the process exits with a message naming the allowed values), never a silent INFO: an
operator who asked for debug logs and got none would look for the problem in the wrong place.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged as a field.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
LEVEL_ENV = "BGPADV_LOG_LEVEL"


class LogLevelError(SystemExit):
    """An unknown log level: raised at start, it ends the process with its message on stderr (exit status 1)."""

    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(f"bgpadv: {LEVEL_ENV}={value!r} is not a log level: use one of {', '.join(LEVELS)}")


def parse_level(value: str) -> int:
    """The logging level a `BGPADV_LOG_LEVEL` value names; `LogLevelError` for anything else (an empty value is the
    default, info)."""
    key = value.strip().lower() or "info"
    if key not in LEVELS:
        raise LogLevelError(value)
    return LEVELS[key]


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line; values JSON cannot hold are written with str()."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_") and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """Human-readable lines for a terminal: `time level logger: msg key=value ...`."""

    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(
            f"{k}={v}" for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")
        )
        line = (
            f"{self.formatTime(record, '%H:%M:%S')} {record.levelname.lower():7} {record.name}: {record.getMessage()}"
        )
        if extras:
            line += " " + extras
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(level: str | int = "info", json: bool = True, stream: IO[str] | None = None) -> logging.Handler:
    """Configure the root logger once (replacing earlier bgpadv handlers); returns the handler installed. A level
    name that is not one of `LEVELS` raises `LogLevelError` before anything changes."""
    lvl = parse_level(level) if isinstance(level, str) else level
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json else TextFormatter())
    handler._bgpadv = True  # type: ignore[attr-defined]
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_bgpadv", False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(lvl)
    return handler
