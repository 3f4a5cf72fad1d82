"""Configuration: the example file loads, defaults are sane, and every error names its field path.

Scope: `bgpadv.config.parse` / `load` on valid and invalid documents. One table row per kind of mistake, each
asserting the exact `path: problem` prefix an operator would see; all problems of a file are reported at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from netaddr import IPAddress

from bgpadv.config import ConfigError, LabelSelector, load, parse

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "bgpadv.yaml"
MINIMAL = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


def test_the_example_configuration_loads():
    cfg = load(EXAMPLE)
    assert cfg.local_asn == 64513
    assert [(str(p.address), p.asn) for p in cfg.peers] == [("10.0.0.1", 64512)]
    assert cfg.networks.selector == LabelSelector(match_labels=(("bgpadv.io/advertise", "true"),))
    assert (cfg.networks.follow_route_advertisements, cfg.networks.subnets, cfg.networks.host_routes) == (
        False,
        True,
        True,
    )
    assert cfg.next_hop == "node"
    assert cfg.metrics.host_port == ("127.0.0.1", 9179)


def test_minimal_configuration_defaults():
    cfg = parse(MINIMAL)
    assert cfg.networks.selector is None  # every CUDN
    assert cfg.next_hop == "node"
    assert cfg.router_id is None
    assert cfg.peers[0].address == IPAddress("10.0.0.1")
    assert cfg.metrics.listen == "0.0.0.0:9179"
    assert cfg.node_name is None


def with_(**changes) -> dict:
    raw = {**MINIMAL, **changes}
    return {k: v for k, v in raw.items() if v is not None}


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param(with_(localASN=None), "localASN: is required", id="asn-missing"),
        pytest.param(with_(localASN="64513"), "localASN: must be an integer", id="asn-string"),
        pytest.param(with_(localASN=0), "localASN: must be between 1 and 4294967295", id="asn-zero"),
        pytest.param(with_(localASN=2**32), "localASN: must be between", id="asn-too-big"),
        pytest.param(with_(routerID="fd00::1"), "routerID: must be an IPv4 address", id="router-id-v6"),
        pytest.param(with_(routerID="192.0.2.300"), "routerID: must be an IPv4 or IPv6 address", id="router-id-bad"),
        pytest.param(with_(peers=[]), "peers: must be a non-empty list", id="no-peers"),
        pytest.param(with_(peers=[{"asn": 64512}]), "peers[0].address: is required", id="peer-address-missing"),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1/32", "asn": 1}]),
            "peers[0].address: must be an IPv4 or IPv6 address",
            id="peer-address-cidr",
        ),
        pytest.param(with_(peers=[{"address": "10.0.0.1"}]), "peers[0].asn: is required", id="peer-asn-missing"),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": 1}, {"address": "10.0.0.2", "asn": 1, "holdTime": 2}]),
            "peers[1].holdTime: must be 0 or at least 3 seconds",
            id="hold-time",
        ),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": 1, "famlies": []}]),
            "peers[0].famlies: unknown field",
            id="peer-typo",
        ),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": 1}, {"address": "10.0.0.1", "asn": 2}]),
            "peers[1].address: peer 10.0.0.1 is listed twice",
            id="duplicate-peer",
        ),
        pytest.param(with_(nextHop="router"), "nextHop: must be node or self", id="next-hop"),
        pytest.param(with_(networks={"hostRoutes": "yes"}), "networks.hostRoutes: must be true or false", id="bool"),
        pytest.param(with_(networks={"subnet": True}), "networks.subnet: unknown field", id="networks-typo"),
        pytest.param(
            with_(networks={"selector": {"matchLabels": {"a": 1}}}),
            "networks.selector.matchLabels: must map label keys to string values",
            id="selector-value-not-string",
        ),
        pytest.param(
            with_(networks={"selector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}}),
            "networks.selector.matchExpressions[0].operator: must be In, NotIn, Exists or DoesNotExist",
            id="selector-operator",
        ),
        pytest.param(with_(metrics={"listen": "9179"}), "metrics.listen: must be HOST:PORT", id="listen"),
        pytest.param(
            with_(attributes={"communities": ["65536:1"]}),
            "attributes.communities[0]: is not a valid community value",
            id="community",
        ),
        pytest.param(with_(kubernetes={"kubeconfig": 3}), "kubernetes.kubeconfig: must be a string", id="kubeconfig"),
        pytest.param(with_(localASNs=1), "localASNs: unknown field", id="top-level-typo"),
        pytest.param([1, 2], ": must be a mapping", id="not-a-mapping"),
        pytest.param(None, "the configuration is empty", id="empty"),
    ],
)
def test_each_error_names_its_field_path(raw, problem):
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert any(p.startswith(problem) or problem in p for p in err.value.problems), err.value.problems


def test_every_problem_is_reported_at_once():
    with pytest.raises(ConfigError) as err:
        parse({"localASN": "x", "peers": [{"address": "nope"}], "nextHop": 1})
    paths = {p.split(":")[0] for p in err.value.problems}
    assert {"localASN", "peers[0].address", "peers[0].asn", "nextHop"} <= paths


def test_invalid_yaml_is_a_config_error_naming_the_file(tmp_path):
    path = tmp_path / "bgpadv.yaml"
    path.write_text("localASN: [\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(path) in err.value.problems[0]


def test_check_config_exits_2_and_names_every_field_path(tmp_path, capsys):
    from bgpadv.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("localASN: 70000000000\npeers:\n  - address: 10.0.0.300\n    asn: 64512\n")
    assert main(["check-config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: localASN: must be between 1 and 4294967295" in err
    assert f"{bad}: peers[0].address: must be an IPv4 or IPv6 address, got '10.0.0.300'" in err


def test_check_config_accepts_the_example_configuration(capsys):
    from pathlib import Path

    from bgpadv.cli import main

    example = Path(__file__).resolve().parents[2] / "config" / "bgpadv.yaml"
    assert main(["check-config", str(example)]) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize(
    "password",
    [
        pytest.param('abc"; neighbor 1.2.3.4 {', id="quote-breaks-out"),
        pytest.param("with space", id="space"),
        pytest.param("x" * 81, id="too-long"),
        pytest.param("", id="empty"),
    ],
)
def test_md5_passwords_that_exabgp_cannot_carry_verbatim_are_refused(password):
    raw = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512, "md5Password": password}]}
    with pytest.raises(ConfigError) as e:
        parse(raw)
    assert any(p.startswith("peers[0].md5Password:") for p in e.value.problems)
