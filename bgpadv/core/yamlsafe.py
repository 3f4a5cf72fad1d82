"""Bounded YAML and JSON loading for documents nobody vetted: manifests, the configuration file, watch lines.

One function builds Python objects from YAML, `load_documents`; the manifest loader and the configuration loader
both use it. It reads the parser's *event stream* (libyaml's C parser, `yaml.CSafeLoader`, when PyYAML has it; the
pure-Python parser otherwise) and builds plain dicts, lists and scalars itself with an explicit stack, so that:

- **aliases are refused** (`*name`): the only YAML feature that makes a small text expand into a huge value (the
  526-byte "billion laughs" bomb is 10^9 strings once expanded). Objects from the Kubernetes API never contain them
  (the API speaks JSON). Anchors alone (`&name`) expand nothing and are accepted. Merge keys (`<<`) exist only to
  be used with aliases and are refused too.
- **nesting is bounded**: at most `MAX_DEPTH` (100) nested mappings/sequences. Real Kubernetes objects stay under
  about 20 levels (the deepest are `managedFields[].fieldsV1`, which follow the object's own paths), while
  Python's recursion limit is 1000 and code downstream (`repr`, `json.dumps`, `copy.deepcopy`) recurses per level:
  100 keeps a tenfold margin on both sides. Nothing here recurses, so 5,000 or 1,000,000 levels are a clear
  refusal, never a RecursionError.
- **only plain data**: null, booleans, integers, floats and strings (YAML 1.1 implicit types, as `SafeLoader`,
  except the implicit timestamp: `2025-01-01T00:00:00Z` stays the string the API returns). Explicit tags other
  than these (`!!binary`, `!!set`, `!!python/...`, application tags) are refused; so are complex (non-scalar)
  mapping keys, a key given twice in one mapping (which of the two would Kubernetes have seen?), and integers too
  long for Python to convert.

A refused document is reported with its 1-based index in the stream and the line of the problem; the other
documents of the stream are still returned. After a syntax error the parser cannot go on, so parsing resumes at
the next `---` line below the error: one broken document never takes its neighbours with it.

JSON: `json.loads` recurses in C and raises RecursionError (not ValueError) near depth 1000; `loads_json` turns
that, and any depth above `MAX_DEPTH`, into `TooDeep` (a ValueError). `loads_list_page` decodes a LIST page and
leaves out the items nested too deep, even one too deep for `json.loads` (the page is then split without decoding).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

MAX_DEPTH = 100
"""Most nested mappings/sequences in one document (see the module docstring for why 100)."""

Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The parser used: libyaml's when present (PyYAML's wheels ship it), else PyYAML's pure-Python one."""

_TAG = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT = (_TAG + t for t in ("str", "null", "bool", "int", "float"))
_MERGE, _VALUE = _TAG + "merge", _TAG + "value"
_MAP_TAGS = frozenset({None, "!", _TAG + "map"})
_SEQ_TAGS = frozenset({None, "!", _TAG + "seq"})
_DOCUMENT_START_LINE = re.compile(r"^---(?=[ \t\r\n]|$)", re.MULTILINE)
_MAX_SHOWN = 60


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.1 implicit scalar types without the timestamp type."""


_Resolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TAG + "timestamp"]
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
_RESOLVER = _Resolver()
_CONSTRUCTOR = SafeConstructor()


@dataclass(frozen=True, slots=True)
class Refused:
    """A document that was not built: `index` is its 1-based position in the stream, `line` 1-based (or None)."""

    index: int
    line: int | None
    problem: str

    def __str__(self) -> str:
        where = f"document {self.index}" + (f", line {self.line}" if self.line is not None else "")
        return f"{where}: {self.problem}"


class TooDeep(ValueError):
    """A JSON value nested deeper than MAX_DEPTH."""


class _Refuse(Exception):
    def __init__(self, problem: str, line: int | None):
        self.problem = problem
        self.line = line


def shown(value: object) -> str:
    """A short, bounded rendering of a value for an error message (never formats more than it shows)."""
    if isinstance(value, str):
        text = value[: _MAX_SHOWN + 1]
        text = repr(text[:_MAX_SHOWN]) + ("…" if len(text) > _MAX_SHOWN else "")
        return text
    return type(value).__name__


def _line(event: ev.Event) -> int | None:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else None


def _scalar(event: ev.ScalarEvent) -> object:
    tag = event.tag
    value = event.value
    if tag is None or tag == "!":
        tag = _RESOLVER.resolve(ScalarNode, value, event.implicit)  # type: ignore[no-untyped-call]
    if tag in (_STR, _VALUE):
        return value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        flag = SafeConstructor.bool_values.get(value.lower())
        if flag is None:
            raise _Refuse(f"not a boolean: {shown(value)}", _line(event))
        return flag
    if tag in (_INT, _FLOAT):
        node = ScalarNode(tag, value)
        try:
            if tag == _INT:
                return _CONSTRUCTOR.construct_yaml_int(node)
            return _CONSTRUCTOR.construct_yaml_float(node)
        except ValueError:
            raise _Refuse(f"not a usable number: {shown(value)}", _line(event)) from None
    if tag == _MERGE:
        raise _Refuse("merge keys (<<) are not accepted", _line(event))
    raise _Refuse(f"the tag {shown(tag)} is not accepted (only plain data)", _line(event))


class _Mapping:
    __slots__ = ("has_key", "key", "value")

    def __init__(self) -> None:
        self.value: dict[Any, Any] = {}
        self.key: object = None
        self.has_key = False


_Container = list[Any] | _Mapping


def _open(event: ev.CollectionStartEvent, stack: list[_Container]) -> _Container:
    """The empty container a MappingStart or SequenceStart opens (plain tags only, a scalar key, bounded depth)."""
    if isinstance(event, ev.MappingStartEvent):
        if event.tag not in _MAP_TAGS:
            raise _Refuse(f"the tag {shown(event.tag)} is not accepted (only plain data)", _line(event))
        container: _Container = _Mapping()
    else:
        if event.tag not in _SEQ_TAGS:
            raise _Refuse(f"the tag {shown(event.tag)} is not accepted (only plain data)", _line(event))
        container = []
    if stack and isinstance(stack[-1], _Mapping) and not stack[-1].has_key:
        raise _Refuse("a mapping key must be a scalar", _line(event))
    if len(stack) >= MAX_DEPTH:
        raise _Refuse(f"nested deeper than {MAX_DEPTH} levels", _line(event))
    return container


def _place(top: _Container, value: object, event: ev.Event) -> None:
    """Put a finished value into the open container: a list item, a mapping key, or the value of the pending key."""
    if isinstance(top, list):
        top.append(value)
    elif top.has_key:
        if top.key in top.value:
            raise _Refuse(f"the key {shown(top.key)} is given twice", _line(event))
        top.value[top.key] = value
        top.has_key = False
    else:
        try:
            hash(value)
        except TypeError:  # pragma: no cover - scalars are hashable
            raise _Refuse("a mapping key must be a scalar", _line(event)) from None
        top.key = value
        top.has_key = True


def _document(loader: yaml.SafeLoader) -> object:
    """Build one document from the events after its DocumentStart, up to and including its DocumentEnd."""
    stack: list[_Container] = []
    root: object = None
    get = loader.get_event
    while True:
        event = get()  # type: ignore[no-untyped-call]
        cls = event.__class__
        if cls is ev.ScalarEvent:
            value: object = _scalar(event)
        elif cls is ev.MappingStartEvent or cls is ev.SequenceStartEvent:
            stack.append(_open(event, stack))
            continue
        elif cls is ev.MappingEndEvent or cls is ev.SequenceEndEvent:
            done = stack.pop()
            value = done.value if isinstance(done, _Mapping) else done
        elif cls is ev.AliasEvent:
            raise _Refuse("YAML aliases (*name) are not accepted", _line(event))
        elif cls is ev.DocumentEndEvent:
            return root
        else:  # pragma: no cover - the parser guarantees the grammar
            raise _Refuse(f"unexpected {cls.__name__}", _line(event))
        if stack:
            _place(stack[-1], value, event)
        else:
            root = value


def _skip_document(loader: yaml.SafeLoader) -> None:
    """Consume the events of a refused document, up to and including its DocumentEnd (nothing is built)."""
    while loader.get_event().__class__ is not ev.DocumentEndEvent:  # type: ignore[no-untyped-call]
        pass


def _resume_at(text: str, first_line: int) -> int | None:
    """Offset of the first `---` line at or below line `first_line` (0-based, at least 1), or None."""
    offset = 0
    for _ in range(first_line):
        nl = text.find("\n", offset)
        if nl < 0:
            return None
        offset = nl + 1
    m = _DOCUMENT_START_LINE.search(text, offset)
    return m.start() if m is not None else None


def load_documents(text: str) -> Iterator[tuple[int, object | Refused]]:
    """Every document of a YAML stream, in order: (1-based index, the value built or `Refused`); see the module
    docstring for what is refused.

    Never raises for any input text.
    """
    index = 0
    line_base = 0  # lines of the original text cut off before `text` (after a syntax error)
    while True:
        loader = Loader(text)
        doc_line = -1  # 0-based line (in `text`) where the current document starts
        in_document = False
        try:
            while True:
                event = loader.get_event()
                cls = event.__class__
                if cls is ev.StreamEndEvent:
                    return
                if cls is not ev.DocumentStartEvent:
                    continue
                index += 1
                in_document = True
                mark = event.start_mark
                doc_line = mark.line if mark is not None else 0
                try:
                    value = _document(loader)
                except _Refuse as refusal:
                    line = refusal.line + line_base if refusal.line is not None else None
                    yield index, Refused(index, line, refusal.problem)
                    in_document = False  # refused, but the stream is fine: skip to the document's end
                    _skip_document(loader)
                    continue
                in_document = False
                yield index, value
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            if not in_document:
                index += 1
            line = mark.line if mark is not None else 0
            problem = " ".join(str(getattr(e, "problem", None) or e).split())
            if "nesting depth" in problem:  # libyaml's own limit (1000), far above ours
                problem = f"nested deeper than {MAX_DEPTH} levels"
            else:
                problem = f"not valid YAML: {problem}"
            yield index, Refused(index, line + line_base + 1, problem[:200])
            # the next document starts on a `---` line: not above the error (the parser may report it on the
            # next document's marker, which then starts the next document), not on this document's own marker
            # line, and never on line 0, so every round makes progress
            resume = _resume_at(text, max(line, doc_line + 1, 1))
            if resume is None:
                return
            line_base += text.count("\n", 0, resume)
            text = text[resume:]
        finally:
            loader.dispose()


def depth_exceeds(value: object, limit: int = MAX_DEPTH) -> bool:
    """True when `value` nests dicts/lists more than `limit` levels deep (iterative; stops at the first hit)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if item.__class__ is dict:
            children = item.values()
        elif item.__class__ is list:
            children = item  # type: ignore[assignment]
        else:
            continue
        if depth > limit:
            return True
        for child in children:
            if child.__class__ is dict or child.__class__ is list:
                stack.append((child, depth + 1))
    return False


_STRUCTURE = b'{}[]"'
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in _STRUCTURE)


def nests_at_most(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """True when the JSON text `data`, which `json.loads` accepted, certainly nests at most `limit` levels; False
    when it may nest deeper (then `depth_exceeds` on the decoded value decides). At C speed: a page of 500 VMIs in
    about 1 ms, where walking the decoded items takes 4-5 ms.

    Strings are taken out (escaped backslashes and quotes first, so every quote left opens or closes a string; then
    everything but quotes and brackets; then the strings, now only the brackets they held), which leaves the
    value's own brackets, balanced. Each round then removes every empty `{}` and then every empty `[]`: one
    `bytes.replace` takes at most one level off any path (it never rescans what it produced), so a value emptied
    within `r` rounds nests at most `2 r` levels."""
    if b"\\\\" in data:
        data = data.replace(b"\\\\", b"")
    if b'\\"' in data:
        data = data.replace(b'\\"', b"")
    # adjacent quotes are an empty string, or the end of one string and the start of the next with no bracket
    # between them: dropping both leaves the strings' brackets and the value's exactly as they were
    rest = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in rest:
        rest = b"".join(rest.split(b'"')[::2])
    for _ in range(limit // 2):
        if not rest:
            return True
        rest = rest.replace(b"{}", b"").replace(b"[]", b"")
    return not rest


def loads_json(data: str | bytes) -> object:
    """`json.loads`, refusing values nested deeper than MAX_DEPTH with `TooDeep` (a ValueError), never
    RecursionError. Other malformed input raises ValueError as `json.loads` does."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:  # fewer openers than the limit cannot nest that deep
        return value
    if not nests_at_most(raw) and depth_exceeds(value):
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels")
    return value


# A JSON string, or one bracket: enough to follow nesting without decoding (scalars between them are skipped).
_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_ITEMS_KEY = b'"items"'


def loads_list_page(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """A LIST page (`{"metadata": ..., "items": [...]}`): (the page without its items, the items nested at most
    MAX_DEPTH deep, how many items were left out for nesting deeper).

    `json.loads` decodes the page when it can. When one item is too deep for it (RecursionError), the page is split
    without decoding: the items array and each item's span are found by following strings and brackets, then each
    item is decoded on its own, so one hostile object never makes the whole resource unlistable. Raises ValueError
    when the page is not a JSON object with an items array.
    """
    try:
        page = json.loads(data)
    except RecursionError:
        page, items = _split_page(data)
        shallow = False
    else:
        if not isinstance(page, dict):
            raise ValueError("a LIST page is not a JSON object")
        raw_items = page.pop("items", None)
        items = raw_items if isinstance(raw_items, list) else []
        # the page nests two levels above its items: a page within MAX_DEPTH + 2 levels has no item too deep
        shallow = nests_at_most(data, MAX_DEPTH + 2)
    kept: list[dict[str, Any]] = []
    too_deep = 0
    for item in items:
        if item is None or (not shallow and isinstance(item, dict) and depth_exceeds(item)):
            too_deep += 1
        elif isinstance(item, dict):
            kept.append(item)
    return page, kept, too_deep


def _split_page(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any] | None]]:
    """The page decoded without its items, and each item decoded alone (None for one too deep to decode)."""
    depth = 0
    items_start = items_end = -1
    item_start = -1
    spans: list[tuple[int, int]] = []
    for m in _JSON_TOKENS.finditer(data):
        token = m.group()
        if token[0] == 0x22:  # a string
            if depth == 1 and items_start < 0 and token == _ITEMS_KEY:
                rest = data[m.end() : m.end() + 64].lstrip()
                if rest[:1] == b":" and rest[1:].lstrip()[:1] == b"[":
                    items_start = -2  # the next `[` opens the items array
            continue
        if token in (b"[", b"{"):
            depth += 1
            if items_start == -2 and depth == 2:
                items_start = m.start()
            elif items_start >= 0 and items_end < 0 and depth == 3:
                item_start = m.start()
        else:
            depth -= 1
            if items_start >= 0 and items_end < 0:
                if depth == 2 and item_start >= 0:
                    spans.append((item_start, m.end()))
                    item_start = -1
                elif depth == 1:
                    items_end = m.end()
    if items_start < 0 or items_end < 0:
        raise ValueError("a LIST page too deep to decode has no items array")
    page = json.loads(data[:items_start] + b"[]" + data[items_end:])
    if not isinstance(page, dict):
        raise ValueError("a LIST page is not a JSON object")
    page.pop("items", None)
    items: list[dict[str, Any] | None] = []
    for start, end in spans:
        try:
            items.append(json.loads(data[start:end]))
        except RecursionError:
            items.append(None)
    return page, items
