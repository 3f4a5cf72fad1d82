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

BFD (`peers[].bfd`): while the controller asks for it (the `bfdd.wanted` file in the runtime directory: its peers
enable BFD), the supervisor also runs FRR's `bfdd` (`Bfdd`), in the runtime directory's `bfdd/` (its configuration,
PID file, vty and control sockets), restarted when it dies with the shim's backoff (1 s doubling to 30 s, reset after
60 s alive) and stopped when no longer asked for. The controller configures its sessions through the control
socket (`bgpadv.speaker.bfd`). At a stop bfdd gets SIGTERM before ExaBGP's SIGKILL: it sends AdminDown, which a
ToR does not take for a failure (RFC 5882), so graceful restart still keeps the routes.
bfdd's output goes through the supervisor (to its stderr). A bfdd that exits at start-up because it lacks the
capabilities it insists on (`privs_init: initial cap_set_proc failed`, FRR 8.4: NET_BIND_SERVICE, NET_RAW and
SYS_ADMIN in its permitted set) is not restarted: no restart can give it capabilities. The supervisor logs one
error naming the missing ones and the fix (docs/bfd.md), and writes the reason to `bfdd.failed` in the runtime
directory, where the controller's BFD client finds it (`bgpadv_bfdd_cannot_start` 1, the sessions stay down).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from bgpadv.core.runfiles import BFD_WANTED, BFDD_FAILED
from bgpadv.runtime.lifecycle import (
    DRAIN_FILE,
    DRAINING_ENV,
    RUNTIME_DIR_ENV,
    SHIM_PID_FILE,
    die_with_parent,
    reset_runtime_dir,
)
from bgpadv.runtime.shim import Backoff
from bgpadv.speaker.bfd import bfdd_argv, bfdd_dir

if TYPE_CHECKING:
    from bgpadv.runtime.handover import EarlyController

log = logging.getLogger(__name__)


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
    early: EarlyController | None = None,
) -> int:
    """Run ExaBGP (`argv`) until it exits or a stop is asked for; return the exit status of `bgpadv run`.

    0 after a graceful shutdown; ExaBGP's own status (1 if it was 0) when it exited by itself, which is a failure
    the pod's restart policy should see. `early`: the controller started before ExaBGP (`bgpadv.runtime.handover`),
    which this supervisor reaps, tells to drain until the shim took it, and stops if the shim never did.
    """
    requests = _StopRequests()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, requests.handler)
    drain_file = runtime_dir / DRAIN_FILE
    if early is None:  # else it was reset before the early controller started, which may have written to it since
        reset_runtime_dir(runtime_dir)
    child_env = {**env, RUNTIME_DIR_ENV: str(runtime_dir)}
    child_env.pop(DRAINING_ENV, None)
    # its own session: a terminal's ^C reaches only the supervisor, which decides how ExaBGP stops
    proc = subprocess.Popen(
        list(argv), env=child_env, start_new_session=True, preexec_fn=die_with_parent(signal.SIGKILL)
    )
    log.info("ExaBGP started", extra={"pid": proc.pid})
    bfdd = Bfdd(runtime_dir, env)
    deadline: float | None = None
    try:
        while True:
            bfdd.poll(time.monotonic())
            if early is not None:
                early.poll()
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
                if early is not None:
                    early.drain()
            if deadline is not None and (requests.count > 1 or time.monotonic() >= deadline):
                log.warning("stopping ExaBGP without a NOTIFICATION: graceful restart keeps the routes at the peers")
                return 0
            time.sleep(poll)
    finally:
        bfdd.stop()  # first: its AdminDown reaches the peers before ExaBGP's sessions close
        _stop_tree(proc, runtime_dir)
        if early is not None:
            early.stop()


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


class Bfdd:
    """FRR's bfdd as the supervisor's second child: started while `bfdd.wanted` exists in the runtime directory,
    restarted with backoff when it dies, stopped (SIGTERM) when no longer wanted or at the end."""

    def __init__(
        self, runtime_dir: Path, env: Mapping[str, str], backoff: Backoff | None = None, stop_timeout: float = 2.0
    ) -> None:
        self.runtime_dir = runtime_dir
        self.env = dict(env)
        self.backoff = backoff or Backoff(first=1.0, cap=30.0, healthy_after=60.0)
        self.stop_timeout = stop_timeout
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.next_start = 0.0
        self.restarts = 0
        self.gave_up: str | None = None  # why bfdd is never started again (this container cannot run it)
        self._output = _Output(None)

    def wanted(self) -> bool:
        return (self.runtime_dir / BFD_WANTED).exists()

    def poll(self, now: float) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            code = self.proc.returncode
            self.proc = None
            output = self._output.collect()
            missing = missing_capabilities(output)
            unknown = missing_account(output)
            if missing is not None:
                self._give_up_capabilities(missing)
            elif unknown is not None:
                self._give_up(
                    f"bfdd cannot start: the {unknown[0]} {unknown[1]} it runs as does not exist (run as root, bfdd "
                    "drops to FRR's user and group `frr`, which FRR's package creates). Fix: create them (adduser "
                    "--system --group frr), or run bgpadv as a user with bfdd's capabilities. BFD sessions stay "
                    "down; bfdd is not restarted",
                    {"account": unknown[1]},
                )
            else:
                delay = self.backoff.next_delay(now - self.started)
                self.next_start = now + delay
                log.error("bfdd exited: restarting it", extra={"code": code, "delay": delay})
        wanted = self.wanted()
        if wanted and self.proc is None and self.gave_up is None and now >= self.next_start:
            self._start(now)
        elif not wanted and self.proc is not None:
            log.info("no peer enables BFD any more: stopping bfdd", extra={"pid": self.proc.pid})
            self.stop()

    def _start(self, now: float) -> None:
        d = bfdd_dir(self.runtime_dir)
        d.mkdir(mode=0o700, exist_ok=True)
        for stale in d.iterdir():  # the previous bfdd's sockets and PID file (its PID may be alive in this namespace)
            if stale.is_file() or stale.is_socket():
                stale.unlink(missing_ok=True)
        user = _frr_user()
        if user is not None and os.geteuid() == 0:  # bfdd drops to it: its directory is its own (0700)
            os.chown(d, user[1], user[2])
        self.started = now
        self.restarts += 1
        try:
            # started in its directory, as root still: bfdd reaches it through its working directory after the drop,
            # however private the runtime directory above it is (bgpadv's own 0700 one, or a configured one)
            self.proc = subprocess.Popen(
                bfdd_argv(user=user[0] if user else None, group=_group(user[2]) if user else None),
                cwd=d,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGKILL),
            )
        except OSError as e:
            delay = self.backoff.next_delay(0.0)
            self.next_start = now + delay
            log.error("cannot start bfdd: %s", e, extra={"delay": delay})
            return
        self._output = _Output.follow(self.proc)
        log.info("bfdd started", extra={"pid": self.proc.pid})

    def _give_up_capabilities(self, missing: list[str]) -> None:
        caps = ",".join(missing)
        self._give_up(
            f"bfdd cannot start: it lacks the capabilities {caps} (FRR's bfdd exits without NET_BIND_SERVICE, "
            "NET_RAW and SYS_ADMIN in its permitted set). Fix: file capabilities on the binary "
            "(setcap cap_net_bind_service,cap_net_raw,cap_sys_admin+p on bfdd; the bgpadv image has them), these "
            "three in the container's securityContext.capabilities.add, and allowPrivilegeEscalation: true (Helm: "
            "bfd.enabled; kustomize: deploy/components/bfd). BFD sessions stay down; bfdd is not restarted",
            {"missing": missing},
        )

    def _give_up(self, reason: str, extra: dict[str, object]) -> None:
        """bfdd exited for a reason a restart cannot cure: say it once (log, `bfdd.failed` for the controller)."""
        self.gave_up = reason
        log.error(reason, extra=extra)
        with contextlib.suppress(OSError):
            (self.runtime_dir / BFDD_FAILED).write_text(self.gave_up + "\n")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_PRIVS_FAILED = "privs_init: initial cap_set_proc failed"
_CAP = re.compile(r"cap_[a-z_]+")


_NO_ACCOUNT = re.compile(r"privs_init: could not lookup (user|group) (\S+)")


def missing_account(output: Sequence[str]) -> tuple[str, str] | None:
    """("user" or "group", its name) when bfdd exited at start-up because the account it drops to does not exist
    (FRR 8.4's `privs_init: could not lookup user frr`); None otherwise."""
    for line in output:
        found = _NO_ACCOUNT.search(line)
        if found is not None:
            return found.group(1), found.group(2)
    return None


def missing_capabilities(output: Sequence[str]) -> list[str] | None:
    """The capabilities a bfdd that exited at start-up for want of them lacks (its `Wanted caps:` less its `Have
    caps:`, or all it wanted when those lines do not say), in its order; None: it did not exit for that."""
    if not any(_PRIVS_FAILED in line for line in output):
        return None
    wanted: list[str] = []
    have: set[str] = set()
    for line in output:
        if "Wanted caps:" in line:
            wanted = _CAP.findall(line.split("Wanted caps:", 1)[1])
        elif "Have caps:" in line:
            have = set(_CAP.findall(line.split("Have caps:", 1)[1]))
    missing = [c for c in wanted if c not in have]
    return missing or wanted or ["cap_net_bind_service", "cap_net_raw", "cap_sys_admin"]


class _Output:
    """A bfdd's output (`stream`; None: nothing to copy), copied to the supervisor's stderr by a daemon thread; its
    last lines kept for the exit's diagnosis."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        self.lines: deque[str] = deque(maxlen=50)
        self.thread: threading.Thread | None = None
        if stream is not None:
            self.thread = threading.Thread(target=self._copy, args=(stream,), name="bfdd-output", daemon=True)
            self.thread.start()

    @classmethod
    def follow(cls, proc: subprocess.Popen) -> _Output:
        return cls(proc.stdout)

    def _copy(self, stream: IO[bytes]) -> None:
        with stream:
            for raw in stream:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                with contextlib.suppress(OSError):
                    os.write(2, raw)

    def collect(self, timeout: float = 1.0) -> list[str]:
        """The last lines, once the exited process' output is read to its end (or `timeout`)."""
        if self.thread is not None:
            self.thread.join(timeout)
        return list(self.lines)


def _frr_user() -> tuple[str, int, int] | None:
    """Who bfdd runs as: as root Debian's `frr` user (FRR drops to it); otherwise whoever runs bgpadv (bfdd's
    compiled-in default, `frr`, would be a user switch it cannot make). None: no such entry (bfdd's default)."""
    import pwd

    try:
        entry = pwd.getpwnam("frr") if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    except KeyError:
        return None
    return (entry.pw_name, entry.pw_uid, entry.pw_gid)


def _group(gid: int) -> str | None:
    import grp

    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return None
