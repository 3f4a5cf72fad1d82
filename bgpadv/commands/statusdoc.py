"""The shape of what a running instance serves on `/status` and `/sent`, as `bgpadv status` and `explain --status-url`
read it (through `bgpadv.commands.statusclient`, which fetches it): checked at the edge.

An answer is bounded (`MAX_BODY` bytes), parsed as strict JSON (no `NaN` or `Infinity`) and checked
against the shape the instance writes (`bgpadv.observe.readiness`, `metrics_observer`, `importer.reconciler`): every
key the commands read has its type, every string is at most `MAX_TEXT` characters, every count is a whole number
from 0 to 2^53, every time a finite Unix time before the year 10000, every duration finite and not negative. Keys the
commands do not read are kept as they are (a newer instance may add some). A document of another shape raises
`BadDocument` naming the first wrong field (`peers["tor-a"].asn: must be a whole number, got "x"`): the command says
so and exits 2 (`bgpadv.commands.statusclient.refuse`), never with a traceback and never printing half a table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from bgpadv.core.bounded import brief

MAX_BODY = 16 * 1024 * 1024
"""At most this many bytes of an answer are read; a longer one is refused."""
MAX_TEXT = 4096
"""The longest string accepted in a document (names, reasons, messages: an instance writes at most 512)."""
MAX_COUNT = 2**53
MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z: what datetime can print


class BadDocument(ValueError):
    """The answer is not the document an instance writes; the message names the first wrong field."""


Check = Callable[[Any, str], Any]


def _fail(path: str, rule: str, value: object) -> BadDocument:
    return BadDocument(f"{path or 'the document'}: must be {rule}, got {brief(value, 60)}")


def text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, "a string", value)
    if len(value) > MAX_TEXT:
        raise BadDocument(f"{path}: a string of {len(value)} characters, longer than {MAX_TEXT}")
    return value


def flag(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, "true or false", value)
    return value


def count(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise _fail(path, f"a whole number from 0 to {MAX_COUNT}", value)
    return value


def seconds(value: Any, path: str) -> float:
    """A duration: a finite number, not negative."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_TIME:
        raise _fail(path, "a number of seconds from 0 to the year 9999", value)
    return float(value)


def wall(value: Any, path: str) -> float:
    """A Unix time, printable as a date."""
    return seconds(value, path)


def optional(check: Check) -> Check:
    def inner(value: Any, path: str) -> Any:
        return None if value is None else check(value, path)

    return inner


def either(rule: str, *checks: Check) -> Check:
    """The first of `checks` that accepts the value; `rule` names them all when none does."""

    def inner(value: Any, path: str) -> Any:
        for check in checks:
            try:
                return check(value, path)
            except BadDocument:
                continue
        raise _fail(path, rule, value)

    return inner


def listing(check: Check) -> Check:
    def inner(value: Any, path: str) -> list[Any]:
        if not isinstance(value, list):
            raise _fail(path, "a list", value)
        return [check(item, f"{path}[{i}]") for i, item in enumerate(value)]

    return inner


def mapping(check: Check) -> Check:
    """A JSON object of any keys (names) to values of one shape."""

    def inner(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _fail(path, "a mapping", value)
        return {text(k, f"{path} key"): check(v, f"{path}[{json.dumps(k)}]") for k, v in value.items()}

    return inner


def record(required: Sequence[str] = (), /, **fields: Check) -> Check:
    """A JSON object with these keys, each optional (absent: the commands' defaults) unless `required`; other keys
    kept as they are."""

    def inner(value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _fail(path, "a mapping", value)
        for key in required:
            if key not in value:
                raise BadDocument(f"{path or 'the document'}: the key {key} is missing")
        out = dict(value)
        for key, check in fields.items():
            if key in value:
                out[key] = check(value[key], f"{path}.{key}" if path else key)
        return out

    return inner


_TEXT = optional(text)
_COUNT = optional(count)
_CODE = optional(either("a whole number or a string", count, text))
NOTE = optional(record(time=optional(wall), message=_TEXT, direction=_TEXT, code=_CODE, subcode=_CODE))
PEER = record(
    state=_TEXT,
    bgp_state=_TEXT,
    since=optional(wall),
    uptime_seconds=optional(seconds),
    asn=_COUNT,
    local_asn=_COUNT,
    address=_TEXT,
    interface=_TEXT,
    extended_next_hop=optional(flag),
    node=_TEXT,
    routes_sent=_COUNT,
    routes_advertised=_COUNT,
    routes_received=_COUNT,
    routes_refused=_COUNT,
    prefixes_announced=_COUNT,
    prefixes_withdrawn=_COUNT,
    bfd=_TEXT,
    last_error=NOTE,
    last_notification=NOTE,
)
"""One session, as `/status` serves it under `peers` and `bgpadv status --all` reads it back from the API."""
_READY = optional(record(ok=optional(flag), reason=_TEXT))
_ROUTES = mapping(listing(text))
IMPORT = record(
    complete=optional(flag),
    learned=optional(mapping(mapping(_TEXT))),
    networks=optional(
        mapping(
            record(
                vrf=_TEXT,
                table=_COUNT,
                desired=optional(_ROUTES),
                installed=optional(_ROUTES),
                refused=optional(mapping(count)),
                refusals=optional(
                    listing(record(peer=_TEXT, prefix=_TEXT, nextHop=_TEXT, reason=_TEXT, message=_TEXT))
                ),
            )
        )
    ),
)
STATUS = record(
    version=_TEXT,
    time=optional(wall),
    ready=_READY,
    alive=_READY,
    last_sync=optional(wall),
    last_plan=optional(wall),
    peers=optional(mapping(PEER)),
    placement=optional(
        record(
            node=_TEXT,
            serves=optional(listing(text)),
            notServed=optional(listing(record(peer=_TEXT, nodeSelector=_TEXT))),
            waitingForLink=optional(
                listing(
                    record(
                        peer=_TEXT,
                        interface=_TEXT,
                        reason=_TEXT,
                        waitingSeconds=optional(seconds),
                        attempts=optional(count),
                        nextAttemptSeconds=optional(seconds),
                    )
                )
            ),
        )
    ),
    routes=optional(
        listing(
            record(
                ("network", "family", "kind", "count"),
                peer=_TEXT,
                network=text,
                family=either("a string or a whole number", text, count),
                kind=text,
                count=count,
            )
        )
    ),
    routes_total=_COUNT,
    routes_planned=_COUNT,
    refusals=_COUNT,
    held=optional(record(routes=optional(mapping(_COUNT)), resources=optional(listing(text)))),
    convergence=optional(
        mapping(
            record(
                samples=_COUNT,
                p50=optional(seconds),
                p90=optional(seconds),
                p99=optional(seconds),
                max=optional(seconds),
            )
        )
    ),
    pending=optional(mapping(count)),
    **{"import": optional(IMPORT)},
)
"""The `/status` document: what `bgpadv status` and `explain --status-url` read of it."""
SENT = record(prefixes=optional(mapping(mapping(record(at=_TEXT, action=_TEXT, causeReceivedAt=_TEXT)))))
"""The `/sent` answer: prefix → peer → its last acknowledged send."""


def _constant(name: str) -> float:
    raise BadDocument(f"{name} is not a JSON number")


def decode(body: bytes, shape: Check = STATUS) -> dict[str, Any]:
    """`body` parsed as strict JSON and checked against `shape`; BadDocument otherwise."""
    if len(body) > MAX_BODY:
        raise BadDocument(f"longer than {MAX_BODY} bytes")
    try:
        doc = json.loads(body.decode("utf-8"), parse_constant=_constant)
    except UnicodeDecodeError as e:
        raise BadDocument(f"not UTF-8: {e.reason}") from None
    except RecursionError:
        raise BadDocument("nested too deep") from None
    except json.JSONDecodeError as e:
        raise BadDocument(f"not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    checked: dict[str, Any] = shape(doc, "")
    return checked
