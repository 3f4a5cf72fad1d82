"""The writer (and reader) of `BGPSessionState` objects: session status in the Kubernetes API.

`SessionStateWriter` keeps one object per peer this instance serves (`bgpadv.observe.sessionstate` builds it from
the `/status` document, so the object and `bgpadv status` say the same), in its own thread:

- fed from the status the instance already keeps (`snapshot`: `MetricsObserver.status`), read once per pass; a pass
  runs every `poll` seconds and at once when a session changes state, gets an error or a NOTIFICATION (the writer
  is an observer of those, `Fanout` hands them to it after the status model has them);
- rate-limited: a change of state, establishment time, error, NOTIFICATION or BFD state is written at once; route
  counters at most every `interval` seconds per object (never on every route), and an unchanged object is
  refreshed (`status.updateTime`) every `refresh` seconds; a token bucket bounds the calls of a flapping fabric;
- least privilege: it lists only its own objects (label `bgpadv.io/instance`) in its namespace, creates, patches
  (merge patch) and deletes them, and writes `status` through the status subresource;
- owned by the pod when the pod's name and UID are known (`BGPADV_POD_NAME`, `BGPADV_POD_UID` from the downward
  API): the garbage collector deletes the objects with the pod. A peer that stops being served (configuration,
  node labels) has its object deleted by the writer; objects of this instance left by a previous controller for
  peers no longer served are deleted on the first pass;
- never raising into the service: a missing CRD (404) or a refused verb (403) is logged once and retried every
  `retry` seconds; other failures are logged and retried on the next pass. `bgpadv_session_state_writes_total{result}`
  counts created, updated, deleted, failed.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from bgpadv.observe.events import TokenBucket
from bgpadv.observe.observers import NullObserver
from bgpadv.observe.sessionstate import (
    GROUP,
    LABEL_INSTANCE,
    PLURAL,
    VERSION,
    label_value,
    session_object,
    significant,
)
from bgpadv.sources import rest

log = logging.getLogger(__name__)

POD_NAME_ENV = "BGPADV_POD_NAME"
POD_NAMESPACE_ENV = "BGPADV_POD_NAMESPACE"
POD_UID_ENV = "BGPADV_POD_UID"
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "bgpadv"


@dataclass(frozen=True, slots=True)
class Identity:
    """Who writes: the instance (the pod's name), the namespace of its objects, the pod's UID (for ownerReferences;
    None outside a pod)."""

    instance: str
    namespace: str
    pod_uid: str | None = None

    @property
    def owner(self) -> dict[str, str] | None:
        return {"name": self.instance, "uid": self.pod_uid} if self.pod_uid else None

    @classmethod
    def from_environment(cls, namespace: str | None = None, environ: Mapping[str, str] | None = None) -> Identity:
        """The pod's identity from the downward API (deploy/ sets BGPADV_POD_NAME, _NAMESPACE, _UID); outside a pod
        the host name, the service account's namespace, else `bgpadv`."""
        env = os.environ if environ is None else environ
        if not namespace:
            namespace = env.get(POD_NAMESPACE_ENV) or None
        if not namespace:
            try:
                namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or None
            except OSError:
                namespace = None
        return cls(
            instance=env.get(POD_NAME_ENV) or socket.gethostname(),
            namespace=namespace or DEFAULT_NAMESPACE,
            pod_uid=env.get(POD_UID_ENV) or None,
        )


@dataclass(slots=True)
class _Written:
    spec: dict[str, Any]
    metadata: tuple[object, ...]  # labels and ownerReferences as written
    significant: tuple[object, ...]
    counters: dict[str, Any]
    at: float  # monotonic time of the last status write


def _meta_key(meta: Mapping[str, Any]) -> tuple[object, ...]:
    return (repr(sorted((meta.get("labels") or {}).items())), repr(meta.get("ownerReferences")))


class SessionStateWriter(NullObserver):
    """Writes this instance's `BGPSessionState` objects (see the module docstring). `snapshot`: the `/status`
    document with its peers completed (`MetricsObserver.status`)."""

    def __init__(
        self,
        api_client: Any,
        identity: Identity,
        snapshot: Callable[[], dict[str, Any]],
        *,
        interval: float = 30.0,
        refresh: float = 300.0,
        poll: float = 1.0,
        retry: float = 60.0,
        rate: float = 5.0,
        burst: int = 20,
        metrics: Any = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._api = rest.CustomObjects(api_client)
        self.identity = identity
        self._snapshot = snapshot
        self.interval = interval
        self.refresh = max(refresh, interval)
        self.poll = poll
        self.retry = retry
        self._metrics = metrics
        self._clock = clock
        self._wall = wall_clock
        self._bucket = TokenBucket(rate, burst)  # real time: it paces real API calls
        self._known: set[str] | None = None  # names of this instance's objects in the API (None: not listed yet)
        self._written: dict[str, _Written] = {}
        self._blocked_until = 0.0  # after a 404/403 on the resource itself
        self._blocked_status: int | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.counts = {"created": 0, "updated": 0, "deleted": 0, "failed": 0}

    # --- observer: a session changed, write soon -------------------------------------------------------------------

    def peer_state(self, peer: str, state: str, at: float) -> None:
        self._wake.set()

    def notification(self, peer: str, direction: str, code: int, subcode: int, message: str, at: float) -> None:
        self._wake.set()

    def peer_error(self, peer: str, message: str, at: float) -> None:
        self._wake.set()

    def bfd_changed(self, peer: str, state: str, failed: bool, diagnostic: int, at: float) -> None:
        self._wake.set()

    # --- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> SessionStateWriter:
        self._thread = threading.Thread(target=self._run, name="bgpadv-session-state", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except Exception:
                log.exception("session state: a pass failed")
            self._wake.wait(self.poll)
            self._wake.clear()

    # --- one pass ---------------------------------------------------------------------------------------------------

    def sync(self) -> None:
        """Bring this instance's objects in line with the status now (creates, patches, deletes as needed)."""
        now = self._clock()
        if now < self._blocked_until:
            return
        if self._known is None:
            names = self._list_mine()
            if names is None:
                return
            self._known = names
        status = self._snapshot()
        wall = self._wall()
        ident = self.identity
        desired = {}
        for peer, entry in (status.get("peers") or {}).items():
            obj = session_object(ident.instance, ident.namespace, peer, entry, wall, ident.owner)
            desired[obj["metadata"]["name"]] = obj
        for name, obj in desired.items():
            if not self._write(name, obj, now):
                return  # out of tokens or failing: the next pass starts over from the status then
        for name in sorted(self._known - set(desired)):
            if not self._delete(name):
                return

    def _list_mine(self) -> set[str] | None:
        if not self._take():
            return None
        selector = f"{LABEL_INSTANCE}={label_value(self.identity.instance)}"
        listed: Any
        try:
            listed = self._api.list_namespaced_custom_object(
                GROUP, VERSION, self.identity.namespace, PLURAL, label_selector=selector
            )
        except ApiException as e:
            self._failed("list", "", e)
            return None
        except Exception as e:  # connection errors and the like
            self._failed("list", "", e)
            return None
        self._unblock()
        items: list[dict[str, Any]] = listed.get("items") or []
        return {str(item["metadata"]["name"]) for item in items if item.get("metadata")}

    def _write(self, name: str, obj: dict[str, Any], now: float) -> bool:
        assert self._known is not None
        status = obj["status"]
        counters = {k: v for k, v in status.items() if k != "updateTime"}
        sig = significant(status)
        meta = _meta_key(obj["metadata"])
        last = self._written.get(name)
        ns = self.identity.namespace
        try:
            if name not in self._known:
                if not self._take():
                    return False
                body = {k: v for k, v in obj.items() if k != "status"}
                try:
                    self._api.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body)
                    self._count("created")
                except ApiException as e:
                    if e.status != 409:
                        raise
                self._known.add(name)
                last = None
            elif last is None or last.spec != obj["spec"] or last.metadata != meta:
                if not self._take():
                    return False
                self._api.patch_namespaced_custom_object(
                    GROUP, VERSION, ns, PLURAL, name, {"metadata": _patchable(obj["metadata"]), "spec": obj["spec"]}
                )
                self._count("updated")
            due = (
                last is None
                or last.significant != sig
                or (last.counters != counters and now - last.at >= self.interval)
                or now - last.at >= self.refresh
            )
            at = now if due or last is None else last.at
            if due:
                if not self._take():
                    return False
                self._api.patch_namespaced_custom_object_status(GROUP, VERSION, ns, PLURAL, name, {"status": status})
                self._count("updated")
            else:
                assert last is not None
                sig, counters = last.significant, last.counters
            self._written[name] = _Written(obj["spec"], meta, sig, counters, at)
            self._unblock()
            return True
        except ApiException as e:
            if e.status == 404 and name in self._known:
                # deleted behind our back: made again on the next pass (a missing CRD answers the create 404 too)
                self._known.discard(name)
                self._written.pop(name, None)
                log.info("session state: object gone, making it again", extra={"object": name})
                self._wake.set()
                return False
            self._failed("write", name, e)
            return False
        except Exception as e:
            self._failed("write", name, e)
            return False

    def _delete(self, name: str) -> bool:
        assert self._known is not None
        if not self._take():
            return False
        try:
            self._api.delete_namespaced_custom_object(GROUP, VERSION, self.identity.namespace, PLURAL, name)
            self._count("deleted")
        except ApiException as e:
            if e.status != 404:
                self._failed("delete", name, e)
                return False
        except Exception as e:
            self._failed("delete", name, e)
            return False
        self._known.discard(name)
        self._written.pop(name, None)
        log.info("session state of a peer no longer served deleted", extra={"object": name})
        return True

    # --- helpers ----------------------------------------------------------------------------------------------------

    def _take(self) -> bool:
        if self._bucket.take() == 0.0:
            return True
        self._wake.set()  # come back soon: the bucket refills
        return False

    def _unblock(self) -> None:
        if self._blocked_status is not None:
            log.info(
                "session state: the API accepts bgpsessionstates again", extra={"namespace": self.identity.namespace}
            )
        self._blocked_status = None
        self._blocked_until = 0.0

    def _failed(self, verb: str, name: str, e: Exception) -> None:
        self._count("failed")
        status = getattr(e, "status", None)
        if status == 404 or (verb == "list" and status == 403):
            # no CRD, or no verb for it: said once, then retried quietly
            if self._blocked_status != status:
                log.warning(
                    "session state: cannot %s bgpsessionstates.%s in %s (HTTP %s): %s; retrying every %.0f s",
                    verb,
                    GROUP,
                    self.identity.namespace,
                    status,
                    "is the CRD installed (deploy/)?" if status == 404 else "the Role does not allow it",
                    self.retry,
                )
            self._blocked_status = status
            self._blocked_until = self._clock() + self.retry
            return
        if status == 403 and self._blocked_status != 403:
            log.warning("session state: %s of %s refused (HTTP 403): check the Role (deploy/)", verb, name)
            self._blocked_status = 403
            self._blocked_until = self._clock() + self.retry
            return
        log.warning(
            "session state: %s failed",
            verb,
            extra={"object": name, "status": status, "error": getattr(e, "reason", None) or str(e)},
        )

    def _count(self, result: str) -> None:
        self.counts[result] += 1
        if self._metrics is not None:
            try:
                self._metrics.session_state_writes.labels(result=result).inc()
            except Exception:
                log.debug("session state: metric update failed", exc_info=True)


def _patchable(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata a merge patch carries: labels and ownerReferences (never name or namespace)."""
    out: dict[str, Any] = {"labels": dict(meta.get("labels") or {})}
    out["ownerReferences"] = meta.get("ownerReferences")  # None removes them (no pod known any more)
    return out


def list_session_states(api_client: Any, namespace: str | None = None) -> list[dict[str, Any]]:
    """Every `BGPSessionState` in `namespace` (None: all namespaces), read once (`bgpadv status --all`: needs only
    `list` on bgpsessionstates.bgpadv.io). Raises `kubernetes.client.ApiException` on a refusal."""
    api = rest.CustomObjects(api_client)
    listed: Any
    if namespace:
        listed = api.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    else:
        listed = api.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    found: list[Any] = listed.get("items") or []
    items: list[dict[str, Any]] = [i for i in found if isinstance(i, dict)]
    return sorted(items, key=lambda i: ((i.get("metadata") or {}).get("namespace", ""), i["metadata"].get("name", "")))
