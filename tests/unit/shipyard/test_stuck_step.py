"""A step attempt that never returns while its worker lives is stuck: the step fails with
StepStuck (step, node, how long), a metric counts it, the late answer is discarded and the
destructive call is never made again."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from shipyard_api.catalog import definitions
from shipyard_api.metrics import ShipyardMetrics
from shipyard_api.workflow.engine import Engine, EngineSettings
from tests.unit.shipyard.conftest import Harness


def test_a_hung_decommission_fails_its_step_as_stuck_and_is_never_repeated(
        harness: Harness) -> None:
    entered, go_on = threading.Event(), threading.Event()

    def hang(node: str) -> None:
        entered.set()
        assert go_on.wait(60)

    harness.promenade.on_decommission = hang
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    metrics = ShipyardMetrics()
    engine = Engine(harness.store, definitions(), harness.services, owner="w1",
                    settings=EngineSettings(hold_seconds=0.0, attempt_timeout=60.0),
                    clock=harness.clock, sleep=harness.clock.sleep,
                    executor=lambda n: ThreadPoolExecutor(n), on_stuck=metrics.count_stuck)
    views = []
    driver = threading.Thread(target=lambda: views.append(
        harness.drive(action["id"], engine, rounds=200)), daemon=True)
    driver.start()
    assert entered.wait(60)
    harness.clock.now += 30  # within its attempt timeout: still waited for
    threading.Event().wait(2.5)
    assert harness.api.get(action["id"])["state"] == "running"
    harness.clock.now += 31  # 61 s > 60 s, the worker alive
    driver.join(60)
    assert views and views[0]["state"] == "failed" and views[0]["reason"] == "StepStuck"
    assert "on node01: an attempt has run 61 s" in views[0]["message"]
    assert metrics.registry.get_sample_value(
        "berth_shipyard_steps_stuck_total", {"step": "decommission"}) == 1.0
    go_on.set()  # the hung call answers late
    for _ in range(100):
        if ("decommission", "node01") in harness.promenade.effects:
            break
        threading.Event().wait(0.05)
    threading.Event().wait(0.2)
    view = harness.drive(action["id"], engine, rounds=5)
    stuck = [s for s in view["steps"] if s["reason"] == "StepStuck"]
    assert len(stuck) == 1 and stuck[0]["state"] == "failed"  # the late answer unheard
    assert harness.promenade.count("decommission", "node01") == 1
    assert not engine.run_once()  # not run again
