"""A step following a Drydock task that cannot be long-polled (a Drydock without versions, or
one holding its most long-polls) sees the task's end within a bounded time: FIRST_POLL s or a
tenth of the task's duration late, not the DeploymentConfiguration interval (60 s here); a
long task is still polled at the interval once it is old. The follow's answers leave out the
subtasks' errors, read once when a task fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from common.clients.drydock import DrydockClient, TaskStatus
from common.context import RequestContext
from shipyard_api.actions.steps import FIRST_POLL, POLL_FRACTION
from shipyard_api.clients.fakes import FakeDrydock
from shipyard_api.clients.ports import NodeFilter, Task, TaskWatch
from tests.unit.shipyard.conftest import FakeClock, Harness
from tests.unit.shipyard.design import design

INTERVAL = 60.0
STEP_GRAIN = 1.0  # the harness advances its fake clock a second at a time when idle


@dataclass
class TimedDrydock(FakeDrydock):
    """Each task runs `duration` s of the fake clock from its creation (`durations` by
    action), then succeeds; its long-polls are answered at once, as over the cap (`busy`)
    or without a version."""

    clock: FakeClock = field(default_factory=FakeClock)
    duration: float = 20.0
    durations: dict[str, float] = field(default_factory=dict)
    busy: bool = True
    created_at: dict[str, float] = field(default_factory=dict)
    ended_at: dict[str, float] = field(default_factory=dict)
    looks: dict[str, list[float]] = field(default_factory=dict)

    def create_task(self, action: str, design_ref: str, node_filter: NodeFilter | None,
                    options: Any, *, ctx: RequestContext, key: str,
                    budget_holder: str | None = None) -> Task:
        task = super().create_task(action, design_ref, node_filter, options, ctx=ctx, key=key,
                                   budget_holder=budget_holder)
        self.created_at.setdefault(str(task["task_id"]), self.clock())
        return task

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch:
        now = self.clock()
        self.looks.setdefault(task_id, []).append(now)
        task = self.tasks[task_id]
        ends = self.created_at[task_id] + self.durations.get(str(task["action"]), self.duration)
        if task["status"] != TaskStatus.COMPLETE.value and now >= ends:
            self.ended_at[task_id] = ends
            task = self.get_task(task_id, ctx=ctx)  # completes it (polls_to_finish = 1)
        answer: Task = {**task}
        return TaskWatch(answer, str(task["status"]) if self.busy else None, busy=self.busy)


def slow_design(harness: Harness) -> None:
    harness.commit(design(config={"physical_provisioner": {
        **{k: INTERVAL for k in ("destroy_interval", "prepare_node_interval", "deploy_interval",
                                 "relabel_nodes_interval")}, "destroy_timeout": 7200},
        "kubernetes": {"node_status_interval": INTERVAL}}), tag="site-action-success")


def redeployed(harness: Harness, drydock: TimedDrydock) -> dict[str, Any]:
    harness.drydock = harness.services.drydock = drydock
    slow_design(harness)
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"], rounds=20_000)
    assert view["state"] == "complete", view.get("message")
    return view


@pytest.mark.parametrize("busy", [True, False], ids=["busy", "without-versions"])
def test_the_step_sees_its_task_end_within_a_bounded_time(harness: Harness,
                                                          busy: bool) -> None:
    drydock = TimedDrydock(clock=harness.clock, duration=20.0, busy=busy)
    view = redeployed(harness, drydock)
    bound = max(FIRST_POLL, POLL_FRACTION * drydock.duration) + STEP_GRAIN
    for name in ("destroy_nodes", "prepare_nodes", "deploy_nodes"):
        step = harness.step(view["id"], f"{name}.node01")
        task_id = step["output"]["task_id"]
        ended = harness.store.steps(view["id"])[step["position"]].ended_at
        assert ended is not None
        late = ended - drydock.ended_at[task_id]
        assert 0 <= late <= bound, (name, late)  # was the 60 s interval


def test_a_long_task_is_polled_at_the_interval_once_it_is_old(harness: Harness) -> None:
    length = 1500.0  # long enough to be polled at the interval for its last 15 minutes
    drydock = TimedDrydock(clock=harness.clock, duration=2.0, busy=True,
                           durations={"destroy_nodes": length})
    view = redeployed(harness, drydock)
    task_id = harness.step(view["id"], "destroy_nodes.node01")["output"]["task_id"]
    looks = drydock.looks[task_id]
    gaps = [b - a for a, b in zip(looks, looks[1:], strict=False)]
    age_capped = INTERVAL / POLL_FRACTION  # from this age on, every INTERVAL
    late = [g for a, g in zip(looks, gaps, strict=False)
            if a - drydock.created_at[task_id] >= age_capped]
    assert late and min(late) >= INTERVAL - STEP_GRAIN and max(late) <= INTERVAL + STEP_GRAIN
    # the extra looks of the task's first minutes are bounded (~60), whatever its length
    assert len(looks) <= length / INTERVAL + 70
    assert looks[-1] - drydock.ended_at[task_id] <= INTERVAL + STEP_GRAIN


@dataclass
class TerseDrydock(FakeDrydock):
    """Drydock's follow answers without the subtasks' errors (as the long-polls ask now); a
    read of the task (`get_task`) has them."""

    cause: str = "node01: the BMC refused the virtual media (403)"

    def get_task(self, task_id: str, *, ctx: RequestContext) -> Task:
        task = super().get_task(task_id, ctx=ctx)
        if task["status"] == TaskStatus.COMPLETE.value and task["result"]["failures"]:
            errors = {"sub-1": {"details": {"errorCount": 1, "messageList": [
                {"message": self.cause, "error": True, "node": "node01"}]}}}
            return {**task, "subtask_errors": errors}  # type: ignore[typeddict-unknown-key]
        return task

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch:
        found = super().watch_task(task_id, since=since, wait=wait, ctx=ctx)
        terse: Any = {k: v for k, v in found.task.items() if k != "subtask_errors"}
        return TaskWatch(terse, found.version)


def test_a_failed_task_names_its_causes_from_one_read_at_its_end(harness: Harness) -> None:
    drydock = TerseDrydock(versions=True, fail={("destroy_nodes", "node01")})
    harness.drydock = harness.services.drydock = drydock
    slow_design(harness)
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert drydock.cause in view["message"]  # the step's failure names Drydock's own words
    step = harness.step(view["id"], "destroy_nodes.node01")
    assert step["details"]["task"]["subtask_errors"]["sub-1"]["details"]["errorCount"] == 1


def test_the_follow_asks_drydock_for_the_task_without_its_subtasks_errors() -> None:
    """Drydock reads every subtask's messages for `subtaskerrors` (6-17 ms an answer on the
    demo site under load against 2-3 ms without): the long-polls leave them out."""
    from tests.unit.shipyard.test_clients import client

    task = {"task_id": "t1", "status": "running"}
    http, session = client({("GET", "/api/v1.0/tasks/t1"): (200, task)})
    drydock = DrydockClient(http)
    drydock.watch_task("t1", since="4.1", wait=10.0, ctx=RequestContext())
    drydock.watch_task("t1", since=None, wait=10.0, ctx=RequestContext())
    assert session.sent[0]["params"] == {"since": "4.1", "wait": "10"}
    assert not session.sent[1]["params"]
    drydock.get_task("t1", ctx=RequestContext())  # the read at a failed end has them
    assert session.sent[2]["params"] == {"subtaskerrors": "true"}
