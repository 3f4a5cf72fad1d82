"""Text from the cluster (or from a remote /status document) made safe to print in a table for people.

`printable(text)` returns `text` unchanged when every character is printable (`str.isprintable`: letters, digits,
punctuation, symbols, the plain space) and contains no backslash; otherwise every other character is escaped
visibly, as Python writes it in a string literal: a newline becomes `\\n`, a carriage return `\\r`, a tab `\\t`, an
ANSI escape `\\x1b`, a right-to-left override `\\u202e`, a backslash `\\\\` (so an escape written by the cluster
cannot pose as one of ours). A value can then never start a new table line, move the cursor, recolour the terminal
or reorder what follows it. JSON output never goes through here: it stays exact (json escapes by itself).
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    if char.isprintable():
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: object) -> str:
    """`text` (made a string with `str`) with every non-printable character and backslash escaped visibly."""
    value = text if isinstance(text, str) else str(text)
    if value.isprintable() and "\\" not in value:
        return value
    return "".join(_escape(c) for c in value)
