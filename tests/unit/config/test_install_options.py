"""What installing bgpadv in a cluster needs from its configuration and command line.

Scope:
- secrets: `peers[i].md5PasswordFile` (a file mounted from a Secret) read at load and checked like `md5Password`,
  one trailing newline removed; the rendered ExaBGP configuration, which holds the passwords, created 0600 by
  `bgpadv run` and by `check-config`;
- passive peers: a passive peer needs a `localAddress`; ExaBGP is told to listen there (`exabgp.tcp.bind`) on
  `exabgp.listenPort` (`exabgp.tcp.port`, default 179), and nowhere without a passive peer;
- the metrics listener on the node's address only: `metrics.listen: "${BGPADV_NODE_IP}:9179"` resolved from the
  environment (the pod sets the variable from `status.hostIP`);
- `check-config` warnings (stderr, exit 0) for the traps: loopback or wildcard metrics, passive peers on a port
  below 1024, an inline md5Password;
- `bgpadv --help`: every command and option has a help text; `bgpadv --version`.
"""

from __future__ import annotations

import argparse
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bgpadv import __version__
from bgpadv.commands import checkconfig
from bgpadv.commands.cli import _parser, main  # the parser main() runs: its actions are what `--help` prints
from bgpadv.config import ConfigError, parse
from bgpadv.runtime import wiring
from bgpadv.speaker.exabgp_config import exabgp_argv, exabgp_environment, render_exabgp_config, write_private

PEER = {"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11"}


def _config(**peer: object) -> dict:
    return {"localASN": 64513, "peers": [{**PEER, **peer}]}


def _problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as e:
        parse(raw)
    return e.value.problems


# --- secrets -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "password"),
    [
        pytest.param(b"s3cret", "s3cret", id="no-newline"),
        pytest.param(b"s3cret\n", "s3cret", id="one-newline-removed"),
        pytest.param(b"s3cret\r\n", "s3cret", id="one-crlf-removed"),
        pytest.param(b"a!#$%&()*+,-./:<=>?@[]^_{|}~", "a!#$%&()*+,-./:<=>?@[]^_{|}~", id="every-allowed-symbol"),
    ],
)
def test_md5_password_file_is_read_at_load_with_one_trailing_newline_removed(tmp_path, content, password):
    secret = tmp_path / "tor-1"
    secret.write_bytes(content)
    peer = parse(_config(md5PasswordFile=str(secret))).peers[0]
    assert (peer.md5_password, peer.md5_password_file) == (password, str(secret))


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"s3cret\n\n", id="two-newlines"),
        pytest.param(b"s3 cret", id="space"),
        pytest.param(b's3"cret', id="quote"),
        pytest.param("pässword".encode(), id="non-ascii"),
        pytest.param(b"", id="empty"),
        pytest.param(b"\n", id="only-a-newline"),
        pytest.param(b"x" * 81, id="81-characters"),
    ],
)
def test_md5_password_file_follows_the_inline_character_rules(tmp_path, content):
    secret = tmp_path / "tor-1"
    secret.write_bytes(content)
    assert _problems(_config(md5PasswordFile=str(secret))) == [
        f"peers[0].md5PasswordFile: {str(secret)!r} must hold 1-80 printable ASCII characters without spaces, "
        "quotes or ';' (one trailing newline allowed)"
    ]


def test_a_missing_md5_password_file_names_the_field_and_the_file(tmp_path):
    missing = tmp_path / "absent"
    assert _problems(_config(md5PasswordFile=str(missing))) == [
        f"peers[0].md5PasswordFile: cannot read {str(missing)!r}: No such file or directory"
    ]


def test_md5_password_and_md5_password_file_are_exclusive(tmp_path):
    secret = tmp_path / "tor-1"
    secret.write_text("s3cret\n")
    assert _problems(_config(md5Password="other", md5PasswordFile=str(secret))) == [
        "peers[0].md5PasswordFile: must not be set together with md5Password (keep the password in a Secret)"
    ]


def test_the_password_from_a_file_reaches_the_rendered_exabgp_configuration(tmp_path):
    secret = tmp_path / "tor-1"
    secret.write_text("s3cret\n")
    text = render_exabgp_config(parse(_config(md5PasswordFile=str(secret))), [sys.executable])
    assert '    md5-password "s3cret";' in text.splitlines()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_private_creates_0600_whatever_the_umask_and_replaces_an_older_readable_file(tmp_path):
    target = tmp_path / "exabgp.conf"
    target.write_text("old")
    target.chmod(0o644)
    old_umask = os.umask(0)
    try:
        write_private(target, "new")
    finally:
        os.umask(old_umask)
    assert (_mode(target), target.read_text()) == (0o600, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exabgp.conf"]  # no temporary file left


def test_run_writes_exabgps_configuration_0600(tmp_path, monkeypatch):
    config = tmp_path / "bgpadv.yaml"
    config.write_text("localASN: 64513\npeers: [{address: 10.0.0.1, asn: 64512, md5Password: s3cret}]\n")
    modes: list[int] = []  # while ExaBGP would run: a stop removes the file
    monkeypatch.setattr(
        wiring, "supervise", lambda argv, env, rdir, drain, **_: modes.append(_mode(rdir / "exabgp.conf"))
    )
    monkeypatch.setattr(wiring, "setup_logging", lambda level: None)
    runtime = tmp_path / "run"
    wiring.run(str(config), str(runtime))
    assert modes == [0o600]
    assert not (runtime / "exabgp.conf").exists()


def test_check_config_hands_exabgp_a_0600_file(tmp_path, monkeypatch):
    modes: list[int] = []
    real_run = subprocess.run

    def run(argv, **kwargs):
        modes.append(_mode(Path(argv[-1])))
        return real_run(argv, **kwargs)

    monkeypatch.setattr(checkconfig.subprocess, "run", run)
    assert checkconfig.exabgp_problems(parse(_config()), tmp_path / "bgpadv.yaml") == []
    assert modes == [0o600]


# --- passive peers -------------------------------------------------------------------------------------------------


def test_a_passive_peer_needs_a_local_address_to_listen_on():
    raw = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512, "passive": True}]}
    assert _problems(raw) == [
        "peers[0].localAddress: is required when passive is true: bgpadv listens there for the peer"
    ]


def test_exabgp_listens_on_each_passive_peers_local_address_on_the_configured_port(tmp_path):
    raw = {
        "localASN": 64513,
        "peers": [
            {"address": "10.0.0.1", "asn": 64512, "localAddress": "10.0.0.11", "passive": True},
            {"address": "10.0.0.2", "asn": 64512, "localAddress": "10.0.0.11", "passive": True},
            {"address": "10.0.0.3", "asn": 64512, "localAddress": "10.0.0.21"},
            {"address": "fd00::1", "asn": 64512, "localAddress": "fd00::11", "passive": True},
        ],
        "exabgp": {"listenPort": 1790},
    }
    env = exabgp_environment(parse(raw), tmp_path)
    assert (env["exabgp.tcp.bind"], env["exabgp.tcp.port"]) == ("10.0.0.11 fd00::11", "1790")


def test_without_a_passive_peer_exabgp_listens_nowhere_and_the_port_defaults_to_179(tmp_path):
    env = exabgp_environment(parse(_config()), tmp_path)
    assert (env["exabgp.tcp.bind"], env["exabgp.tcp.port"]) == ("", "179")


def test_exabgp_accepts_the_listen_settings(tmp_path):
    config = parse({**_config(passive=True), "exabgp": {"listenPort": 1790}})
    conf = tmp_path / "exabgp.conf"
    conf.write_text(render_exabgp_config(config, [sys.executable]))
    env = {**os.environ, **exabgp_environment(config, tmp_path)}
    result = subprocess.run(exabgp_argv(conf, validate=True), env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("port", [0, 65536, "179", True])
def test_listen_port_is_a_tcp_port(port):
    problems = _problems({**_config(), "exabgp": {"listenPort": port}})
    assert len(problems) == 1 and problems[0].startswith("exabgp.listenPort: must be")


# --- the metrics listener on the node's address -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "listen", "host_port"),
    [
        pytest.param("10.0.0.11", "10.0.0.11:9179", ("10.0.0.11", 9179), id="ipv4"),
        pytest.param("fd00::11", "[fd00::11]:9179", ("fd00::11", 9179), id="ipv6"),
    ],
)
def test_metrics_listen_takes_the_host_from_the_environment(monkeypatch, value, listen, host_port):
    monkeypatch.setenv("BGPADV_NODE_IP", value)
    metrics = parse({**_config(), "metrics": {"listen": "${BGPADV_NODE_IP}:9179"}}).metrics
    assert (metrics.listen, metrics.listen_from_env, metrics.host_port) == (listen, "BGPADV_NODE_IP", host_port)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(None, "the environment variable BGPADV_NODE_IP is not set (the pod sets it from status.hostIP)"),
        pytest.param("", "the environment variable BGPADV_NODE_IP is not set (the pod sets it from status.hostIP)"),
        pytest.param("node-1", "the environment variable BGPADV_NODE_IP must hold an IP address, got 'node-1'"),
    ],
)
def test_metrics_listen_from_an_unset_or_wrong_variable_is_an_error(monkeypatch, value, problem):
    if value is None:
        monkeypatch.delenv("BGPADV_NODE_IP", raising=False)
    else:
        monkeypatch.setenv("BGPADV_NODE_IP", value)
    assert _problems({**_config(), "metrics": {"listen": "${BGPADV_NODE_IP}:9179"}}) == [f"metrics.listen: {problem}"]


def test_metrics_listen_refuses_a_malformed_variable_reference():
    assert _problems({**_config(), "metrics": {"listen": "${NODE IP}:9179"}}) == [
        "metrics.listen: must be HOST:PORT or ${VARIABLE}:PORT, got '${NODE IP}:9179'"
    ]


# --- check-config warnings ----------------------------------------------------------------------------------------


def _check(tmp_path: Path, text: str, capsys) -> tuple[int, list[str]]:
    path = tmp_path / "bgpadv.yaml"
    path.write_text(text)
    code = main(["check-config", str(path)])
    err = capsys.readouterr().err
    prefix = f"{path}: warning: "
    assert all(line.startswith(prefix) for line in err.splitlines()), err
    return code, [line.removeprefix(prefix) for line in err.splitlines()]


def test_a_configuration_fit_for_the_pod_has_no_warning(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BGPADV_NODE_IP", "10.0.0.11")
    secret = tmp_path / "tor-1"
    secret.write_text("s3cret\n")
    text = (
        "localASN: 64513\n"
        f"peers: [{{address: 10.0.0.1, asn: 64512, localAddress: 10.0.0.11, passive: true, "
        f"md5PasswordFile: {secret}}}]\n"
        "exabgp: {listenPort: 1790}\n"
        'metrics: {listen: "${BGPADV_NODE_IP}:9179"}\n'
    )
    assert _check(tmp_path, text, capsys) == (0, [])


def test_check_config_warns_of_every_trap_and_still_exits_0(tmp_path, capsys):
    text = (
        "localASN: 64513\n"
        "peers:\n"
        "  - {address: 10.0.0.1, asn: 64512, localAddress: 10.0.0.11, passive: true}\n"
        "  - {address: 10.0.0.2, asn: 64512, md5Password: s3cret}\n"
        'metrics: {listen: "127.0.0.1:9179"}\n'
    )
    assert _check(tmp_path, text, capsys) == (
        0,
        [
            "metrics.listen 127.0.0.1:9179 is loopback: the kubelet's probes (/healthz, /readyz) and Prometheus "
            "reach the pod at the node's address and will fail; use ${BGPADV_NODE_IP}:9179",
            "passive peers (10.0.0.1) connect to port 179, below 1024: binding it needs UID 0 or "
            "CAP_NET_BIND_SERVICE, which the shipped non-root pod does not have; set exabgp.listenPort above 1023 "
            "and point the ToR at it (FRR: neighbor ADDRESS port N)",
            "peers[1].md5Password is inline: the configuration is a ConfigMap, readable by anyone who can read the "
            "namespace's ConfigMaps; put the password in a Secret and set md5PasswordFile",
        ],
    )


def test_check_config_warns_of_metrics_on_every_interface(tmp_path, capsys):
    text = 'localASN: 64513\npeers: [{address: 10.0.0.1, asn: 64512}]\nmetrics: {listen: "0.0.0.0:9179"}\n'
    assert _check(tmp_path, text, capsys) == (
        0,
        [
            "metrics.listen 0.0.0.0:9179 serves /metrics and /status unauthenticated on every interface of the "
            "node; bind the node's address only: ${BGPADV_NODE_IP}:9179"
        ],
    )


def test_check_config_warns_that_no_ovnk_release_routes_an_ipamless_secondary_network(tmp_path, capsys):
    text = (
        "localASN: 64513\npeers: [{address: 10.0.0.1, asn: 64512}]\n"
        'metrics: {listen: "10.0.0.11:9179"}\n'
        "networks: {secondary: [{name: static, allowedPrefixes: [10.70.0.0/24]}]}\n"
    )
    code, warnings = _check(tmp_path, text, capsys)
    assert code == 0
    assert warnings == [
        "networks.secondary[0] (static): IPAM-less secondary Layer2 CUDN: no OVN-Kubernetes release bgpadv knows "
        "(v1.0.0, v1.1.0, v1.2.0, v1.3.0) provides the node-side path for routed ingress and egress; "
        "RouteAdvertisements refuses secondary networks in every known release: announced routes have no node-side "
        "path until OVN-K ships routed ingress for them"
    ]


# --- the command line ---------------------------------------------------------------------------------------------


def _parsers(parser: argparse.ArgumentParser, name: str = "bgpadv"):
    # argparse has no public way to walk a parser's actions and subcommands; `--help` prints them, unparseably
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {command}")


def test_every_command_and_option_has_a_help_text():
    missing = []
    commands = 0
    for name, parser in _parsers(_parser()):
        for action in parser._actions:
            if not (action.help or "").strip():
                missing.append(f"{name}: {'/'.join(action.option_strings) or action.dest}")
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    commands += 1
                    if not (choice.help or "").strip():
                        missing.append(f"{name} {choice.dest}")
    assert missing == []
    assert commands == 7  # run, controller, render, explain, check-config, example-config, status


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert (e.value.code, capsys.readouterr().out) == (0, f"bgpadv {__version__}\n")


@pytest.mark.parametrize(
    ("node_ip", "url"),
    [
        pytest.param("10.0.0.11", "http://10.0.0.11:9179", id="in-the-pod-ipv4"),
        pytest.param("fd00::11", "http://[fd00::11]:9179", id="in-the-pod-ipv6"),
        pytest.param(None, "http://127.0.0.1:9179", id="elsewhere"),
    ],
)
def test_status_looks_where_the_pod_serves_metrics_by_default(monkeypatch, node_ip, url):
    if node_ip is None:
        monkeypatch.delenv("BGPADV_NODE_IP", raising=False)
    else:
        monkeypatch.setenv("BGPADV_NODE_IP", node_ip)
    assert _parser().parse_args(["status"]).url == url
