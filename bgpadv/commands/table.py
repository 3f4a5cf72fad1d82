"""Aligned tables for people, as `render` and `explain` print them: a header line, then one line per row, every
column as wide as its widest cell, two spaces between columns and before the first, no trailing blanks.

A table is declared as a tuple of `Column`s (a header and how one item gives its cell), so a column is added, moved or
dropped in one place. Every cell becomes text here, through `bgpadv.core.printable`: no value printed in a table
can start a line or steer the terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from bgpadv.core.printable import printable

T = TypeVar("T")
INDENT = "  "


@dataclass(frozen=True, slots=True)
class Column(Generic[T]):
    """One column: its header, the cell an item gives (any object: made printable text by the table), and whether
    its cells align right (counts) rather than left."""

    header: str
    cell: Callable[[T], object]
    right: bool = False


def headers(columns: Sequence[Column[T]]) -> tuple[str, ...]:
    return tuple(c.header for c in columns)


def cells(row: Iterable[object]) -> tuple[str, ...]:
    """Every cell of a row made printable: the one place a cell becomes text."""
    return tuple(printable(c) for c in row)


def rows(columns: Sequence[Column[T]], items: Iterable[T]) -> list[tuple[str, ...]]:
    """One printable row per item, a cell per column."""
    return [cells(c.cell(item) for c in columns) for item in items]


def widths(header: Sequence[str], found: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width: its widest cell or its header."""
    return [max([len(h), *(len(r[i]) for r in found)]) for i, h in enumerate(header)]


def line(row: Sequence[str], sizes: Sequence[int], indent: str = INDENT, right: Sequence[bool] = ()) -> str:
    """One line of cells padded to `sizes`, left-aligned unless `right` says so for that column."""
    flags = right or [False] * len(sizes)
    padded = (c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, sizes, flags, strict=True))
    return (indent + "  ".join(padded)).rstrip()


def aligned(header: Sequence[str], found: Sequence[Sequence[object]]) -> list[str]:
    """The header line and one line per row (cells made printable here), columns aligned."""
    printed = [cells(row) for row in found]
    sizes = widths(header, printed)
    return [line(row, sizes) for row in (header, *printed)]


def table(columns: Sequence[Column[T]], items: Iterable[T]) -> list[str]:
    """`aligned` for items under declared columns."""
    return aligned(headers(columns), [[c.cell(item) for c in columns] for item in items])
