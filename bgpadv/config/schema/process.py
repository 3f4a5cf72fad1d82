"""How the process runs: `kubernetes` (reaching the API), `metrics` (the listener of /metrics, /healthz, /readyz
and /status), `exabgp` (the speaker's knobs) and `sessionState` (BGPSessionState objects in the API)."""

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Literal, Self

from pydantic import (
    Field,
    PlainValidator,
    StrictBool,
    StrictStr,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from bgpadv.config.schema.fields import _LISTEN_ENV, Between, Listen, Span, _not_in_file, _Section, refuse, surroundings
from bgpadv.core.bounded import brief
from bgpadv.core.prefix import Address


@dataclass(frozen=True, slots=True)
class KubernetesConfig(_Section):
    """How to reach the Kubernetes API (`kubernetes`)."""

    kubeconfig: Annotated[
        StrictStr | None, Field(description="A kubeconfig file; omitted: in-cluster credentials, then $KUBECONFIG.")
    ] = None
    context: Annotated[StrictStr | None, Field(description="The kubeconfig context.")] = None


@dataclass(frozen=True, slots=True)
class MetricsConfig(_Section):
    """Prometheus metrics, /healthz, /readyz and /status (`metrics`)."""

    listen: Annotated[
        Listen,
        Field(
            description="HOST:PORT, or ${VARIABLE}:PORT with the host from an environment variable (unset: an "
            "error), e.g. ${BGPADV_NODE_IP}:9179."
        ),
    ] = "0.0.0.0:9179"  # `${VAR}:PORT` already resolved from the environment
    listen_from_env: Annotated[str | None, SkipJsonSchema(), PlainValidator(_not_in_file)] = None
    """The variable the host came from (`${BGPADV_NODE_IP}:9179`), if any."""

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)

    @model_validator(mode="after")
    def _from_environment(self, info: ValidationInfo) -> Self:
        """`${VAR}:PORT` → `<value of VAR>:PORT`: the listener on an address only the pod's environment knows (the
        node's address, `status.hostIP` through the downward API)."""
        m = _LISTEN_ENV.fullmatch(self.listen)
        if m is None:
            return self
        name, port = m.group(1), m.group(2)
        value = surroundings(info).environ.get(name, "")
        if not value:
            refuse(
                self,
                [(("listen",), f"the environment variable {name} is not set (the pod sets it from status.hostIP)")],
            )
        try:
            host = Address.parse(value)
        except ValueError:
            refuse(
                self, [(("listen",), f"the environment variable {name} must hold an IP address, got {brief(value)}")]
            )
        listen = f"[{host}]:{port}" if host.version == 6 else f"{host}:{port}"
        return dataclasses.replace(self, listen=listen, listen_from_env=name)


@dataclass(frozen=True, slots=True)
class ExaBGPConfig(_Section):
    """Knobs for the ExaBGP process bgpadv runs (`exabgp`); defaults follow the measured facts in the reference
    notes."""

    reactor_speed: Annotated[
        Annotated[float, Span(0.001, 10)],
        Field(alias="reactorSpeed", description="exabgp.reactor.speed (s): lower = faster bulk loads, more idle CPU."),
    ] = 0.1
    max_inflight: Annotated[
        Annotated[int, Between(1, 10000)],
        Field(alias="maxInflight", description="Commands written to ExaBGP and not yet acknowledged."),
    ] = 100
    chunk_prefixes: Annotated[
        Annotated[int, Between(1, 5000)], Field(alias="chunkPrefixes", description="Prefixes per bulk command line.")
    ] = 1000
    runtime: Annotated[
        Literal["auto", "cpython", "pypy"],
        Field(
            description="The interpreter ExaBGP runs under: pypy (Debian's pypy3 on PATH, running the ExaBGP "
            "installed beside bgpadv), cpython (bgpadv's own), auto (pypy when pypy3 is found, else cpython).",
        ),
    ] = "cpython"
    listen_port: Annotated[
        Annotated[int, Between(1, 65535)],
        Field(
            alias="listenPort",
            description="exabgp.tcp.port: where passive peers connect (on each passive peer's localAddress); "
            "below 1024 needs UID 0 or CAP_NET_BIND_SERVICE.",
        ),
    ] = 179


# --- session status in the API (BGPSessionState objects) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionStateConfig(_Section):
    """One `BGPSessionState` object (bgpadv.io/v1alpha1) per instance and peer in the pod's namespace (`sessionState`;
    the CRD and a namespaced Role ship in deploy/)."""

    enabled: Annotated[
        StrictBool,
        Field(description="Write the objects (the CRD must be installed; without it bgpadv logs once and retries)."),
    ] = True
    interval_seconds: Annotated[
        Annotated[float, Span(1.0, 3600.0)],
        Field(
            alias="intervalSeconds",
            description="Route counters are written at most this often per object; a state change, an error or a "
            "NOTIFICATION is written at once.",
        ),
    ] = 30.0
    namespace: Annotated[
        StrictStr | None,
        Field(
            min_length=1,
            description="Where the objects live; omitted: the pod's namespace (BGPADV_POD_NAMESPACE, then the "
            "service account's), else bgpadv.",
        ),
    ] = None


# --- end of session status ----------------------------------------------------------------------------------------
