"""The process lifecycle: the API shim between ExaBGP and the controller (bgpadv.runtime.shim), and the supervisor
(bgpadv.runtime.supervisor), which meet through bgpadv.runtime.lifecycle.

Real processes with stand-ins: the shim runs as its own process (it owns signal handlers) in front of a fake
controller script; the supervisor runs in front of a fake ExaBGP that starts a fake shim.

Shim rules: ExaBGP's lines reach the controller and the controller's reach ExaBGP, whole lines only (a controller
killed in the middle of a line leaves nothing of it); a dead controller is restarted however often it dies, with
growing delays; SIGUSR1 reaches the controller, and one started after it gets BGPADV_DRAINING=1; the end of
ExaBGP's pipe stops the shim and its controller.
Supervisor rules: SIGTERM writes the drain file and signals the shim at once, the supervisor exits 0 after the drain
with ExaBGP killed (never SIGTERMed: ExaBGP's shutdown is not ours to trust); a second signal ends the drain at once;
ExaBGP exiting by itself is a failure; a killed supervisor takes ExaBGP with it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml

from bgpadv.core.runfiles import PID_FILE
from bgpadv.runtime.lifecycle import DRAIN_FILE, SHIM_PID_FILE
from bgpadv.runtime.shim import Backoff

FAKE_CONTROLLER = textwrap.dedent(
    """
    import os, signal, sys
    def drained(*_):
        sys.stdout.write("drain\\n"); sys.stdout.flush()
    signal.signal(signal.SIGUSR1, drained)
    sys.stdout.write(f"hello {os.getpid()} draining={os.environ.get('BGPADV_DRAINING', '0')}\\n"); sys.stdout.flush()
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "die":
            os._exit(3)
        if cmd == "half":
            sys.stdout.write("announce half a li"); sys.stdout.flush(); os._exit(3)
        sys.stdout.write(f"echo {cmd}\\n"); sys.stdout.flush()
    """
)


class Lines:
    """A process's stdout, read line by line in a thread."""

    def __init__(self, stream) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.q.put(line.rstrip("\n"))
        self.q.put("<eof>")

    def next(self, timeout: float = 10.0) -> str:
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout}s") from None


@pytest.fixture
def shim(tmp_path: Path):
    controller = tmp_path / "controller.py"
    controller.write_text(FAKE_CONTROLLER)
    code = (
        "import sys; from pathlib import Path; from bgpadv.runtime.shim import ApiShim, Backoff; "
        f"sys.exit(ApiShim([sys.executable, {str(controller)!r}], runtime_dir=Path({str(tmp_path)!r}), "
        "backoff=Backoff(first=0.01, cap=0.2)).run())"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    lines = Lines(proc.stdout)
    yield proc, lines
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait(5)


def send(proc: subprocess.Popen, line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def hello_pid(line: str) -> int:
    assert line.startswith("hello "), line
    return int(line.split()[1])


def test_the_shim_relays_whole_lines_both_ways(shim):
    proc, lines = shim
    hello_pid(lines.next())
    for i in range(3):
        send(proc, f"done {i}")
    assert [lines.next() for _ in range(3)] == ["echo done 0", "echo done 1", "echo done 2"]


def test_a_controller_killed_mid_line_leaves_no_half_line_and_is_restarted(shim):
    proc, lines = shim
    first = hello_pid(lines.next())
    send(proc, "half")
    second = hello_pid(lines.next())  # not "announce half a lihello ...": the half line is dropped
    assert second != first
    send(proc, "done")
    assert lines.next() == "echo done"


def test_ten_controller_deaths_are_ten_restarts_and_the_shim_lives_on(shim):
    proc, lines = shim
    pids = [hello_pid(lines.next())]
    for _ in range(10):
        send(proc, "die")
        pids.append(hello_pid(lines.next()))
    assert len(set(pids)) == 11
    assert proc.poll() is None
    send(proc, "still here")
    assert lines.next() == "echo still here"


def test_sigusr1_reaches_the_controller_and_the_next_one_starts_draining(shim):
    proc, lines = shim
    hello_pid(lines.next())
    proc.send_signal(signal.SIGUSR1)
    assert lines.next() == "drain"
    send(proc, "die")
    assert lines.next().endswith("draining=1")


def test_the_end_of_exabgps_pipe_stops_the_shim_and_its_controller(shim, tmp_path: Path):
    proc, lines = shim
    controller = hello_pid(lines.next())
    assert (tmp_path / SHIM_PID_FILE).read_text().strip() == str(proc.pid)
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(5) == 0
    assert lines.next() == "<eof>"
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(controller, 0)
            time.sleep(0.05)
    assert not (tmp_path / SHIM_PID_FILE).exists()


def test_backoff_doubles_up_to_its_cap_and_resets_after_a_healthy_run():
    b = Backoff(first=0.1, cap=1.0, healthy_after=30.0)
    assert [b.next_delay(0.5) for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert b.next_delay(31.0) == 0.1


# -- the supervisor ----------------------------------------------------------------------------------------------

FAKE_SHIM = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    rdir = Path(os.environ["BGPADV_RUNTIME_DIR"])
    signal.signal(signal.SIGUSR1, lambda *_: (rdir / "shim-got-sigusr1").write_text("1"))
    (rdir / "api-shim.pid").write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)
        if os.getppid() == 1:
            sys.exit(0)
    """
)

FAKE_EXABGP = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    from pathlib import Path
    rdir = Path(os.environ["BGPADV_RUNTIME_DIR"])
    signal.signal(signal.SIGTERM, lambda *_: (rdir / "exabgp-got-sigterm").write_text("1"))
    try:  # as ExaBGP does: it refuses to start over a pid file whose process exists
        os.kill(int((rdir / "exabgp.pid").read_text()), 0)
        sys.exit(1)
    except (OSError, ValueError):
        pass
    shim = subprocess.Popen([sys.executable, sys.argv[1]])
    (rdir / "exabgp.pid").write_text(str(os.getpid()))
    if sys.argv[2] == "exit":
        time.sleep(0.5)
        shim.kill()
        sys.exit(7)
    while True:
        time.sleep(0.05)
    """
)


@pytest.fixture
def supervisor(tmp_path: Path):
    (tmp_path / "shim.py").write_text(FAKE_SHIM)
    (tmp_path / "exabgp.py").write_text(FAKE_EXABGP)
    started: list[subprocess.Popen] = []

    def start(drain: float, mode: str = "run") -> subprocess.Popen:
        argv = [sys.executable, str(tmp_path / "exabgp.py"), str(tmp_path / "shim.py"), mode]
        code = (
            "import os, sys; from pathlib import Path; from bgpadv.runtime.supervisor import supervise; "
            f"sys.exit(supervise({argv!r}, dict(os.environ), Path({str(tmp_path)!r}), {drain!r}))"
        )
        proc = subprocess.Popen([sys.executable, "-c", code])
        started.append(proc)
        deadline = time.monotonic() + 10
        while not (tmp_path / SHIM_PID_FILE).exists() and mode == "run":
            assert time.monotonic() < deadline, "the fake shim never started"
            time.sleep(0.02)
        return proc

    yield start
    for proc in started:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(5)
    for name in ("exabgp.pid", SHIM_PID_FILE):
        with contextlib.suppress(OSError, ValueError, ProcessLookupError):
            os.kill(int((tmp_path / name).read_text()), signal.SIGKILL)


def gone(pid: int, timeout: float = 5.0) -> bool:
    """The process is dead (reaped, or a zombie waiting for its new parent to reap it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def test_sigterm_drains_then_kills_exabgp_and_exits_0(supervisor, tmp_path: Path):
    proc = supervisor(drain=1.0)
    exabgp = int((tmp_path / "exabgp.pid").read_text())
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while not (tmp_path / "shim-got-sigusr1").exists():
        assert time.monotonic() < deadline, "the shim was never told to drain"
        time.sleep(0.01)
    assert (tmp_path / DRAIN_FILE).exists()
    assert proc.wait(10) == 0
    assert time.monotonic() - t0 >= 1.0
    assert gone(exabgp)
    assert not (tmp_path / "exabgp-got-sigterm").exists(), "ExaBGP is killed, never asked to shut down"


def test_a_second_signal_ends_the_drain_at_once(supervisor):
    proc = supervisor(drain=60.0)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0
    assert time.monotonic() - t0 < 5.0


def test_exabgp_exiting_by_itself_is_a_failure_with_its_status(supervisor):
    proc = supervisor(drain=1.0, mode="exit")
    assert proc.wait(10) == 7


def test_a_killed_supervisor_takes_exabgp_with_it(supervisor, tmp_path: Path):
    proc = supervisor(drain=30.0)
    exabgp = int((tmp_path / "exabgp.pid").read_text())
    proc.kill()
    proc.wait(5)
    assert gone(exabgp)
    assert not (tmp_path / "exabgp-got-sigterm").exists()


def test_a_drain_file_left_by_a_previous_run_is_removed_at_start(supervisor, tmp_path: Path):
    (tmp_path / DRAIN_FILE).write_text("")
    proc = supervisor(drain=1.0)
    assert not (tmp_path / DRAIN_FILE).exists()
    assert proc.poll() is None


def test_a_stale_exabgp_pid_file_from_a_previous_container_is_removed_before_exabgp_starts(supervisor, tmp_path: Path):
    # the emptyDir outlives the container; in the new PID namespace the old number may belong to a live process,
    # and ExaBGP (like the stand-in) refuses to start over a pid file whose process exists
    alive = subprocess.Popen(["sleep", "30"])
    try:
        (tmp_path / PID_FILE).write_text(f"{alive.pid}\n")
        proc = supervisor(drain=1.0)  # waits for ExaBGP's shim: ExaBGP started
        assert proc.poll() is None
        assert (tmp_path / PID_FILE).read_text().strip() != str(alive.pid)
        assert alive.poll() is None  # nobody acted on the stale number
    finally:
        alive.kill()
        alive.wait(5)


def test_the_deployment_gives_bgpadv_longer_than_its_drain_and_a_graceful_restart_time(monkeypatch):
    from bgpadv.config import parse

    monkeypatch.setenv("BGPADV_NODE_IP", "10.0.0.11")  # metrics.listen: the pod sets it from status.hostIP
    base = Path(__file__).resolve().parents[2] / "deploy" / "base"
    # the README's configuration (the base ships a placeholder that is refused on purpose)
    config = parse(yaml.safe_load((base.parent / "examples" / "bgpadv.yaml").read_text()))
    deployment = yaml.safe_load((base / "deployment.yaml").read_text())
    daemonset = yaml.safe_load((base.parent / "components" / "per-node" / "daemonset.yaml").read_text())
    for workload in (deployment, daemonset):
        grace = workload["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace >= config.safety.drain_seconds + 10
    assert all(peer.graceful_restart is not None and peer.graceful_restart >= 60 for peer in config.peers)


@pytest.mark.parametrize(
    ("environ", "drain_file", "expected"),
    [
        pytest.param({"BGPADV_DRAINING": "1"}, False, True, id="the-shim-says-so"),
        pytest.param({}, True, True, id="the-supervisor-wrote-the-drain-file"),
        pytest.param({}, False, False, id="neither"),
        pytest.param({"BGPADV_DRAINING": "0"}, False, False, id="not-draining"),
    ],
)
def test_a_starting_controller_knows_whether_a_drain_was_asked(tmp_path: Path, environ, drain_file, expected):
    from bgpadv.runtime.lifecycle import drain_requested

    if drain_file:
        (tmp_path / DRAIN_FILE).write_text("")
    assert drain_requested({**environ, "BGPADV_RUNTIME_DIR": str(tmp_path)}) is expected
