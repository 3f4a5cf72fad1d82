"""The one place that builds a `kubernetes.client.ApiClient` from bgpadv's configuration."""

from __future__ import annotations

import logging

import kubernetes.client
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import load_incluster_config

from bgpadv import __version__
from bgpadv.config import KubernetesConfig

log = logging.getLogger(__name__)

# One long-lived watch per resource plus lists, events and retries: more than the client's default of 5 per CPU.
POOL_SIZE = 32


def make_api_client(cfg: KubernetesConfig) -> kubernetes.client.ApiClient:
    """An API client for `cfg`: its kubeconfig (and context) if set, else in-cluster, else $KUBECONFIG/~/.kube/config.

    Raises `kubernetes.config.ConfigException` when none of them yields a configuration. The kubeconfig loader (and
    its OAuth stack) is imported only when a kubeconfig is read: in-cluster, the controller never loads it.
    """
    configuration = kubernetes.client.Configuration()
    if cfg.kubeconfig:
        from kubernetes.config.kube_config import load_kube_config

        load_kube_config(
            config_file=cfg.kubeconfig, context=cfg.context, client_configuration=configuration, persist_config=False
        )
        source = cfg.kubeconfig
    else:
        try:
            load_incluster_config(client_configuration=configuration)
            source = "in-cluster service account"
        except ConfigException:
            from kubernetes.config.kube_config import load_kube_config

            load_kube_config(context=cfg.context, client_configuration=configuration, persist_config=False)
            source = "$KUBECONFIG or ~/.kube/config"
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, POOL_SIZE)
    api_client = kubernetes.client.ApiClient(configuration)
    api_client.user_agent = f"bgpadv/{__version__}"
    log.info("Kubernetes API %s (configuration from %s)", configuration.host, source)
    return api_client
