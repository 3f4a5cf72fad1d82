"""A kube-apiserver double that speaks real HTTP, for tests, benchmarks and `make demo`.

`FakeApiServer` keeps objects in memory and serves them on a `ThreadingHTTPServer` with the paths, query parameters
and JSON shapes the official `kubernetes` client uses, so the real client library (and bgpadv's reflectors) run
against it unchanged:

- LIST with `labelSelector`, `fieldSelector` (metadata.name / metadata.namespace; pods also spec.nodeName:
  `FIELD_LABELS`), `resourceVersion`, `limit`/`continue` (pages are a consistent snapshot at the first page's
  resourceVersion; a token older than the history window answers 410 Expired);
- WATCH (`watch=true`) with `resourceVersion`, `allowWatchBookmarks`, `timeoutSeconds`: a chunked response, one JSON
  event per line (ADDED, MODIFIED, DELETED, BOOKMARK, and ERROR carrying a 410 "Expired" Status when the
  resourceVersion is older than the history window). With a label or field selector, an object that stops matching
  arrives as DELETED (carrying the object as it last matched, at the resourceVersion of the change) and one that
  starts matching as ADDED, as the real apiserver's watch cache sends them;
- POST create (`generateName` too), PUT update (stale resourceVersion → 409), PATCH (merge patch, JSON patch;
  strategic merge is accepted for core kinds as a merge patch and refused with 415 for custom resources), DELETE
  (finalizers respected: the object gets a deletionTimestamp and goes away when its last finalizer is removed);
- the status subresource: PUT/PATCH `.../status` change only `status`; a plain PUT/PATCH keeps the stored status
  (not for VirtualMachineInstances: KubeVirt's CRD has no status subresource, a plain write carries the status);
- discovery: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}[/{version}]`.

Tests and the demo drive the cluster from Python through the same code path (`create`, `update`, `apply`, `patch`,
`patch_status`, `delete`, `load`): every write bumps the global resourceVersion and emits watch events exactly as an
HTTP write does. Faults: `compact()` (old resourceVersions → 410), `drop_watches()` (every stream is cut, like an
apiserver restart), `set_installed(group, False)` (404, like a missing CRD), `fail_next(n, status)`.

Where this differs from a real apiserver
----------------------------------------
- No authentication, authorization, admission, defaulting, validation or OpenAPI schema: any JSON object is stored.
  Namespaces need not exist. Owner references never cascade (no garbage collector); pods have no grace period.
- One global resourceVersion counter and one in-memory history window (`history_limit` events, or whatever is left
  after `compact()`), shared by every kind; a real apiserver has etcd revisions plus a per-kind watch cache.
- LIST ignores `resourceVersion`/`resourceVersionMatch` (always the latest state) except through `continue` tokens;
  `limit` is honoured even with resourceVersion=0, where a real apiserver serving from its cache ignores it.
  `remainingItemCount` is set when no selector is used; a 410 on `continue` carries no fresh token.
- Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; no set-based validation.
  Field selectors: only `metadata.name` and `metadata.namespace`.
- Bookmarks are sent every `bookmark_interval` seconds to every watcher that asked, carrying the global
  resourceVersion; no `sendInitialEvents`/`initial-events-end` support. kube-apiserver 1.37 (tests/kube) sends
  one about 60 s into a watch and one just before its `timeoutSeconds`, none in a shorter watch, and a watch
  without a resourceVersion that asks for bookmarks gets an `initial-events-end` BOOKMARK after its ADDED events.
  A watch from a resourceVersion in the future waits for it instead of answering "Too large resource version".
- Python-side writes (`create`, `update`, `apply`, `load`) store `status` as given, even for kinds with a status
  subresource: a test seeds a full object in one step (one ADDED event), where a real client needs a create plus a
  status update. HTTP writes follow the real rules (status dropped on create, kept on update).
- Strategic merge patch is a plain merge patch (lists are replaced, never merged by key); server-side apply
  (`application/apply-patch+yaml`) answers 415. `managedFields` holds one entry per (manager, operation,
  subresource) with its `time`, and an empty `fieldsV1`.
- Uninstalling a group (`set_installed`) keeps its objects and cuts its open watches. A real apiserver deleting a
  CRD first marks every object deleting (watch MODIFIED with a deletionTimestamp; objects with finalizers stay, the
  CRD Terminating, until they are removed), then sends DELETED for each, and only then answers 404. The
  Python-side API ignores installation so tests can seed a group before installing it.
- A 429 carries `Retry-After: 1`, so urllib3 in the client retries it by itself before the caller sees it.
- Connections are plain HTTP; `write_kubeconfig` gives a dummy token the server never checks.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import bisect
import contextlib
import copy
import json
import logging
import random
import re
import socket
import socketserver
import string
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import jsonpatch

from bgpadv.core import resources
from bgpadv.observe import sessionstate

log = logging.getLogger(__name__)

_MERGE = "application/merge-patch+json"
_JSON_PATCH = "application/json-patch+json"
_STRATEGIC = "application/strategic-merge-patch+json"


@dataclass(frozen=True, slots=True)
class ApiType:
    """One kind the fake serves: where it lives in the URL space and how its writes behave."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status_subresource: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """The name used in messages, `plural.group` as a real apiserver spells it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _from_table(r: resources.Resource) -> ApiType:
    # KubeVirt's VirtualMachineInstance CRD has no status subresource (virt-controller and virt-handler write the
    # status with the object), as the real apiserver with KubeVirt's CRD shows (tests/kube/test_contract.py)
    return ApiType(r.group, r.version, r.kind, r.plural, r.namespaced, status_subresource=r is not resources.VMI)


DEFAULT_TYPES: tuple[ApiType, ...] = (
    *(_from_table(r) for r in resources.ALL),
    ApiType("", "v1", "Namespace", "namespaces", False),
    ApiType("", "v1", "Event", "events", True, status_subresource=False),
    ApiType("k8s.ovn.org", "v1", "UserDefinedNetwork", "userdefinednetworks", True),
    ApiType("k8s.cni.cncf.io", "v1", "NetworkAttachmentDefinition", "network-attachment-definitions", True, False),
    ApiType("kubevirt.io", "v1", "VirtualMachine", "virtualmachines", True),
    # bgpadv's own (deploy/base/crd-bgpsessionstates.yaml: namespaced, with a status subresource)
    ApiType(sessionstate.GROUP, sessionstate.VERSION, sessionstate.KIND, sessionstate.PLURAL, True),
)


class ApiError(Exception):
    """A failed request, answered as a Kubernetes `Status` object (and raised by the Python-side API)."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict:
        return _status(self.code, self.reason, self.message, self.details)


def _status(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "details": details or {},
        "code": code,
    }


def _not_found(t: ApiType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{t.resource} "{name}" not found', {"name": name, "kind": t.plural})


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- label and field selectors -----------------------------------------------------------------------------------
_TERM = re.compile(
    r"\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9][A-Za-z0-9_.\-/]*)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<val>[A-Za-z0-9_.\-]*)|\s+(?P<setop>in|notin)\s*\((?P<vals>[^)]*)\))?\s*(?:,|$)"
)

Predicate = Callable[[dict], bool]


def parse_label_selector(text: str) -> Predicate:
    """Compile a label selector string into a predicate over label dicts; ValueError when it does not parse."""
    terms: list[Callable[[dict], bool]] = []
    hint: tuple[str, frozenset[str]] | None = None  # a term naming the values a match must have (`_Kind.indexed`)
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"unable to parse requirement: {text[pos:]!r}")
        pos = m.end()
        key, neg, op, setop = m["key"], bool(m["neg"]), m["op"], m["setop"]
        if neg and (op or setop):
            raise ValueError(f"unable to parse requirement: {m.group(0)!r}")
        if op in ("=", "=="):
            terms.append(lambda labels, k=key, v=m["val"]: labels.get(k) == v)
            hint = hint or (key, frozenset([m["val"]]))
        elif op == "!=":
            terms.append(lambda labels, k=key, v=m["val"]: labels.get(k) != v)
        elif setop:
            values = frozenset(v.strip() for v in m["vals"].split(",") if v.strip())
            if setop == "in":
                terms.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
                hint = hint or (key, values)
            else:
                terms.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif neg:
            terms.append(lambda labels, k=key: k not in labels)
        else:
            terms.append(lambda labels, k=key: k in labels)

    def predicate(labels: dict) -> bool:
        return all(term(labels) for term in terms)

    predicate.hint = hint  # type: ignore[attr-defined]
    return predicate


FIELD_LABELS: dict[tuple[str, str], tuple[str, ...]] = {("", "pods"): ("spec.nodeName",)}
"""Field labels beyond metadata.name / metadata.namespace, per (group, plural), as a real apiserver supports them:
core pods select on `spec.nodeName` (a per-node agent's watch); custom resources (VMIs, claims, CUDNs) only on the
two metadata fields."""


def _parse_field_selector(text: str, extra: tuple[str, ...] = ()) -> Predicate:
    """Field selectors on metadata.name, metadata.namespace and the type's `extra` labels, over whole objects. An
    absent field compares as "" (an unscheduled pod has no spec.nodeName and matches `spec.nodeName=`)."""
    labels = ("metadata.name", "metadata.namespace", *extra)
    terms: list[Predicate] = []
    hint: tuple[tuple[str, ...], str] | None = None  # a field a match must equal (`_Kind.with_field`)
    for raw in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"([A-Za-z.]+)\s*(==|=|!=)\s*(.*)", raw)
        if m is None or m[1] not in labels:
            raise ValueError(f'field label not supported: "{raw.split("=")[0].rstrip("!")}"')
        path, op, value = tuple(m[1].split(".")), m[2], m[3]
        if op == "!=":
            terms.append(lambda o, a=path, v=value: _field(o, a) != v)
        else:
            terms.append(lambda o, a=path, v=value: _field(o, a) == v)
            hint = hint or (path, value)

    def predicate(obj: dict) -> bool:
        return all(term(obj) for term in terms)

    predicate.hint = hint  # type: ignore[attr-defined]
    return predicate


def _field(obj: object, path: tuple[str, ...]) -> str:
    for part in path:
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj if isinstance(obj, str) else ""


def _field_parser(t: ApiType) -> Callable[[str], Predicate]:
    extra = FIELD_LABELS.get((t.group, t.plural), ())
    return lambda text: _parse_field_selector(text, extra)


def _labels(obj: dict | None) -> dict:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


# -- patches -------------------------------------------------------------------------------------------------------
def merge_patch(target: object, patch: object) -> object:
    """RFC 7386 JSON merge patch; returns a new value and never mutates `target`."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(doc: dict, ops: list) -> dict:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test), by jsonpatch, applied to a copy of `doc`."""
    if not isinstance(ops, list):
        raise ValueError("a JSON patch is a list of operations")
    return jsonpatch.apply_patch(doc, ops, in_place=False)


# -- the store ------------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Change:
    """One write in the history window: `old` is the object before it (None for ADDED)."""

    rv: int
    type: ApiType
    event: str
    key: str
    obj: dict
    old: dict | None
    line: bytes | None = None  # the serialized event, built once for every watcher that needs it unchanged

    def encoded(self) -> bytes:
        if self.line is None:
            self.line = _event_line(self.event, self.obj)
        return self.line


def _event_line(event: str, obj: dict) -> bytes:
    return json.dumps({"type": event, "object": obj}, separators=(",", ":")).encode() + b"\n"


@dataclass(slots=True)
class _Failure:
    status: int
    verb: str | None
    plural: str | None
    when: Callable[[dict[str, str]], bool] | None = None


@dataclass
class _Request:
    """What a parsed URL addresses."""

    type: ApiType
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass
class _Kind:
    objects: dict[str, dict] = field(default_factory=dict)  # "ns/name" or "name" -> object
    sorted_keys: list[str] | None = None
    # key -> (the stored object, its JSON as a LIST item): stored objects are never changed in place (every write
    # stores a new dict), so the encoding stays right while that object is the one stored. A real apiserver serves
    # LISTs from its watch cache at Go speed; re-encoding every object for every LIST made this server, not the
    # client under test, most of a big LIST's time (2 s of CPU for 20k objects, measured).
    encoded: dict[str, tuple[dict, bytes]] = field(default_factory=dict)
    # label key -> value -> the keys of the objects carrying it, built when a selector names the label and dropped
    # by any write of the kind: a LIST selected by `k=v` or `k in (...)` reads the candidates, not every object (a
    # real apiserver filters its watch cache at Go speed; 100,000 label tests per LIST here took 0.6 s, measured)
    labelled: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def indexed(self, label: str, values: frozenset[str]) -> list[str]:
        """The sorted keys of the objects whose label `label` is one of `values`."""
        index = self.labelled.get(label)
        if index is None:
            index = self.labelled[label] = {}
            for key, obj in self.objects.items():
                value = _labels(obj).get(label)
                if isinstance(value, str):
                    index.setdefault(value, []).append(key)
        return sorted(key for value in values for key in index.get(value, ()))

    def with_field(self, path: tuple[str, ...], value: str) -> list[str]:
        """The sorted keys of the objects whose field `path` is `value` (an absent field is "", `_field`); indexed as
        labels are, under the field's dotted path (as a real apiserver indexes a pod's spec.nodeName)."""
        name = "field:" + ".".join(path)
        index = self.labelled.get(name)
        if index is None:
            index = self.labelled[name] = {}
            for key, obj in self.objects.items():
                index.setdefault(_field(obj, path), []).append(key)
        return sorted(index.get(value, ()))


def _store_key(t: ApiType, namespace: str | None, name: str) -> str:
    return f"{namespace or ''}/{name}" if t.namespaced else name


def _strip_volatile(obj: dict) -> dict:
    """The object without the fields every write changes, to detect no-op writes."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return {**obj, "metadata": meta}


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class FakeApiServer:
    """An in-process apiserver double: an object store with a history window, served over real HTTP."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        sock: socket.socket | None = None,
        bookmark_interval: float = 1.0,
        installed: set[str] | None = None,
        history_limit: int = 100_000,
    ) -> None:
        self.bookmark_interval = bookmark_interval
        self.history_limit = history_limit
        self.requests: Counter[tuple[str, str]] = Counter()  # (verb, plural) -> count; verbs as in audit logs
        # (verb, plural) -> bytes of response bodies sent for "list", "get" and "watch" (what clients read)
        self.sent: Counter[tuple[str, str]] = Counter()
        self._sent_lock = threading.Lock()
        self.request_log: list[tuple[str, str, int]] = []  # (method, path?query, status)
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._types: dict[tuple[str, str], ApiType] = {}  # (group, plural)
        self._by_kind: dict[tuple[str, str], ApiType] = {}  # (apiVersion, kind)
        self._kinds: dict[ApiType, _Kind] = {}
        for t in DEFAULT_TYPES:
            self.register(t)
        self._installed_only: set[str] | None = None if installed is None else set(installed)  # None: every group
        self._absent: set[str] = set()  # groups uninstalled since
        self._rv = 1
        self._compacted_rv = 1  # a watch or continue token older than this is 410 Gone
        self._history: list[_Change] = []
        self._watch_generation = 0  # bumped by drop_watches(): streams of older generations are cut
        self._stopping = False
        self._failures: list[_Failure] = []
        self._connections: set[socket.socket] = set()
        self._host, self._port, self._sock = host, port, sock
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def start(self) -> FakeApiServer:
        handler = type("Handler", (_Handler,), {"api": self})
        if self._sock is not None:
            httpd = _Server(self._sock.getsockname()[:2], handler, bind_and_activate=False)
            httpd.socket.close()
            httpd.socket = self._sock
            httpd.server_address = self._sock.getsockname()[:2]
        else:
            family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
            httpd = _Server((self._host, self._port), handler, bind_and_activate=False, family=family)
            httpd.server_bind()
            httpd.server_activate()
        self._httpd = httpd
        self._stopping = False
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fakeapi", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._httpd.shutdown()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            _shutdown(conn)
        self._httpd.server_close()
        self._httpd = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the fake apiserver is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in str(host) else f"http://{host}:{port}"

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig for this server (current context `fake`, a dummy token) and return its path."""
        path = Path(path)
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path.write_text(json.dumps(kubeconfig, indent=2) + "\n")  # JSON is YAML: the client's loader reads it
        return path

    # -- types and installation ---------------------------------------------------------------------------------
    def register(self, t: ApiType) -> ApiType:
        """Serve one more kind (custom resources not in `DEFAULT_TYPES`)."""
        with self._lock:
            self._types[(t.group, t.plural)] = t
            self._by_kind[(t.api_version, t.kind)] = t
            self._kinds.setdefault(t, _Kind())
        return t

    def set_installed(self, group: str, installed: bool) -> None:
        """Install or uninstall an API group: an uninstalled group answers 404, as a missing CRD does."""
        with self._cond:
            if installed:
                self._absent.discard(group)
                if self._installed_only is not None:
                    self._installed_only.add(group)
            else:
                self._absent.add(group)
                self._watch_generation += 1  # cut every stream; the others resume, this group's get 404
            self._cond.notify_all()

    def is_installed(self, group: str) -> bool:
        if group == "":
            return True
        return group not in self._absent and (self._installed_only is None or group in self._installed_only)

    def _type_of(self, obj: dict) -> ApiType:
        api_version, kind = obj.get("apiVersion") or "", obj.get("kind") or ""
        t = self._by_kind.get((api_version, kind))
        if t is not None:
            return t
        if not kind or not api_version:
            raise ApiError(400, "BadRequest", "Object 'Kind' or 'apiVersion' is missing")
        group, _, version = api_version.rpartition("/")
        plural = kind.lower() + ("es" if kind.lower().endswith(("s", "x", "ch", "sh")) else "s")
        namespaced = bool((obj.get("metadata") or {}).get("namespace"))
        return self.register(ApiType(group, version, kind, plural, namespaced))

    def _type_for(self, api_version: str, kind: str) -> ApiType:
        t = self._by_kind.get((api_version, kind))
        if t is None:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({api_version} {kind})")
        return t

    # -- Python-side API (tests, demo) --------------------------------------------------------------------------
    def create(self, obj: dict, *, manager: str = "fakeapi") -> dict:
        """Create an object as given (status included); 409 AlreadyExists raises ApiError."""
        with self._lock:
            t = self._type_of(obj)
            return copy.deepcopy(self._create(t, obj, namespace=None, manager=manager, keep_status=True))

    def update(self, obj: dict, *, manager: str = "fakeapi") -> dict:
        """Replace an object, status included; a stale metadata.resourceVersion raises ApiError(409)."""
        with self._lock:
            t = self._type_of(obj)
            meta = obj.get("metadata") or {}
            return copy.deepcopy(self._update(t, meta.get("namespace"), meta.get("name"), obj, "all", manager))

    def apply(self, obj: dict, *, manager: str = "fakeapi") -> dict:
        """Create the object, or replace it (status included) when it exists, whatever its resourceVersion."""
        with self._lock:
            t = self._type_of(obj)
            meta = obj.get("metadata") or {}
            current = self._get(t, meta.get("namespace"), meta.get("name") or "")
            if current is None:
                return self.create(obj, manager=manager)
            obj = {**obj, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
            return copy.deepcopy(self._update(t, meta.get("namespace"), meta.get("name"), obj, "all", manager))

    def patch(
        self, api_version: str, kind: str, name: str, namespace: str | None, merge_patch: dict, *, manager="fakeapi"
    ) -> dict:
        """Merge-patch an object (status included)."""
        with self._lock:
            t = self._type_for(api_version, kind)
            return copy.deepcopy(self._patch(t, namespace, name, merge_patch, _MERGE, "all", manager))

    def patch_status(
        self, api_version: str, kind: str, name: str, namespace: str | None, merge_patch: dict, *, manager="fakeapi"
    ) -> dict:
        """Merge-patch an object's status subresource: only `status` changes."""
        with self._lock:
            t = self._type_for(api_version, kind)
            return copy.deepcopy(self._patch(t, namespace, name, merge_patch, _MERGE, "status", manager))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict:
        """Delete an object; with finalizers it only gets a deletionTimestamp (remove them to finish)."""
        with self._lock:
            t = self._type_for(api_version, kind)
            return copy.deepcopy(self._delete(t, namespace, name))

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        with self._lock:
            obj = self._get(self._type_for(api_version, kind), namespace, name)
            return copy.deepcopy(obj) if obj is not None else None

    def list(self, api_version: str, kind: str, namespace: str | None = None, label_selector: str = "") -> list[dict]:
        with self._lock:
            t = self._type_for(api_version, kind)
            items, _, _ = self._snapshot(t, namespace, _selector(label_selector, None), None)
            return [copy.deepcopy(obj) for _, obj in items]

    def load(self, objects: Iterable[dict]) -> int:
        """Seed objects (apply each, `kind: List` expanded); returns how many were written. Their LIST encoding is
        made here, before any client lists them."""
        count = self._load(objects)
        with self._lock:
            for t, kind in self._kinds.items():
                for key, obj in kind.objects.items():
                    self._list_item(t, key, obj)
        return count

    def _load(self, objects: Iterable[dict]) -> int:
        count = 0
        for obj in objects:
            if not isinstance(obj, dict):
                continue
            if obj.get("kind", "").endswith("List") and isinstance(obj.get("items"), list):
                count += self._load(obj["items"])
                continue
            self.apply(obj)
            count += 1
        return count

    def events(self) -> list[dict]:
        """core/v1 Events that clients created, oldest first."""
        with self._lock:
            items = self._kinds[self._by_kind[("v1", "Event")]].objects.values()
            return sorted((copy.deepcopy(e) for e in items), key=lambda e: int(e["metadata"]["resourceVersion"]))

    @property
    def resource_version(self) -> int:
        """The newest resourceVersion handed out."""
        return self._rv

    def compact(self) -> None:
        """Forget the history: watches and continue tokens from older resourceVersions now get 410 Gone."""
        with self._cond:
            self._history.clear()
            self._compacted_rv = self._rv
            self._cond.notify_all()

    def drop_watches(self) -> None:
        """Cut every open watch stream mid-response, as an apiserver restart does."""
        with self._cond:
            self._watch_generation += 1
            self._cond.notify_all()

    def fail_next(
        self,
        n: int,
        status: int = 500,
        *,
        verb: str | None = None,
        plural: str | None = None,
        when: Callable[[dict[str, str]], bool] | None = None,
    ) -> None:
        """Answer the next `n` resource requests (optionally only one verb/plural, only those whose query parameters
        `when` accepts) with `status`; n=0 clears."""
        with self._lock:
            if n == 0:
                self._failures.clear()
            self._failures.extend(_Failure(status, verb, plural, when) for _ in range(n))

    # -- the write path (lock held) -----------------------------------------------------------------------------
    def _get(self, t: ApiType, namespace: str | None, name: str) -> dict | None:
        return self._kinds[t].objects.get(_store_key(t, namespace, name))

    def _managed(self, old: list | None, manager: str, operation: str, t: ApiType, sub: str | None) -> list:
        entry = {
            "manager": manager,
            "operation": operation,
            "apiVersion": t.api_version,
            "time": _now(),
            "fieldsType": "FieldsV1",
            "fieldsV1": {},
        }
        if sub:
            entry["subresource"] = sub
        kept = [
            e
            for e in old or []
            if (e.get("manager"), e.get("operation"), e.get("subresource")) != (manager, operation, sub)
        ]
        return [*kept, entry]

    def _create(self, t: ApiType, obj: dict, *, namespace: str | None, manager: str, keep_status: bool) -> dict:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if t.namespaced:
            if namespace and meta.get("namespace") and meta["namespace"] != namespace:
                raise ApiError(
                    400, "BadRequest", "the namespace of the provided object does not match the namespace sent"
                )
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, "Invalid", f"{t.kind} is invalid: metadata.name: Required value: name is required")
            meta["name"] = meta["generateName"] + "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
        key = _store_key(t, meta.get("namespace"), meta["name"])
        kind = self._kinds[t]
        if key in kind.objects:
            raise ApiError(
                409,
                "AlreadyExists",
                f'{t.resource} "{meta["name"]}" already exists',
                {"name": meta["name"], "kind": t.plural},
            )
        obj["apiVersion"], obj["kind"] = t.api_version, t.kind
        if t.status_subresource and not keep_status:
            obj.pop("status", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _now()
        meta["generation"] = 1
        for volatile in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(volatile, None)
        meta["managedFields"] = self._managed(None, manager, "Update", t, None)
        kind.sorted_keys = None
        return self._commit(t, key, "ADDED", obj, None)

    def _update(
        self, t: ApiType, namespace: str | None, name: str | None, body: dict, mode: str, manager: str, *, http=False
    ) -> dict:
        """Replace an object. mode: "main" keeps the stored status, "status" takes only status, "all" takes both."""
        if not isinstance(body, dict) or not isinstance(body.get("metadata") or {}, dict):
            raise ApiError(400, "BadRequest", "the body must be an object")
        meta_in = body.get("metadata") or {}
        name = name or meta_in.get("name") or ""
        namespace = namespace if namespace is not None else meta_in.get("namespace")
        if meta_in.get("name") and meta_in["name"] != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        old = self._get(t, namespace, name)
        if old is None:
            raise _not_found(t, name)
        rv = meta_in.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {t.resource} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                {"name": name, "kind": t.plural},
            )
        if not rv and http and t.group:
            raise ApiError(
                422,
                "Invalid",
                f'{t.kind}.{t.group} "{name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
                "must be specified for an update",
            )
        if mode == "status":
            new = copy.deepcopy(old)
            if "status" in body:
                new["status"] = copy.deepcopy(body["status"])
            else:
                new.pop("status", None)
        else:
            new = copy.deepcopy(body)
            new["apiVersion"], new["kind"] = t.api_version, t.kind
            if mode == "main" and t.status_subresource:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            meta = new.setdefault("metadata", {})
            for fixed in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "namespace"):
                if fixed in old["metadata"]:
                    meta[fixed] = old["metadata"][fixed]
                else:
                    meta.pop(fixed, None)
            meta["name"] = name
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        meta["generation"] = old["metadata"].get("generation", 1) + (_spec_part(new) != _spec_part(old))
        meta["managedFields"] = old["metadata"].get("managedFields") or []
        if _strip_volatile(new) == _strip_volatile(old):
            return old  # a no-op write: no new resourceVersion, no event
        sub = "status" if mode == "status" else None
        meta["managedFields"] = self._managed(meta["managedFields"], manager, "Update", t, sub)
        key = _store_key(t, namespace, name)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._kinds[t].sorted_keys = None
            return self._commit(t, key, "DELETED", new, old)
        return self._commit(t, key, "MODIFIED", new, old)

    def _patch(
        self,
        t: ApiType,
        namespace: str | None,
        name: str,
        patch: object,
        content_type: str,
        mode: str,
        manager: str,
    ) -> dict:
        old = self._get(t, namespace, name)
        if old is None:
            raise _not_found(t, name)
        try:
            if content_type == _JSON_PATCH:
                new = json_patch(old, patch)  # type: ignore[arg-type]
            elif content_type == _MERGE or (content_type == _STRATEGIC and not t.group):
                if not isinstance(patch, dict):
                    raise ValueError("a merge patch must be an object")
                new = merge_patch(copy.deepcopy(old), patch)
            else:
                raise ApiError(
                    415, "UnsupportedMediaType", f"the body of the request was in an unknown format - {content_type}"
                )
        except (
            jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException,
            ValueError,
            KeyError,
            IndexError,
            TypeError,
        ) as e:
            raise ApiError(422, "Invalid", f"the patch could not be applied: {e}") from None
        if not isinstance(new, dict):
            raise ApiError(422, "Invalid", "the patch must leave an object")
        new.setdefault("metadata", {})
        if not new["metadata"].get("resourceVersion"):
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._update(t, namespace, name, new, mode, manager)

    def _delete(self, t: ApiType, namespace: str | None, name: str) -> dict:
        old = self._get(t, namespace, name)
        if old is None:
            raise _not_found(t, name)
        key = _store_key(t, namespace, name)
        if old["metadata"].get("finalizers"):
            if old["metadata"].get("deletionTimestamp"):
                return old
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = _now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._commit(t, key, "MODIFIED", new, old)
        self._kinds[t].sorted_keys = None
        return self._commit(t, key, "DELETED", copy.deepcopy(old), old)

    def _commit(self, t: ApiType, key: str, event: str, new: dict, old: dict | None) -> dict:
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        objects = self._kinds[t].objects
        self._kinds[t].labelled.clear()
        if event == "DELETED":
            objects.pop(key, None)
            self._kinds[t].encoded.pop(key, None)
        else:
            objects[key] = new
        self._history.append(_Change(self._rv, t, event, key, new, old))
        if len(self._history) > self.history_limit:
            drop = len(self._history) - self.history_limit // 2
            self._compacted_rv = self._history[drop - 1].rv
            del self._history[:drop]
        self._cond.notify_all()
        return new

    # -- the read path (lock held) ------------------------------------------------------------------------------
    def _snapshot(
        self,
        t: ApiType,
        namespace: str | None,
        labels: Predicate | None,
        fields: Predicate | None,
        at: int = 0,
        after: str = "",
        limit: int = 0,
    ) -> tuple[list[tuple[str, dict]], bool, int]:
        """One kind as it was at resourceVersion `at` (0: now): up to `limit` (0: all) sorted (key, object) pairs
        whose key sorts after `after`, whether more follow, and how many keys are left after the page."""
        kind = self._kinds[t]
        objects: dict[str, dict | None] = kind.objects  # type: ignore[assignment]
        if kind.sorted_keys is None:
            kind.sorted_keys = sorted(kind.objects)
        keys = kind.sorted_keys
        if at and at < self._rv:
            start = bisect.bisect_right(self._history, at, key=lambda c: c.rv)
            overlay: dict[str, dict | None] = {}
            for change in reversed(self._history[start:]):
                if change.type is t:
                    overlay[change.key] = change.old
            if overlay:
                objects = {**kind.objects, **overlay}
                keys = sorted(k for k, v in objects.items() if v is not None)
        hint, field_hint = getattr(labels, "hint", None), getattr(fields, "hint", None)
        if field_hint is not None and objects is kind.objects:  # the candidates the selectors allow, in key order
            keys = kind.with_field(*field_hint)
        elif hint is not None and objects is kind.objects:
            keys = kind.indexed(*hint)
        prefix = f"{namespace}/" if namespace and t.namespaced else ""
        lo = bisect.bisect_right(keys, max(after, prefix)) if (after or prefix) else 0
        hi = bisect.bisect_left(keys, prefix[:-1] + "0") if prefix else len(keys)  # "0" sorts right after "/"
        out: list[tuple[str, dict]] = []
        i = lo
        for i in range(lo, hi):
            k = keys[i]
            obj = objects[k]
            if obj is None or (labels is not None and not labels(_labels(obj))) or (fields and not fields(obj)):
                continue
            if limit and len(out) == limit:
                return out, True, hi - i
            out.append((k, obj))
        return out, False, 0

    def _list(self, req: _Request, query: dict[str, str]) -> bytes:
        """A LIST response's body (JSON)."""
        labels = _selector(query.get("labelSelector", ""), None)
        fields = _selector(query.get("fieldSelector", ""), _field_parser(req.type))
        limit = int(query.get("limit") or 0)
        at, after = self._rv, ""
        if query.get("continue"):
            at, after = _decode_continue(query["continue"])
            if at < self._compacted_rv:
                raise ApiError(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.",
                )
        items, more, remaining = self._snapshot(req.type, req.namespace, labels, fields, at, after, limit)
        meta: dict[str, object] = {"resourceVersion": str(at)}
        if more:
            meta["continue"] = _encode_continue(at, items[-1][0])
            if labels is None and fields is None:
                meta["remainingItemCount"] = remaining
        head = {"kind": f"{req.type.kind}List", "apiVersion": req.type.api_version, "metadata": meta}
        out = [self._list_item(req.type, key, obj) for key, obj in items]
        return json.dumps(head, separators=(",", ":")).encode()[:-1] + b',"items":[' + b",".join(out) + b"]}"

    def _list_item(self, t: ApiType, key: str, obj: dict) -> bytes:
        """One object as LIST items carry it, encoded once per version of the object (a real apiserver serves LISTs
        from its watch cache, in Go: re-encoding every object in Python on every LIST made the lab's API, not the
        client under test, the slow part of a big LIST)."""
        encoded = self._kinds[t].encoded
        cached = encoded.get(key)
        if cached is None or cached[0] is not obj:
            item = obj
            if not t.group:  # typed lists carry no kind/apiVersion per item, as on a real apiserver
                item = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
            cached = encoded[key] = (obj, json.dumps(item, separators=(",", ":")).encode())
        return cached[1]

    def _take_failure(self, verb: str, plural: str, query: dict[str, str]) -> int | None:
        with self._lock:
            for i, f in enumerate(self._failures):
                if f.verb in (None, verb) and f.plural in (None, plural) and (f.when is None or f.when(query)):
                    del self._failures[i]
                    return f.status
        return None

    def count_sent(self, what: tuple[str, str], size: int) -> None:
        """Account `size` bytes of a response body to (verb, plural) in `sent`."""
        with self._sent_lock:
            self.sent[what] += size

    # -- watch ----------------------------------------------------------------------------------------------------
    def _require_installed(self, t: ApiType) -> None:
        if t.group and not self.is_installed(t.group):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def _open_watch(self, req: _Request, query: dict[str, str]) -> Iterator[bytes]:
        """Validate a watch request (ApiError before any header is sent) and return the lines of its stream.

        The stream ends cleanly on timeoutSeconds and raises `_Cut` when it must be cut (drop_watches, stop,
        uninstall)."""
        labels = _selector(query.get("labelSelector", ""), None)
        fields = _selector(query.get("fieldSelector", ""), _field_parser(req.type))
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        timeout = float(query.get("timeoutSeconds") or 0)
        deadline = time.monotonic() + timeout if timeout > 0 else None
        t, ns = req.type, req.namespace
        rv_param = query.get("resourceVersion", "")
        with self._lock:
            self._require_installed(t)  # uninstalled between routing and here: no stream
            generation = self._watch_generation
            if rv_param in ("", "0"):
                cursor = self._rv
                initial = [_event_line("ADDED", obj) for _, obj in self._snapshot(t, ns, labels, fields)[0]]
            else:
                try:
                    cursor = int(rv_param)
                except ValueError:
                    raise ApiError(400, "BadRequest", f"invalid resource version: {rv_param!r}") from None
                initial = []

        def stream() -> Iterator[bytes]:
            nonlocal cursor
            if initial:
                yield b"".join(initial)
            next_bookmark = time.monotonic() + self.bookmark_interval
            while True:
                with self._cond:
                    while True:
                        if self._stopping or generation != self._watch_generation:
                            raise _Cut
                        if cursor < self._compacted_rv:
                            gone = _status(410, "Expired", f"too old resource version: {cursor} ({self._compacted_rv})")
                            yield _event_line("ERROR", gone)
                            return
                        if self._rv > cursor:
                            break
                        now = time.monotonic()
                        if deadline is not None and now >= deadline:
                            return
                        if bookmarks and now >= next_bookmark:
                            break
                        wake = min(x for x in (deadline, next_bookmark if bookmarks else None, now + 1.0) if x)
                        self._cond.wait(max(0.0, wake - now))
                    start = bisect.bisect_right(self._history, cursor, key=lambda c: c.rv)
                    changes = self._history[start:]
                    cursor = self._rv
                lines = [line for c in changes if c.type is t for line in _watch_view(c, ns, labels, fields)]
                if lines:
                    yield b"".join(lines)
                if bookmarks and time.monotonic() >= next_bookmark:
                    marker = {"kind": t.kind, "apiVersion": t.api_version, "metadata": {"resourceVersion": str(cursor)}}
                    yield _event_line("BOOKMARK", marker)
                    next_bookmark = time.monotonic() + self.bookmark_interval
                if deadline is not None and time.monotonic() >= deadline:
                    return

        return stream()


class _Cut(Exception):
    """The watch stream must be cut without a clean end (drop_watches, stop, uninstall)."""


def _watch_view(c: _Change, ns: str | None, labels: Predicate | None, fields: Predicate | None) -> list[bytes]:
    """What one watcher sees of a change: label/field selector transitions become ADDED/DELETED."""
    if ns and c.type.namespaced and c.obj["metadata"].get("namespace") != ns:
        return []
    if labels is None and fields is None:
        return [c.encoded()]

    def match(o: dict | None) -> bool:
        return o is not None and (labels is None or labels(_labels(o))) and (fields is None or fields(o))

    now, before = match(c.obj), match(c.old)
    if c.event == "DELETED":
        return [c.encoded()] if before else []
    if c.event == "ADDED":
        return [c.encoded()] if now else []
    if now and before:
        return [c.encoded()]
    if now:
        return [_event_line("ADDED", c.obj)]
    if before:  # as the watch cache sends it: the object as it last matched, at the version of the change
        assert c.old is not None
        version = c.obj["metadata"].get("resourceVersion")
        return [_event_line("DELETED", {**c.old, "metadata": {**c.old["metadata"], "resourceVersion": version}})]
    return []


def _selector(text: str, parse: Callable[[str], Predicate] | None) -> Predicate | None:
    if not text.strip():
        return None
    try:
        return (parse or parse_label_selector)(text)
    except ValueError as e:
        raise ApiError(400, "BadRequest", str(e)) from None


def _encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise ApiError(400, "BadRequest", "continue key is not valid") from None


def _shutdown(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


# -- HTTP ---------------------------------------------------------------------------------------------------------
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, handler, bind_and_activate: bool = True, family: int = socket.AF_INET) -> None:
        self.address_family = family
        super().__init__(address, handler, bind_and_activate)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # no getfqdn(): no DNS lookup inside a lab namespace
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "bgpadv-fakeapi"
    api: FakeApiServer  # set on the subclass made by FakeApiServer.start()

    def setup(self) -> None:
        super().setup()
        with self.api._lock:
            self.api._connections.add(self.connection)

    def finish(self) -> None:
        with self.api._lock:
            self.api._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing -------------------------------------------------------------------------------------------------
    def _send(
        self, code: int, body: dict | bytes, headers: dict[str, str] | None = None, sent: tuple[str, str] | None = None
    ) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        if sent is not None:
            self.api.count_sent(sent, len(data))
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.api.request_log.append((self.command, self.path, code))

    @staticmethod
    def _parse(raw: bytes) -> object:
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise ApiError(400, "BadRequest", "the request body is not valid JSON") from None

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [unquote(p) for p in url.path.split("/") if p]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""  # always read, so an error keeps the connection usable
        try:
            discovery = self._discovery(parts) if method == "GET" else None
            if discovery is not None:
                self._send(200, discovery)
                return
            req = self._route(parts)
            self._resource(method, req, query, raw)
        except ApiError as e:
            self._send(e.code, e.status(), {"Retry-After": "1"} if e.code == 429 else None)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, parts: list[str]) -> _Request:
        api = self.api
        if len(parts) >= 2 and parts[0] == "api" and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3 or not api.is_installed(group):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        t = api._types.get((group, rest[0]))
        if t is None or t.version != version or (namespace is not None and not t.namespaced):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub is not None and (sub != "status" or not t.status_subresource):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return _Request(t, namespace, name, sub)

    def _resource(self, method: str, req: _Request, query: dict[str, str], raw: bytes) -> None:
        api = self.api
        watching = query.get("watch", "").lower() in ("true", "1")
        verb = {
            "GET": ("watch" if watching else "get" if req.name else "list"),
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete",
        }[method]
        with api._lock:
            api.requests[(verb, req.type.plural)] += 1
        body = self._parse(raw) if method in ("POST", "PUT", "PATCH") else None
        failure = api._take_failure(verb, req.type.plural, query)
        if failure is not None:
            reason = {400: "BadRequest", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}.get(
                failure, "Failure"
            )
            raise ApiError(failure, reason, f"injected failure ({failure})")
        manager = query.get("fieldManager") or (self.headers.get("User-Agent") or "unknown").split("/")[0]
        if verb == "watch":
            self._watch(req, query)
            return
        with api._lock:
            if verb == "list":
                self._send(200, api._list(req, query), sent=("list", req.type.plural))
            elif verb == "get":
                obj = api._get(req.type, req.namespace, req.name or "")
                if obj is None:
                    raise _not_found(req.type, req.name or "")
                self._send(200, obj, sent=("get", req.type.plural))
            elif verb == "create":
                if req.name or not isinstance(body, dict):
                    raise ApiError(
                        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                    )
                self._send(
                    201, api._create(req.type, body, namespace=req.namespace, manager=manager, keep_status=False)
                )
            elif verb == "update":
                mode = "status" if req.subresource else "main"
                if not isinstance(body, dict):
                    raise ApiError(400, "BadRequest", "the body must be an object")
                self._send(200, api._update(req.type, req.namespace, req.name, body, mode, manager, http=True))
            elif verb == "patch":
                content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                mode = "status" if req.subresource else "main"
                self._send(200, api._patch(req.type, req.namespace, req.name or "", body, content_type, mode, manager))
            elif verb == "delete":
                self._send(200, api._delete(req.type, req.namespace, req.name or ""))

    def _watch(self, req: _Request, query: dict[str, str]) -> None:
        api = self.api
        lines = api._open_watch(req, query)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        api.request_log.append((self.command, self.path, 200))
        try:
            for data in lines:
                self._chunk(data)
                api.count_sent(("watch", req.type.plural), len(data))
            self.wfile.write(b"0\r\n\r\n")
        except _Cut:
            self.close_connection = True
            _shutdown(self.connection)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    # -- discovery ------------------------------------------------------------------------------------------------
    def _discovery(self, parts: list[str]) -> dict | None:
        api = self.api
        if parts == ["version"]:
            return {
                "major": "1",
                "minor": "33",
                "gitVersion": "v1.33.0-bgpadv-fakeapi",
                "platform": "linux/amd64",
                "goVersion": "go1.24",
                "compiler": "gc",
                "buildDate": "2026-01-01T00:00:00Z",
                "gitCommit": "0" * 40,
                "gitTreeState": "clean",
            }
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        groups: dict[str, set[str]] = {}
        for t in api._types.values():
            if t.group and api.is_installed(t.group):
                groups.setdefault(t.group, set()).add(t.version)
        if parts == ["apis"]:
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [_group_doc(g, sorted(vs)) for g, vs in sorted(groups.items())],
            }
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
            return {**_group_doc(parts[1], sorted(groups[parts[1]])), "kind": "APIGroup", "apiVersion": "v1"}
        if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis" and parts[2] in groups.get(parts[1], ())):
            group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
            types = [t for t in api._types.values() if t.group == group and t.version == version]
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": [r for t in sorted(types, key=lambda t: t.plural) for r in _resource_docs(t)],
            }
        return None


def _group_doc(group: str, versions: list[str]) -> dict:
    docs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": docs, "preferredVersion": docs[-1]}


def _resource_docs(t: ApiType) -> list[dict]:
    verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
    docs = [
        {"name": t.plural, "singularName": t.kind.lower(), "namespaced": t.namespaced, "kind": t.kind, "verbs": verbs}
    ]
    if t.status_subresource:
        docs.append(
            {
                "name": f"{t.plural}/status",
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    return docs


# -- standalone ---------------------------------------------------------------------------------------------------
def read_seed(directory: str | Path) -> list[dict]:
    """Every object in the *.yaml, *.yml and *.json files under `directory` (multi-document files included)."""
    import yaml

    objects: list[dict] = []
    for path in sorted(Path(directory).rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        with path.open() as f:
            objects.extend(doc for doc in yaml.safe_load_all(f) if isinstance(doc, dict))
    return objects


def main(argv: list[str] | None = None) -> int:
    """`python -m bgpadv_lab.fakeapi --port N --seed DIR [--kubeconfig PATH]`: serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m bgpadv_lab.fakeapi", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--seed", action="append", default=[], help="a directory of manifests to load (repeatable)")
    parser.add_argument("--kubeconfig", help="write a kubeconfig for this server to this path")
    parser.add_argument("--bookmark-interval", type=float, default=1.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = FakeApiServer(args.host, args.port, bookmark_interval=args.bookmark_interval)
    for directory in args.seed:
        log.info("loaded %d objects from %s", server.load(read_seed(directory)), directory)
    server.start()
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    print(f"fake apiserver listening on {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
