"""The observer is read by the HTTP thread (`/status`, `/readyz`) while the controller's loop changes it.

Rule: a reader never sees a structure mid-change — `status()`, `ready()` and `pending_counts()` never raise however
the loop's writes interleave with them, and what they report stays consistent (pending counts never negative).
The loop's side runs a fixed number of rounds; the reader runs until the loop is done (no sleeps).
"""

from __future__ import annotations

import threading

from bgpadv.core.model import Cause, ObjectRef, Route, RouteKind
from bgpadv.core.prefix import Address, Prefix
from bgpadv.observe.metrics import Metrics
from bgpadv.observe.metrics_observer import MetricsObserver
from bgpadv.observe.observers import RouteChange

PEER = "10.0.0.1"
CLAIM = ObjectRef("IPAMClaim", "vm-a.default", "imported-vms")
IN_FLIGHT = 2000  # batches left unacknowledged, so a reader walking them is slow enough to be interleaved
ROUNDS = 4000


def change(i: int) -> RouteChange:
    prefix = Prefix.parse(f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}/32")
    route = Route(prefix, Address.parse("10.0.0.11"), "vmnet-a", RouteKind.HOST, CLAIM, "worker-1")
    return RouteChange(PEER, "announce", route)


def test_status_read_by_another_thread_while_the_loop_writes_never_raises():
    observer = MetricsObserver(Metrics(process_collectors=False), pending_ttl=1e9)
    observer.set_peers([PEER])
    errors: list[BaseException] = []
    reads = 0
    done = threading.Event()

    def reader() -> None:
        nonlocal reads
        while not done.is_set():
            try:
                status = observer.status()
                observer.ready()
                pending = observer.pending_counts()
                assert pending["acked"] >= 0 and pending["sent"] >= 0
                assert status["pending"]["acked"] >= 0
            except BaseException as e:
                errors.append(e)
                return
            reads += 1

    thread = threading.Thread(target=reader, name="http-reader")
    thread.start()
    try:
        for i in range(ROUNDS):
            cause = Cause(received_at=float(i), planned_at=float(i) + 0.001, kinds=("IPAMClaim",))
            observer.commands_written(i, [change(i)], cause, float(i) + 0.002)
            if i >= IN_FLIGHT:
                observer.command_acked(i - IN_FLIGHT, True, float(i) + 0.003)
                observer.updates_sent(PEER, [change(i - IN_FLIGHT).route.prefix], [], float(i) + 0.004)
            observer.peer_state(PEER, "up" if i % 2 else "down", float(i))
    finally:
        done.set()
        thread.join(10)
    assert errors == []
    assert reads > 0
    assert observer.pending_counts() == {"acked": IN_FLIGHT, "sent": IN_FLIGHT}
