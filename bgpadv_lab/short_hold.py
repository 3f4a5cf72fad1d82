"""`python -m bgpadv_lab.short_hold SECONDS <bgpadv arguments>`: bgpadv with `safety.holdSeconds` replaced by
SECONDS, below the configuration's 60 s floor, so a lab test can watch a hold end.

The shipped `bgpadv` command has no such switch: no environment variable, flag or file weakens a safety bound of the
running service. This entry point is the lab's own. It runs bgpadv's command line as `python -m bgpadv` would,
passing its own entry point (`entry_point`) so that every child bgpadv starts (the early controller, ExaBGP's API
shim, the controllers the shim restarts) runs this module again with the same SECONDS
(`bgpadv.core.runfiles.controller_argv`); the controller itself is started with the hold as its constructor argument
(`bgpadv.runtime.wiring.controller_main`).
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


def entry_point(seconds: str) -> tuple[str, ...]:
    """The interpreter arguments that run this module with the hold `seconds` (as given on its command line)."""
    return ("-m", "bgpadv_lab.short_hold", seconds)


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
    entry = entry_point(args[0])
    if rest[:1] == ["controller"] and "--no-shim" in rest:
        import gc

        gc.disable()  # as `bgpadv controller --no-shim` does (bgpadv.commands.cli)
        from bgpadv.runtime.wiring import controller_main

        return controller_main(rest[rest.index("--config") + 1], hold_seconds=seconds, entry_point=entry)
    from bgpadv.commands.cli import main as bgpadv_main

    return bgpadv_main(rest, entry_point=entry)


if __name__ == "__main__":
    sys.exit(main())
