"""Names of the files bgpadv's processes share in the runtime directory (`bgpadv run --runtime-dir`).

Kept apart from the modules that write and read them so that the API shim, which only needs the names, starts
without loading the configuration schema (pydantic: a third of a second before the controller could start).
"""

from __future__ import annotations

BFDD_DIR = "bfdd"  # bfdd's own directory (its socket, configuration and pid file)
BFDD_FAILED = "bfdd.failed"  # the supervisor gave up on bfdd (the reason, one line)
BFD_WANTED = "bfdd.wanted"  # the controller wants bfdd to run (its peers enable BFD)
PID_FILE = "exabgp.pid"
"""ExaBGP's pid file (`bgpadv run` removes a stale one before it starts ExaBGP)."""
