"""Shipyard's workers renew the leases of the actions they run from the common runner's
heartbeat, also while the engine's own loop does not come round (it sleeps until a step's
next poll, or waits on a peer)."""

from __future__ import annotations

import time

from shipyard_api.catalog import definitions
from shipyard_api.workflow.engine import Engine, EngineSettings
from shipyard_api.workflow.worker import WorkerPool
from tests.unit.shipyard.conftest import Harness


def test_an_action_whose_engine_sleeps_past_its_lease_is_not_taken_over(
        harness: Harness) -> None:
    harness.drydock.polls_to_finish = 10_000  # the Drydock step polls on and on
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    settings = EngineSettings(lease_seconds=1.5, hold_seconds=10.0, max_poll_interval=1.0)

    def make(n: int) -> Engine:  # real time; between polls the engine sleeps 3 s (a load)
        return Engine(harness.store, definitions(), harness.services, owner="pool",
                      settings=settings, sleep=lambda seconds: time.sleep(3.0))

    pool = WorkerPool(make, 1, 0.05)
    pool.start()
    try:
        deadline = time.monotonic() + 60
        while not harness.drydock.created("destroy_nodes"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        until = time.monotonic() + 5.0  # more than three leases
        while time.monotonic() < until:
            assert harness.store.claim("rival", time.time(), 1.5) is None
            time.sleep(0.1)
    finally:
        pool.stop(10)
    assert harness.store.get(action["id"]).lease_owner in ("pool", None)
