"""Kubernetes label selectors (`metav1.LabelSelector`): the one strict parser and matcher, for the configuration and
for cluster objects alike.

Semantics, as the Kubernetes API defines them (`LabelSelectorAsSelector` and `ValidateLabelSelector`):

- `matchLabels` and every `matchExpressions` requirement are ANDed.
- `In`: the label is present and its value is one of `values`. `NotIn`: absent, or present with a value not in
  `values`. `Exists`: present. `DoesNotExist`: absent.
- `In` and `NotIn` need a non-empty `values` list; `Exists` and `DoesNotExist` take none (an empty list is the same
  as none). Kubernetes rejects anything else as invalid, and so does `parse`: a requirement such as `In []` is a
  malformed selector, not a selector that matches nothing.
- The empty selector `{}` (no matchLabels, no matchExpressions) matches everything. A field that is null is the same
  as an absent one (`matchLabels: null`, `values: null`), as in the API's JSON; any other value of the wrong type
  (`matchLabels: ""`, `0`, `false`, `[]`, `matchExpressions: {}`) is malformed, never "no requirement".
- Label keys follow Kubernetes' qualified-name rule: an optional DNS-subdomain prefix (lowercase, at most 253
  characters) and `/`, then a name of 1 to 63 characters, alphanumeric at both ends with `-`, `_`, `.` inside.
  Label values (in `matchLabels` and in `values`) are empty or 1 to 63 such characters. Operators are spelled
  exactly (`In`, not `in`).
- A null selector matches nothing in Kubernetes (`LabelSelectorAsSelector(nil)` is `labels.Nothing()`); `parse`
  returns None for it and each caller states what an absent selector means where it reads one.
- Malformed (not a mapping, an unknown field, a field of the wrong type, an invalid key or value, an unknown
  operator, a missing key, values where none belong or none where some must be): `parse` reports every problem,
  with its path, and gives no selector. A malformed selector selects nothing: the configuration refuses it (a field
  error), a cluster object that holds one is refused (`malformed-selector`) and selects nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bgpadv.core.bounded import brief

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_SELECTOR_FIELDS = frozenset({"matchLabels", "matchExpressions"})
_REQUIREMENT_FIELDS = frozenset({"key", "operator", "values"})

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
"""A qualified name's name part, and a non-empty label value (at most 63 characters)."""
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_KEY_RULE = (
    "a label key is an optional DNS-subdomain prefix and '/', then 1-63 characters [A-Za-z0-9-_.], alphanumeric at "
    "both ends"
)
_VALUE_RULE = "a label value is empty or 1-63 characters [A-Za-z0-9-_.], alphanumeric at both ends"
KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
"""`valid_key` as a JSON Schema pattern (the prefix's 253-character bound aside). Plain `^...$`, which every
validator compiles (Helm's Go RE2 has no lookahead); Python's `re.search` lets one trailing newline through `$`,
which `parse` itself refuses."""
VALUE_PATTERN = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
"""`valid_value` as a JSON Schema pattern."""


def valid_key(key: object) -> bool:
    """A label key by Kubernetes' qualified-name rule (`IsQualifiedName`)."""
    if not isinstance(key, str):
        return False
    prefix, slash, name = key.rpartition("/")
    if slash and not (0 < len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return _NAME.fullmatch(name) is not None


def valid_value(value: object) -> bool:
    """A label value (`IsValidLabelValue`): empty, or a name of at most 63 characters."""
    return isinstance(value, str) and (value == "" or _NAME.fullmatch(value) is not None)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector (matchLabels AND matchExpressions). The empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (key, operator, values)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        for k, v in self.match_labels:
            if labels.get(k) != v:
                return False
        for key, op, values in self.match_expressions:
            present = key in labels
            if op == "In" and not (present and labels[key] in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True


def _unknown(raw: dict[str, Any], allowed: frozenset[str], path: str) -> list[tuple[str, str]]:
    message = f"unknown field (allowed: {', '.join(sorted(allowed))})"
    return [
        (f"{path}.{k if isinstance(k, str) and len(k) <= 64 else brief(k, 64)}", message)
        for k in raw
        if k not in allowed
    ]


def parse(raw: object) -> tuple[LabelSelector | None, list[tuple[str, str]]]:
    """A selector from its JSON form: (selector, []) when valid, (None, [(path, message), ...]) when malformed
    (path relative to the selector: "", ".matchLabels", ".matchExpressions[0].values", ...), (None, []) for null."""
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [("", f"must be a mapping, got {_kind(raw)}")]
    problems = _unknown(raw, _SELECTOR_FIELDS, "")
    labels = _match_labels(raw.get("matchLabels"), problems)
    exprs = _match_expressions(raw.get("matchExpressions"), problems)
    if problems:
        return None, problems
    return LabelSelector(tuple(sorted(labels.items())), tuple(exprs)), []


def _kind(value: object) -> str:
    """What a value of the wrong type is, as an operator reads it: `str ''`, `bool false`, `list`."""
    if isinstance(value, bool | int | float | str):
        return f"{type(value).__name__} {brief(value)}"
    return type(value).__name__


def _match_labels(raw: object, problems: list[tuple[str, str]]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append((".matchLabels", f"must be a mapping of label keys to label values, got {_kind(raw)}"))
        return {}
    for k, v in raw.items():
        if not valid_key(k):
            problems.append((".matchLabels", f"invalid label key {brief(k, 64)}: {_KEY_RULE}"))
        elif not isinstance(v, str):
            problems.append((f".matchLabels.{k}", f"must be a string label value, got {_kind(v)}"))
        elif not valid_value(v):
            problems.append((f".matchLabels.{k}", f"invalid label value {brief(v, 64)}: {_VALUE_RULE}"))
    return raw


def _match_expressions(raw: object, problems: list[tuple[str, str]]) -> list[tuple[str, str, tuple[str, ...]]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append((".matchExpressions", f"must be a list of requirements, got {_kind(raw)}"))
        return []
    exprs: list[tuple[str, str, tuple[str, ...]]] = []
    for i, e in enumerate(raw):
        requirement = _requirement(e, f".matchExpressions[{i}]", problems)
        if requirement is not None:
            exprs.append(requirement)
    return exprs


def _requirement(e: object, ep: str, problems: list[tuple[str, str]]) -> tuple[str, str, tuple[str, ...]] | None:
    """One `matchExpressions` entry, or None with its problems."""
    if not isinstance(e, dict):
        problems.append((ep, f"must be a mapping, got {_kind(e)}"))
        return None
    unknown = _unknown(e, _REQUIREMENT_FIELDS, ep)
    if unknown:
        problems.extend(unknown)
        return None
    key, op, values = e.get("key"), e.get("operator"), e.get("values")
    values = [] if values is None else values
    if key is None or key == "":
        problems.append((f"{ep}.key", "is required"))
        return None
    if not valid_key(key):
        problems.append((f"{ep}.key", f"invalid label key {brief(key, 64)}: {_KEY_RULE}"))
        return None
    if op not in OPERATORS:
        problems.append((f"{ep}.operator", f"must be In, NotIn, Exists or DoesNotExist, got {brief(op)}"))
        return None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        problems.append((f"{ep}.values", "must be a list of strings"))
        return None
    if op in ("In", "NotIn") and not values:
        problems.append((f"{ep}.values", f"must not be empty with operator {op}"))
        return None
    if op in ("Exists", "DoesNotExist") and values:
        problems.append((f"{ep}.values", f"must be empty with operator {op}"))
        return None
    bad = next((v for v in values if not valid_value(v)), None)
    if bad is not None:
        problems.append((f"{ep}.values", f"invalid label value {brief(bad, 64)}: {_VALUE_RULE}"))
        return None
    assert isinstance(key, str)
    return key, op, tuple(values)
