"""Kubernetes label selectors (`metav1.LabelSelector`): the one parser and matcher, for config and the planner.

Semantics, as the Kubernetes API defines them (`LabelSelectorAsSelector` and `ValidateLabelSelector`):

- `matchLabels` and every `matchExpressions` requirement are ANDed.
- `In`: the label is present and its value is one of `values`. `NotIn`: absent, or present with a value not in
  `values`. `Exists`: present. `DoesNotExist`: absent.
- `In` and `NotIn` need a non-empty `values` list; `Exists` and `DoesNotExist` take none (an empty list is the same
  as none). Kubernetes rejects anything else as invalid, and so does `parse`: a requirement such as `In []` is a
  malformed selector, not a selector that matches nothing.
- The empty selector `{}` (no matchLabels, no matchExpressions) matches everything.
- A null selector matches nothing in Kubernetes (`LabelSelectorAsSelector(nil)` is `labels.Nothing()`); `parse`
  returns None for it and each caller states what an absent selector means where it reads one.
- Malformed (not a mapping, an unknown field, a matchLabels value that is not a string, an unknown operator, a
  missing key, values that are not a list of strings): `parse` reports every problem, with its path.

Label key and value syntax (qualified names, 63 characters) is not checked: objects from the API server were
validated there, and a wrong key in the configuration only fails to match.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bgpadv.core.bounded import brief

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_SELECTOR_FIELDS = frozenset({"matchLabels", "matchExpressions"})
_REQUIREMENT_FIELDS = frozenset({"key", "operator", "values"})


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
        return None, [("", f"must be a mapping, got {type(raw).__name__}")]
    problems = _unknown(raw, _SELECTOR_FIELDS, "")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        problems.append((".matchLabels", "must map label keys to string values"))
        labels = {}
    raw_exprs = raw.get("matchExpressions") or []
    if not isinstance(raw_exprs, list):
        problems.append((".matchExpressions", "must be a list"))
        raw_exprs = []
    exprs: list[tuple[str, str, tuple[str, ...]]] = []
    for i, e in enumerate(raw_exprs):
        ep = f".matchExpressions[{i}]"
        if not isinstance(e, dict):
            problems.append((ep, f"must be a mapping, got {type(e).__name__}"))
            continue
        unknown = _unknown(e, _REQUIREMENT_FIELDS, ep)
        if unknown:
            problems.extend(unknown)
            continue
        key, op, values = e.get("key"), e.get("operator"), e.get("values")
        values = [] if values is None else values
        if not isinstance(key, str) or not key:
            problems.append((f"{ep}.key", "is required"))
            continue
        if op not in OPERATORS:
            problems.append((f"{ep}.operator", f"must be In, NotIn, Exists or DoesNotExist, got {brief(op)}"))
            continue
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            problems.append((f"{ep}.values", "must be a list of strings"))
            continue
        if op in ("In", "NotIn") and not values:
            problems.append((f"{ep}.values", f"must not be empty with operator {op}"))
            continue
        if op in ("Exists", "DoesNotExist") and values:
            problems.append((f"{ep}.values", f"must be empty with operator {op}"))
            continue
        exprs.append((key, op, tuple(values)))
    if problems:
        return None, problems
    return LabelSelector(tuple(sorted(labels.items())), tuple(exprs)), []


def parse_or_everything(raw: object) -> LabelSelector | None:
    """A selector where absence (null) means everything, as a RouteAdvertisements' CUDN selector: the empty selector
    for null, None when malformed (a malformed selector selects nothing)."""
    if raw is None:
        return LabelSelector()
    return parse(raw)[0]
