"""Live progress: a running decommission step shows the drain's pods left, as they change."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from shipyard_api.actions.progress import drain_record, follow
from tests.unit.shipyard.conftest import Harness

MARKER = "6f1c3d2e-0000-4000-8000-000000000001"


def record(left: int, marker: str = MARKER) -> dict[str, Any]:
    return {"node": "node01", "marker": marker, "phase": "evicting", "pods_left": left,
            "groups": [{"reason": "PDB web allows 0 disruptions", "count": left,
                        "pods": [f"default/web-{n}" for n in range(left)]}]}


def test_only_the_progress_of_this_actions_drain_is_taken() -> None:
    assert drain_record({"drain_progress": record(3)}, MARKER) == record(3)
    assert drain_record({"drain_progress": record(3, "another")}, MARKER) is None
    assert drain_record({"drain_progress": None}, MARKER) is None
    assert drain_record(None, MARKER) is None


def test_follow_reports_each_new_record_while_the_call_runs() -> None:
    records = [record(3), record(3), record(1)]
    reported: list[dict[str, Any]] = []
    finished = threading.Event()

    def poll() -> dict[str, Any] | None:
        if records:
            return records.pop(0)
        finished.set()
        return None

    def call() -> str:
        assert finished.wait(5.0)
        return "answer"

    result, last = follow(call, poll, reported.append, interval=0.001)
    assert result == "answer"
    assert reported == [record(3), record(1)]
    assert last == record(1)


def test_a_failing_poll_does_not_end_the_call() -> None:
    polls = []

    def poll() -> dict[str, Any] | None:
        polls.append(1)
        raise ConnectionError("promenade down")

    def call() -> int:
        while len(polls) < 2:
            time.sleep(0.001)
        return 7

    assert follow(call, poll, lambda r: None, interval=0.001) == (7, None)


def test_the_running_decommission_step_shows_the_drain_progress(harness: Harness) -> None:
    harness.settings = replace(harness.settings, progress_interval=0.005)
    harness.services.settings = harness.settings
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"}, marker=MARKER)
    seen: list[dict[str, Any]] = []

    def while_draining(node: str) -> None:
        sid = f"decommission.{node}"
        for left in (3, 1):
            harness.promenade.views[node] = {"name": node, "kubelet": {"ready": "True"},
                                             "drain_progress": record(left)}
            for _ in range(2000):
                step = harness.step(action["id"], sid)
                if step["details"].get("drain") == record(left):
                    seen.append({"state": step["state"], **step["details"]})
                    break
                time.sleep(0.001)
        del harness.promenade.views[node]

    harness.promenade.on_decommission = while_draining
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert seen == [{"state": "running", "drain": record(3)},
                    {"state": "running", "drain": record(1)}]
    done = harness.step(action["id"], "decommission.node01")
    assert done["details"]["drain"] == record(1)
    assert "promenade" in done["details"]


def test_progress_is_recorded_only_on_a_running_step_of_a_held_action(
        any_harness: Harness) -> None:
    from shipyard_api.workflow.states import StepState

    h = any_harness
    h.commit(tag="site-action-success")
    action = h.create("redeploy_server", {"target_nodes": "node01"}, marker=MARKER)
    store, now = h.store, h.clock()
    assert store.claim("w1", now, 30.0) == action["id"]
    store.save_step(action["id"], "w1", "preflight", StepState.RUNNING, started_at=now)
    assert store.report_progress(action["id"], "w1", "preflight", {"drain": record(2)})
    assert h.step(action["id"], "preflight")["details"] == {"drain": record(2)}
    assert not store.report_progress(action["id"], "w2", "preflight", {"drain": record(1)})
    assert not store.report_progress(action["id"], "w1", "resolve_design", {"x": 1})
    store.save_step(action["id"], "w1", "preflight", StepState.SUCCESS, details={"done": 1})
    assert not store.report_progress(action["id"], "w1", "preflight", {"drain": record(0)})
    assert h.step(action["id"], "preflight")["details"] == {"done": 1}
