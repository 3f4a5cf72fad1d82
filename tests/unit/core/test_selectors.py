"""Label selectors (bgpadv.core.selectors) follow the Kubernetes API: matching per operator, and which selectors are
valid.

One parser serves the configuration (`networks.selector`) and the planner (CUDN `namespaceSelector`,
RouteAdvertisements `networkSelector`); both are checked here through it and through their callers.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bgpadv.config import ConfigError, parse
from bgpadv.core import reasons
from bgpadv.core.selectors import LabelSelector
from bgpadv.core.selectors import parse as parse_selector
from bgpadv.sources.decode.networks import decode_network
from bgpadv.sources.decode.route_advertisements import decode_route_advertisement
from bgpadv_lab import objects as k8s

TEAM_BLUE = {"team": "blue", "tier": "db"}
TEAM_RED = {"team": "red"}
NO_LABELS: dict[str, str] = {}


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({}, TEAM_BLUE, True),
        ({}, NO_LABELS, True),
        ({"matchLabels": {}, "matchExpressions": []}, NO_LABELS, True),
        ({"matchLabels": {"team": "blue"}}, TEAM_BLUE, True),
        ({"matchLabels": {"team": "blue"}}, TEAM_RED, False),
        ({"matchLabels": {"team": "blue"}}, NO_LABELS, False),
        ({"matchLabels": {"team": "blue", "tier": "web"}}, TEAM_BLUE, False),
        ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["blue", "green"]}]}, TEAM_BLUE, True),
        ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["green"]}]}, TEAM_BLUE, False),
        ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["blue"]}]}, NO_LABELS, False),
        ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["blue"]}]}, TEAM_BLUE, False),
        ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["blue"]}]}, TEAM_RED, True),
        ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["blue"]}]}, NO_LABELS, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, TEAM_BLUE, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists", "values": []}]}, TEAM_RED, False),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, TEAM_BLUE, False),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, TEAM_RED, True),
        (
            {
                "matchLabels": {"team": "blue"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}],
            },
            TEAM_BLUE,
            False,
        ),
    ],
)
def test_a_selector_matches_labels_as_kubernetes_does(selector, labels, matches):
    parsed, problems = parse_selector(selector)
    assert problems == []
    assert parsed is not None and parsed.matches(labels) is matches


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ([], ("", "must be a mapping, got list")),
        ({"matchLabel": {"a": "b"}}, (".matchLabel", "unknown field (allowed: matchExpressions, matchLabels)")),
        ({"matchLabels": {"a": 1}}, (".matchLabels.a", "must be a string label value, got int 1")),
        ({"matchLabels": ["a"]}, (".matchLabels", "must be a mapping of label keys to label values, got list")),
        ({"matchExpressions": {"key": "a"}}, (".matchExpressions", "must be a list of requirements, got dict")),
        ({"matchExpressions": ["a"]}, (".matchExpressions[0]", "must be a mapping, got str 'a'")),
        ({"matchExpressions": [{"operator": "Exists"}]}, (".matchExpressions[0].key", "is required")),
        (
            {"matchExpressions": [{"key": "a", "operator": "Has"}]},
            (".matchExpressions[0].operator", "must be In, NotIn, Exists or DoesNotExist, got 'Has'"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            (".matchExpressions[0].values", "must not be empty with operator In"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn"}]},
            (".matchExpressions[0].values", "must not be empty with operator NotIn"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            (".matchExpressions[0].values", "must be empty with operator Exists"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
            (".matchExpressions[0].values", "must be a list of strings"),
        ),
    ],
)
def test_a_malformed_selector_is_refused_with_its_path(selector, problem):
    assert parse_selector(selector) == (None, [problem])


def test_a_null_selector_is_no_selector_and_each_caller_says_what_absent_means():
    assert parse_selector(None) == (None, [])
    assert decode_route_advertisement({"spec": {}}).node_selector == LabelSelector()  # Go's zero value: every node
    assert decode_route_advertisement(_route_advertisements(None)).network_selectors == ()  # required: selects none


def test_the_planner_reads_an_empty_in_list_as_a_malformed_selector_that_selects_nothing():
    ra = decode_route_advertisement(
        _route_advertisements({"matchExpressions": [{"key": "team", "operator": "In", "values": []}]})
    )
    assert ra.network_selectors == () and ra.node_selector is None


def test_the_configuration_refuses_an_empty_in_list():
    raw = {
        "localASN": 64513,
        "peers": [{"address": "10.0.0.1", "asn": 64512}],
        "networks": {"selector": {"matchExpressions": [{"key": "team", "operator": "In", "values": []}]}},
    }
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.problems == ["networks.selector.matchExpressions[0].values: must not be empty with operator In"]


# -- the strict rule: every shape Kubernetes would refuse is malformed, never "no requirement" ---------------------
KEY_RULE = "a label key is an optional DNS-subdomain prefix"
VALUE_RULE = "a label value is empty or 1-63 characters"

MALFORMED = [
    pytest.param({"matchLabels": ""}, ".matchLabels", "got str ''", id="matchLabels-empty-string"),
    pytest.param({"matchLabels": 0}, ".matchLabels", "got int 0", id="matchLabels-zero"),
    pytest.param({"matchLabels": False}, ".matchLabels", "got bool False", id="matchLabels-false"),
    pytest.param({"matchLabels": []}, ".matchLabels", "got list", id="matchLabels-empty-list"),
    pytest.param({"matchLabels": "rack=a"}, ".matchLabels", "got str 'rack=a'", id="matchLabels-kubectl-text"),
    pytest.param({"matchExpressions": {}}, ".matchExpressions", "got dict", id="matchExpressions-empty-mapping"),
    pytest.param({"matchExpressions": ""}, ".matchExpressions", "got str ''", id="matchExpressions-empty-string"),
    pytest.param({"matchExpressions": 0}, ".matchExpressions", "got int 0", id="matchExpressions-zero"),
    pytest.param({"matchExpressions": False}, ".matchExpressions", "got bool False", id="matchExpressions-false"),
    pytest.param({"matchExpressions": [None]}, ".matchExpressions[0]", "got NoneType", id="requirement-null"),
    pytest.param({"matchExpressions": [{}]}, ".matchExpressions[0].key", "is required", id="requirement-empty"),
    pytest.param({"matchLabels": {"": "a"}}, ".matchLabels", KEY_RULE, id="key-empty"),
    pytest.param({"matchLabels": {"rack a": "x"}}, ".matchLabels", KEY_RULE, id="key-space"),
    pytest.param({"matchLabels": {"-rack": "x"}}, ".matchLabels", KEY_RULE, id="key-leading-dash"),
    pytest.param({"matchLabels": {"a" * 64: "x"}}, ".matchLabels", KEY_RULE, id="key-name-64-chars"),
    pytest.param({"matchLabels": {"Example.COM/rack": "x"}}, ".matchLabels", KEY_RULE, id="key-prefix-uppercase"),
    pytest.param({"matchLabels": {"/rack": "x"}}, ".matchLabels", KEY_RULE, id="key-empty-prefix"),
    pytest.param({"matchLabels": {"a/b/c": "x"}}, ".matchLabels", KEY_RULE, id="key-two-slashes"),
    pytest.param({"matchLabels": {"rack\n": "x"}}, ".matchLabels", KEY_RULE, id="key-trailing-newline"),
    pytest.param({"matchLabels": {"rack": "a b"}}, ".matchLabels.rack", VALUE_RULE, id="value-space"),
    pytest.param({"matchLabels": {"rack": "a" * 64}}, ".matchLabels.rack", VALUE_RULE, id="value-64-chars"),
    pytest.param({"matchLabels": {"rack": "a-"}}, ".matchLabels.rack", VALUE_RULE, id="value-trailing-dash"),
    pytest.param({"matchLabels": {"rack": None}}, ".matchLabels.rack", "got NoneType", id="value-null"),
    pytest.param({"matchLabels": {"rack": True}}, ".matchLabels.rack", "got bool True", id="value-bool"),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "operator": "in", "values": ["a"]}]},
        ".matchExpressions[0].operator",
        "got 'in'",
        id="operator-lowercase",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "operator": "Gt", "values": ["1"]}]},
        ".matchExpressions[0].operator",
        "got 'Gt'",
        id="operator-node-selector-only",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "values": ["a"]}]},
        ".matchExpressions[0].operator",
        "got None",
        id="operator-missing",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a b"]}]},
        ".matchExpressions[0].values",
        VALUE_RULE,
        id="values-invalid-value",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": [1]}]},
        ".matchExpressions[0].values",
        "must be a list of strings",
        id="values-not-strings",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": {}}]},
        ".matchExpressions[0].values",
        "must be a list of strings",
        id="values-mapping",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "operator": "DoesNotExist", "values": ["a"]}]},
        ".matchExpressions[0].values",
        "must be empty with operator DoesNotExist",
        id="values-with-does-not-exist",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack x", "operator": "Exists"}]},
        ".matchExpressions[0].key",
        KEY_RULE,
        id="requirement-key-invalid",
    ),
    pytest.param(
        {"matchExpressions": [{"key": "rack", "operator": "Exists", "value": "a"}]},
        ".matchExpressions[0].value",
        "unknown field",
        id="requirement-unknown-field",
    ),
    pytest.param({"matchlabels": {"rack": "a"}}, ".matchlabels", "unknown field", id="field-misspelt"),
    pytest.param("", "", "must be a mapping", id="selector-empty-string"),
    pytest.param(False, "", "must be a mapping", id="selector-false"),
]


@pytest.mark.parametrize(("selector", "path", "message"), MALFORMED)
def test_a_malformed_selector_gives_no_selector_and_names_the_problem(selector, path, message):
    parsed, problems = parse_selector(selector)
    assert parsed is None
    assert any(p == path and message in m for p, m in problems), problems


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param({"matchLabels": None, "matchExpressions": None}, id="null-fields-are-absent"),
        pytest.param({"matchExpressions": [{"key": "rack", "operator": "Exists", "values": None}]}, id="null-values"),
        pytest.param({"matchLabels": {"topology.kubernetes.io/zone": "eu-1a"}}, id="prefixed-key"),
        pytest.param({"matchLabels": {"rack": ""}}, id="empty-value"),
        pytest.param({"matchLabels": {"a" * 63: "b" * 63}}, id="63-characters"),
        pytest.param({"matchLabels": {"x." * 120 + "io/rack": "A_b.c-9"}}, id="long-prefix"),
    ],
)
def test_valid_shapes_at_the_edges_of_the_rule_are_accepted(selector):
    parsed, problems = parse_selector(selector)
    assert problems == [] and parsed is not None


def test_every_malformed_shape_is_refused_by_the_configuration_with_its_path():
    base = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}
    for param in MALFORMED:
        selector, path, message = param.values
        with pytest.raises(ConfigError) as err:
            parse({**base, "networks": {"selector": selector}})
        assert any(p.startswith(f"networks.selector{path}: ") and message in p for p in err.value.problems), (
            param.id,
            err.value.problems,
        )


# -- property: no malformed selector ever selects more than nothing -------------------------------------------------

_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.just(""),
    st.text(max_size=5),
    st.just([]),
    st.just({}),
    st.lists(st.integers(), min_size=1, max_size=2),
)
_GOOD_KEY = st.sampled_from(["rack", "team", "kubernetes.io/metadata.name", "example.com/tier"])
_BAD_KEY = st.sampled_from(["", "rack x", "-rack", "/rack", "A/rack", "a/b/c", "r\n", "x" * 64, "é"])
_GOOD_VALUE = st.sampled_from(["a", "blue", "", "v1.2_3"])
_BAD_VALUE = st.sampled_from(["a b", "-a", "a-", "x" * 64, "é", "a\nb"])
_GOOD_OP = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"])


@st.composite
def _malformed_requirement(draw: st.DrawFn) -> object:
    kind = draw(st.integers(0, 8))
    key, op = draw(_GOOD_KEY), draw(_GOOD_OP)
    values = [draw(_GOOD_VALUE)] if op in ("In", "NotIn") else None
    if kind == 0:
        return draw(_JUNK.filter(lambda v: not isinstance(v, dict) or v))  # not a requirement mapping
    if kind == 1:
        return {"key": draw(_BAD_KEY), "operator": op, "values": values}
    if kind == 2:
        return {
            "key": key,
            "operator": draw(st.text(max_size=12).filter(lambda o: o not in ("In", "NotIn", "Exists", "DoesNotExist"))),
            "values": values,
        }
    if kind == 3:
        return {
            "key": key,
            "operator": draw(st.sampled_from(["In", "NotIn"])),
            "values": draw(st.sampled_from([None, []])),
        }
    if kind == 4:
        return {
            "key": key,
            "operator": draw(st.sampled_from(["Exists", "DoesNotExist"])),
            "values": [draw(_GOOD_VALUE)],
        }
    if kind == 5:
        return {"key": key, "operator": "In", "values": [draw(_BAD_VALUE)]}
    if kind == 6:
        return {"key": key, "operator": op, "values": values, draw(st.sampled_from(["value", "Key", "x"])): "a"}
    if kind == 7:
        return {
            "key": key,
            "operator": "In",
            "values": draw(_JUNK.filter(lambda v: v is not None and not isinstance(v, list))),
        }
    return {"operator": op, "values": values}


@st.composite
def malformed_selectors(draw: st.DrawFn) -> object:
    """A selector with at least one defect of any kind, beside any number of valid parts."""
    good_labels = draw(st.dictionaries(_GOOD_KEY, _GOOD_VALUE, max_size=2))
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(_JUNK.filter(lambda v: v is not None and not isinstance(v, dict)))
    if kind == 1:
        return {"matchLabels": draw(_JUNK.filter(lambda v: v is not None and not isinstance(v, dict)))}
    if kind == 2:
        return {"matchExpressions": draw(_JUNK.filter(lambda v: v is not None and not isinstance(v, list)))}
    if kind == 3:
        return {"matchLabels": {**good_labels, draw(_BAD_KEY): draw(_GOOD_VALUE)}}
    if kind == 4:
        bad = draw(st.one_of(_BAD_VALUE, _JUNK.filter(lambda v: not isinstance(v, str))))
        return {"matchLabels": {**good_labels, draw(_GOOD_KEY): bad}}
    if kind == 5:
        return {"matchLabels": good_labels, draw(st.sampled_from(["matchlabels", "selector", "MatchExpressions"])): {}}
    requirements = draw(st.lists(st.builds(dict, key=_GOOD_KEY, operator=st.just("Exists")), max_size=2))
    requirements.insert(draw(st.integers(0, len(requirements))), draw(_malformed_requirement()))
    return {"matchLabels": good_labels, "matchExpressions": requirements}


_LABEL_SETS = [
    {},
    {"rack": "a"},
    {"team": "blue", "rack": "a", "kubernetes.io/metadata.name": "vms"},
    {"example.com/tier": "v1.2_3", "team": ""},
]


@settings(max_examples=400, deadline=None)
@given(malformed_selectors())
def test_no_malformed_selector_ever_selects_anything(raw):
    """Through the one parser, every reader's way: the strict parse, the cluster objects' reading (absent means
    everything, malformed nothing) and the configuration (refused)."""
    parsed, problems = parse_selector(raw)
    assert parsed is None and problems
    ra = decode_route_advertisement(_route_advertisements(raw))
    assert ra.network_selectors == () and ra.node_selector is None
    for labels in _LABEL_SETS:
        assert not any(s.matches(labels) for s in ra.selectors)
    cudn = decode_network(k8s.cudn_layer2("vmnet-a", ["192.168.100.0/24"], namespace_selector=raw))
    assert cudn.namespace_selector is None and not cudn.valid
    assert {p.reason for p in cudn.problems} == {reasons.MALFORMED_SELECTOR}
    with pytest.raises(ConfigError):
        parse({"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}], "networks": {"selector": raw}})


def _route_advertisements(selector: object) -> dict:
    return {
        "apiVersion": "k8s.ovn.org/v1",
        "kind": "RouteAdvertisements",
        "metadata": {"name": "default", "generation": 1},
        "spec": {
            "networkSelectors": [
                {
                    "networkSelectionType": "ClusterUserDefinedNetworks",
                    "clusterUserDefinedNetworkSelector": {"networkSelector": selector},
                }
            ],
            "nodeSelector": selector,
            "advertisements": ["PodNetwork"],
        },
        "status": {"conditions": [{"type": "Accepted", "status": "True", "observedGeneration": 1}]},
    }


# -- the JSON Schema (`check-config --schema`) says the same ----------------------------------------------------------
def _schema_validator():
    import jsonschema

    from bgpadv.config import json_schema

    return jsonschema.Draft202012Validator(json_schema())


_BASE = {"localASN": 64513, "peers": [{"address": "10.0.0.1", "asn": 64512}]}


# Python's jsonschema matches a pattern's `$` before a final newline (the parser refuses that key, above)
@pytest.mark.parametrize(("selector", "path", "message"), [p for p in MALFORMED if p.id != "key-trailing-newline"])
def test_the_json_schema_refuses_every_malformed_shape_too(selector, path, message):
    for document in (
        {**_BASE, "networks": {"selector": selector}},
        {**_BASE, "peers": [{"address": "10.0.0.1", "asn": 64512, "nodeSelector": selector}]},
        {**_BASE, "policies": [{"name": "p", "match": {"vmSelector": selector}, "set": {"med": 1}}]},
    ):
        assert list(_schema_validator().iter_errors(document)), document


@pytest.mark.parametrize(
    "selector",
    [
        {},
        {"matchLabels": None, "matchExpressions": None},
        {"matchLabels": {"topology.kubernetes.io/zone": "eu-1a", "rack": ""}},
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a", "b"]}]},
        {"matchExpressions": [{"key": "rack", "operator": "Exists"}, {"key": "x", "operator": "DoesNotExist"}]},
    ],
)
def test_the_json_schema_accepts_what_the_parser_accepts(selector):
    assert parse_selector(selector)[1] == []
    assert list(_schema_validator().iter_errors({**_BASE, "networks": {"selector": selector}})) == []
