"""The configuration's schema: every key of `bgpadv.yaml`, its type, bounds, default and documentation, and the rules
between keys, one module per section:

- `fields`: how a problem is reported, what validation reads beyond the document (`Surroundings`), the value types
  several sections share, and `_Section`, the base of every section;
- `peers` (`peers[]`, with `bfd` for `peers[].bfd`), `policy` (`attributes`, `policies[]`, `peers[].exportFilter`),
  `networks` (`networks`, `ovnKubernetes`), `imports` (`importRoutes`), `safety`, `process` (`kubernetes`,
  `metrics`, `exabgp`, `sessionState`);
- `document`: `Config`, the whole file, with the top-level keys and the rules between sections.

Each section is a frozen dataclass: code builds and `dataclasses.replace`s them freely, without validation (tests
build invalid ones on purpose). `bgpadv.config.load.parse` validates a YAML document into them with pydantic
(`TypeAdapter(Config)`), which reads the metadata written here: the camelCase key as users write it (`alias`), the
documentation (`description`), the bounds, and the default, written once as the dataclass default. Unknown keys are
refused (`extra="forbid"`); values are strict: a string where an integer belongs is an error, never converted.
`null` for an optional key is the same as leaving the key out (`_Section`).

Every error is raised as a pydantic error with a plain-English message (`must be between 1 and 4294967295, got 0`);
`load` turns them into `path: problem` lines. What the file points at (a `md5PasswordFile`, the variable of
`metrics.listen: "${VARIABLE}:PORT"`, `BGPADV_NODE_NAME`) is read through the `Surroundings` that `load` passes as
the validation context.
"""

from bgpadv.config.schema.bfd import BfdConfig
from bgpadv.config.schema.document import MODES, NODE_NAME_ENV, POD_NODE_NAME_ENV, Config, NextHopSelf
from bgpadv.config.schema.fields import (
    DESCRIPTION,
    DESCRIPTION_RULE,
    DOCUMENTATION_ASNS,
    FAMILIES,
    LISTEN_ENV,
    MD5_PASSWORD,
    MD5_RULE,
    PLACEHOLDER,
    RESERVED_ASNS,
    Family,
    Loc,
    Surroundings,
    problem,
    refuse,
)
from bgpadv.config.schema.imports import ACCEPT_DEFAULT_ROUTE, AcceptRule, ImportConfig, ImportNetwork
from bgpadv.config.schema.networks import (
    DEFAULT_MAX_ADDRESSES_PER_INTERFACE,
    OVN_JOIN_SUBNETS,
    OVN_MASQUERADE_SUBNETS,
    OVN_TRANSIT_SUBNETS,
    NetworksConfig,
    OvnKubernetesConfig,
    SecondaryNetworkConfig,
    SpecialRangeGroup,
)
from bgpadv.config.schema.peers import LOCAL_ADDRESS_FROM_ENV, PeerConfig
from bgpadv.config.schema.policy import (
    ROUTE_KIND_NAMES,
    ExportFilter,
    FilterAction,
    PathAttributes,
    Policy,
    PolicyMatch,
    PolicySet,
    PrefixRule,
    RouteKindName,
    WellKnownName,
)
from bgpadv.config.schema.process import ExaBGPConfig, KubernetesConfig, MetricsConfig, SessionStateConfig
from bgpadv.config.schema.safety import MinPrefixLength, SafetyConfig

__all__ = [
    "ACCEPT_DEFAULT_ROUTE",
    "DEFAULT_MAX_ADDRESSES_PER_INTERFACE",
    "DESCRIPTION",
    "DESCRIPTION_RULE",
    "DOCUMENTATION_ASNS",
    "FAMILIES",
    "LISTEN_ENV",
    "LOCAL_ADDRESS_FROM_ENV",
    "MD5_PASSWORD",
    "MD5_RULE",
    "MODES",
    "NODE_NAME_ENV",
    "OVN_JOIN_SUBNETS",
    "OVN_MASQUERADE_SUBNETS",
    "OVN_TRANSIT_SUBNETS",
    "PLACEHOLDER",
    "POD_NODE_NAME_ENV",
    "RESERVED_ASNS",
    "ROUTE_KIND_NAMES",
    "AcceptRule",
    "BfdConfig",
    "Config",
    "ExaBGPConfig",
    "ExportFilter",
    "Family",
    "FilterAction",
    "ImportConfig",
    "ImportNetwork",
    "KubernetesConfig",
    "Loc",
    "MetricsConfig",
    "MinPrefixLength",
    "NetworksConfig",
    "NextHopSelf",
    "OvnKubernetesConfig",
    "PathAttributes",
    "PeerConfig",
    "Policy",
    "PolicyMatch",
    "PolicySet",
    "PrefixRule",
    "RouteKindName",
    "SafetyConfig",
    "SecondaryNetworkConfig",
    "SessionStateConfig",
    "SpecialRangeGroup",
    "Surroundings",
    "WellKnownName",
    "problem",
    "refuse",
]
