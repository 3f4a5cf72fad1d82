"""The claim → VM link (`sources.decode.claims.claim_vm`, rule 2 of `planner.vms`): the one place it is read.

The planner places a claim's addresses on the node of this VM, and the controller's handover metric follows the same
VM (tests/unit/runtime/test_controller.py); both call this function.
"""

from __future__ import annotations

import pytest

from bgpadv.sources.decode.claims import claim_vm


def _owner(kind: str, name: str) -> dict:
    return {"apiVersion": "kubevirt.io/v1", "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"labels": {"kubevirt.io/vm": "vm-a"}}, ("vm-a", None)),
        ({"labels": {"kubevirt.io/vm": "vm-a"}, "ownerReferences": [_owner("VirtualMachine", "vm-a")]}, ("vm-a", None)),
        ({"ownerReferences": [_owner("VirtualMachine", "vm-a")]}, ("vm-a", None)),
        ({"ownerReferences": [_owner("VirtualMachineInstance", "vm-a")]}, ("vm-a", None)),
        ({"labels": {"kubevirt.io/vm": ""}, "ownerReferences": [_owner("VirtualMachine", "vm-a")]}, ("vm-a", None)),
        (
            {
                "labels": {"app": "db"},
                "ownerReferences": [_owner("ReplicaSet", "rs-1"), _owner("VirtualMachine", "vm-b")],
            },
            ("vm-b", None),
        ),
    ],
    ids=["label", "label-and-owner", "vm-owner-only", "vmi-owner-only", "empty-label-owner", "other-owners-skipped"],
)
def test_a_claim_names_its_vm_by_label_else_by_virtual_machine_owner_reference(meta, expected):
    assert claim_vm(meta) == expected


def test_a_claim_whose_label_and_owner_reference_disagree_names_no_vm():
    meta = {"labels": {"kubevirt.io/vm": "vm-a"}, "ownerReferences": [_owner("VirtualMachine", "vm-b")]}
    assert claim_vm(meta) == (None, "label kubevirt.io/vm names vm-a but the ownerReference names vm-b")


@pytest.mark.parametrize(
    "meta",
    [{}, {"ownerReferences": [_owner("Pod", "virt-launcher-vm-a")]}, {"name": "vm-a.default"}, {"labels": None}],
    ids=["nothing", "pod-owner", "claim-name-not-parsed", "labels-null"],
)
def test_a_claim_without_label_or_vm_owner_reference_names_no_vm(meta):
    assert claim_vm(meta) == (None, "claim names no VM (label kubevirt.io/vm or a VirtualMachine ownerReference)")
