"""The supervisor's bfdd (`bgpadv.runtime.supervisor.Bfdd`) against fake bfdd binaries (`BGPADV_BFDD`): a bfdd that
exits at start-up for want of capabilities (FRR 8.4's `privs_init` failure, as measured in a non-root pod without
them) or of the account it drops to is reported once and never restarted; any other death is restarted with
backoff. Run as root, bfdd drops to `frr` and still reaches its own directory inside a runtime directory private to
root (0700), which stays as it was: it runs there, with relative paths. The real bfdd: tests/lab/test_bfd.py.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import stat
import time
from pathlib import Path

import pytest

from bgpadv.core import runfiles
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.runtime.shim import Backoff
from bgpadv.runtime.supervisor import Bfdd, missing_account, missing_capabilities
from bgpadv.speaker import bfd

# what FRR 8.4.4's bfdd prints before exiting 1, run by a non-root user without file capabilities
NO_CAPS = [
    "privs_init: initial cap_set_proc failed: Operation not permitted",
    "Wanted caps: cap_net_bind_service,cap_net_raw,cap_sys_admin=p",
    "Have caps: =",
]


def fake_bfdd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str], code: int = 1) -> Path:
    """A `bfdd` printing `lines` on stderr and exiting with `code`; each start appends a line to `starts`."""
    starts = tmp_path / "starts"
    script = tmp_path / "fake-bfdd"
    echoes = "\n".join(f"echo '{line}' >&2" for line in lines)
    script.write_text(f"#!/bin/sh\necho started >> {starts}\n{echoes}\nexit {code}\n")
    script.chmod(0o755)
    monkeypatch.setenv(bfd.BFDD_BINARY_ENV, str(script))
    return starts


def run_for(bfdd: Bfdd, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        bfdd.poll(time.monotonic())
        time.sleep(0.02)


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    (d / runfiles.BFD_WANTED).touch()  # the controller asks for bfdd
    return d


def test_a_bfdd_without_its_capabilities_is_reported_once_and_not_restarted(tmp_path, runtime, monkeypatch, caplog):
    starts = fake_bfdd(tmp_path, monkeypatch, NO_CAPS)
    bfdd = Bfdd(runtime, {}, backoff=Backoff(first=0.01, cap=0.01, healthy_after=60.0))
    with caplog.at_level(logging.ERROR, logger="bgpadv.runtime.supervisor"):
        run_for(bfdd, 1.5)  # a restarting supervisor would have started it ~50 times
    assert starts.read_text().splitlines() == ["started"]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert "cap_net_bind_service,cap_net_raw,cap_sys_admin" in errors[0]
    assert "allowPrivilegeEscalation: true" in errors[0] and "setcap" in errors[0]
    assert bfdd.gave_up == errors[0]
    assert (runtime / runfiles.BFDD_FAILED).read_text().strip() == errors[0]


def test_a_bfdd_dying_for_another_reason_is_restarted_with_backoff(tmp_path, runtime, monkeypatch):
    starts = fake_bfdd(tmp_path, monkeypatch, ["bfdd: some other start-up error"])
    bfdd = Bfdd(runtime, {}, backoff=Backoff(first=0.01, cap=0.01, healthy_after=60.0))
    run_for(bfdd, 1.0)
    bfdd.stop()
    assert len(starts.read_text().splitlines()) >= 2
    assert bfdd.gave_up is None
    assert not (runtime / runfiles.BFDD_FAILED).exists()


@pytest.mark.parametrize(
    ("have", "missing"),
    [
        ("Have caps: =", ["cap_net_bind_service", "cap_net_raw", "cap_sys_admin"]),
        ("Have caps: cap_net_bind_service,cap_net_raw=p", ["cap_sys_admin"]),
    ],
)
def test_the_missing_capabilities_are_those_wanted_less_those_held(have, missing):
    assert missing_capabilities([*NO_CAPS[:2], have]) == missing


def test_an_output_without_the_privs_failure_names_no_capabilities():
    assert missing_capabilities(["bfdd: vty socket in use", "Wanted caps: cap_net_raw=p"]) is None


def test_the_bfd_client_finds_the_supervisors_reason_and_sets_the_cannot_start_gauge(tmp_path):
    (tmp_path / runfiles.BFDD_FAILED).write_text("bfdd cannot start: it lacks the capabilities cap_sys_admin\n")
    metrics = MetricsObserver(Metrics(process_collectors=False))
    metrics.bfd_peers(["tor-a"])
    reasons: list[str] = []
    control = bfd.BfdControl(
        tmp_path / "bfdd" / "bfdd.sock",
        bfd.BfdStates(),
        failed_file=tmp_path / runfiles.BFDD_FAILED,
        on_bfdd_failed=lambda reason: (reasons.append(reason), metrics.bfdd_failed(reason)),
        retry=0.01,
    )
    control.start()
    try:
        deadline = time.monotonic() + 5
        while not reasons and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # more reconnect attempts: still one report
    finally:
        control.stop()
    assert reasons == ["bfdd cannot start: it lacks the capabilities cap_sys_admin"]
    registry = metrics.metrics.registry
    assert registry.get_sample_value("bgpadv_bfdd_cannot_start") == 1
    assert registry.get_sample_value("bgpadv_bfd_session_up", {"peer": "tor-a"}) == 0


def test_a_bfdd_whose_user_does_not_exist_is_reported_once_and_not_restarted(tmp_path, runtime, monkeypatch):
    starts = fake_bfdd(tmp_path, monkeypatch, ["privs_init: could not lookup user frr"])
    bfdd = Bfdd(runtime, {}, backoff=Backoff(first=0.01, cap=0.01, healthy_after=60.0))
    run_for(bfdd, 1.0)
    assert starts.read_text().splitlines() == ["started"]
    assert bfdd.gave_up is not None and "the user frr it runs as does not exist" in bfdd.gave_up
    assert "adduser --system --group frr" in (runtime / runfiles.BFDD_FAILED).read_text()


@pytest.mark.parametrize(
    ("line", "account"),
    [
        pytest.param("privs_init: could not lookup user frr", ("user", "frr"), id="user"),
        pytest.param("privs_init: could not lookup group frr", ("group", "frr"), id="group"),
        pytest.param("privs_init: initial cap_set_proc failed: Operation not permitted", None, id="capabilities"),
        pytest.param("bfdd: vty socket in use", None, id="another-error"),
    ],
)
def test_the_missing_account_is_read_from_bfdds_output(line, account):
    assert missing_account([line]) == account


def _frr() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("frr")
    except KeyError:
        return None


@pytest.mark.skipif(
    os.geteuid() != 0 or _frr() is None or shutil.which("setpriv") is None, reason="needs root, user frr, setpriv"
)
def test_as_root_bfdd_drops_to_frr_and_reaches_its_directory_inside_a_runtime_directory_private_to_root(
    tmp_path, runtime, monkeypatch
):
    """A fake bfdd that does what FRR's does with `-u`/`-g` and `-i` (drops to the user, then writes its PID file):
    it can only write it because it runs in its directory and the path is relative."""
    runtime.chmod(0o700)
    script = tmp_path / "fake-bfdd"
    script.write_text(
        "#!/bin/sh\n"
        'while [ $# -gt 0 ]; do case "$1" in -u) user=$2; shift;; -i) pid=$2; shift;; esac; shift; done\n'
        'exec setpriv --reuid="$user" --regid="$user" --clear-groups sh -c "echo \\$\\$ > $pid && exec sleep 30"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv(bfd.BFDD_BINARY_ENV, str(script))
    bfdd = Bfdd(runtime, {})
    try:
        bfdd.poll(time.monotonic())
        pid_file = bfd.bfdd_dir(runtime) / bfd.BFDD_PID
        deadline = time.monotonic() + 5
        while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert bfdd.proc is not None and bfdd.proc.poll() is None, "bfdd still runs"
        assert int(pid_file.read_text()) == bfdd.proc.pid
        frr = _frr()
        assert frr is not None and pid_file.stat().st_uid == frr.pw_uid, "written by bfdd as frr"
    finally:
        bfdd.stop()
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o700 and runtime.stat().st_uid == 0, "the runtime dir unchanged"
    directory = bfd.bfdd_dir(runtime).stat()
    assert (stat.S_IMODE(directory.st_mode), directory.st_uid) == (0o700, frr.pw_uid), "bfdd's own, for it alone"


def test_bfdd_reads_no_configuration_file_and_names_its_files_relative_to_its_directory():
    argv = bfd.bfdd_argv(user="frr")
    assert argv[argv.index("-f") + 1] == os.devnull, "never a host's /etc/frr/bfdd.conf"
    for option in ("--vty_socket", "-i", "--bfdctl", "-z"):
        assert not argv[argv.index(option) + 1].startswith("/"), option
    assert argv[argv.index("-u") + 1 :] == ["frr", "-g", "frr"]
