"""The user guide as the tests read it: README.md and every page under docs/.

A fact a test pins (a code block, a table row, a default) may live on any page; `text()` is all of them, `page()` one
page, `code_block()` the one block, on whichever page, whose first line starts with a given comment.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def page(name: str) -> str:
    return (DOCS / name).read_text()


def text() -> str:
    return "\n".join(p.read_text() for p in pages())


def code_block(first: str) -> str:
    """The fenced block whose first line starts with `first` (a `# path` comment), without the fences: exactly one."""
    found = re.findall(r"^```\w*\n(" + re.escape(first) + r"\b.*?)^```$", text(), re.MULTILINE | re.DOTALL)
    assert len(found) == 1, f"{len(found)} blocks in README.md and docs/ start with {first!r}"
    return found[0]
