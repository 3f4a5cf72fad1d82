"""The first controller of `bgpadv run`, started by the supervisor before ExaBGP and handed over to the API shim.

Why: the chain supervisor → ExaBGP → shim → controller starts four Pythons one after the other. Started by the shim,
the controller began its first LIST about 0.9 s after `bgpadv run` (the supervisor's configuration check, ExaBGP's
start, then the controller's own imports), and every route waits for that LIST. So `bgpadv run` starts the first
controller itself, before it even loads the configuration, and the LIST runs while ExaBGP starts.

How the three meet (all in the runtime directory, which is private to the pod's user):

- the supervisor (`EarlyController.start`) starts `bgpadv controller --no-shim` with two pipes as its stdin and
  stdout, exactly as the shim would, in a session of its own (a terminal's ^C is the supervisor's to handle), and
  listens on `controller.sock`;
- ExaBGP starts the shim; the shim, before it starts a controller of its own, connects there (`adopt`) and receives
  the other ends of the two pipes and a pidfd of the controller (SCM_RIGHTS). From then on it relays, signals and
  restarts that controller as its own (`Adopted`); a controller that dies is replaced by one the shim starts, as
  before. The supervisor hands over once: a second shim (ExaBGP respawned its API process) finds no socket and
  starts its own;
- the controller runs as it would under the shim. Its commands wait in the pipe until the shim reads them, and
  ExaBGP's lines reach it once the shim relays them. One thing it must not do before ExaBGP runs: rewrite and reload
  ExaBGP's configuration (its node's peers), since the supervisor writes that file and ExaBGP reads it at start, and
  a SIGUSR1 before ExaBGP handles it would kill ExaBGP. So `wait_for_exabgp` blocks until the handover (a pipe
  the supervisor closes then, or when it dies).

The supervisor reaps the controller (it is its child), so the shim learns of its death from the end of its output
and from the pidfd, and never knows its exit status (the supervisor logs it). Whatever fails on this path (no
socket, a path too long for one, a failed start) leaves the shim to start its controller as it did before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from bgpadv.runtime.lifecycle import (
    DRAINING_ENV,
    EXABGP_STARTED_FD_ENV,
    HANDOVER_SOCKET,
    RUNTIME_DIR_ENV,
    controller_preexec,
)

log = logging.getLogger(__name__)

_ACCEPT_POLL = 0.25  # how often the accepting thread looks whether the supervisor stopped it
_ADOPT_TIMEOUT = 2.0  # the shim's wait for the supervisor's answer (it answers at once: a thread does nothing else)


class EarlyController:
    """The supervisor's side: the controller it started, until the shim takes it (`handed_over`)."""

    def __init__(self, proc: subprocess.Popen, pidfd: int, listener: socket.socket, path: Path, started_w: int):
        self.proc = proc
        self._pidfd = pidfd
        self._listener = listener
        self._path = path
        self._started_w = started_w  # closed at the handover: the controller's wait_for_exabgp returns
        self._lock = threading.Lock()
        self.handed_over = False
        self._closed = False
        self._reaped = False
        self._thread = threading.Thread(target=self._serve, name="controller-handover", daemon=True)

    @classmethod
    def start(cls, argv: list[str], env: Mapping[str, str], runtime_dir: Path) -> EarlyController | None:
        """Start the controller (`argv`) and listen for the shim in `runtime_dir`; None (and nothing left running)
        when any step fails: the shim then starts the controller itself."""
        path = runtime_dir / HANDOVER_SOCKET
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            path.unlink(missing_ok=True)  # an emptyDir outlives a container restart
            listener.bind(str(path))
            os.chmod(path, 0o600)
            listener.listen(1)
            listener.settimeout(_ACCEPT_POLL)
        except OSError as e:
            listener.close()
            log.info("no early controller (the shim starts it): %s", e)
            return None
        started_r, started_w = os.pipe()
        child_env = {**env, RUNTIME_DIR_ENV: str(runtime_dir), EXABGP_STARTED_FD_ENV: str(started_r)}
        child_env.pop(DRAINING_ENV, None)
        proc: subprocess.Popen | None = None
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=child_env,
                pass_fds=(started_r,),
                start_new_session=True,
                preexec_fn=controller_preexec,
            )
            pidfd = os.pidfd_open(proc.pid)  # before anything could reap it: it names this process, never a reuse
        except OSError as e:
            if proc is not None:  # started, but no pidfd (a kernel before 5.3): never two controllers
                proc.kill()
                proc.wait()
            for fd in (started_r, started_w):
                os.close(fd)
            listener.close()
            path.unlink(missing_ok=True)
            log.warning("no early controller (the shim starts it): %s", e)
            return None
        os.close(started_r)
        early = cls(proc, pidfd, listener, path, started_w)
        early._thread.start()
        log.info("controller started before ExaBGP", extra={"pid": proc.pid})
        return early

    def _serve(self) -> None:
        """Hand the controller to the first shim that connects, then stop listening."""
        while True:
            with self._lock:
                if self._closed:
                    return
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn, self._lock:
                if self._closed:
                    return
                if not _same_user(conn):
                    continue
                if self.proc.poll() is not None:  # it died starting up: the shim starts its own at once
                    self._release()
                    return
                assert self.proc.stdin is not None and self.proc.stdout is not None
                fds = [self.proc.stdin.fileno(), self.proc.stdout.fileno(), self._pidfd]
                try:
                    socket.send_fds(conn, [f"{self.proc.pid}\n".encode()], fds)
                except OSError as e:
                    log.warning("handing the controller to the shim failed: %s", e)
                    continue
                self.handed_over = True
                self._release()
            log.info("controller handed over to the API shim", extra={"pid": self.proc.pid})
            return

    def _release(self) -> None:
        """Close what the supervisor holds of the controller's pipes, and the socket (under the lock)."""
        self._closed = True
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]
        for fd in (self._pidfd, self._started_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._listener.close()
        self._path.unlink(missing_ok=True)

    def poll(self) -> None:
        """Reap the controller once it died (the supervisor is its parent), and say how it ended."""
        if self._reaped:
            return
        code = self.proc.poll()
        if code is None:
            return
        self._reaped = True
        log.info("the controller the supervisor started exited", extra={"pid": self.proc.pid, "code": code})

    def drain(self) -> None:
        """A graceful shutdown started: a controller not handed over yet is told directly (the drain file, already
        written, tells one still starting up); after the handover the shim tells it."""
        with self._lock:
            if self.handed_over or self.proc.poll() is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGUSR1)

    def stop(self) -> None:
        """At the supervisor's end: a controller never handed over is stopped (SIGTERM, then SIGKILL after 1 s);
        one handed over stops with the shim, as the shim's own controller does."""
        with self._lock:
            handed = self.handed_over
            if not self._closed:
                self._release()
        if not handed and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.poll()


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this process's user (the runtime directory is private already; this costs nothing)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


class Adopted:
    """The shim's side: a controller it did not start, with the part of `subprocess.Popen`'s interface the shim uses.

    Its death shows on the pidfd (readable once it exited); its exit status is its parent's, the supervisor's."""

    def __init__(self, pid: int, stdin: int, stdout: int, pidfd: int) -> None:
        self.pid = pid
        self.stdin: IO[bytes] = open(stdin, "wb", buffering=0)  # noqa: SIM115 (closed with the child, as Popen's)
        self.stdout: IO[bytes] = open(stdout, "rb", buffering=0)  # noqa: SIM115
        self._pidfd = pidfd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self._exited()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"controller {self.pid}", timeout or 0.0)
            self._exited()
        assert self.returncode is not None
        return self.returncode

    def _exited(self) -> None:
        self.returncode = -1  # not known here: the supervisor reaps it and logs its status
        with contextlib.suppress(OSError):
            os.close(self._pidfd)

    def send_signal(self, signum: int) -> None:
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        signal.pidfd_send_signal(self._pidfd, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def adopt(runtime_dir: Path) -> Adopted | None:
    """The controller the supervisor started, if it has one to hand over (None: start one)."""
    path = runtime_dir / HANDOVER_SOCKET
    if not path.exists():
        return None
    fds: list[int] = []
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(_ADOPT_TIMEOUT)
            conn.connect(str(path))
            message, fds, _flags, _addr = socket.recv_fds(conn, 64, 3)
        pid = int(message.decode().strip())
        if len(fds) != 3:
            raise ValueError(f"{len(fds)} descriptors")
    except (OSError, ValueError, UnicodeDecodeError) as e:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        log.info("no controller to take over from the supervisor (starting one): %s", e)
        return None
    stdin, stdout, pidfd = fds
    return Adopted(pid, stdin, stdout, pidfd)


def wait_for_exabgp(environ: dict[str, str] | os._Environ[str] | None = None) -> None:
    """In a controller the supervisor started: return once ExaBGP runs (the shim took this controller over, or the
    supervisor is gone). At once in a controller the shim started."""
    env = os.environ if environ is None else environ
    text = env.pop(EXABGP_STARTED_FD_ENV, None)
    if not text:
        return
    try:
        fd = int(text)
    except ValueError:
        return
    log.info("waiting for ExaBGP to start before changing its configuration")
    with contextlib.suppress(OSError):
        while os.read(fd, 64):
            pass
        os.close(fd)
