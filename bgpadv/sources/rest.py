"""Requests through the official client's `ApiClient`, without its generated API classes: the LIST and WATCH of
every watched resource (`list_call`) and the custom-object calls of the session-state writer (`CustomObjects`).

Every request bgpadv's sources make asks for raw bytes (`_preload_content=False`) and decodes the JSON itself (the
reflector its pages and watch lines, `CustomObjects` its replies), so the client's generated models are never used.
Importing `CoreV1Api` costs about 1.5 s of CPU at start (its module imports some sixty pydantic models and wraps a
thousand methods), more than half of what the controller spent before its first request; `CustomObjectsApi` a little
less. The calls here build the same requests those classes build (method, path, the query parameters' wire names,
`Accept: application/json`, the `BearerToken` auth setting, which refreshes an in-cluster token) through
`ApiClient.param_serialize` and `ApiClient.call_api`, and return the same raw urllib3 response; a non-2xx status raises
the same `ApiException` subclass (`ApiException.from_response`), so callers see no difference. The TLS, proxy, retry and
token handling stay the client's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from bgpadv.core.resources import Resource

# the client's keyword arguments (as `CoreV1Api.list_node` and `CustomObjectsApi.list_cluster_custom_object` name
# them) → the query parameters of the API
QUERY_NAMES = {
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "_continue": "continue",
    "field_selector": "fieldSelector",
    "label_selector": "labelSelector",
    "limit": "limit",
    "resource_version": "resourceVersion",
    "resource_version_match": "resourceVersionMatch",
    "timeout_seconds": "timeoutSeconds",
    "watch": "watch",
}

# the core resources the sources list, by plural: their cluster-wide path
CORE_PATHS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "namespaces": "/api/v1/namespaces",
}


def request(
    api_client: ApiClient,
    method: str,
    path: str,
    *,
    path_params: dict[str, str] | None = None,
    query: Sequence[tuple[str, Any]] = (),
    body: Any = None,
    content_type: str | None = None,
    timeout: Any = None,
) -> Any:
    """One request; the raw urllib3 response (not read: stream it or read `.data`, then `release_conn()`).

    `path` may hold `{name}` placeholders filled (URL-quoted) from `path_params`. Raises `ApiException` on a
    non-2xx status, as the client's API classes do."""
    headers: dict[str, Any] = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    method, url, headers, body, post = api_client.param_serialize(
        method,
        path,
        path_params=path_params,
        query_params=list(query),
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(method, url, headers, body, post, _request_timeout=timeout)
    if not 200 <= response.status <= 299:
        response.read()
        raise ApiException.from_response(http_resp=response, body=None, data=None)
    return response.response


def resource_path(resource: Resource) -> str:
    """The cluster-wide collection path of `resource` (every namespace)."""
    if resource.group:
        return f"/apis/{resource.group}/{resource.version}/{resource.plural}"
    try:
        return CORE_PATHS[resource.plural]
    except KeyError:
        raise ValueError(f"no list function for core resource {resource.plural!r}") from None


def list_call(api_client: ApiClient, resource: Resource) -> Callable[..., Any]:
    """A LIST/WATCH of `resource` taking the client's keyword arguments (`limit`, `_continue`, `watch`,
    `resource_version`, `label_selector`, ..., `_request_timeout`) and returning the raw response.

    `_preload_content` is accepted for the client's signature and must be False: the response is never decoded
    into models. An unknown argument is a TypeError, as it is for the client."""
    path = resource_path(resource)

    def call(*, _preload_content: bool = False, _request_timeout: Any = None, **params: Any) -> Any:
        if _preload_content:
            raise ValueError("bgpadv's raw calls return the response undecoded: _preload_content must be False")
        unknown = sorted(set(params) - set(QUERY_NAMES))
        if unknown:
            raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}")
        query = [(QUERY_NAMES[k], v) for k, v in params.items() if v is not None]
        return request(api_client, "GET", path, query=query, timeout=_request_timeout)

    return call


_COLLECTION = "/apis/{group}/{version}/namespaces/{namespace}/{plural}"
_OBJECT = _COLLECTION + "/{name}"
_MERGE_PATCH = "application/merge-patch+json"


class CustomObjects:
    """The six custom-object calls the session-state writer and `status --all` make (`bgpadv.sources.sessionstate`),
    through `request` (the client's `ApiClient`) rather than `CustomObjectsApi`, whose import costs the controller's
    start-up what this module saved (its docstring). Same method names and arguments as that class; replies decoded
    from JSON; a non-2xx status raises `ApiException`. Patches are JSON merge patches."""

    def __init__(self, api_client: Any) -> None:
        self._client = api_client

    def _call(self, method: str, path: str, params: dict[str, str], **kwargs: Any) -> Any:
        response = request(self._client, method, path, path_params=params, **kwargs)
        try:
            data = response.data
        finally:
            response.release_conn()
        return json.loads(data) if data else {}

    @staticmethod
    def _params(group: str, version: str, namespace: str, plural: str, name: str | None = None) -> dict[str, str]:
        params = {"group": group, "version": version, "namespace": namespace, "plural": plural}
        if name is not None:
            params["name"] = name
        return params

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, label_selector: str | None = None
    ) -> Any:
        query = [("labelSelector", label_selector)] if label_selector else []
        return self._call("GET", _COLLECTION, self._params(group, version, namespace, plural), query=query)

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> Any:
        return self._call(
            "GET", "/apis/{group}/{version}/{plural}", {"group": group, "version": version, "plural": plural}
        )

    def create_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, body: dict[str, Any]
    ) -> Any:
        params = self._params(group, version, namespace, plural)
        return self._call("POST", _COLLECTION, params, body=body, content_type="application/json")

    def patch_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, body: dict[str, Any]
    ) -> Any:
        params = self._params(group, version, namespace, plural, name)
        return self._call("PATCH", _OBJECT, params, body=body, content_type=_MERGE_PATCH)

    def patch_namespaced_custom_object_status(
        self, group: str, version: str, namespace: str, plural: str, name: str, body: dict[str, Any]
    ) -> Any:
        params = self._params(group, version, namespace, plural, name)
        return self._call("PATCH", _OBJECT + "/status", params, body=body, content_type=_MERGE_PATCH)

    def delete_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str, name: str) -> Any:
        return self._call("DELETE", _OBJECT, self._params(group, version, namespace, plural, name))
