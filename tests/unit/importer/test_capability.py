"""CAP_NET_ADMIN for the egress import (`bgpadv.importer.capability`, `bgpadv.core.runfiles.controller_interpreter`).

The controller alone runs under the image's `python3-netadmin` (file capability cap_net_admin+p) when it is there;
the API shim, ExaBGP and the supervisor run under the plain interpreter. The controller raises NET_ADMIN into its
effective set when it imports routes, and says what the container lacks when it cannot. The image test
(tests/image/test_image.py) runs both interpreters as an arbitrary UID with and without the capability.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bgpadv.core.runfiles import NETADMIN_INTERPRETER, controller_argv, controller_interpreter
from bgpadv.importer.capability import raise_net_admin


def test_the_controller_runs_under_the_netadmin_interpreter_when_the_image_has_one(tmp_path: Path) -> None:
    plain = tmp_path / "python3"
    plain.touch(mode=0o755)
    assert controller_interpreter(str(plain)) == str(plain)
    (tmp_path / NETADMIN_INTERPRETER).touch(mode=0o644)  # not executable: not used
    assert controller_interpreter(str(plain)) == str(plain)
    (tmp_path / NETADMIN_INTERPRETER).chmod(0o755)
    assert controller_interpreter(str(plain)) == str(tmp_path / NETADMIN_INTERPRETER)


def test_only_the_controller_itself_gets_it_never_the_shim(monkeypatch, tmp_path: Path) -> None:
    plain = tmp_path / "python3"
    plain.touch(mode=0o755)
    (tmp_path / NETADMIN_INTERPRETER).touch(mode=0o755)
    monkeypatch.setattr(sys, "executable", str(plain))
    assert controller_argv("/etc/bgpadv/bgpadv.yaml", no_shim=True)[0] == str(tmp_path / NETADMIN_INTERPRETER)
    assert controller_argv("/etc/bgpadv/bgpadv.yaml")[0] == str(plain)


@pytest.mark.skipif(os.geteuid() != 0, reason="root holds NET_ADMIN here")
def test_a_process_holding_net_admin_raises_it_and_one_without_is_told_what_the_pod_needs() -> None:
    assert raise_net_admin() is None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) missing")
    code = "from bgpadv.importer.capability import raise_net_admin; print(raise_net_admin())"
    result = subprocess.run(
        [setpriv, "--bounding-set=-net_admin", "--inh-caps=-all", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "NET_ADMIN is not in this process' permitted set" in result.stdout, result.stdout + result.stderr
    assert "deploy/components/import" in result.stdout
