"""Label selectors (bgpadv.core.selectors) follow the Kubernetes API: matching per operator, and which selectors are
valid.

One parser serves the configuration (`networks.selector`) and the planner (CUDN `namespaceSelector`,
RouteAdvertisements `networkSelector`); both are checked here through it and through their callers.
"""

from __future__ import annotations

import pytest

from bgpadv.config import ConfigError, parse
from bgpadv.core.selectors import LabelSelector
from bgpadv.core.selectors import parse as parse_selector
from bgpadv.planner.networks import selector_from_dict

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
        ({"matchLabels": {"a": 1}}, (".matchLabels", "must map label keys to string values")),
        ({"matchLabels": ["a"]}, (".matchLabels", "must map label keys to string values")),
        ({"matchExpressions": {"key": "a"}}, (".matchExpressions", "must be a list")),
        ({"matchExpressions": ["a"]}, (".matchExpressions[0]", "must be a mapping, got str")),
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
    assert selector_from_dict(None) == LabelSelector()  # an absent CUDN/RA selector: the empty one, matches all


def test_the_planner_reads_an_empty_in_list_as_a_malformed_selector_that_selects_nothing():
    assert selector_from_dict({"matchExpressions": [{"key": "team", "operator": "In", "values": []}]}) is None


def test_the_configuration_refuses_an_empty_in_list():
    raw = {
        "localASN": 64513,
        "peers": [{"address": "10.0.0.1", "asn": 64512}],
        "networks": {"selector": {"matchExpressions": [{"key": "team", "operator": "In", "values": []}]}},
    }
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert err.value.problems == ["networks.selector.matchExpressions[0].values: must not be empty with operator In"]
