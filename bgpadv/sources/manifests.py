"""A cluster state read from manifest files instead of the API: for `bgpadv render`, `bgpadv explain`, the demo and
tests.

Inputs are directories, files and `-` (standard input), read in the order given. In a directory, every `*.yaml`,
`*.yml` and `*.json` file directly in it is read, in name order; a file named explicitly is read whatever its name
(JSON when it ends in `.json`, YAML otherwise); standard input is JSON when its first character is `{` or `[`, YAML
otherwise. Each is read the same way: multi-document YAML,
`kind: List` dumps as `kubectl get -o yaml` writes them, and typed lists (`IPAMClaimList`, whose items may lack
`apiVersion`/`kind`: the list's are used). Objects of kinds bgpadv does not watch are ignored; an object of a watched
kind is read in every version upstream still serves in the same shape (a `kubevirt.io/v1alpha3` VMI is read as v1,
`resources.Resource.also_served`) and refused with a warning in any other. A file that cannot be
read gives a warning; nothing here raises on bad input.

YAML goes through `bgpadv.core.yamlsafe.load_documents` (libyaml's parser when present): a document with an alias, more
than `yamlsafe.MAX_DEPTH` levels of nesting, a tag other than plain data, a key given twice, or a syntax error is
refused with a warning naming the file, the document's index and the line; every other document of the file and of
the directory is still read. JSON files are refused whole when nested deeper than `MAX_DEPTH`.

Timestamps stay strings, as the API returns them: YAML's implicit timestamp type is disabled, so an unquoted
`creationTimestamp: 2025-01-01T00:00:00Z` is not turned into a datetime.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from bgpadv.core import resources, yamlsafe
from bgpadv.core.state import ClusterState
from bgpadv.sources.decode.dispatch import state_from_objects

SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
"""The input name that stands for standard input."""


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


def _documents(path: Path, warnings: list[str]) -> Iterator[tuple[int, object]]:
    """(1-based index, value) of each document of the file that could be read; a warning for each that could not."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        warnings.append(f"{path}: cannot read: {e}")
        return
    yield from _text_documents(text, str(path), path.suffix == ".json", warnings)


def _text_documents(text: str, name: str, as_json: bool, warnings: list[str]) -> Iterator[tuple[int, object]]:
    """(1-based index, value) of each document of `text` (read from `name`) that could be parsed."""
    if as_json:
        try:
            yield 1, yamlsafe.loads_json(text)
        except yamlsafe.TooDeep as e:
            warnings.append(f"{name}: refused: {e}")
        except ValueError as e:
            warnings.append(f"{name}: not valid JSON: {e}")
        return
    for index, doc in yamlsafe.load_documents(text):
        if isinstance(doc, yamlsafe.Refused):
            warnings.append(f"{name} {doc}; refused (the file's other documents are still read)")
        else:
            yield index, doc


def load_manifests(*inputs: str | Path, stdin: TextIO | None = None) -> tuple[ClusterState, list[str]]:
    """Read every manifest of `inputs` (directories, files, `-`: see the module) into a ClusterState; returns it with
    the warnings met.

    Raises OSError only when an input itself cannot be opened (a missing path, a directory that cannot be listed).
    """
    objects, warnings = load_manifest_objects(*inputs, stdin=stdin)
    state, _ignored = state_from_objects(objects)  # decoded once, as the store decodes events
    return state, warnings


def _sources(
    inputs: Sequence[str | Path], stdin: TextIO | None, warnings: list[str]
) -> Iterator[tuple[str, Iterator[tuple[int, object]]]]:
    """(name shown in warnings, its documents) of each file of `inputs`, in order."""
    for item in inputs:
        if str(item) == STDIN:
            text = (stdin if stdin is not None else sys.stdin).read()
            yield "stdin", _text_documents(text, "stdin", text.lstrip()[:1] in ("{", "["), warnings)
            continue
        path = Path(item)
        if path.is_dir():
            for file in sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES):
                yield file.name, _documents(file, warnings)
        else:
            yield path.name, _documents(path, warnings)


def _take(
    obj: dict, where: str, warnings: list[str], seen: dict[tuple[str, object], str], objects: list[dict[str, Any]]
) -> None:
    """Keep `obj` when it is of a watched kind with metadata (a warning when it replaces an earlier one)."""
    try:
        res = resources.resource_for(obj)
    except (AttributeError, TypeError):  # e.g. a launcher pod whose labels are not a mapping
        warnings.append(f"{where}: {obj.get('kind')} with malformed metadata, ignored")
        return
    if res is None:
        unread = resources.unread_version(obj)
        if unread is not None:
            warnings.append(f"{where}: {unread}, ignored")
        return
    if obj.get("apiVersion") != res.api_version:  # another served version of the same shape
        obj = {**obj, "apiVersion": res.api_version}
    if not isinstance(obj.get("metadata"), dict):
        warnings.append(f"{where}: {res.kind} without metadata, ignored")
        return
    key = (res.kind, res.key(obj))
    if key in seen:
        warnings.append(f"{where}: {res.kind} {key[1]} also defined in {seen[key]}; the later one is used")
    seen[key] = where
    objects.append(obj)


def load_manifest_objects(*inputs: str | Path, stdin: TextIO | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The watched objects of every manifest of `inputs` (directories, files, `-`), as written (the later of two with
    one key wins a warning), with the warnings met. Raises OSError only when an input itself cannot be opened: every
    input is checked before any is read."""
    for item in inputs:
        if str(item) != STDIN:
            path = Path(item)
            if path.is_dir():
                path.iterdir()  # raises when it cannot be listed
            elif not path.exists():
                raise FileNotFoundError(f"no such file or directory: {item}")
    warnings: list[str] = []
    objects: list[dict[str, Any]] = []
    seen: dict[tuple[str, object], str] = {}
    for name, documents in _sources(inputs, stdin, warnings):
        for n, doc in documents:
            where = f"{name} document {n}"
            for obj in _flatten(doc, where, warnings):
                _take(obj, where, warnings, seen, objects)
    return objects, warnings
