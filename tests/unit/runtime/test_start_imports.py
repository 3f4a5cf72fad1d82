"""What each process imports at start (each module a process does not run is start time lost).

`bgpadv run` (the supervisor, the pod's PID 1) only renders ExaBGP's configuration and runs ExaBGP and the API
shim: it must not load the Kubernetes client (~150 MB and seconds), prometheus_client or pyroute2. The controller
talks to the API through the client's `ApiClient` only (`bgpadv.sources.rest`): the generated API classes
(`CoreV1Api`, `CustomObjectsApi`: ~1.5 s of CPU to import, some sixty pydantic models) must stay unloaded.

Each case imports the modules in a fresh interpreter and lists the forbidden modules it ended up with, as the
import-linter contracts do for the source (`pyproject.toml`), here for what is actually loaded at run time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SUPERVISOR_FORBIDDEN = ("kubernetes", "prometheus_client", "pyroute2", "urllib3")
# the packages themselves are lazy (`__getattr__`) and cheap; their modules are the generated classes
GENERATED_APIS = ("kubernetes.client.api.", "kubernetes.client.models.")


def loaded_after(imports: list[str], forbidden: tuple[str, ...]) -> list[str]:
    """The modules loaded after `imports` that are in `forbidden` (a name and its submodules; a name ending in a
    dot: its submodules only)."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {imports!r}:\n"
        "    importlib.import_module(name)\n"
        f"prefixes = {forbidden!r}\n"
        "def hit(m, p):\n"
        "    return m.startswith(p) if p.endswith('.') else m == p or m.startswith(p + '.')\n"
        "print(json.dumps(sorted(m for m in sys.modules if any(hit(m, p) for p in prefixes))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    "imports",
    [
        pytest.param(["bgpadv.runtime.supervisor"], id="the-supervisor-module"),
        pytest.param(["bgpadv.commands.cli", "bgpadv.runtime.wiring"], id="what-bgpadv-run-imports"),
        pytest.param(["bgpadv.commands.cli", "bgpadv.runtime.shim"], id="the-api-shim"),
    ],
)
def test_bgpadv_run_loads_neither_the_kubernetes_client_nor_metrics_nor_netlink(imports: list[str]) -> None:
    assert loaded_after(imports, SUPERVISOR_FORBIDDEN) == []


def test_the_api_shim_starts_the_controller_without_loading_the_configuration_schema() -> None:
    # pydantic's models take a third of a second to build, and the shim only relays lines: the controller it
    # starts would wait for them (bgpadv.core.runfiles holds the file names the shim needs)
    assert loaded_after(["bgpadv.commands.cli", "bgpadv.runtime.shim"], ("pydantic", "bgpadv.config")) == []


def test_the_controller_reaches_the_api_without_the_generated_api_classes_and_models() -> None:
    imports = [
        "bgpadv.runtime.controller",
        "bgpadv.sources.client",
        "bgpadv.sources.nodes",
        "bgpadv.sources.reflector",
        "bgpadv.sources.snapshot",
        "bgpadv.observe.events",
    ]
    assert loaded_after(imports, GENERATED_APIS) == []


# What the client's package `__init__`s and the kubeconfig loader pull in (the dynamic client with jsonschema,
# websockets, OAuth): never run by the controller in-cluster (`bgpadv/sources/__init__.py`); pyroute2 only where
# routes are imported (`bgpadv.importer.vrfs`).
CONTROLLER_NEVER_RUNS = (
    "kubernetes.dynamic",
    "kubernetes.stream",
    "kubernetes.config.kube_config",
    "pyroute2",
    "jsonschema",
)


def test_the_controller_and_its_sources_load_none_of_what_they_never_run() -> None:
    imports = [
        "bgpadv.runtime.wiring",
        "bgpadv.runtime.controller",
        "bgpadv.runtime.derive",
        "bgpadv.sources.client",
        "bgpadv.sources.reflector",
        "bgpadv.sources.sessionstate",
        "bgpadv.observe.events",
    ]
    assert loaded_after(imports, CONTROLLER_NEVER_RUNS) == []


def test_names_only_the_client_packages_define_still_load_on_first_use() -> None:
    code = (
        "import bgpadv.sources.client, json, sys\n"
        "import kubernetes, kubernetes.config\n"
        "from kubernetes import client, watch\n"
        "assert kubernetes.__version__ and watch.Watch and client.ApiClient\n"
        "assert callable(kubernetes.config.load_config) and callable(kubernetes.config.load_kube_config)\n"
        "print(json.dumps('kubernetes.config.kube_config' in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout) is True  # asked for: loaded then, not before
