"""The watched-resource table: keys and kind detection survive malformed objects (never an exception)."""

from __future__ import annotations

import pytest

from bgpadv.core import resources
from bgpadv.sources.decode.dispatch import state_from_objects


@pytest.mark.parametrize(
    "obj, key",
    [
        pytest.param(
            {"metadata": {"name": "vm-a.default", "namespace": "imported-vms"}},
            ("imported-vms", "vm-a.default"),
            id="normal",
        ),
        pytest.param({"metadata": "garbage"}, ("", ""), id="metadata-not-a-mapping"),
        pytest.param({"metadata": {"name": 7, "namespace": ["x"]}}, ("", ""), id="names-not-strings"),
        pytest.param({}, ("", ""), id="no-metadata"),
    ],
)
def test_namespaced_keys_never_raise(obj, key):
    assert resources.IPAM_CLAIM.key(obj) == key


def test_a_pod_counts_as_a_launcher_only_with_the_virt_launcher_label():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"kubevirt.io": "virt-launcher"}}}
    assert resources.resource_for(pod) is resources.LAUNCHER_POD
    assert resources.resource_for({**pod, "metadata": {"name": "p", "labels": "oops"}}) is None
    assert resources.resource_for({**pod, "metadata": None}) is None


def test_from_objects_sorts_by_kind_and_returns_what_it_did_not_take():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}}
    stranger = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    broken = {"apiVersion": "v1", "kind": "Node", "metadata": "not a mapping"}
    state, ignored = state_from_objects([node, stranger, broken, "not even a dict"])
    assert state.nodes["worker-1"].name == "worker-1"  # decoded into its view
    assert ignored == [stranger, "not even a dict"]
