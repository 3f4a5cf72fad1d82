"""What the controller loads before its first LIST (issue 19, start fast): the Kubernetes client without the
modules its package `__init__`s pull in, no kubeconfig loader in-cluster, no pyroute2 unless routes are imported;
and everything the client's packages define still there for whoever asks for it."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("kubernetes.dynamic", "kubernetes.stream", "kubernetes.config.kube_config", "pyroute2", "jsonschema")


def loaded_after(code: str) -> dict:
    """sys.modules of a fresh interpreter after `code`, as {heavy module: loaded}, plus what `code` printed."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def test_the_controller_and_its_sources_load_none_of_what_they_never_run():
    loaded = loaded_after(
        "import bgpadv.runtime.wiring, bgpadv.runtime.controller, bgpadv.sources.client, bgpadv.sources.reflector"
        ", bgpadv.sources.sessionstate, bgpadv.observe.events, bgpadv.runtime.derive"
    )
    assert loaded == dict.fromkeys(HEAVY, False)


def test_names_only_the_client_packages_define_still_load_on_first_use():
    code = (
        "import bgpadv.sources.client\n"
        "import kubernetes, kubernetes.config\n"
        "from kubernetes import client, watch\n"
        "assert kubernetes.__version__ and watch.Watch and client.ApiClient\n"
        "assert callable(kubernetes.config.load_config) and callable(kubernetes.config.load_kube_config)\n"
    )
    loaded = loaded_after(code)
    assert loaded["kubernetes.config.kube_config"]  # asked for: loaded then, not before
