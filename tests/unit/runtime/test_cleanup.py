"""Nothing secret left behind: a clean stop of `bgpadv run` leaves neither the rendered ExaBGP configuration (MD5
passwords inside) nor a copy of bgpadv's configuration where it does not belong.

Scope: the real `bgpadv run` (real ExaBGP, whose only peer is a loopback address nobody answers on; the controller
cannot reach Kubernetes and is restarted by the shim meanwhile, which is enough to have every runtime file written),
stopped by SIGTERM with no drain. Without `--runtime-dir` its private temporary directory (`bgpadv-*` under
`$TMPDIR`, here a directory of the test's own) is gone after the stop; with a configured runtime directory only the
last good configuration stays (what a restarted container needs while the file is broken), 0600.
`lifecycle.clean_runtime_dir` itself is table-tested below.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bgpadv.runtime.lifecycle import EPHEMERAL_FILES, EXABGP_CONF, LAST_GOOD, clean_runtime_dir

PASSWORD = "s3cret-md5"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(tmp_path: Path) -> Path:
    config = {
        "localASN": 64513,
        "peers": [{"address": "127.0.0.2", "asn": 64512, "md5Password": PASSWORD, "holdTime": 9}],
        "kubernetes": {"kubeconfig": str(tmp_path / "no-such-kubeconfig")},
        "metrics": {"listen": f"127.0.0.1:{free_port()}"},
        "safety": {"drainSeconds": 0},
    }
    path = tmp_path / "bgpadv.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def wait_for(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start_run(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "BGPADV_LOG_LEVEL": "WARNING"}
    env.pop("BGPADV_RUNTIME_DIR", None)
    argv = [sys.executable, "-m", "bgpadv", "run", "--config", str(write_config(tmp_path)), *extra]
    log = (tmp_path / "run.log").open("wb")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return proc, temp


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_run_stopped_by_sigterm_leaves_no_bgpadv_temporary_directory(tmp_path: Path):
    proc, temp = start_run(tmp_path)
    try:
        wait_for(lambda: any(temp.glob("bgpadv-*/exabgp.pid")), 30, "ExaBGP started in a bgpadv-* directory")
        (rdir,) = temp.glob("bgpadv-*")
        assert rdir.stat().st_mode & 0o777 == 0o700
        assert PASSWORD in (rdir / EXABGP_CONF).read_text()
        wait_for(lambda: (rdir / LAST_GOOD).exists(), 30, "the controller's last good configuration")
    finally:
        code = stop(proc)
    assert code == 0, (tmp_path / "run.log").read_text()[-2000:]
    assert list(temp.iterdir()) == []


def test_run_with_a_configured_runtime_dir_keeps_only_the_last_good_configuration(tmp_path: Path):
    rdir = tmp_path / "run"
    proc, temp = start_run(tmp_path, "--runtime-dir", str(rdir))
    try:
        wait_for(lambda: (rdir / "exabgp.pid").exists() and (rdir / LAST_GOOD).exists(), 30, "ExaBGP and a controller")
    finally:
        code = stop(proc)
    assert code == 0, (tmp_path / "run.log").read_text()[-2000:]
    assert sorted(p.name for p in rdir.iterdir()) == [LAST_GOOD]
    assert (rdir / LAST_GOOD).stat().st_mode & 0o777 == 0o600
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize(
    ("owned", "left"),
    [
        pytest.param(True, None, id="its-own-temporary-directory-goes-whole"),
        pytest.param(False, [LAST_GOOD, "unrelated.txt"], id="a-configured-one-keeps-the-last-good-configuration"),
    ],
)
def test_clean_runtime_dir(tmp_path: Path, owned: bool, left: list[str] | None):
    rdir = tmp_path / "bgpadv-x"
    rdir.mkdir()
    for name in (*EPHEMERAL_FILES, LAST_GOOD, "unrelated.txt"):
        (rdir / name).write_text("x")
    clean_runtime_dir(rdir, owned=owned)
    assert (sorted(p.name for p in rdir.iterdir()) if rdir.exists() else None) == left


def test_clean_runtime_dir_never_raises_on_a_missing_directory(tmp_path: Path):
    clean_runtime_dir(tmp_path / "absent", owned=False)
    clean_runtime_dir(tmp_path / "absent", owned=True)
