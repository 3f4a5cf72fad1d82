"""Names of the files bgpadv's processes share in the runtime directory (`bgpadv run --runtime-dir`), and the
controller's command line, which they pass each other.

Kept apart from the modules that write and read them so that the API shim, which only needs the names, and
`bgpadv run`, which starts the first controller before anything else (`bgpadv.runtime.handover`), start without
loading the configuration schema (pydantic: a third of a second before the controller could start).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

BFDD_DIR = "bfdd"  # bfdd's own directory (its socket, configuration and pid file)
BFDD_FAILED = "bfdd.failed"  # the supervisor gave up on bfdd (the reason, one line)
BFD_WANTED = "bfdd.wanted"  # the controller wants bfdd to run (its peers enable BFD)
NETADMIN_INTERPRETER = "python3-netadmin"
"""The image's interpreter for the controller: file capabilities cap_net_admin,cap_net_raw+p
(`bgpadv.core.capability`)."""
PID_FILE = "exabgp.pid"
"""ExaBGP's pid file (`bgpadv run` removes a stale one before it starts ExaBGP)."""


def config_path_as_given(path: str | os.PathLike[str]) -> str:
    """The configuration path made absolute, symlinks left alone: a ConfigMap volume's file is a symlink through
    `..data`, which an update points at a new directory, so a resolved path would name a file that goes away."""
    return str(Path(path).absolute())


def controller_interpreter(executable: str | None = None) -> str:
    """The interpreter the controller runs under: the image's `python3-netadmin` beside `executable` (default this
    interpreter) when it is there, else `executable` itself. Without NET_ADMIN in the container's bounding set, or
    with no_new_privs, its file capability is ignored and it starts with nothing, as the plain interpreter does."""
    current = executable if executable is not None else sys.executable
    candidate = Path(current).with_name(NETADMIN_INTERPRETER)
    return str(candidate) if os.access(candidate, os.X_OK) else current


ENTRY_POINT: Final[tuple[str, ...]] = ("-m", "bgpadv")
"""The interpreter arguments that run bgpadv's commands in a child process (the controller, the API shim): `python
-m bgpadv`. A program that embeds bgpadv and runs its own entry point in every process (`bgpadv_lab.short_hold`)
passes its own as `entry_point` to the commands that start children (`bgpadv.commands.cli.main`,
`bgpadv.runtime.wiring.controller_main`), which hand it on to `controller_argv`; the shipped commands use this
one."""


def controller_argv(
    config_path: str | os.PathLike[str], *, no_shim: bool = False, entry_point: Sequence[str] = ENTRY_POINT
) -> list[str]:
    """`bgpadv controller`: the API shim, the command line ExaBGP runs (and respawns) as its API process; with
    `no_shim`, the controller itself, as the shim or `bgpadv run` starts it (under `controller_interpreter`: the
    route import's netlink writes happen there, and only there). `entry_point`: the interpreter arguments that run
    bgpadv's commands (`ENTRY_POINT`)."""
    interpreter = controller_interpreter() if no_shim else sys.executable
    argv = [interpreter, *entry_point, "controller", "--config", config_path_as_given(config_path)]
    return [*argv, "--no-shim"] if no_shim else argv
