"""`python -m bgpadv_lab.short_hold SECONDS <bgpadv arguments>`: bgpadv with `safety.holdSeconds` replaced by
SECONDS, below the configuration's 60 s floor, so a lab test can watch a hold end.

The shipped `bgpadv` command has no such switch: no environment variable, flag or file weakens a safety bound of the
running service. This entry point is the lab's own. It runs bgpadv's command line as `python -m bgpadv` would,
after making every child bgpadv starts (the early controller, ExaBGP's API shim, the controllers the shim restarts)
run this module again with the same SECONDS (`bgpadv.core.runfiles.ENTRY_POINT`); the controller itself is started
with the hold as its constructor argument (`bgpadv.runtime.wiring.controller_main`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

USAGE = "usage: python -m bgpadv_lab.short_hold SECONDS <bgpadv arguments>"


def hold_seconds(text: str) -> float:
    """SECONDS as a hold: a finite number, 0 or more; ValueError otherwise."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"the hold must be a number of seconds, 0 or more, got {text!r}")
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    try:
        seconds = hold_seconds(args[0])
    except ValueError as e:
        print(f"{USAGE}\n{e}", file=sys.stderr)
        return 2
    rest = args[1:]
    from bgpadv.core import runfiles

    runfiles.ENTRY_POINT = ("-m", "bgpadv_lab.short_hold", args[0])
    if rest[:1] == ["controller"] and "--no-shim" in rest:
        import gc

        gc.disable()  # as `bgpadv controller --no-shim` does (bgpadv.commands.cli)
        from bgpadv.runtime.wiring import controller_main

        return controller_main(rest[rest.index("--config") + 1], hold_seconds=seconds)
    from bgpadv.commands.cli import main as bgpadv_main

    return bgpadv_main(rest)


if __name__ == "__main__":
    sys.exit(main())
