"""`bgpadv example-config`: print the documented example configuration the package ships.

The file is package data (`bgpadv/data/bgpadv.example.yaml`, in the wheel): every key with its documentation, and a
placeholder peer that `bgpadv check-config` refuses until it is replaced with a real ToR, so a configuration started
from it never peers with an address nobody chose.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import IO

from bgpadv.core.printable import write_text

EXAMPLE = "data/bgpadv.example.yaml"


def text() -> str:
    """The example configuration, as shipped."""
    return resources.files("bgpadv").joinpath(EXAMPLE).read_text(encoding="utf-8")


def main(out: IO[str] | None = None) -> int:
    write_text(out or sys.stdout, text())
    return 0
