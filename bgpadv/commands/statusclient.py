"""The one HTTP client in the commands: what a running instance's metrics listener serves on `/status` and `/sent`,
read by `bgpadv status` and `bgpadv explain --status-url`.

Each request has one timeout (`TIMEOUT` seconds), reads at most `statusdoc.MAX_BODY` bytes and checks the answer
against the document the instance writes (`bgpadv.commands.statusdoc`). Every way it can fail ends in one of two
errors, each one line ready to print: `Unreachable` (no answer: refused, timed out, an HTTP error such as an older
instance's 404 for `/sent`, a URL that is no HTTP URL), which a command reports and carries on from or exits 1 on,
and `NotTheDocument` (an answer of another shape), which `refuse` says on stderr and ends with exit 2.
"""

from __future__ import annotations

import sys
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from bgpadv.commands import statusdoc
from bgpadv.core.printable import printable, write_line

TIMEOUT = 5.0
"""Seconds to connect and for each read, per request."""
EXIT_NOT_THE_DOCUMENT = 2


class Unreachable(Exception):
    """The instance gave no answer at `where`; the message is why (the connection's or the HTTP error's text)."""

    def __init__(self, where: str, reason: object) -> None:
        super().__init__(str(reason))
        self.where = where


class NotTheDocument(Exception):
    """The answer at `where` is not the document an instance writes; the message names the URL and the first wrong
    field, in one printable line."""


def endpoint(url: str, path: str) -> str:
    """`path` (`/status`, `/sent?...`) of the instance whose metrics listener is at `url`."""
    return url.rstrip("/") + path


def _get(where: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(where, timeout=timeout) as resp:
            body: bytes = resp.read(statusdoc.MAX_BODY + 1)
            return body
    except (OSError, ValueError) as e:  # URLError and HTTPError are OSErrors; an unknown URL type a ValueError
        raise Unreachable(where, e) from None


def _read(where: str, shape: statusdoc.Check, what: str, timeout: float) -> dict[str, Any]:
    body = _get(where, timeout)
    try:
        return statusdoc.decode(body, shape)
    except statusdoc.BadDocument as e:
        raise NotTheDocument(f"{printable(where.partition('?')[0])} is not a bgpadv {what}: {e}") from None


def status(url: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    """The `/status` document of the instance at `url` (its metrics listener's base URL), checked
    (`statusdoc.STATUS`). Unreachable or NotTheDocument."""
    return _read(endpoint(url, "/status"), statusdoc.STATUS, "/status document", timeout)


def sent(url: str, prefixes: Sequence[str], timeout: float = TIMEOUT) -> dict[str, Any]:
    """`/sent` of the instance at `url`: prefix -> peer -> its last acknowledged send (`bgpadv.speaker.sent`).
    An instance older than the endpoint answers 404: Unreachable. NotTheDocument for an answer of another shape."""
    query = urllib.parse.urlencode([("prefix", p) for p in prefixes])
    found: dict[str, Any] = _read(endpoint(url, "/sent?" + query), statusdoc.SENT, "/sent answer", timeout)
    return found.get("prefixes") or {}


def refuse(command: str, error: NotTheDocument) -> int:
    """Say on stderr, in one line after `command` (`bgpadv status`), that an answer is not the instance's document;
    the exit code that goes with it."""
    write_line(sys.stderr, f"{command}: {error}")
    return EXIT_NOT_THE_DOCUMENT
