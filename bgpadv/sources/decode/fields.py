"""What every decoder reads the same way: fields of a given type (or an empty one), metadata (labels, resourceVersion,
age), JSON annotations, status conditions, store keys, an address as written, the message of a malformed selector.

The underscored names are the decode package's own: its decoders share them, no module outside it uses them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from types import MappingProxyType

from bgpadv.core.addressing import OPT_IN_GROUPS, parse_vm_address
from bgpadv.core.bounded import describe
from bgpadv.core.prefix import Address
from bgpadv.core.views import EMPTY_LABELS, NEWEST, VmAddress, address_key

_EMPTY: Mapping = MappingProxyType({})


def _map(value: object) -> Mapping:
    return value if isinstance(value, dict) else _EMPTY


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


_SHARED_MAX = 253  # a DNS name: namespaces, node names, label keys and values, timestamps, phases


def _shared(value: str) -> str:
    """One string object for every view that holds this value (namespaces, node names, label keys and values,
    creation timestamps, phases repeat across 100,000 objects; each JSON document brings its own copy). Interned
    strings are freed with their last holder; long ones are left alone."""
    return sys.intern(value) if len(value) <= _SHARED_MAX else value


def _labels(meta: Mapping) -> Mapping[str, str]:
    labels = meta.get("labels")
    if not isinstance(labels, dict) or not labels:
        return EMPTY_LABELS
    return MappingProxyType(
        {_shared(k): _shared(v) for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
    )


def _version(meta: Mapping) -> str:
    return str(meta.get("resourceVersion") or "")


def _json(annotations: Mapping, key: str) -> tuple[object, bool]:
    """(decoded value, True) of a JSON annotation; (None, False) when absent, not a string or not JSON."""
    raw = annotations.get(key)
    if not isinstance(raw, str):
        return None, False
    try:
        return json.loads(raw), True
    except (ValueError, RecursionError):
        return None, False


def _key_name(key: object) -> str:
    return key if isinstance(key, str) else ""


def _key_pair(key: object) -> tuple[str, str]:
    if isinstance(key, tuple) and len(key) == 2:
        return (str(key[0]), str(key[1]))
    return ("", str(key) if key is not None else "")


def _condition(status: Mapping, kind: str) -> Mapping | None:
    for c in _list(status.get("conditions")):
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def _age(meta: Mapping, name: str | None = None) -> tuple[str, str, str]:
    """(creationTimestamp, namespace, name): the smallest wins a conflict; no timestamp sorts last. `name`: the
    view's own string of the name (one object per view, not a second copy from the document)."""
    created = meta.get("creationTimestamp")
    return (
        _shared(created) if isinstance(created, str) and created else NEWEST,
        _shared(str(meta.get("namespace"))),
        name if name is not None else str(meta.get("name")),
    )


def _nonempty(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _vm_address(value: object) -> VmAddress:
    parsed = parse_vm_address(value)
    if parsed is None:
        return VmAddress(describe(value), None, 0)
    version, integer = parsed
    return VmAddress(describe(value), Address.of(version, integer), address_key(version, integer))


_OPT_IN = frozenset(OPT_IN_GROUPS)
"""Special ranges the configuration may allow as network space (`networks.allowSpecialRanges`): the planner, which
reads the configuration, decides on those; the decoder refuses only the ranges that never are."""


def selector_problem(field: str, problems: list[tuple[str, str]]) -> tuple[str, str]:
    """(the field path, one line) of a malformed selector's first problem, with the rule that applies to it."""
    at, message = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{field}{at}", f"{field}{at} {message}{more}: a malformed label selector selects nothing"
