"""Bounded text for values from untrusted documents: what an error message shows, formatted only as far as shown.

`repr` of a 40k-item list or a 10 MB string formats all of it before anyone can cut it; `brief` formats a few items
per container, a few levels, short strings and ints, then cuts at `limit` characters. Used by refusals
(`planner.checks.describe`) and configuration errors.
"""

from __future__ import annotations

import reprlib
from itertools import islice
from typing import Any

DEFAULT_LIMIT = 256


class _BoundedRepr(reprlib.Repr):
    """`repr` with small limits everywhere; dicts keep insertion order (reprlib sorts their keys)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 4
        self.maxdict = self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 8
        self.maxstring = self.maxother = 80
        self.maxlong = 80

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}" for k, v in islice(x.items(), self.maxdict)]
        if len(x) > self.maxdict:
            pieces.append("...")
        return "{" + ", ".join(pieces) + "}"

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 256:  # never convert a huge int to text in full (Python limits it to 4300 digits)
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_REPR = _BoundedRepr()


def brief(value: object, limit: int = DEFAULT_LIMIT) -> str:
    """`repr(value)` bounded to `limit` characters (plus "…"), formatting no more than it shows; never raises."""
    if isinstance(value, str) and len(value) > limit:
        value = value[: limit + 1]  # cut before quoting: repr of the rest would be thrown away
    try:
        text = _REPR.repr(value) if not isinstance(value, str) else repr(value)
    except Exception:  # a value whose __repr__ fails (never from JSON/YAML)
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


_MAX_VALUE_CHARS = 256


def describe(value: object) -> str:
    """The offending value as people should see it in a refusal: strings as written, others as repr; bounded to
    256 characters *before* formatting (a 40k-item list or a 10 MB string costs what is shown, not its size).
    Idempotent on its own output."""
    if isinstance(value, str):
        return value if len(value) <= _MAX_VALUE_CHARS else value[:_MAX_VALUE_CHARS] + "…"
    return brief(value, _MAX_VALUE_CHARS)
