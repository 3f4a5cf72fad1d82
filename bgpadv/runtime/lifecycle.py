"""The process lifecycle of `bgpadv run`: a supervisor around ExaBGP, and the API shim ExaBGP runs.

```
bgpadv run                                 supervisor: signals, graceful shutdown, a stop that keeps GR
├── bgpadv controller --no-shim            the first controller, started before ExaBGP so that its first LIST runs
│                                          while ExaBGP starts; the shim takes it over (bgpadv.runtime.handover)
└── exabgp server exabgp.conf              its own session; SIGKILLed if the supervisor dies (PR_SET_PDEATHSIG)
    └── bgpadv controller                  the API shim, ExaBGP's only API process: relays lines, never crashes
        └── bgpadv controller --no-shim    the controller (bgpadv.runtime.controller, built by
                                           bgpadv.runtime.wiring) when the first one died: restarted by the shim
                                           with backoff
```

This module holds what the three processes agree on: the environment variables and files in the runtime directory
through which a drain request reaches a controller and the first controller reaches the shim, and the parent-death
signal. The supervisor is `bgpadv.runtime.supervisor`, the shim `bgpadv.runtime.shim`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from bgpadv.core.runfiles import BFD_WANTED, BFDD_DIR, BFDD_FAILED, PID_FILE

RUNTIME_DIR_ENV = "BGPADV_RUNTIME_DIR"  # set by the supervisor; ExaBGP passes its environment to the shim
DRAINING_ENV = "BGPADV_DRAINING"  # "1": the controller starts draining (read by bgpadv.runtime.wiring)
DRAIN_FILE = "draining"
SHIM_PID_FILE = "api-shim.pid"
HANDOVER_SOCKET = "controller.sock"  # the supervisor hands its first controller to the shim here (runtime.handover)
EXABGP_STARTED_FD_ENV = "BGPADV_EXABGP_STARTED_FD"  # in the early controller: a pipe that ends once ExaBGP runs
EXABGP_CONF = "exabgp.conf"  # the rendered ExaBGP configuration: it holds the MD5 passwords
CANDIDATE = "config.candidate.yaml"  # a changed configuration file being validated (bgpadv.runtime.reload)
LAST_GOOD = "config.last-good.yaml"  # the last configuration applied: what a restarted controller falls back on
# What a stop leaves in a configured runtime directory: only the last good configuration, which the next start
# needs while the file is broken (bgpadv.runtime.reload.Reloader.start_config). Everything else is rewritten at start.
EPHEMERAL_FILES = (
    EXABGP_CONF,
    CANDIDATE,
    DRAIN_FILE,
    SHIM_PID_FILE,
    HANDOVER_SOCKET,
    PID_FILE,
    BFD_WANTED,
    BFDD_FAILED,
)
EPHEMERAL_DIRS = (BFDD_DIR,)  # bfdd's own directory (bgpadv.speaker.bfd): its sockets, PID file, configuration

_PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int) -> Callable[[], None]:
    """A `preexec_fn`: the child gets `signum` when the process that started it dies (Linux PR_SET_PDEATHSIG)."""

    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")

    return preexec


def controller_preexec() -> None:
    """In a controller before exec, whoever starts it (the shim, or the supervisor, `bgpadv.runtime.handover`): die
    with that process, and ignore SIGUSR1 until the controller installs its drain handler (its default action would
    kill a controller caught starting up)."""
    die_with_parent(signal.SIGTERM)()
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def reset_runtime_dir(runtime_dir: Path) -> None:
    """Before a run starts anything: remove what a previous container left in the runtime directory (an emptyDir
    outlives a container restart) that would mislead this one's processes."""
    (runtime_dir / DRAIN_FILE).unlink(missing_ok=True)  # a new controller must not start draining
    # ...and the pid file of the ExaBGP killed with the previous container: in the new container's PID namespace its
    # number may well be alive (another process, or a low PID reused), and ExaBGP refuses to start over a pid file
    # whose process exists. The supervisor is the only one starting ExaBGP in this directory.
    (runtime_dir / PID_FILE).unlink(missing_ok=True)
    (runtime_dir / BFD_WANTED).unlink(missing_ok=True)  # the controller asks again
    (runtime_dir / BFDD_FAILED).unlink(missing_ok=True)  # a new container may have the capabilities


def drain_requested(environ: Mapping[str, str] | None = None) -> bool:
    """For a controller starting up: was a graceful shutdown already asked for (BGPADV_DRAINING=1, or the drain file
    in BGPADV_RUNTIME_DIR, which the supervisor writes before it signals)?"""
    env = os.environ if environ is None else environ
    if env.get(DRAINING_ENV) == "1":
        return True
    runtime = env.get(RUNTIME_DIR_ENV)
    return runtime is not None and runtime != "" and (Path(runtime) / DRAIN_FILE).exists()


def runtime_directory(configured: str | None) -> tuple[Path, bool]:
    """`bgpadv run`'s runtime directory, made if needed, and whether it is the run's own: without `configured`, a
    private temporary directory (0700) that goes when the run ends."""
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        return path, False
    return Path(tempfile.mkdtemp(prefix="bgpadv-")), True


def clean_runtime_dir(runtime_dir: Path, *, owned: bool) -> None:
    """After `bgpadv run` stopped: leave no secret behind.

    `owned`: the directory is the private temporary one `bgpadv run` made for itself (no `--runtime-dir`), which no
    later run reuses: it goes whole, with the rendered `exabgp.conf` (MD5 passwords) and the last good
    configuration. A configured runtime directory (the pod's emptyDir, which outlives a container restart) keeps
    only what a restart needs, the last good configuration; the rest (`EPHEMERAL_FILES`) goes. Never raises."""
    if owned:
        shutil.rmtree(runtime_dir, ignore_errors=True)
        return
    for name in EPHEMERAL_FILES:
        with contextlib.suppress(OSError):
            (runtime_dir / name).unlink(missing_ok=True)
    for name in EPHEMERAL_DIRS:
        shutil.rmtree(runtime_dir / name, ignore_errors=True)
