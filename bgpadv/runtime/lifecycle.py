"""The process lifecycle of `bgpadv run`: a supervisor around ExaBGP, and the API shim ExaBGP runs.

```
bgpadv run                                 supervisor: signals, graceful shutdown, a stop that keeps GR
└── exabgp server exabgp.conf              its own session; SIGKILLed if the supervisor dies (PR_SET_PDEATHSIG)
    └── bgpadv controller                  the API shim, ExaBGP's only API process: relays lines, never crashes
        └── bgpadv controller --no-shim    the controller (bgpadv.runtime.controller); restarted by the shim with
        backoff
```

Why a shim: ExaBGP respawns a dead API process at most 5 times in a 64-second window aligned to the wall clock,
then exits, and every route is withdrawn. The shim does nothing that can fail: it relays whole lines between ExaBGP
and the controller, reads ExaBGP all the time (so ExaBGP never blocks on a full pipe, even while no controller
runs), and restarts a dead controller after 0.1 s, doubling to at most 5 s while it keeps dying young (the delay
resets once a controller has lived 30 s). ExaBGP never sees a controller crash, however often it happens; the new
controller relearns ExaBGP's adj-rib-out before it changes anything (`bgpadv.speaker.session`). Only whole lines
cross: a controller killed in the middle of a command leaves no half line that would corrupt the next instance's.

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
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bgpadv.speaker.exabgp_config import PID_FILE

log = logging.getLogger("bgpadv.lifecycle")

RUNTIME_DIR_ENV = "BGPADV_RUNTIME_DIR"  # set by the supervisor; ExaBGP passes its environment to the shim
DRAINING_ENV = "BGPADV_DRAINING"  # "1": the controller starts draining (read by bgpadv.runtime.controller)
DRAIN_FILE = "draining"
SHIM_PID_FILE = "api-shim.pid"

_PR_SET_PDEATHSIG = 1
_READ = 65536
_MAX_PARTIAL_LINE = 2 * 1024 * 1024  # ExaBGP kills an API process at 1 MiB without a newline
_MAX_BUFFERED = 64 * 1024 * 1024  # unread by a hung controller: restart it rather than grow without bound


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
    return bool(runtime) and (Path(runtime) / DRAIN_FILE).exists()


# -- the supervisor: `bgpadv run` ----------------------------------------------------------------------------------


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


# -- the API shim: `bgpadv controller` -----------------------------------------------------------------------------


@dataclass
class Backoff:
    """Restart delays for a controller that keeps dying: `first`, doubling up to `cap`; back to `first` once an
    instance lived `healthy_after` seconds."""

    first: float = 0.1
    cap: float = 5.0
    healthy_after: float = 30.0
    failures: int = field(default=0, init=False)

    def next_delay(self, lived: float) -> float:
        if lived >= self.healthy_after:
            self.failures = 0
        self.failures += 1
        return min(self.cap, self.first * 2 ** (self.failures - 1))


@dataclass
class _Child:
    proc: subprocess.Popen
    started: float
    stdin: int
    stdout: int
    to_child: bytearray = field(default_factory=bytearray)
    partial: bytearray = field(default_factory=bytearray)  # the controller's output after its last newline


class ApiShim:
    """Relays ExaBGP's pipes (`upstream_in`, `upstream_out`) to a controller started from `argv`, restarting it.

    Single-threaded: one select() loop over at most four descriptors and a signal wake-up pipe.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        upstream_in: int = 0,
        upstream_out: int = 1,
        env: Mapping[str, str] | None = None,
        runtime_dir: Path | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.argv = list(argv)
        self.up_in = upstream_in
        self.up_out = upstream_out
        self.env = dict(os.environ if env is None else env)
        self.runtime_dir = runtime_dir
        self.backoff = backoff or Backoff()
        self.child: _Child | None = None
        self.next_start = 0.0
        self.starts = 0
        self.draining = False
        self._drain_signal = False
        self._stop = False
        self._to_up = bytearray()  # whole lines for ExaBGP
        self._from_up = bytearray()  # ExaBGP's output after its last newline

    # -- signals (set flags only; the loop acts) -------------------------------------------------------------------
    def _on_term(self, _signum: int, _frame: object) -> None:
        self._stop = True

    def _on_drain(self, _signum: int, _frame: object) -> None:
        self._drain_signal = True

    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        for fd in (wake_r, wake_w, self.up_in, self.up_out):
            os.set_blocking(fd, False)
        old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        handlers = {
            signal.SIGTERM: self._on_term,
            signal.SIGUSR1: self._on_drain,
            signal.SIGCHLD: lambda *_: None,  # a controller's death wakes the loop (through the wake-up pipe)
        }
        previous = {s: signal.signal(s, h) for s, h in handlers.items()}
        pid_file = self._write_pid_file()
        try:
            while not self._stop:
                self._step(wake_r)
        finally:
            self._stop_child()
            signal.set_wakeup_fd(old_wakeup)
            for s, h in previous.items():
                signal.signal(s, h)
            os.close(wake_r)
            os.close(wake_w)
            if pid_file is not None:
                with contextlib.suppress(OSError):
                    if pid_file.read_text().strip() == str(os.getpid()):
                        pid_file.unlink()
        return 0

    def _write_pid_file(self) -> Path | None:
        if self.runtime_dir is None:
            return None
        path = self.runtime_dir / SHIM_PID_FILE
        try:
            path.write_text(f"{os.getpid()}\n")
        except OSError as e:
            log.warning("cannot write the shim's PID file: %s", e)
            return None
        return path

    def _step(self, wake_r: int) -> None:
        now = time.monotonic()
        if self._drain_signal and not self.draining:
            self.draining = True
            log.warning("graceful shutdown: telling the controller to drain")
            if self.child is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.child.proc.send_signal(signal.SIGUSR1)
        child = self.child
        if child is not None and child.proc.poll() is not None:
            self._child_gone(now)
            child = None
        if child is None and now >= self.next_start:
            child = self._start_child(now)
        readers = [wake_r, self.up_in]
        writers = []
        if self._to_up:
            writers.append(self.up_out)
        if child is not None:
            if not self._to_up:  # flow control: take more from the controller once ExaBGP took what we hold
                readers.append(child.stdout)
            if child.to_child:
                writers.append(child.stdin)
        timeout = 1.0 if child is not None else max(0.0, self.next_start - now)
        try:
            readable, writable, _ = select.select(readers, writers, [], timeout)
        except InterruptedError:
            return
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        if self.up_out in writable:
            self._write_up()
        if self.up_in in readable:
            self._read_up()
        if child is not None and child is self.child:
            if child.stdin in writable:
                self._write_child(child)
            if child.stdout in readable and child is self.child:
                self._read_child(child)

    # -- ExaBGP's side ---------------------------------------------------------------------------------------------
    def _read_up(self) -> None:
        try:
            data = os.read(self.up_in, _READ)
        except BlockingIOError:
            return
        if not data:
            log.info("ExaBGP closed the API pipe: stopping")
            self._stop = True
            return
        self._from_up += data
        cut = self._from_up.rfind(b"\n")
        if cut < 0:
            return
        if self.child is not None:
            self.child.to_child += self._from_up[: cut + 1]
            if len(self.child.to_child) > _MAX_BUFFERED:
                log.error("the controller does not read ExaBGP's output: restarting it")
                self._kill_child()
        # while no controller runs, ExaBGP's lines are read and dropped: the next one resynchronises itself
        del self._from_up[: cut + 1]

    def _write_up(self) -> None:
        try:
            sent = os.write(self.up_out, self._to_up)
        except BlockingIOError:
            return
        except BrokenPipeError:
            log.info("ExaBGP closed the command pipe: stopping")
            self._stop = True
            return
        del self._to_up[:sent]

    # -- the controller's side -------------------------------------------------------------------------------------
    def _start_child(self, now: float) -> _Child | None:
        env = dict(self.env)
        if self.draining or (self.runtime_dir is not None and (self.runtime_dir / DRAIN_FILE).exists()):
            self.draining = True
            env[DRAINING_ENV] = "1"
        try:
            proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, preexec_fn=_controller_preexec
            )
        except OSError as e:
            log.error("cannot start the controller: %s", e)
            self.next_start = now + self.backoff.next_delay(0.0)
            return None
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin.fileno(), proc.stdout.fileno()
        os.set_blocking(stdin, False)
        os.set_blocking(stdout, False)
        self.starts += 1
        self.child = _Child(proc, now, stdin, stdout)
        log.info("controller started", extra={"pid": proc.pid, "starts": self.starts, "draining": self.draining})
        return self.child

    def _read_child(self, child: _Child) -> None:
        try:
            data = os.read(child.stdout, _READ)
        except BlockingIOError:
            return
        if not data:  # it died (or closed stdout): reap it, schedule the next
            self._child_gone(time.monotonic())
            return
        child.partial += data
        cut = child.partial.rfind(b"\n")
        if cut >= 0:
            self._to_up += child.partial[: cut + 1]
            del child.partial[: cut + 1]
        elif len(child.partial) > _MAX_PARTIAL_LINE:
            log.error("the controller wrote an over-long line: restarting it")
            self._kill_child()

    def _write_child(self, child: _Child) -> None:
        try:
            sent = os.write(child.stdin, child.to_child)
        except BlockingIOError:
            return
        except BrokenPipeError:
            child.to_child.clear()  # it is dying; the EOF on its stdout reaps it
            return
        del child.to_child[:sent]

    def _kill_child(self) -> None:
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError):
                self.child.proc.kill()
            self._child_gone(time.monotonic())

    def _child_gone(self, now: float) -> None:
        child, self.child = self.child, None
        if child is None:
            return
        try:
            code = child.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:  # closed stdout but lives on: it is of no use any more
            child.proc.kill()
            code = child.proc.wait()
        for f in (child.proc.stdin, child.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]
        # a half line it left is dropped: ExaBGP must never see it glued to the next instance's first command
        delay = self.backoff.next_delay(now - child.started)
        self.next_start = now + delay
        log.warning(
            "controller exited; restarting it",
            extra={"pid": child.proc.pid, "code": code, "lived": round(now - child.started, 3), "delay": delay},
        )

    def _stop_child(self) -> None:
        child, self.child = self.child, None
        if child is None:
            return
        with contextlib.suppress(ProcessLookupError):
            child.proc.terminate()
        try:
            child.proc.wait(timeout=1.0)  # ExaBGP SIGKILLs its API process 2 s after SIGTERM
        except subprocess.TimeoutExpired:
            child.proc.kill()
            child.proc.wait()
        for f in (child.proc.stdin, child.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]


def _controller_preexec() -> None:
    """In the controller before exec: die with the shim, and ignore SIGUSR1 until the controller installs its drain
    handler (its default action would kill a controller caught starting up)."""
    die_with_parent(signal.SIGTERM)()
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def shim_main(config_path: str) -> int:
    """`bgpadv controller`: the API shim ExaBGP runs; the controller it supervises is `bgpadv controller --no-shim`."""
    import sys

    from bgpadv.observe.logs import setup_logging

    upstream_out = os.dup(1)
    os.dup2(2, 1)  # nothing but relayed lines may reach ExaBGP
    setup_logging(os.environ.get("BGPADV_LOG_LEVEL", "INFO"))
    runtime = os.environ.get(RUNTIME_DIR_ENV)
    argv = [sys.executable, "-m", "bgpadv", "controller", "--config", config_path, "--no-shim"]
    shim = ApiShim(argv, upstream_in=0, upstream_out=upstream_out, runtime_dir=Path(runtime) if runtime else None)
    try:
        return shim.run()
    except OSError as e:
        if e.errno == errno.EPIPE:
            return 0
        raise
