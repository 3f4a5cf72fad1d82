"""Everything the commands print for people passes here: text from the cluster, a configuration, a query or a
remote `/status` document made safe to print.

Two filters, one rule (`shown`). A character is printed as itself only when `str.isprintable` says so (letters,
digits, punctuation, symbols, marks and the plain space) and a terminal draws it as something (not one of the
fillers, variation selectors and joiners of `_INVISIBLE`). Every other character is written visibly, as Python
writes it in a string literal: a newline `\\n`, a carriage return `\\r`, a tab `\\t`, any other C0 or C1
control, DEL and ESC as `\\x1b`, `\\x7f`, `\\x9b`; a format character (the bidi embeddings, overrides and
isolates U+202A-U+202E and U+2066-U+2069, the marks U+200E, U+200F and U+061C, zero-width characters, tag
characters) as `\\u202e` or `\\U000e0041`; the line and paragraph separators U+2028/U+2029 and every space other
than U+0020 (which the terminal would show as a blank) as `\\u2028`, `\\u00a0`; a lone surrogate as `\\ud800`;
a private-use or unassigned code point the same way. A value can then never start a new line, return to the start
of one, move the cursor, recolour or retitle the terminal, reorder what follows it, or make the output
unencodable.

- `printable(value)`: one value (a cell, a name, a message): also a backslash is doubled, so that an escape
  written by the cluster cannot pose as one of ours.
- `printable_line(line)` and the writers `write_lines`, `write_text`, `join_lines`: the last filter at the output
  boundary, applied to every line the commands write whatever it holds (backslashes as they are: the values in it
  were made printable already). A value that was not passed through `printable` still cannot forge a line: a line
  is one element of a list, and a newline inside it is written `\\n`.

JSON output goes through `write_json`: exact (nothing escaped beyond what JSON escapes) and pure ASCII.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Protocol

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}

_INVISIBLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]")
"""The default-ignorable code points `str.isprintable` calls printable (fillers, variation selectors, the combining
grapheme joiner): a terminal shows them as nothing, so two different names would print alike."""


class Writable(Protocol):
    """A text stream (sys.stdout, sys.stderr, io.StringIO)."""

    def write(self, text: str, /) -> object: ...


def shown(char: str) -> bool:
    """True when `char` is printed as itself (by both filters; a backslash is doubled by `printable` only)."""
    return char.isprintable() and not _INVISIBLE.match(char)


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    if shown(char):
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _visible(char: str) -> str:
    """`char` itself when printable (a backslash too), else its escape."""
    return char if shown(char) else _escape(char)


def printable(text: object) -> str:
    """`text` (made a string with `str`) with every non-printable character and backslash escaped visibly."""
    value = text if isinstance(text, str) else str(text)
    if value.isprintable() and "\\" not in value and (value.isascii() or not _INVISIBLE.search(value)):
        return value
    return "".join(_escape(c) for c in value)


def printable_line(text: str) -> str:
    """One output line with every non-printable character escaped (a newline in it too); backslashes kept as they
    are, so text already passed through `printable` is unchanged."""
    if text.isprintable() and (text.isascii() or not _INVISIBLE.search(text)):
        return text
    return "".join(_visible(c) for c in text)


def join_lines(lines: Iterable[str]) -> str:
    """`lines` as text: each made one printable line (`printable_line`), each ending in a newline."""
    return "".join(printable_line(line) + "\n" for line in lines)


def write_lines(stream: Writable, lines: Iterable[str]) -> None:
    """Write `lines` to `stream`, each one printable line."""
    stream.write(join_lines(lines))


def write_line(stream: Writable, line: str) -> None:
    """Write one printable line (a message: `path: problem`, `warning: …`) to `stream`."""
    write_lines(stream, (line,))


def write_text(stream: Writable, text: str) -> None:
    """Write text rendered for people (`join_lines`): its own newlines separate lines, anything else non-printable
    is escaped, and it ends in a newline."""
    if text:
        write_lines(stream, text.removesuffix("\n").split("\n"))


def write_json(stream: Writable, document: object, *, indent: int | None = 2, sort_keys: bool = False) -> None:
    """Write `document` as JSON: every string exact, every character outside printable ASCII escaped by JSON."""
    stream.write(json.dumps(document, indent=indent, sort_keys=sort_keys, ensure_ascii=True) + "\n")
