"""The process lifecycle of `bgpadv run`: a supervisor around ExaBGP, and the API shim ExaBGP runs.

```
bgpadv run                                 supervisor: signals, graceful shutdown, a stop that keeps GR
└── exabgp server exabgp.conf              its own session; SIGKILLed if the supervisor dies (PR_SET_PDEATHSIG)
    └── bgpadv controller                  the API shim, ExaBGP's only API process: relays lines, never crashes
        └── bgpadv controller --no-shim    the controller (bgpadv.runtime.controller, built by
                                           bgpadv.runtime.wiring); restarted by the shim with backoff
```

This module holds what the three processes agree on: the environment variables and files in the runtime directory
through which a drain request reaches a controller, and the parent-death signal. The supervisor is
`bgpadv.runtime.supervisor`, the shim `bgpadv.runtime.shim`.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Mapping
from pathlib import Path

RUNTIME_DIR_ENV = "BGPADV_RUNTIME_DIR"  # set by the supervisor; ExaBGP passes its environment to the shim
DRAINING_ENV = "BGPADV_DRAINING"  # "1": the controller starts draining (read by bgpadv.runtime.wiring)
DRAIN_FILE = "draining"
SHIM_PID_FILE = "api-shim.pid"

_PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int) -> Callable[[], None]:
    """A `preexec_fn`: the child gets `signum` when the process that started it dies (Linux PR_SET_PDEATHSIG)."""

    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")

    return preexec


def drain_requested(environ: Mapping[str, str] | None = None) -> bool:
    """For a controller starting up: was a graceful shutdown already asked for (BGPADV_DRAINING=1, or the drain file
    in BGPADV_RUNTIME_DIR, which the supervisor writes before it signals)?"""
    env = os.environ if environ is None else environ
    if env.get(DRAINING_ENV) == "1":
        return True
    runtime = env.get(RUNTIME_DIR_ENV)
    return runtime is not None and runtime != "" and (Path(runtime) / DRAIN_FILE).exists()
