"""`bgpadv run`'s supervisor: runs ExaBGP in its own session and stops it so that the peers keep the routes.

Graceful shutdown (SIGTERM or SIGINT to the supervisor, the pod's PID 1):
1. the supervisor writes `draining` in the runtime directory and sends SIGUSR1 to the shim, which passes it to the
   controller (and starts any later controller with BGPADV_DRAINING=1): the speaker re-announces every route with
   GRACEFUL_SHUTDOWN (65535:0, RFC 8326), so the ToRs move traffic to other paths while these still forward;
2. it waits `safety.drainSeconds`;
3. it SIGKILLs ExaBGP. A killed process only closes its TCP connections, which a graceful-restart helper treats as
   a restart: the routes stay, marked stale, until the next instance sends them again followed by End-of-RIB
   (`manual-eor`), or the restart time advertised in the GR capability runs out. A NOTIFICATION would not do: an
   RFC 4724 helper without RFC 8538's N bit (ExaBGP does not advertise it) flushes a peer's routes when it gets
   one. ExaBGP 5.0.15's own SIGTERM path happens to close the sessions without one (read in `reactor/peer.py`,
   `shutdown()`; FRR 8.4 counted 0 notifications, logged "NSF peer closed the session" and kept the routes,
   measured; even the API's `teardown` sent none), but that is ExaBGP's choice to change; SIGKILL keeps GR
   whatever ExaBGP's version does, and takes no time.
A second SIGTERM or SIGINT during the drain skips the rest of the wait (same GR-keeping stop). If the supervisor
itself is killed, the kernel kills ExaBGP (PR_SET_PDEATHSIG): the same as the pod's processes dying together.

The drain request reaches the controller through the API shim (`bgpadv.runtime.shim`) and the files and variables
of `bgpadv.runtime.lifecycle`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bgpadv.runtime.lifecycle import DRAIN_FILE, DRAINING_ENV, RUNTIME_DIR_ENV, SHIM_PID_FILE, die_with_parent
from bgpadv.speaker.exabgp_config import PID_FILE

log = logging.getLogger("bgpadv.lifecycle")


@dataclass
class _StopRequests:
    count: int = 0
    last: str = ""

    def handler(self, signum: int, _frame: object) -> None:
        self.count += 1
        self.last = signal.Signals(signum).name


def supervise(
    argv: Sequence[str],
    env: Mapping[str, str],
    runtime_dir: Path,
    drain_seconds: float,
    *,
    poll: float = 0.05,
) -> int:
    """Run ExaBGP (`argv`) until it exits or a stop is asked for; return the exit status of `bgpadv run`.

    0 after a graceful shutdown; ExaBGP's own status (1 if it was 0) when it exited by itself, which is a failure
    the pod's restart policy should see.
    """
    requests = _StopRequests()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, requests.handler)
    drain_file = runtime_dir / DRAIN_FILE
    drain_file.unlink(missing_ok=True)  # an emptyDir outlives a container restart
    # ...and so does the pid file of the ExaBGP killed with the previous container: in the new container's PID
    # namespace its number may well be alive (another process, or a low PID reused), and ExaBGP refuses to start
    # over a pid file whose process exists. This supervisor is the only one starting ExaBGP in this directory.
    (runtime_dir / PID_FILE).unlink(missing_ok=True)
    child_env = {**env, RUNTIME_DIR_ENV: str(runtime_dir)}
    child_env.pop(DRAINING_ENV, None)
    # its own session: a terminal's ^C reaches only the supervisor, which decides how ExaBGP stops
    proc = subprocess.Popen(
        list(argv), env=child_env, start_new_session=True, preexec_fn=die_with_parent(signal.SIGKILL)
    )
    log.info("ExaBGP started", extra={"pid": proc.pid})
    deadline: float | None = None
    try:
        while True:
            code = proc.poll()
            if code is not None:
                log.error("ExaBGP exited by itself", extra={"code": code})
                return code if code != 0 else 1
            if requests.count and deadline is None:
                deadline = time.monotonic() + drain_seconds
                log.warning(
                    "graceful shutdown: draining", extra={"signal": requests.last, "drain_seconds": drain_seconds}
                )
                drain_file.touch()
                _signal_shim(runtime_dir, proc.pid, signal.SIGUSR1)
            if deadline is not None and (requests.count > 1 or time.monotonic() >= deadline):
                log.warning("stopping ExaBGP without a NOTIFICATION: graceful restart keeps the routes at the peers")
                return 0
            time.sleep(poll)
    finally:
        _stop_tree(proc, runtime_dir)


def _stop_tree(proc: subprocess.Popen, runtime_dir: Path) -> None:
    """SIGKILL ExaBGP (no NOTIFICATION goes out: the peers keep the routes under GR), then stop the shim, which
    stops the controller. The shim would also go on its own: its input closes when ExaBGP dies."""
    shim = _shim_pid(runtime_dir, proc.pid)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    if shim is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(shim, signal.SIGTERM)


def _shim_pid(runtime_dir: Path, exabgp_pid: int) -> int | None:
    """The shim's PID from its PID file, if that process is still ExaBGP's child (never signal a reused PID)."""
    try:
        pid = int((runtime_dir / SHIM_PID_FILE).read_text().strip())
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    ppid = int(stat.rsplit(")", 1)[1].split()[1])
    return pid if ppid == exabgp_pid else None


def _signal_shim(runtime_dir: Path, exabgp_pid: int, signum: int) -> None:
    pid = _shim_pid(runtime_dir, exabgp_pid)
    if pid is None:  # not started yet: it reads the drain file when it starts a controller
        log.info("no API shim to signal yet; the drain file tells the next controller")
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
