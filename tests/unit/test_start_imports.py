"""What each process imports at start (issue 19, item 2: start fast).

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
