"""One Node by name, read once when the controller starts: its labels select the peers the instance serves and its
InternalIPs back `next-hop self` (`bgpadv.runtime.peering`). The reflector's watch keeps it current afterwards.

A LIST by `metadata.name` (the ClusterRole grants list and watch on Nodes, not get). Decoded as the store decodes
it (`bgpadv.sources.decode`), so the controller compares like with like.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from bgpadv.core import resources
from bgpadv.core.views import Node
from bgpadv.sources.decode.dispatch import decode
from bgpadv.sources.rest import list_call

log = logging.getLogger(__name__)


def read_node(api_client: ApiClient, name: str, timeout: float = 10.0) -> Node | None:
    """The Node `name`, or None when it does not exist or the API cannot be read (logged)."""
    try:
        response: Any = list_call(api_client, resources.NODE)(
            field_selector=f"metadata.name={name}", _request_timeout=(timeout, timeout)
        )
        try:
            data = response.data  # raw bytes: decoded as the reflector decodes its pages
        finally:
            response.release_conn()
        items = json.loads(data).get("items") or []
    except (ApiException, HTTPError, OSError, ValueError) as e:
        log.warning("cannot read this instance's Node at start: %s", e, extra={"node": name})
        return None
    for obj in items:
        if isinstance(obj, dict) and (obj.get("metadata") or {}).get("name") == name:
            view = decode(resources.NODE, obj, name)
            return view if isinstance(view, Node) else None
    log.warning("this instance's Node does not exist", extra={"node": name})
    return None
