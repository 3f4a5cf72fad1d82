"""Namespaces → `views.Namespace`: a name and its labels (what CUDN namespace selectors match)."""

from __future__ import annotations

from bgpadv.core.views import Namespace
from bgpadv.sources.decode.fields import _key_name, _labels, _map, _str, _version


def decode_namespace(obj: object, key: object = None) -> Namespace:
    meta = _map(_map(obj).get("metadata"))
    return Namespace(_str(meta.get("name")) or _key_name(key), _version(meta), _labels(meta))
