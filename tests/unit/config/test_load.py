"""Configuration: the example file loads, defaults are sane, and every error names its field path.

Scope: `bgpadv.config.parse` / `load` on valid and invalid documents. One table row per kind of mistake, each
asserting the exact `path: problem` prefix an operator would see; all problems of a file are reported at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bgpadv.config import Config, ConfigError, load, parse
from bgpadv.core.prefix import Address
from bgpadv.core.selectors import LabelSelector

EXAMPLE = Path(__file__).resolve().parents[3] / "config" / "bgpadv.yaml"
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
    [guestnet] = cfg.networks.secondary
    assert (guestnet.name, [str(p) for p in guestnet.allowed_prefixes], guestnet.max_addresses_per_interface) == (
        "guestnet",
        ["10.60.0.0/24"],
        4,
    )


def test_minimal_configuration_defaults():
    cfg = parse(MINIMAL)
    assert cfg.networks.selector is None  # every CUDN
    assert cfg.next_hop == "node"
    assert cfg.router_id is None
    assert cfg.peers[0].address == Address.parse("10.0.0.1")
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
            "networks.selector.matchLabels.a: must be a string label value, got int 1",
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
        pytest.param(
            with_(networks={"secondary": [{"name": "guestnet", "allowedPrefixes": ["10.60.0.1/24"]}]}),
            "networks.secondary[0].allowedPrefixes[0]: has host bits set (write 10.60.0.0/24)",
            id="secondary-host-bits",
        ),
        pytest.param(
            with_(networks={"secondary": [{"name": "guestnet", "allowedPrefixes": ["10.60.0.9"]}]}),
            "networks.secondary[0].allowedPrefixes[0]: must be a CIDR",
            id="secondary-bare-ip",
        ),
        pytest.param(
            with_(networks={"secondary": [{"name": "g", "maxAddressesPerInterface": 1000}]}),
            "networks.secondary[0].maxAddressesPerInterface: must be between 1 and 64",
            id="secondary-max-addresses",
        ),
        pytest.param(
            with_(networks={"secondary": [{"name": "g"}, {"name": "g"}]}),
            "networks.secondary[1].name: g is listed twice",
            id="secondary-twice",
        ),
        pytest.param(
            with_(networks={"secondary": [{"allowedPrefixes": []}]}),
            "networks.secondary[0].name: is required",
            id="secondary-no-name",
        ),
        pytest.param(
            with_(networks={"secondary": [{"name": "g", "prefixes": []}]}),
            "networks.secondary[0].prefixes: unknown field",
            id="secondary-typo",
        ),
        pytest.param([1, 2], "the document must be a mapping of configuration keys, got [1, 2]", id="not-a-mapping"),
        pytest.param(None, "the configuration is empty", id="empty"),
    ],
)
def test_each_error_names_its_field_path(raw, problem):
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert any(p.startswith(problem) or problem in p for p in err.value.problems), err.value.problems


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param({**MINIMAL, "localASN": None}, "localASN: is required, got null", id="asn-null"),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": None}]),
            "peers[0].asn: is required, got null",
            id="peer-asn-null",
        ),
        pytest.param(
            with_(peers=[{"address": None, "asn": 64512}]),
            "peers[0].address: is required, got null",
            id="peer-address-null",
        ),
        pytest.param(
            with_(peers=[None]), "peers[0]: must be a mapping with at least address and asn, got None", id="peer-null"
        ),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": 64512, "md5Password": "s3cret\n"}]),
            "peers[0].md5Password: must be 1-80 printable ASCII characters without spaces, quotes or ';'",
            id="md5-trailing-newline",
        ),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": 64512, "localAddress": "fd00::11"}]),
            "peers[0].localAddress: must be an IPv4 address like the peer address 10.0.0.1, got fd00::11",
            id="local-address-v6-peer-v4",
        ),
        pytest.param(
            with_(peers=[{"address": "fd00::1", "asn": 64512, "localAddress": "10.0.0.11"}]),
            "peers[0].localAddress: must be an IPv6 address like the peer address fd00::1, got 10.0.0.11",
            id="local-address-v4-peer-v6",
        ),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": 64512, "families": ["ipv4 unicast", "ipv4 unicast"]}]),
            "peers[0].families: lists ipv4 unicast more than once",
            id="family-repeated",
        ),
        pytest.param(
            with_(peers=[{"address": "10.0.0.1", "asn": 64512, "families": [["ipv4 unicast"]]}]),
            "peers[0].families: must be a non-empty list of ipv4 unicast, ipv6 unicast",
            id="family-not-a-string",
        ),
        pytest.param(
            with_(peers=[{"address": "0.0.0.0", "asn": 64512}]),
            "peers[0].address: must not be the unspecified address 0.0.0.0",
            id="peer-unspecified",
        ),
        pytest.param(
            with_(peers=[{"address": "224.0.0.5", "asn": 64512}]),
            "peers[0].address: must be a unicast address, got 224.0.0.5",
            id="peer-multicast",
        ),
        pytest.param(
            with_(peers=[{"address": "::ffff:10.0.0.1", "asn": 64512}]),
            "peers[0].address: must not be an IPv4-mapped IPv6 address, got ::ffff:10.0.0.1 (write the IPv4 address)",
            id="peer-v4-mapped",
        ),
        pytest.param(
            with_(routerID="0.0.0.0"),
            "routerID: must not be 0.0.0.0 (a BGP identifier is non-zero)",
            id="router-id-zero",
        ),
        pytest.param(
            with_(routerID=167772171), "routerID: must be an IPv4 or IPv6 address, got 167772171", id="rid-int"
        ),
        pytest.param(
            with_(nextHopSelf={"ipv4": "255.255.255.255"}),
            "nextHopSelf.ipv4: must be a unicast address, got 255.255.255.255",
            id="next-hop-self-broadcast",
        ),
        pytest.param(
            with_(localASN=10**5000),
            "localASN: must be between 1 and 4294967295, got <int of 16610 bits>",
            id="asn-beyond-int-to-text-limit",
        ),
        pytest.param(
            with_(nodeName=""),
            "nodeName: must not be empty (omit it to take the node name from BGPADV_NODE_NAME)",
            id="node-name-empty",
        ),
        pytest.param(
            with_(attributes={"communities": ["65000:1\n"]}),
            "attributes.communities[0]: is not a valid community value: '65000:1\\n'",
            id="community-trailing-newline",
        ),
        pytest.param(
            with_(attributes={"communities": ["\u0666\u0665\u0660\u0660\u0660:1"]}),
            "attributes.communities[0]: is not a valid community value: '\u0666\u0665\u0660\u0660\u0660:1'",
            id="community-unicode-digits",
        ),
        pytest.param(
            with_(metrics={"listen": "0.0.0.0:9179\n"}),
            "metrics.listen: must be HOST:PORT, got '0.0.0.0:9179\\n'",
            id="listen-trailing-newline",
        ),
        pytest.param(
            with_(exabgp={"reactorSpeed": list(range(40_000))}),
            "exabgp.reactorSpeed: must be a number between 0.001 and 10, got [0, 1, 2, 3, 4, 5, 6, 7, ...]",
            id="huge-value-shown-bounded",
        ),
    ],
)
def test_every_invalid_value_is_exactly_one_field_error(raw, problem):
    """Null where a value is required, text with a trailing newline, mismatched families, ... are
    each a `path: problem` line (never a traceback, never silently dropped); the whole text is asserted."""
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.problems == [problem]


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


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(b"localASN: 1\n---\nlocalASN: 2\n", "must hold one YAML document, found 2", id="two-documents"),
        pytest.param(b"localASN: \xff\n", "not UTF-8 text: invalid start byte", id="not-utf8"),
        pytest.param(
            b"localASN: &a 1\npeers: *a\n", "document 1, line 2: YAML aliases (*name) are not accepted", id="alias"
        ),
        pytest.param(
            b"localASN: 1\nlocalASN: 2\n", "document 1, line 2: the key 'localASN' is given twice", id="repeated-key"
        ),
    ],
)
def test_file_level_problems_are_one_line_naming_the_file_once(tmp_path, capsys, content, problem):
    from bgpadv.commands.cli import main

    path = tmp_path / "bgpadv.yaml"
    path.write_bytes(content)
    assert main(["check-config", str(path)]) == 2
    assert capsys.readouterr().err == f"{path}: {problem}\n"


def test_check_config_exits_2_and_names_every_field_path(tmp_path, capsys):
    from bgpadv.commands.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("localASN: 70000000000\npeers:\n  - address: 10.0.0.300\n    asn: 64512\n")
    assert main(["check-config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: localASN: must be between 1 and 4294967295" in err
    assert f"{bad}: peers[0].address: must be an IPv4 or IPv6 address, got '10.0.0.300'" in err


def test_check_config_accepts_the_example_configuration(capsys):
    from pathlib import Path

    from bgpadv.commands.cli import main

    example = Path(__file__).resolve().parents[3] / "config" / "bgpadv.yaml"
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


# --- property: parse returns a Config or raises ConfigError, whatever the values --------------------------------

FULL = {
    "localASN": 64513,
    "routerID": "10.0.0.11",
    "peers": [
        {
            "address": "10.0.0.1",
            "asn": 64512,
            "localAddress": "10.0.0.11",
            "holdTime": 9,
            "passive": False,
            "md5Password": "s3cret",
            "gracefulRestart": 120,
            "families": ["ipv4 unicast", "ipv6 unicast"],
        }
    ],
    "networks": {
        "selector": {
            "matchLabels": {"bgpadv.io/advertise": "true"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}],
        },
        "followRouteAdvertisements": False,
        "subnets": True,
        "hostRoutes": True,
    },
    "nextHop": "node",
    "attributes": {
        "localPreference": 100,
        "med": 0,
        "communities": ["65000:1"],
        "largeCommunities": ["65000:1:2"],
        "asPathPrepend": 1,
    },
    "kubernetes": {"kubeconfig": "/etc/kubeconfig", "context": "ctx"},
    "metrics": {"listen": "127.0.0.1:9179"},
    "exabgp": {"reactorSpeed": 0.1, "maxInflight": 100, "chunkPrefixes": 1000},
    "nodeName": "worker-1",
    "nextHopSelf": {"ipv4": "10.0.0.11", "ipv6": "fd00::11"},
    "safety": {
        "minPrefixLength": {"ipv4": 16, "ipv6": 48},
        "maxWithdrawFraction": 0.5,
        "holdSeconds": 120,
        "maxRoutes": 200000,
        "drainSeconds": 30,
    },
}


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a nested document (dict keys and list indexes), the document itself first."""
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(_paths(v, (*prefix, i)))
    return found


PATHS = _paths(FULL)

yamlish = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.sampled_from([0, -1, 2**32, 2**64, 10**4000])
    | st.text(max_size=30)
    | st.sampled_from(["", "10.0.0.1", "fd00::1", "0.0.0.0", "::ffff:10.0.0.1", "s3cret\n", "ipv4 unicast", "In"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def _replace(doc: object, path: tuple, value: object) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict) and head in doc:
        return {**doc, head: _replace(doc[head], rest, value)}
    if isinstance(doc, list) and isinstance(head, int) and head < len(doc):
        return [_replace(v, rest, value) if i == head else v for i, v in enumerate(doc)]
    return doc  # an earlier replacement removed this path


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(PATHS), yamlish), max_size=4))
def test_any_value_at_any_key_gives_a_config_or_a_config_error(changes):
    doc: object = FULL
    for path, value in changes:
        doc = _replace(doc, path, value)
    try:
        result = parse(doc)
    except ConfigError as e:
        assert e.problems and all(isinstance(p, str) and len(p) < 1000 for p in e.problems)
    else:
        assert isinstance(result, Config)
