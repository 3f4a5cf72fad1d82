"""The API shim: `bgpadv controller`, ExaBGP's only API process, which runs the controller and restarts it.

Why a shim: ExaBGP respawns a dead API process at most 5 times in a 64-second window aligned to the wall clock,
then exits, and every route is withdrawn. The shim does nothing that can fail: it relays whole lines between ExaBGP
and the controller, reads ExaBGP all the time (so ExaBGP never blocks on a full pipe, even while no controller
runs), and restarts a dead controller after 0.1 s, doubling to at most 5 s while it keeps dying young (the delay
resets once a controller has lived 30 s). ExaBGP never sees a controller crash, however often it happens; the new
controller relearns ExaBGP's adj-rib-out before it changes anything (`bgpadv.speaker.session`). Only whole lines
cross: a controller killed in the middle of a command leaves no half line that would corrupt the next instance's.
The first controller is usually not the shim's own: `bgpadv run`'s supervisor starts it before ExaBGP, so that its
first LIST runs while ExaBGP starts, and the shim takes it over (`bgpadv.runtime.handover`); it restarts it the same.

A drain request (SIGUSR1 from the supervisor, `bgpadv.runtime.supervisor`) is passed to the running controller,
and every later controller starts draining (`bgpadv.runtime.lifecycle`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bgpadv.core.runfiles import ENTRY_POINT, controller_argv
from bgpadv.observe.logs import setup_logging
from bgpadv.runtime.handover import Adopted, adopt
from bgpadv.runtime.lifecycle import DRAIN_FILE, DRAINING_ENV, RUNTIME_DIR_ENV, SHIM_PID_FILE, controller_preexec

log = logging.getLogger(__name__)

_READ = 65536
_MAX_PARTIAL_LINE = 2 * 1024 * 1024  # ExaBGP kills an API process at 1 MiB without a newline
_MAX_BUFFERED = 64 * 1024 * 1024  # unread by a hung controller: restart it rather than grow without bound


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
    proc: subprocess.Popen | Adopted  # Adopted: the controller the supervisor started (bgpadv.runtime.handover)
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
        """One turn of the loop: pass a drain request on, reap or (re)start the controller, wait for a descriptor,
        move what is ready."""
        now = time.monotonic()
        if self._drain_signal and not self.draining:
            self._pass_drain()
        child = self._current_child(now)
        readers, writers = self._descriptors(wake_r, child)
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
        if child is not None:
            self._serve_child(child, readable, writable)

    def _descriptors(self, wake_r: int, child: _Child | None) -> tuple[list[int], list[int]]:
        """What to wait on: readable, writable."""
        readers = [wake_r, self.up_in]
        writers = []
        if self._to_up:
            writers.append(self.up_out)
        if child is not None:
            if not self._to_up:  # flow control: take more from the controller once ExaBGP took what we hold
                readers.append(child.stdout)
            if child.to_child:
                writers.append(child.stdin)
        return readers, writers

    def _pass_drain(self) -> None:
        self.draining = True
        log.warning("graceful shutdown: telling the controller to drain")
        if self.child is not None:
            with contextlib.suppress(ProcessLookupError):
                self.child.proc.send_signal(signal.SIGUSR1)

    def _current_child(self, now: float) -> _Child | None:
        """The running controller: a dead one reaped, a new one started once its backoff delay passed."""
        child = self.child
        if child is not None and child.proc.poll() is not None:
            self._child_gone(now)
            child = None
        if child is None and now >= self.next_start:
            child = self._start_child(now)
        return child

    def _serve_child(self, child: _Child, readable: list[int], writable: list[int]) -> None:
        """Write to and read from `child`, unless ExaBGP's side just replaced it (a restart for a full buffer)."""
        if child is not self.child:
            return
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
        """The first time, the controller `bgpadv run`'s supervisor started before ExaBGP, if it has one; else (and
        for every restart) a new one."""
        env = dict(self.env)
        if self.draining or (self.runtime_dir is not None and (self.runtime_dir / DRAIN_FILE).exists()):
            self.draining = True
            env[DRAINING_ENV] = "1"
        proc: subprocess.Popen | Adopted | None = None
        if self.starts == 0 and self.runtime_dir is not None:
            proc = adopt(self.runtime_dir)
            if proc is not None and self.draining:  # it started before the request: tell it now
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGUSR1)
        if proc is None:
            try:
                proc = subprocess.Popen(
                    self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, preexec_fn=controller_preexec
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
        log.info(
            "controller started" if isinstance(proc, subprocess.Popen) else "controller taken over from the supervisor",
            extra={"pid": proc.pid, "starts": self.starts, "draining": self.draining},
        )
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


def shim_main(config_path: str, *, entry_point: Sequence[str] = ENTRY_POINT) -> int:
    """`bgpadv controller`: the API shim ExaBGP runs; the controller it supervises is `bgpadv controller --no-shim`
    (run through `entry_point`, `bgpadv.core.runfiles.ENTRY_POINT`)."""
    upstream_out = os.dup(1)
    os.dup2(2, 1)  # nothing but relayed lines may reach ExaBGP
    setup_logging(os.environ.get("BGPADV_LOG_LEVEL", "INFO"))
    runtime = os.environ.get(RUNTIME_DIR_ENV)
    shim = ApiShim(
        controller_argv(config_path, no_shim=True, entry_point=entry_point),
        upstream_in=0,
        upstream_out=upstream_out,
        runtime_dir=Path(runtime) if runtime else None,
    )
    try:
        return shim.run()
    except OSError as e:
        if e.errno == errno.EPIPE:
            return 0
        raise
