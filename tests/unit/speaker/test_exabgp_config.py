"""ExaBGP's configuration, environment and command line rendered from bgpadv's (bgpadv.speaker.exabgp_config).

The rendered file is compared with tests/unit/golden/exabgp_*.conf (BGPADV_UPDATE_GOLDEN=1 rewrites them) and is
checked by ExaBGP itself (`exabgp validate`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bgpadv.config import parse
from bgpadv.speaker.exabgp_config import exabgp_argv, exabgp_environment, render_exabgp_config

GOLDEN = Path(__file__).parent / "golden"
API = ["/opt/bgpadv/bin/python", "-m", "bgpadv", "controller", "--config", "/etc/bgpadv/config.yaml"]

DUAL_STACK = {
    "localASN": 64513,
    "routerID": "10.0.0.11",
    "peers": [
        {"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11", "holdTime": 9, "md5Password": "s3cret"},
        {
            "address": "fd00::1",
            "asn": 64512,
            "localAddress": "fd00::11",
            "passive": True,
            "gracefulRestart": False,
            "families": ["ipv6 unicast"],
        },
    ],
    "exabgp": {"reactorSpeed": 0.05},
}
MINIMAL = {"localASN": 4200000001, "peers": [{"address": "192.0.2.1", "asn": 64512}]}


@pytest.mark.parametrize(
    ("name", "raw", "receive"),
    [
        pytest.param("dual_stack", DUAL_STACK, False, id="dual-stack"),
        pytest.param("minimal_receive", MINIMAL, True, id="minimal-with-receive"),
    ],
)
def test_config_renders_as_golden_and_exabgp_accepts_it(name, raw, receive, tmp_path):
    config = parse(raw)
    text = render_exabgp_config(config, API, receive_routes=receive)
    path = GOLDEN / f"exabgp_{name}.conf"
    if os.environ.get("BGPADV_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    conf = tmp_path / "exabgp.conf"
    conf.write_text(text.replace(API[0], sys.executable))  # ExaBGP checks that the program exists
    env = {**os.environ, **exabgp_environment(config, tmp_path)}
    result = subprocess.run(exabgp_argv(conf, validate=True), env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_exabgp_rejects_a_broken_file_so_validation_means_something(tmp_path):
    conf = tmp_path / "exabgp.conf"
    conf.write_text(render_exabgp_config(parse(MINIMAL), API).replace("manual-eor true", "manual-eor maybe"))
    result = subprocess.run(exabgp_argv(conf, validate=True), capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


@pytest.mark.parametrize(
    ("peer_change", "argv", "match"),
    [
        pytest.param(
            # config.parse refuses this password; the renderer checks again (a Config built in code)
            {"md5_password": 'x"; }'},
            API,
            "MD5",
            id="md5-breaks-syntax",
        ),
        pytest.param({}, ["/bin/ctl;", "x"], "cannot carry", id="argv-with-semicolon"),
        pytest.param({}, [], "empty", id="no-argv"),
    ],
)
def test_values_that_would_break_the_syntax_are_refused(peer_change, argv, match):
    minimal = parse(MINIMAL)
    config = replace(minimal, peers=(replace(minimal.peers[0], **peer_change),))
    with pytest.raises(ValueError, match=match):
        render_exabgp_config(config, argv)


def test_environment_turns_on_acks_and_off_noise(tmp_path):
    env = exabgp_environment(parse(DUAL_STACK), tmp_path)
    assert env["exabgp.api.ack"] == "true"
    assert env["exabgp.api.show-routes-format"] == "v2"
    assert env["exabgp.daemon.drop"] == "false" and env["exabgp.daemon.user"] == "root"
    assert env["exabgp.log.statistics"] == "false" and env["exabgp.log.processes"] == "false"
    assert env["exabgp.reactor.speed"] == "0.05"
    assert env["exabgp.daemon.pid"] == str(tmp_path / "exabgp.pid")


def test_argv_runs_exabgp_from_this_environment():
    argv = exabgp_argv("/run/bgpadv/exabgp.conf")
    assert argv[-2:] == ["server", "/run/bgpadv/exabgp.conf"]
    assert Path(argv[0]).name in ("exabgp", "python", "python3") or argv[1:3] == ["-m", "exabgp"]


def test_exabgp_runs_under_pypy_only_where_pypy3_and_the_exabgp_package_are_found(monkeypatch) -> None:
    import bgpadv.speaker.exabgp_config as module

    monkeypatch.setattr(module, "pypy_interpreter", lambda: "/usr/bin/pypy3")
    assert module.resolve_runtime("auto") == "pypy"
    assert module.resolve_runtime("cpython") == "cpython"
    argv = module.exabgp_argv("/run/bgpadv/exabgp.conf", runtime="pypy")
    assert argv[0] == "/usr/bin/pypy3" and argv[-2:] == ["server", "/run/bgpadv/exabgp.conf"]
    assert argv[1].endswith("exabgp_boot.py") and argv[2].endswith(
        "exabgp"
    )  # the package directory bgpadv's own ExaBGP is installed in
    monkeypatch.setattr(module, "pypy_interpreter", lambda: None)
    assert module.resolve_runtime("auto") == "cpython"
    with pytest.raises(ValueError, match="pypy3"):
        module.resolve_runtime("pypy")
