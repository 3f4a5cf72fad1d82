"""Session status as Kubernetes objects: one namespaced `BGPSessionState` (bgpadv.io/v1alpha1) per instance and peer.

The fields are the ones `/status` serves per peer (and `bgpadv status` prints), so the two never disagree: this
module completes `/status`'s peers with what the configuration says of each session (`session_fields`), turns one
peer's entry into the object (`session_object`: `spec` = who the session is between, `status` = how it is), and an
object back into the entry `bgpadv status --all` prints (`peer_entry`). It holds no client: the writer is
`bgpadv.sources.sessionstate` (only the sources and the Event writer import the Kubernetes client).

The object (the CRD is `deploy/base/crd-bgpsessionstates.yaml`, the chart's copy `deploy/helm/bgpadv/crds/`):

```yaml
apiVersion: bgpadv.io/v1alpha1
kind: BGPSessionState
metadata:
  name: bgpadv-7d9f-x2k4p.10.0.0.1        # <instance>.<peer>: the instance is the pod's name (BGPADV_POD_NAME)
  namespace: bgpadv                        # the pod's namespace (BGPADV_POD_NAMESPACE)
  labels: {bgpadv.io/instance: bgpadv-7d9f-x2k4p, bgpadv.io/peer: 10.0.0.1, bgpadv.io/node: worker-1}
  ownerReferences: [{apiVersion: v1, kind: Pod, name: bgpadv-7d9f-x2k4p, uid: ...}]   # gone with the pod
spec: {instance: bgpadv-7d9f-x2k4p, node: worker-1, peer: 10.0.0.1, peerAddress: 10.0.0.1, peerASN: 64512,
       localASN: 64513}
status:
  state: up                                 # up | down | connected | idle (configured, never reported)
  lastTransitionTime: "2026-12-02T05:01:10Z"
  establishedTime: "2026-12-02T05:01:10Z"   # absent while not established: `kubectl get` shows the uptime
  routes: {sent: 3, received: 0, refused: 0}   # received/refused only with importRoutes (ExaBGP parses nothing else)
  bfd: disabled
  lastError: {time: ..., message: "session down: ..."}
  lastNotification: {time: ..., direction: receive, code: 6, subcode: 2, message: ...}
  updateTime: "2026-12-02T05:03:10Z"        # when this status was written
```
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

GROUP = "bgpadv.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "BGPSessionState"
PLURAL = "bgpsessionstates"

LABEL_INSTANCE = "bgpadv.io/instance"
LABEL_PEER = "bgpadv.io/peer"
LABEL_NODE = "bgpadv.io/node"
BFD_DISABLED = "disabled"

_NOT_NAME = re.compile(r"[^a-z0-9.-]+")
_NOT_LABEL = re.compile(r"[^A-Za-z0-9._-]+")


def rfc3339(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def wall_of(stamp: object) -> float | None:
    """An RFC 3339 time as epoch seconds (None if it is none)."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _slug(text: str, limit: int) -> str:
    """`text` as lowercase DNS-subdomain characters; a short hash of the original is appended when anything had to
    change, so two peers never share a name ("fd00::1" and "fd00--1")."""
    slug = _NOT_NAME.sub("-", text.lower()).strip("-.") or "x"
    if slug == text and len(slug) <= limit:
        return slug
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{slug[: limit - 9].rstrip('-.')}-{digest}"


def object_name(instance: str, peer: str) -> str:
    """`<instance>.<peer>`, a valid object name (DNS subdomain, at most 253 characters) whatever both are."""
    return f"{_slug(instance, 180)}.{_slug(peer, 72)}"


def label_value(text: str) -> str:
    """`text` as a label value (at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric)."""
    value = _NOT_LABEL.sub("-", text).strip("-._")
    if value == text and len(value) <= 63:
        return value
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{value[:54].strip('-._')}-{digest}".lstrip("-")


def bfd_states(bfd: object) -> dict[str, str]:
    """Per peer its BFD session state from `/status`'s `bfd` section (peer → `BfdState.as_json()`: a dict with a
    `state`, or a plain string)."""
    out: dict[str, str] = {}
    for peer, st in (bfd if isinstance(bfd, dict) else {}).items():
        value = st.get("state") if isinstance(st, dict) else st
        if value is not None:
            out[str(peer)] = str(value)
    return out


def session_fields(
    status: dict[str, Any],
    info: Mapping[str, Mapping[str, Any]],
    bfd: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Complete `status["peers"]` (a `/status` document) in place with each session's identity and route counts.

    `info`: per peer name, what the configuration says: `asn`, `address`, `localASN`, `node`. `bfd`: per peer the
    BFD session state, when BFD runs (absent: "disabled"). Received and refused routes come from the egress import's
    snapshot (`status["import"]`): the routes learned from the peer, and how many of them the import guard refused
    for at least one network; without importRoutes ExaBGP parses no received UPDATE and both are None (unknown).
    """
    imported = status.get("import")
    learned = (imported or {}).get("learned") or {}
    refused: dict[str, set[str]] = {}
    for net in ((imported or {}).get("networks") or {}).values():
        for r in net.get("refusals") or ():
            if isinstance(r, dict) and r.get("peer") is not None:
                refused.setdefault(str(r["peer"]), set()).add(str(r.get("prefix")))
    for name, peer in (status.get("peers") or {}).items():
        about = info.get(name) or {}
        peer["asn"] = about.get("asn")
        peer["address"] = about.get("address", name)
        if about.get("interface") is not None:  # an unnumbered session: the address is the ToR's link-local there
            peer["interface"] = about["interface"]
            peer["extended_next_hop"] = about.get("extendedNextHop")  # None: not negotiated yet
        peer["local_asn"] = about.get("localASN")
        peer["node"] = about.get("node")
        peer["routes_received"] = len(learned.get(name) or {}) if imported is not None else None
        peer["routes_refused"] = len(refused.get(name, ())) if imported is not None else None
        peer["bfd"] = (bfd or {}).get(name) or about.get("bfd") or BFD_DISABLED
    return status


def _stamp(note: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A last error / last notification with its wall time as RFC 3339."""
    if not note:
        return None
    out = {k: v for k, v in note.items() if k != "time" and v is not None}
    if isinstance(note.get("time"), int | float):
        out["time"] = rfc3339(float(note["time"]))
    return out


def session_spec(instance: str, peer_name: str, peer: Mapping[str, Any]) -> dict[str, Any]:
    """Who the session is between (changes only with the configuration or the node)."""
    spec: dict[str, Any] = {"instance": instance, "peer": peer_name, "peerAddress": str(peer.get("address") or "")}
    for key, field in (("asn", "peerASN"), ("local_asn", "localASN"), ("node", "node"), ("interface", "interface")):
        if peer.get(key) is not None:
            spec[field] = peer[key]
    return spec


def session_status(peer: Mapping[str, Any], now: float) -> dict[str, Any]:
    """How the session is, from one `/status` peer entry (completed by `session_fields`)."""
    routes = {"sent": peer.get("routes_sent"), "received": peer.get("routes_received")}
    routes["refused"] = peer.get("routes_refused")
    status: dict[str, Any] = {
        "state": str(peer.get("state") or "unknown"),
        "routes": {k: int(v) for k, v in routes.items() if v is not None},
        "bfd": str(peer.get("bfd") or BFD_DISABLED),
        "updateTime": rfc3339(now),
    }
    if isinstance(peer.get("since"), int | float):
        status["lastTransitionTime"] = rfc3339(float(peer["since"]))
    if isinstance(peer.get("uptime_seconds"), int | float):
        status["establishedTime"] = rfc3339(now - float(peer["uptime_seconds"]))
    for key, field in (("last_error", "lastError"), ("last_notification", "lastNotification")):
        note = _stamp(peer.get(key))
        if note:
            status[field] = note
    return status


def session_object(
    instance: str,
    namespace: str,
    peer_name: str,
    peer: Mapping[str, Any],
    now: float,
    owner: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The whole `BGPSessionState` of `instance`'s session with `peer_name`. `owner`: the pod's `name` and `uid`,
    for an ownerReference (the object then goes away with the pod)."""
    labels = {LABEL_INSTANCE: label_value(instance), LABEL_PEER: label_value(peer_name)}
    if peer.get("node"):
        labels[LABEL_NODE] = label_value(str(peer["node"]))
    metadata: dict[str, Any] = {"name": object_name(instance, peer_name), "namespace": namespace, "labels": labels}
    if owner and owner.get("name") and owner.get("uid"):
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner["name"], "uid": owner["uid"], "blockOwnerDeletion": False}
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": session_spec(instance, peer_name, peer),
        "status": session_status(peer, now),
    }


def significant(status: Mapping[str, Any]) -> tuple[object, ...]:
    """What of a status is written at once when it changes (the counters and `updateTime` wait for the interval)."""
    return (
        status.get("state"),
        status.get("establishedTime"),
        status.get("lastTransitionTime"),
        status.get("bfd"),
        repr(status.get("lastError")),
        repr(status.get("lastNotification")),
    )


def peer_entry(obj: Mapping[str, Any], now: float) -> dict[str, Any]:
    """A `BGPSessionState` read back as the `/status` peer entry `bgpadv status` prints (plus `instance` and
    `updated`, when its status was written); the uptime is counted to `now` from the establishment time."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    routes = status.get("routes") or {}
    updated = wall_of(status.get("updateTime"))
    established = wall_of(status.get("establishedTime"))

    def note(value: object) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        return {**value, "time": wall_of(value.get("time"))}

    return {
        "instance": spec.get("instance") or (obj.get("metadata") or {}).get("name"),
        "peer": spec.get("peer"),
        "address": spec.get("peerAddress"),
        **({"interface": spec["interface"]} if spec.get("interface") else {}),
        "asn": spec.get("peerASN"),
        "local_asn": spec.get("localASN"),
        "node": spec.get("node"),
        "state": status.get("state", "unknown"),
        "since": wall_of(status.get("lastTransitionTime")),
        "uptime_seconds": max(0.0, now - established) if established is not None else None,
        "routes_sent": routes.get("sent"),
        "routes_received": routes.get("received"),
        "routes_refused": routes.get("refused"),
        "bfd": status.get("bfd", BFD_DISABLED),
        "last_error": note(status.get("lastError")),
        "last_notification": note(status.get("lastNotification")),
        "updated": updated,
    }
