"""One read-only look at the cluster: every watched resource listed once, for `bgpadv render` and `bgpadv explain`.

The same calls the reflectors make for their LIST (`reflector.list_function`, pages of `ReflectorSettings.page_size`,
the JSON decoded by `yamlsafe.loads_list_page`, so one hostile object never makes a resource unreadable), and nothing
else: no watch, no write, no Event. It needs exactly the `list` permissions the service's ClusterRole grants. A
resource whose CRD is not installed (404) is empty with a warning, as the service treats it; any other API error is
`SnapshotError` naming the resource.
"""

from __future__ import annotations

from collections.abc import Sequence

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from bgpadv.core import yamlsafe
from bgpadv.core.resources import Resource
from bgpadv.sources.reflector import ReflectorSettings, list_function, list_page_arguments


class SnapshotError(Exception):
    """A resource could not be listed (not a missing CRD): the message names it and the API's answer."""


def list_once(
    resource: Resource,
    api_client: ApiClient,
    settings: ReflectorSettings | None = None,
    warnings: list[str] | None = None,
) -> list[dict]:
    """Every object of `resource` (its label and field selectors applied), each naming its kind and apiVersion; an
    object nested too deep is left out with a warning in `warnings`. Raises `ApiException` as the client does."""
    s = settings or ReflectorSettings()
    call = list_function(api_client, resource)
    objects: list[dict] = []
    token: str | None = None
    while True:
        response = call(**list_page_arguments(resource, s, token))
        try:
            data = response.data
        finally:
            response.release_conn()
        page, items, too_deep = yamlsafe.loads_list_page(data)
        if too_deep and warnings is not None:
            warnings.append(f"{resource.plural}: {too_deep} object(s) nested too deep, left out")
        for obj in items:
            obj.setdefault("kind", resource.kind)
            obj.setdefault("apiVersion", resource.api_version)
            objects.append(obj)
        token = (page.get("metadata") or {}).get("continue") or None
        if token is None:
            return objects


def snapshot(
    api_client: ApiClient, resources: Sequence[Resource], settings: ReflectorSettings | None = None
) -> tuple[list[dict], list[str]]:
    """The objects of every resource in `resources`, listed once, and the warnings met (a CRD not installed).
    Raises `SnapshotError` when a resource cannot be listed for any other reason (403, 5xx, unreachable API)."""
    objects: list[dict] = []
    warnings: list[str] = []
    for resource in resources:
        try:
            objects.extend(list_once(resource, api_client, settings, warnings))
        except ApiException as e:
            if e.status == 404:
                warnings.append(f"{resource.plural}.{resource.group or 'core'}: not installed (404), read as empty")
                continue
            raise SnapshotError(f"cannot list {resource.plural}: HTTP {e.status} {e.reason}") from e
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:  # unreachable, or not a LIST answer
            raise SnapshotError(f"cannot list {resource.plural}: {e}") from e
    return objects, warnings


def snapshot_from_kubeconfig(
    kubeconfig: str, context: str | None, resources: Sequence[Resource]
) -> tuple[list[dict], list[str]]:
    """`snapshot` through the client `sources.client.make_api_client` builds for `kubeconfig` (and `context`).
    Raises `SnapshotError` when the kubeconfig cannot be used or a resource cannot be listed."""
    from kubernetes.config.config_exception import ConfigException

    from bgpadv.config import KubernetesConfig
    from bgpadv.sources.client import make_api_client

    try:
        api_client = make_api_client(KubernetesConfig(kubeconfig=kubeconfig, context=context))
    except (ConfigException, OSError, ValueError, TypeError) as e:
        raise SnapshotError(f"{kubeconfig}: cannot use this kubeconfig: {e}") from e
    try:
        return snapshot(api_client, resources)
    finally:
        api_client.close()
