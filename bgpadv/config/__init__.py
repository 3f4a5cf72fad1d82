"""bgpadv's configuration: one YAML file, validated on load into frozen dataclasses.

`schema` holds every key (type, bounds, default, documentation) and the rules between keys; `load` reads the file,
validates it with pydantic and reports every problem as a `path: problem` line (`peers[0].asn: is required`). Keys are
camelCase, as in Kubernetes objects. Loading also reads what the file points at: each `peers[i].md5PasswordFile` (a
mounted Secret key) and the variable of a `metrics.listen: "${VARIABLE}:PORT"`; a missing one is an error with its
field path. `bgpadv check-config --schema` prints the JSON Schema.
"""

from bgpadv.config.load import (
    EVERY_NODE,
    ConfigError,
    Judged,
    json_schema,
    load,
    load_or_report,
    parse,
)
from bgpadv.config.schema import (
    ACCEPT_DEFAULT_ROUTE,
    DEFAULT_MAX_ADDRESSES_PER_INTERFACE,
    DESCRIPTION,
    MD5_PASSWORD,
    MODES,
    NODE_NAME_ENV,
    POD_NODE_NAME_ENV,
    AcceptRule,
    BfdConfig,
    Config,
    ExaBGPConfig,
    ExportFilter,
    ImportConfig,
    ImportNetwork,
    KubernetesConfig,
    MetricsConfig,
    MinPrefixLength,
    NetworksConfig,
    OvnKubernetesConfig,
    PeerConfig,
    Policy,
    SafetyConfig,
    SecondaryNetworkConfig,
)

__all__ = [
    "ACCEPT_DEFAULT_ROUTE",
    "DEFAULT_MAX_ADDRESSES_PER_INTERFACE",
    "DESCRIPTION",
    "EVERY_NODE",
    "MD5_PASSWORD",
    "MODES",
    "NODE_NAME_ENV",
    "POD_NODE_NAME_ENV",
    "AcceptRule",
    "BfdConfig",
    "Config",
    "ConfigError",
    "ExaBGPConfig",
    "ExportFilter",
    "ImportConfig",
    "ImportNetwork",
    "Judged",
    "KubernetesConfig",
    "MetricsConfig",
    "MinPrefixLength",
    "NetworksConfig",
    "OvnKubernetesConfig",
    "PeerConfig",
    "Policy",
    "SafetyConfig",
    "SecondaryNetworkConfig",
    "json_schema",
    "load",
    "load_or_report",
    "parse",
]
