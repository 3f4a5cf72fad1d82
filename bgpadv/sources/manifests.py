"""A cluster state read from manifest files instead of the API: for `bgpadv render`, the demo and tests.

Every `*.yaml`, `*.yml` and `*.json` file directly in the directory is read, in name order: multi-document YAML,
`kind: List` dumps as `kubectl get -o yaml` writes them, and typed lists (`IPAMClaimList`, whose items may lack
`apiVersion`/`kind`: the list's are used). Objects of kinds bgpadv does not watch are ignored. A file that cannot be
read or parsed gives a warning (documents before the error are kept); nothing here raises on bad input.

Timestamps stay strings, as the API returns them: YAML's implicit timestamp type is disabled, so an unquoted
`creationTimestamp: 2025-01-01T00:00:00Z` is not turned into a datetime.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import yaml

from bgpadv import resources
from bgpadv.sources.snapshot import ClusterState

SUFFIXES = (".yaml", ".yml", ".json")


class _Loader(yaml.SafeLoader):
    """SafeLoader without the implicit timestamp type (values stay the strings the API would return)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _flatten(doc: object, where: str, warnings: list[str]) -> Iterator[dict]:
    """The objects of one document: itself, or the items of a List (recursively)."""
    if doc is None:
        return
    if not isinstance(doc, dict):
        warnings.append(f"{where}: document is not a mapping ({type(doc).__name__}), ignored")
        return
    kind = doc.get("kind")
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        if not isinstance(items, list):
            warnings.append(f"{where}: {kind} has no list of items, ignored")
            return
        item_kind = kind[: -len("List")] if kind != "List" else None
        for i, item in enumerate(items):
            if isinstance(item, dict) and item_kind and "kind" not in item:
                item = {"apiVersion": doc.get("apiVersion"), "kind": item_kind, **item}
            yield from _flatten(item, f"{where} items[{i}]", warnings)
        return
    yield doc


def _documents(path: Path, warnings: list[str]) -> list[object]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        warnings.append(f"{path}: cannot read: {e}")
        return []
    if path.suffix == ".json":
        try:
            return [json.loads(text)]
        except ValueError as e:
            warnings.append(f"{path}: not valid JSON: {e}")
            return []
    docs: list[object] = []
    try:
        for doc in yaml.load_all(text, Loader=_Loader):  # a SafeLoader subclass: no arbitrary objects
            docs.append(doc)
    except yaml.YAMLError as e:
        warnings.append(f"{path}: not valid YAML (kept {len(docs)} document(s) before the error): {e}")
    return docs


def load_manifests(directory: str | Path) -> tuple[ClusterState, list[str]]:
    """Read every manifest file in `directory` into a ClusterState; returns it with the warnings met.

    Raises OSError only when the directory itself cannot be listed.
    """
    root = Path(directory)
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    warnings: list[str] = []
    objects: list[dict] = []
    seen: dict[tuple[str, object], str] = {}
    for path in files:
        for n, doc in enumerate(_documents(path, warnings)):
            where = f"{path.name} document {n + 1}"
            for obj in _flatten(doc, where, warnings):
                try:
                    res = resources.resource_for(obj)
                except (AttributeError, TypeError):  # e.g. a launcher pod whose labels are not a mapping
                    res = None
                    warnings.append(f"{where}: {obj.get('kind')} with malformed metadata, ignored")
                if res is None:
                    continue
                if not isinstance(obj.get("metadata"), dict):
                    warnings.append(f"{where}: {res.kind} without metadata, ignored")
                    continue
                key = (res.kind, res.key(obj))
                if key in seen:
                    warnings.append(f"{where}: {res.kind} {key[1]} also defined in {seen[key]}; the later one is used")
                seen[key] = where
                objects.append(obj)
    state, _ignored = ClusterState.from_objects(objects)
    return state, warnings
