"""`bgpadv check-config` answers for ExaBGP too, and the configuration path survives a ConfigMap update.

Scope: `bgpadv.commands.checkconfig` (ExaBGP's own validator run on the rendered configuration, its complaint
reported as a
`path: problem` line with exit 2), the agreement between `config.parse` and ExaBGP on the mistakes ExaBGP refuses,
and `wiring.run` keeping the configuration path as given (never resolved through kubelet's `..data` symlink).
These tests run the installed ExaBGP (`exabgp validate`, well under a second each).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bgpadv.commands import checkconfig
from bgpadv.commands.cli import main
from bgpadv.config import Config, ConfigError, load, parse
from bgpadv.core.prefix import Address
from bgpadv.runtime import wiring
from bgpadv.speaker.exabgp_config import exabgp_argv, exabgp_environment, render_exabgp_config

GOOD = "localASN: 64513\npeers:\n  - address: 10.0.0.1\n    asn: 64512\n"


def test_a_valid_configuration_is_accepted_by_bgpadv_and_by_exabgp(tmp_path, capsys):
    path = tmp_path / "bgpadv.yaml"
    path.write_text(GOOD)
    assert main(["check-config", str(path)]) == 0
    assert capsys.readouterr().out == (
        f"{path}: valid — local AS64513, peers: 10.0.0.1 (AS64512); ExaBGP accepts the rendered configuration\n"
    )


def test_dash_reads_the_configuration_from_standard_input(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(GOOD))
    assert main(["check-config", "-"]) == 0
    assert capsys.readouterr().out.startswith("-: valid — local AS64513")
    monkeypatch.setattr("sys.stdin", io.StringIO("localASN: 64513\n"))
    assert main(["check-config", "-"]) == 2
    assert "-: peers" in capsys.readouterr().err


def test_what_exabgp_refuses_is_a_problem_with_exit_2(tmp_path, capsys, monkeypatch):
    """Whatever ExaBGP refuses in the rendering is reported with ExaBGP's reason (here: a duplicate family that a
    renderer bug would write)."""
    real = checkconfig.render_exabgp_config

    def duplicate_family(config: Config, argv: list[str]) -> str:
        text = real(config, argv)
        return text.replace("        ipv4 unicast;", "        ipv4 unicast;\n        ipv4 unicast;")

    monkeypatch.setattr(checkconfig, "render_exabgp_config", duplicate_family)
    path = tmp_path / "bgpadv.yaml"
    path.write_text(GOOD)
    assert main(["check-config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{path}: ExaBGP refuses the rendered configuration: ")
    assert "duplicate afi/safi pair ipv4/unicast" in captured.err
    assert captured.err.count("\n") == 1


def test_field_errors_are_reported_before_exabgp_is_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(checkconfig, "exabgp_problems", lambda *a: pytest.fail("ExaBGP must not run"))
    path = tmp_path / "bgpadv.yaml"
    path.write_text("localASN: null\npeers:\n  - address: 10.0.0.1\n    asn: null\n")
    assert main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"{path}: localASN: is required, got null\n{path}: peers[0].asn: is required, got null\n"
    )


RAW = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


@pytest.fixture
def base() -> Config:
    """One peer, every default: the Config a test changes in code around parse."""
    return parse(RAW)


@pytest.mark.parametrize(
    ("raw_peer", "changed", "exabgp_says"),
    [
        pytest.param(
            {"localAddress": "fd00::11"},
            {"local_address": Address.parse("fd00::11")},
            "local-address and peer-address must be of the same family",
            id="local-address-family",
        ),
        pytest.param(
            {"families": ["ipv4 unicast", "ipv4 unicast"]},
            {"families": ("ipv4 unicast", "ipv4 unicast")},
            "duplicate afi/safi pair ipv4/unicast",
            id="repeated-family",
        ),
    ],
)
def test_parse_refuses_what_exabgp_refuses(raw_peer, changed, exabgp_says, base, tmp_path):
    """Each mistake ExaBGP refuses at start-up is already a field error: parse refuses the YAML, and ExaBGP refuses
    the same peer when a Config is built in code around parse."""
    with pytest.raises(ConfigError):
        parse({"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512, **raw_peer}]})
    built = replace(base.peers[0], **changed)
    problems = checkconfig.exabgp_problems(replace(base, peers=(built,)), tmp_path / "bgpadv.yaml")
    assert len(problems) == 1 and exabgp_says in problems[0], problems


def test_an_md5_password_with_a_trailing_newline_breaks_exabgp_so_parse_refuses_it(base, tmp_path):
    with pytest.raises(ConfigError):
        parse({"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512, "md5Password": "abc\n"}]})
    with pytest.raises(ValueError, match="MD5"):  # the renderer refuses it too (fullmatch)
        render_exabgp_config(replace(base, peers=(replace(base.peers[0], md5_password="abc\n"),)), [sys.executable])
    # and ExaBGP cannot read it written verbatim
    text = render_exabgp_config(base, [sys.executable]).replace(
        "    manual-eor true;", '    md5-password "abc\n";\n    manual-eor true;'
    )
    conf = tmp_path / "exabgp.conf"
    conf.write_text(text)
    env = {**os.environ, **exabgp_environment(base, tmp_path)}
    result = subprocess.run(exabgp_argv(conf, validate=True), env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


# --- the configuration path is kept as given ---------------------------------------------------------------------


def _configmap_volume(root: Path, stamp: str, text: str) -> None:
    """Write a ConfigMap volume the way kubelet does: a timestamped directory, `..data` pointing at it (swapped
    atomically), `bgpadv.yaml -> ..data/bgpadv.yaml`; the previous timestamped directory is removed."""
    old = os.readlink(root / "..data") if (root / "..data").is_symlink() else None
    (root / stamp).mkdir()
    (root / stamp / "bgpadv.yaml").write_text(text)
    (root / "..data_tmp").symlink_to(stamp)
    os.replace(root / "..data_tmp", root / "..data")
    if not (root / "bgpadv.yaml").is_symlink():
        (root / "bgpadv.yaml").symlink_to("..data/bgpadv.yaml")
    if old is not None:
        for child in (root / old).iterdir():
            child.unlink()
        (root / old).rmdir()


def test_run_hands_the_controller_the_path_as_given_so_a_configmap_update_keeps_it_valid(tmp_path, monkeypatch):
    volume = tmp_path / "config"
    volume.mkdir()
    _configmap_volume(volume, "..2025_01_01_00_00_00.1", GOOD)
    exabgp_runs: list[list[str]] = []
    rendered: list[str] = []  # read while ExaBGP would run: a stop removes it (no MD5 password left behind)

    def supervise(argv, env, rdir, drain, **_):
        exabgp_runs.append(argv)
        rendered.append((rdir / "exabgp.conf").read_text())
        return 0

    monkeypatch.setattr(wiring, "supervise", supervise)
    monkeypatch.setattr(wiring, "setup_logging", lambda level: None)
    monkeypatch.chdir(tmp_path)
    runtime = tmp_path / "runtime"

    assert wiring.run("config/bgpadv.yaml", str(runtime)) == 0  # a relative path through the symlinks

    assert len(exabgp_runs) == 1
    run_line = next(line for line in rendered[0].splitlines() if "run " in line)
    config_arg = run_line.rstrip(";").split()[-1]
    assert config_arg == str(volume / "bgpadv.yaml")  # absolute, symlinks not resolved

    _configmap_volume(volume, "..2025_01_02_00_00_00.2", GOOD.replace("64513", "64600"))
    assert not (volume / "..2025_01_01_00_00_00.1").exists()
    assert load(config_arg).local_asn == 64600  # what a respawned controller reads
