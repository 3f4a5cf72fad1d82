"""The controller's capabilities (`bgpadv.core.capability`, `bgpadv.core.runfiles.controller_interpreter`): NET_ADMIN
for the egress import (`bgpadv.importer.capability`), NET_RAW for interface peers (`bgpadv.runtime.unnumbered`).

The controller alone runs under the image's `python3-netadmin` (file capabilities cap_net_admin,cap_net_raw+p) when
it is there; the API shim, ExaBGP and the supervisor run under the plain interpreter. The controller raises each
into its effective set only when a feature it serves needs it, and says what the container lacks when it cannot.
The image test (tests/image/test_image.py) runs both interpreters as an arbitrary UID with and without each
capability.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bgpadv.config import parse
from bgpadv.core.runfiles import NETADMIN_INTERPRETER, controller_argv, controller_interpreter
from bgpadv.importer.capability import raise_net_admin
from bgpadv.runtime import unnumbered
from bgpadv_lab import objects as k8s


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


@pytest.mark.skipif(os.geteuid() != 0, reason="root holds every capability here")
@pytest.mark.parametrize(
    ("raise_it", "code", "name", "component"),
    [
        pytest.param(
            raise_net_admin,
            "from bgpadv.importer.capability import raise_net_admin; print(raise_net_admin())",
            "NET_ADMIN",
            "deploy/components/import",
            id="net-admin-for-the-import",
        ),
        pytest.param(
            unnumbered.raise_net_raw,
            "from bgpadv.runtime.unnumbered import raise_net_raw; print(raise_net_raw())",
            "NET_RAW",
            "deploy/components/unnumbered",
            id="net-raw-for-interface-peers",
        ),
    ],
)
def test_a_process_holding_the_capability_raises_it_and_one_without_is_told_what_the_pod_needs(
    raise_it, code: str, name: str, component: str
) -> None:
    assert raise_it() is None
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) missing")
    result = subprocess.run(
        [setpriv, f"--bounding-set=-{name.lower()}", "--inh-caps=-all", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert f"{name} is not in this process' permitted set" in result.stdout, result.stdout + result.stderr
    assert component in result.stdout


NETWORKS = {"selector": {"matchLabels": dict(k8s.ADVERTISED)}}


def _config(*peers: dict):
    return parse({"localASN": 64513, "peers": list(peers), "networks": NETWORKS}, environ={})


def test_net_raw_is_raised_only_when_the_configuration_has_an_interface_peer(monkeypatch) -> None:
    raised: list[int] = []

    def fake_raise(number: int, name: str, deploy: str) -> str:
        raised.append(number)
        return f"{name} is not in this process' permitted set ({deploy})"

    monkeypatch.setattr(unnumbered, "raise_capability", fake_raise)
    numbered = _config({"address": "192.0.2.1", "asn": 64512})
    assert unnumbered.raise_net_raw(numbered) is None
    assert raised == []
    unnumbered_peer = _config({"interface": "eth1", "asn": 64512})
    why = unnumbered.raise_net_raw(unnumbered_peer)
    assert raised == [13]
    assert why is not None
    assert "deploy/components/unnumbered" in why
    assert "unnumbered.enabled" in why


def test_a_discovery_refused_for_want_of_net_raw_waits_with_the_reason_naming_the_deployment(monkeypatch) -> None:
    def refused(interface: str, timeout: float) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(unnumbered.ndp, "discover_router", refused)
    with pytest.raises(unnumbered.ndp.LinkError) as e:
        unnumbered.KernelLinks().router("eth1", 0.1)
    assert "CAP_NET_RAW" in str(e.value)
    assert "deploy/components/unnumbered" in str(e.value)
