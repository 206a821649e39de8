"""A node step attempt that never returns while its worker lives and heartbeats is stuck:
its node fails with StepStuck (the step, the node, how long), a metric counts it, its late
result is discarded and no effect of the step or its successors is repeated."""

from __future__ import annotations

import threading
from typing import Any

from common.context import RequestContext
from drydock_api.metrics import DrydockMetrics
from tests.unit.drydock.conftest import FakeClock, SiteFactory


def test_a_stuck_release_fails_its_node_once_and_its_late_answer_is_discarded(
        make_site: SiteFactory) -> None:
    clock = FakeClock()
    site = make_site(["n1"], clock=clock)
    metrics = DrydockMetrics()
    site.runtime.orchestrator.attempt_timeout = 5.0
    site.runtime.orchestrator._on_stuck = metrics.count_stuck
    entered, go_on = threading.Event(), threading.Event()
    original = site.maas.release

    def hung_release(system_id: str, erase: str | None) -> Any:
        entered.set()
        assert go_on.wait(30)
        return original(system_id, erase)

    site.maas.release = hung_release  # type: ignore[method-assign]
    body, _ = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": site.href, "node_filter": None,
         "options": {"all_nodes": True}}, RequestContext(), None)
    worker = site.runtime.new_worker("w")
    assert worker.poll_once() == 1
    assert entered.wait(30)
    clock.advance(4.0)
    hold = worker.hold(body["task_id"])
    assert hold is not None
    hold.wake()
    assert worker.active() == [body["task_id"]]  # within its attempt timeout: still running
    clock.advance(3.0)  # 7 s > 5 s; the worker is alive (its lease held)
    # nothing wakes the task's loop now (no other node, nothing due): it looks again by
    # itself within a second (common.schedule.CHECK_EVERY) and finds the attempt stuck
    worker.join(30)
    assert worker.active() == []  # the task ended while the hung call still hangs
    task = site.runtime.service.get(body["task_id"])
    assert task["result"]["status"] == "failure"
    stuck = [m for m in task["result"]["details"]["messageList"] if "stuck" in m["message"]
             or "attempt timeout" in m["message"]]
    assert stuck and "release on n1: an attempt has run 7 s" in stuck[0]["message"]
    assert metrics.registry.get_sample_value("berth_drydock_steps_stuck_total",
                                             {"step": "release"}) == 1.0
    go_on.set()  # the hung call answers late
    for _ in range(100):
        if site.maas.calls[("release", "n1")] == 1:
            break
        threading.Event().wait(0.05)
    threading.Event().wait(0.2)  # the late attempt's thread ends
    after = site.runtime.service.get(body["task_id"], layers=-1)
    steps = {t["step"]: t for t in after.values() if isinstance(t, dict) and t.get("step")}
    assert steps["release"]["result"]["status"] == "failure"  # the late answer is not heard
    assert ("delete", "n1") not in site.maas.calls  # the next step never ran
    assert site.maas.calls[("release", "n1")] == 1
    again = site.runtime.new_worker("w2")
    assert again.poll_once() == 0  # not run again automatically
