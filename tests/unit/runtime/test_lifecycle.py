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
Handover rules (the first controller, which `bgpadv run` starts before ExaBGP): the first shim takes it over and
relays it like its own; it touches nothing of ExaBGP's until then; once dead it is replaced by one the shim starts,
and reaped by the supervisor; it is handed over once; a drain asked before the handover reaches it; one never handed
over stops with the supervisor; a shim without a supervisor starts its own controller.
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
from bgpadv_lab.chain import parent_of

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


def start_shim_process(controller: Path, runtime_dir: Path) -> subprocess.Popen:
    """The real API shim as its own process (it owns signal handlers), with `controller` as the script it starts,
    short restart delays, and its ExaBGP side on our pipes."""
    code = (
        "import sys; from pathlib import Path; from bgpadv.runtime.shim import ApiShim, Backoff; "
        f"sys.exit(ApiShim([sys.executable, {str(controller)!r}], runtime_dir=Path({str(runtime_dir)!r}), "
        "backoff=Backoff(first=0.01, cap=0.2)).run())"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )


@pytest.fixture
def shim(tmp_path: Path):
    controller = tmp_path / "controller.py"
    controller.write_text(FAKE_CONTROLLER)
    proc = start_shim_process(controller, tmp_path)
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
    base = Path(__file__).resolve().parents[3] / "deploy" / "base"
    # the install guide's configuration (the base ships a placeholder that is refused on purpose)
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


# -- the first controller, started by the supervisor and handed to the shim (bgpadv.runtime.handover) ------------

EARLY_CONTROLLER = textwrap.dedent(
    """
    import os, signal, sys
    from bgpadv.runtime.handover import wait_for_exabgp
    def drained(*_):
        sys.stdout.write("drain\\n"); sys.stdout.flush()
    signal.signal(signal.SIGUSR1, drained)
    sys.stdout.write(f"hello {os.getpid()} draining={os.environ.get('BGPADV_DRAINING', '0')}\\n"); sys.stdout.flush()
    wait_for_exabgp()
    sys.stdout.write("exabgp runs\\n"); sys.stdout.flush()
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "die":
            os._exit(3)
        sys.stdout.write(f"echo {cmd}\\n"); sys.stdout.flush()
    """
)


@pytest.fixture
def early(tmp_path: Path):
    """A controller started as `bgpadv run` starts its first one (this test process posing as the supervisor), and
    a way to start shims in front of it."""
    from bgpadv.runtime.handover import EarlyController

    script = tmp_path / "controller.py"
    script.write_text(EARLY_CONTROLLER)
    (tmp_path / "controller-of-the-shim.py").write_text(FAKE_CONTROLLER)
    controller = EarlyController.start([sys.executable, str(script)], dict(os.environ), tmp_path)
    assert controller is not None
    shims: list[subprocess.Popen] = []

    def start_shim() -> tuple[subprocess.Popen, Lines]:
        proc = start_shim_process(tmp_path / "controller-of-the-shim.py", tmp_path)
        shims.append(proc)
        return proc, Lines(proc.stdout)

    yield controller, start_shim
    for proc in shims:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(5)
    controller.stop()


def test_the_shim_takes_over_the_controller_the_supervisor_started_and_relays_it(early):
    controller, start_shim = early
    shim, lines = start_shim()
    assert hello_pid(lines.next()) == controller.proc.pid  # written before the shim existed: it waited in the pipe
    assert lines.next() == "exabgp runs"  # the handover told it ExaBGP runs
    assert controller.handed_over
    send(shim, "announce route 10.0.0.1/32 next-hop self")
    assert lines.next() == "echo announce route 10.0.0.1/32 next-hop self"


def test_the_early_controller_waits_for_exabgp_before_it_may_touch_exabgps_configuration(early):
    controller, _start_shim = early
    assert controller.proc.stdout is not None
    os.set_blocking(controller.proc.stdout.fileno(), False)
    seen = b""
    deadline = time.monotonic() + 10
    while b"\n" not in seen and time.monotonic() < deadline:
        with contextlib.suppress(BlockingIOError):
            seen += controller.proc.stdout.read(4096) or b""
        time.sleep(0.02)
    assert seen.startswith(b"hello ")
    time.sleep(0.5)
    with contextlib.suppress(BlockingIOError):
        seen += controller.proc.stdout.read(4096) or b""
    assert b"exabgp runs" not in seen  # no shim yet: ExaBGP has not started
    os.set_blocking(controller.proc.stdout.fileno(), True)


def test_a_dead_adopted_controller_is_replaced_by_one_the_shim_starts_and_the_supervisor_reaps_it(early):
    controller, start_shim = early
    shim, lines = start_shim()
    first = hello_pid(lines.next())
    assert lines.next() == "exabgp runs"
    send(shim, "die")
    second = hello_pid(lines.next())
    assert second != first
    assert parent_of(second) == shim.pid  # the shim's own
    assert controller.proc.wait(5) == 3  # the supervisor, its parent, reaps it and knows how it ended
    send(shim, "still here")
    assert lines.next() == "echo still here"


def test_the_supervisor_hands_over_once_a_second_shim_starts_its_own(early, tmp_path: Path):
    controller, start_shim = early
    first_shim, first_lines = start_shim()
    assert hello_pid(first_lines.next()) == controller.proc.pid
    assert first_lines.next() == "exabgp runs"  # its last write before it reads: killed now, it ends on its input
    first_shim.kill()  # ExaBGP would respawn its API process
    first_shim.wait(5)
    assert controller.proc.wait(5) == 0  # the end of its input: it stops, as a controller does
    _second_shim, lines = start_shim()
    pid = hello_pid(lines.next())
    assert pid != controller.proc.pid
    assert not (tmp_path / "controller.sock").exists()


def test_a_drain_asked_before_the_handover_reaches_the_early_controller(early, tmp_path: Path):
    controller, start_shim = early
    deadline = time.monotonic() + 10
    while not _catches(controller.proc.pid, signal.SIGUSR1):
        assert time.monotonic() < deadline, "the controller never installed its drain handler"
        time.sleep(0.02)
    (tmp_path / DRAIN_FILE).write_text("")  # as the supervisor does: the file first, then the signal
    controller.drain()
    _shim, lines = start_shim()
    got = [lines.next() for _ in range(3)]
    assert got[0].startswith("hello ")
    assert "drain" in got  # told by the supervisor, and once more by the shim that found the drain file


def test_a_controller_never_handed_over_is_stopped_with_the_supervisor(early, tmp_path: Path):
    controller, _start_shim = early
    pid = controller.proc.pid
    controller.stop()
    assert controller.proc.poll() is not None
    assert gone(pid)
    assert not (tmp_path / "controller.sock").exists()


def test_a_shim_without_a_supervisor_starts_its_own_controller(shim):
    proc, lines = shim  # runtime directory without controller.sock: the shim's own controller, as before
    pid = hello_pid(lines.next())
    assert parent_of(pid) == proc.pid


def _catches(pid: int, signum: int) -> bool:
    """The process has a handler for `signum` (its SigCgt mask in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    return False


def test_without_a_pidfd_the_supervisor_leaves_no_controller_behind_and_the_shim_starts_its_own(tmp_path, monkeypatch):
    from bgpadv.runtime import handover

    script = tmp_path / "controller.py"
    script.write_text(EARLY_CONTROLLER)
    started: list[int] = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc.pid)
        return proc

    def no_pidfd(pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(handover.subprocess, "Popen", popen)
    monkeypatch.setattr(handover.os, "pidfd_open", no_pidfd)
    assert handover.EarlyController.start([sys.executable, str(script)], dict(os.environ), tmp_path) is None
    assert len(started) == 1 and gone(started[0])  # a kernel without pidfds: never two controllers
    assert not (tmp_path / "controller.sock").exists()  # so the shim finds nothing and starts its own


def test_a_controller_dead_before_the_handover_is_not_handed_over_the_shim_starts_its_own(early, tmp_path: Path):
    controller, start_shim = early
    controller.proc.kill()
    controller.proc.wait(5)
    _shim, lines = start_shim()
    pid = hello_pid(lines.next())
    assert pid != controller.proc.pid
    assert not controller.handed_over
    assert not (tmp_path / "controller.sock").exists()


def test_a_runtime_directory_too_deep_for_a_unix_socket_starts_no_early_controller(tmp_path: Path):
    from bgpadv.runtime.handover import EarlyController

    deep = tmp_path / ("d" * 100)  # AF_UNIX paths end at 107 bytes
    deep.mkdir()
    script = tmp_path / "controller.py"
    script.write_text(EARLY_CONTROLLER)
    before = set(Path("/proc").glob("[0-9]*"))
    assert EarlyController.start([sys.executable, str(script)], dict(os.environ), deep) is None
    started = [p for p in set(Path("/proc").glob("[0-9]*")) - before if str(script).encode() in _cmdline(p)]
    assert started == []  # nothing runs: the shim starts the controller as it always did
    assert not (deep / "controller.sock").exists()


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
