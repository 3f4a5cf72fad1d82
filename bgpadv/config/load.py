"""Reading a configuration: the file (through the bounded YAML loader), the validation against `schema`, what the file
points at, and pydantic's errors turned into one `path: problem` line each.

Every line names the field path as users write it (`peers[0].md5PasswordFile`, `networks.selector.matchLabels`)
and the problem; all problems of a file are reported at once. An unknown key says which key was meant when one is
close (`peers[0].adress: unknown field (did you mean 'address'?)`), else which keys are allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from pydantic import TypeAdapter, ValidationError

from bgpadv.config.schema import LISTEN_ENV, MD5_PASSWORD, MD5_RULE, NODE_NAME_ENV, POD_NODE_NAME_ENV, Config
from bgpadv.core import yamlsafe
from bgpadv.core.bounded import brief
from bgpadv.core.prefix import Address
from bgpadv.core.printable import write_line

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class ConfigError(ValueError):
    """The configuration is invalid. `problems` lists every `path: message` found."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


class _Surroundings:
    """What validation reads beyond the document (`schema.Surroundings`): the environment and the secret files."""

    def __init__(self, environ: Mapping[str, str], unread: list[str] | None = None):
        self.environ = environ
        self.peers: frozenset[Address] | None = None
        self.unread = unread  # offline (`check-config --offline`): secret files that cannot be read are listed here

    def secret(self, path: str) -> str:
        """The TCP MD5 password in the file at `path` (a mounted Secret key), checked like an inline md5Password.

        One trailing newline (LF or CRLF) is removed: `echo pw > file` writes one, and a Secret made from that file
        (`kubectl create secret generic --from-file`) keeps it byte for byte. Anything else (a second newline,
        spaces) is part of the file and refused by the character rules, so the password is never silently other than
        the one the file shows. At most 4 KiB are read (a password is at most 80 characters).
        """
        try:
            with open(path, "rb") as f:
                data = f.read(4096)
        except OSError as e:
            if self.unread is not None:
                self.unread.append(path)
                return OFFLINE_PASSWORD
            raise ValueError(f"cannot read {brief(path)}: {e.strerror or e}") from None
        text = data.decode("ascii", errors="replace")
        text = text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text
        if not MD5_PASSWORD.fullmatch(text):
            raise ValueError(f"{brief(path)} must hold {MD5_RULE} (one trailing newline allowed)")
        return text


OFFLINE_PASSWORD = "unread-offline"
"""What an md5PasswordFile that could not be read stands for off the cluster (`load(..., unread=[])`): a valid password,
so that the rest of the configuration, and ExaBGP's rendering of it, can still be checked."""

EVERY_NODE = "*"
"""`Config.node_name` of a per-node configuration judged off the cluster for every node at once (`render`, `explain`,
`check-config`: no DaemonSet pod sets BGPADV_NODE_NAME there). No Node can be named `*`."""


@functools.cache
def _adapter() -> TypeAdapter[Config]:
    return TypeAdapter(Config)


def parse(raw: Any, environ: Mapping[str, str] | None = None, unread: list[str] | None = None) -> Config:
    """Validate a decoded YAML document; raise ConfigError listing every problem.

    `environ` (default `os.environ`) is read for `BGPADV_NODE_NAME` and a `metrics.listen` of `${VARIABLE}:PORT`.
    `unread` (off the cluster): an md5PasswordFile that cannot be read is appended there instead of being an error."""
    if raw is None:
        raise ConfigError(["the configuration is empty"])
    if not isinstance(raw, dict):
        raise ConfigError([f"the document must be a mapping of configuration keys, got {brief(raw)}"])
    try:
        surroundings = _Surroundings(os.environ if environ is None else environ, unread)
        return _adapter().validate_python(raw, context=surroundings)
    except ValidationError as e:
        raise ConfigError(_problems(e, raw)) from None


@dataclasses.dataclass(frozen=True, slots=True)
class Judged:
    """How a command judges a configuration off the cluster, where no pod's environment says which instance it is.

    `per_node`: as the per-node DaemonSet runs it (BGPADV_NODE_NAME set), even when the file does not say `mode:
    per-node`; a file that says it is judged so anyway. `node`: the instance on that node (per-node mode: that node's
    instance; cluster mode: a replica whose pod runs there, BGPADV_POD_NODE_NAME); None in per-node mode: every node
    (`EVERY_NODE`). `unread`: md5PasswordFile paths that could not be read are collected here, not refused."""

    per_node: bool = False
    node: str | None = None
    unread: list[str] | None = None
    notes: list[str] = dataclasses.field(default_factory=list)  # what was judged otherwise than in the pod

    def document(self, raw: object, environ: Mapping[str, str]) -> object:
        """`raw` with each `localAddress: {fromEnv: NAME}` whose variable is unset here left out (ExaBGP's `auto`):
        only the pod knows its node's address; a note says so."""
        peers = raw.get("peers") if isinstance(raw, dict) else None
        if not isinstance(peers, list):
            return raw
        out = []
        for i, peer in enumerate(peers):
            local = peer.get("localAddress") if isinstance(peer, dict) else None
            name = local.get("fromEnv") if isinstance(local, dict) else None
            if isinstance(name, str) and not environ.get(name):
                self.notes.append(f"peers[{i}].localAddress: {name} is set in the pod only: judged without it")
                peer = {k: v for k, v in peer.items() if k != "localAddress"}
            out.append(peer)
        return {**raw, "peers": out}  # type: ignore[dict-item]

    def environ(self, raw: object, environ: Mapping[str, str]) -> Mapping[str, str]:
        """`environ` as the judged instance's pod would have it."""
        doc = raw if isinstance(raw, dict) else {}
        if doc.get("mode") == "cluster" and self.per_node:
            raise ConfigError(["mode: cluster, but judged as per-node (--per-node): remove one of them"])
        per_node = self.per_node or doc.get("mode") == "per-node" or bool(doc.get("nodeName"))
        if per_node:
            node = self.node or (doc.get("nodeName") if isinstance(doc.get("nodeName"), str) else None)
            return {**environ, NODE_NAME_ENV: node or environ.get(NODE_NAME_ENV) or EVERY_NODE}
        if self.node is not None:
            return {**environ, POD_NODE_NAME_ENV: self.node}
        return environ


def load_or_report(
    path: str | Path, stream: TextIO | None = None, *, listener: bool = True, judged: Judged | None = None
) -> Config | None:
    """Load a configuration for a command line: on failure, print one `path: problem` line per problem (to stderr
    by default) and return None; the caller exits 2. `listener` False and `judged`: see `load`."""
    out = stream if stream is not None else sys.stderr
    try:
        return load(path, listener=listener, judged=judged)
    except ConfigError as e:
        problems = e.problems
    except OSError as e:
        problems = [f"cannot read the configuration: {e.strerror or e}"]
    prefix = f"{path}: "
    for problem in problems:
        write_line(out, problem if problem.startswith(prefix) else prefix + problem)  # file-level ones name it
    return None


STDIN = "-"
"""The configuration path that stands for standard input (`bgpadv check-config -`)."""


def load(path: str | Path, *, listener: bool = True, judged: Judged | None = None) -> Config:
    """Read and validate a configuration file (`-`: standard input); raise ConfigError (with field paths) or OSError.

    The YAML is read by `bgpadv.core.yamlsafe.load_documents`, as manifests are: aliases, deep nesting, tags other than
    plain data and repeated keys are refused. The file must hold one document (an empty file is an empty config).
    `listener` False is for commands that never open the metrics listener (`render`, `explain`): a `metrics.listen`
    of `${VARIABLE}:PORT` whose variable is unset (outside the pod) reads as loopback instead of an error.
    `judged` is for commands that judge the configuration off the cluster (`Judged`).
    """
    try:
        text = sys.stdin.read() if str(path) == STDIN else Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError([f"{path}: not UTF-8 text: {e.reason}"]) from None
    documents = list(yamlsafe.load_documents(text))
    refused = [doc for _, doc in documents if isinstance(doc, yamlsafe.Refused)]
    if refused:
        raise ConfigError([f"{path}: {doc}" for doc in refused])
    if len(documents) > 1:
        raise ConfigError([f"{path}: must hold one YAML document, found {len(documents)}"])
    raw = documents[0][1] if documents else None
    environ: Mapping[str, str] = os.environ if listener else _listener_free(raw, os.environ)
    if judged is None:
        return parse(raw, environ)
    environ = judged.environ(raw, environ)
    return parse(judged.document(raw, environ), environ, judged.unread)


def _listener_free(raw: object, environ: Mapping[str, str]) -> Mapping[str, str]:
    """`environ` with the variable of a `${VARIABLE}:PORT` listener set to loopback when it is unset."""
    metrics = raw.get("metrics") if isinstance(raw, dict) else None
    listen = metrics.get("listen") if isinstance(metrics, dict) else None
    m = LISTEN_ENV.fullmatch(listen) if isinstance(listen, str) else None
    if m is None or environ.get(m.group(1)):
        return environ
    return {**environ, m.group(1): "127.0.0.1"}


@functools.cache
def json_schema() -> dict[str, Any]:
    """The configuration file's JSON Schema (draft 2020-12): keys as users write them, defaults, descriptions.

    It states each key's type, bounds and shape; the rules between keys (a passive peer needs localAddress, ...) and
    what the file points at (md5PasswordFile, `${VARIABLE}`) are checked by `parse` only."""
    schema = _adapter().json_schema(by_alias=True, mode="validation")
    for node in [schema, *schema.get("$defs", {}).values()]:
        _null_is_omitted(node)
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": "https://bgpadv.io/schemas/bgpadv.yaml.json", **schema}


def _null_is_omitted(node: dict[str, Any]) -> None:
    """As `parse` reads it: an optional key may be null (the same as leaving it out). Field titles, which only
    repeat the key, are left out."""
    required = set(node.get("required", ()))
    for key, prop in node.get("properties", {}).items():
        prop.pop("title", None)
        if key in required:
            continue
        branches = prop.get("anyOf")
        if isinstance(prop.get("enum"), list):
            prop["enum"] = [*prop["enum"], None]
            prop.pop("type", None)
        elif branches is not None:
            if {"type": "null"} not in branches:
                branches.append({"type": "null"})
        elif "$ref" in prop:
            prop["anyOf"] = [{"$ref": prop.pop("$ref")}, {"type": "null"}]
        elif isinstance(prop.get("type"), str):
            prop["type"] = [prop["type"], "null"]
        elif "const" in prop:
            prop["anyOf"] = [{"const": prop.pop("const")}, {"type": "null"}]


# --- pydantic's errors as `path: problem` lines ---------------------------------------------------------------------

_UNKNOWN = {"unexpected_keyword_argument", "extra_forbidden", "invalid_key"}
_MAPPING = {"PeerConfig": "a mapping with at least address and asn"}


def _problems(error: ValidationError, raw: dict[str, Any]) -> list[str]:
    out = []
    for e in error.errors(include_url=False):
        loc, kind, value = e["loc"], e["type"], e.get("input")
        ctx = e.get("ctx") or {}
        if kind == "too_short" and isinstance(value, list) and len(value) >= ctx.get("min_length", 1):
            continue  # pydantic counts only the valid entries: the invalid ones have their own lines
        if kind in _UNKNOWN:
            *parent, key = loc
            name = key if isinstance(key, str) and len(key) <= 64 else brief(key, 64)
            where = _path(parent)
            out.append(f"{where}.{name}: {_unknown(parent, key)}" if where else f"{name}: {_unknown(parent, key)}")
            continue
        out.append(f"{_path(loc) + ctx.get('at', '')}: {_message(kind, e['msg'], ctx, value, _written(raw, loc))}")
    return out


_ABSENT = object()


def _written(raw: Any, loc: tuple[str | int, ...]) -> Any:
    """What the document holds at `loc` (`_ABSENT` when nothing)."""
    for seg in loc:
        if isinstance(raw, dict) and isinstance(seg, str) and seg in raw:
            raw = raw[seg]
            continue
        if isinstance(raw, list) and isinstance(seg, int) and seg < len(raw):
            raw = raw[seg]
            continue
        return _ABSENT
    return raw


def _message(kind: str, msg: str, ctx: dict[str, Any], value: Any, written: Any) -> str:
    if kind == "bgpadv":
        return str(ctx["problem"])
    if kind == "missing":
        return "is required, got null" if written is None else "is required"
    shown = brief(value)
    if kind in ("dataclass_type", "dataclass_exact_type", "dict_type"):
        return f"must be {_MAPPING.get(str(ctx.get('class_name')), 'a mapping')}, got {shown}"
    if kind in ("tuple_type", "list_type", "iterable_type"):
        return f"must be a list, got {shown}"
    if kind == "too_short":
        return "must be a non-empty list"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_type":
        return f"must be a string, got {shown}"
    if kind == "bool_type":
        return f"must be true or false, got {shown}"
    if kind == "literal_error":
        return f"must be {str(ctx.get('expected', '')).replace(chr(39), '')}, got {shown}"
    return msg[:1].lower() + msg[1:]


def _path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    text = ""
    for seg in loc:
        text += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if text else str(seg))
    return text


def _unknown(parent: list[str | int], key: object) -> str:
    allowed = _keys(tuple(parent))
    if isinstance(key, str):
        folded = {_fold(k): k for k in allowed}
        close = difflib.get_close_matches(_fold(key), list(folded), n=1, cutoff=0.6)
        if close:
            return f"unknown field (did you mean {folded[close[0]]!r}?)"
    return f"unknown field (allowed: {', '.join(allowed)})"


def _fold(key: str) -> str:
    return re.sub(r"[-_\s]", "", key.lower())


def _keys(parent: tuple[str | int, ...]) -> list[str]:
    """The keys allowed at `parent` (a path into the document), from the JSON Schema."""
    schema = json_schema()
    node: dict[str, Any] = schema
    for seg in parent:
        node = _resolve(schema, node)
        node = node.get("items", {}) if isinstance(seg, int) else node.get("properties", {}).get(seg, {})
    return sorted(_resolve(schema, node).get("properties", {}))


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            node = next((n for n in node["anyOf"] if "$ref" in n or "properties" in n or "items" in n), {})
        else:
            return node
