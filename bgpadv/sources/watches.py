"""Every watched resource's reflector, started and stopped together: what the controller calls its sources.

In per-node mode the IPAMClaims are not listed whole: the node's VMI events pass through the claim reflector
(`bgpadv.sources.claims`), which reads the claims of the node's VMs as they arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bgpadv.core.resources import Resource
from bgpadv.observe.observers import SourcesObserver
from bgpadv.sources.claims import ClaimReflector
from bgpadv.sources.reflector import Reflector, ReflectorSettings, WatchEvent

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class Sources:
    """One reflector per resource, started and stopped together."""

    def __init__(
        self,
        api_client: ApiClient,
        resources: Sequence[Resource],
        emit: Callable[[WatchEvent], None],
        settings: ReflectorSettings | None = None,
        observer: SourcesObserver | None = None,
    ) -> None:
        claims = next((r for r in resources if r.on_demand), None)
        vmi_emit = emit
        self.reflectors: list[Reflector] = []
        if claims is not None:  # per-node: the node's VMIs pass through the claim reflector (`sources.claims`)
            claim_reflector = ClaimReflector(api_client, claims, emit, settings, observer)
            self.reflectors.append(claim_reflector)
            vmi_emit = claim_reflector.offer
        self.reflectors += [
            Reflector(api_client, r, vmi_emit if r.field == "vmis" else emit, settings, observer)
            for r in resources
            if not r.on_demand
        ]

    def start(self) -> None:
        for reflector in self.reflectors:
            reflector.start()

    def relist(self) -> None:
        """Ask every reflector for a fresh full LIST (each ends in SYNCED with its `listed_at`)."""
        for reflector in self.reflectors:
            reflector.relist()

    def stop(self) -> None:
        for reflector in self.reflectors:
            reflector._stop.set()
            reflector._wake.set()
            reflector._cut()
        for reflector in self.reflectors:
            reflector.stop()

    @property
    def synced(self) -> bool:
        """Every resource finished its first list (or is not installed)."""
        return all(r.synced for r in self.reflectors)
