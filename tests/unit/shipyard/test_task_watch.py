"""Steps that follow a Drydock task long-poll it: each answer (a change) is acted on at once,
without sleeping the DeploymentConfiguration interval; without versions, or when Drydock is
too busy to hold the request, the step polls, soon while the task is young and at most at the
interval (tests/unit/shipyard/test_task_handover.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.context import RequestContext
from shipyard_api.actions.steps import FIRST_POLL
from shipyard_api.clients.fakes import FakeDrydock, FakePromenade
from shipyard_api.clients.ports import NodeWatch, TaskWatch
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.design import design

INTERVAL = 60


class BusyDrydock(FakeDrydock):
    """Versions, but every long-poll is refused as over the cap."""

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch:
        found = super().watch_task(task_id, since=since, wait=wait, ctx=ctx)
        return TaskWatch(found.task, found.version, busy=True)


@dataclass
class WatchingPromenade(FakePromenade):
    """Node views with a version (one per read), as Promenade's long-poll answers them."""

    since: list[str | None] = field(default_factory=list)

    def watch_node(self, node: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> NodeWatch:
        self.since.append(since)
        return NodeWatch(self.node_status(node, ctx=ctx), str(len(self.since)))


def slow_design(harness: Harness) -> None:
    harness.commit(design(config={"physical_provisioner": {
        k: INTERVAL for k in ("destroy_interval", "prepare_node_interval", "deploy_interval",
                              "relabel_nodes_interval")},
        "kubernetes": {"node_status_interval": INTERVAL}}), tag="site-action-success")


def redeploy(harness: Harness) -> dict[str, Any]:
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    return harness.drive(action["id"])


def test_a_watched_task_is_followed_without_sleeping_the_interval(harness: Harness) -> None:
    harness.drydock.versions = True
    harness.drydock.polls_to_finish = 3
    slow_design(harness)
    start = harness.clock()
    view = redeploy(harness)
    assert view["state"] == "complete"
    assert harness.clock() == start  # no step waited on the fake clock
    destroy = harness.step(view["id"], "destroy_nodes.node01")
    assert destroy["attempts"] == 2  # create, then one attempt follows every change


class QuietDrydock(FakeDrydock):
    """Long-polls that end without a change (the same version) until the task completes."""

    def watch_task(self, task_id: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> TaskWatch:
        found = super().watch_task(task_id, since=since, wait=wait, ctx=ctx)
        return TaskWatch(found.task, "7")


def test_a_wait_without_a_change_hands_the_step_back_to_the_engine(harness: Harness) -> None:
    harness.drydock = QuietDrydock(versions=True, polls_to_finish=3)
    harness.services.drydock = harness.drydock
    slow_design(harness)
    start = harness.clock()
    view = redeploy(harness)
    assert view["state"] == "complete" and harness.clock() == start
    destroy = harness.step(view["id"], "destroy_nodes.node01")
    assert destroy["attempts"] == 3  # create; a change then a wait without one; the end


def test_without_versions_the_step_polls_soon_after_the_task_starts(harness: Harness) -> None:
    harness.drydock.polls_to_finish = 2
    slow_design(harness)
    start = harness.clock()
    view = redeploy(harness)
    assert view["state"] == "complete"
    # each of the three tasks waited once, FIRST_POLL (its age is under 5 s), not INTERVAL
    assert 3 * FIRST_POLL <= harness.clock() - start < INTERVAL


def test_a_busy_drydock_is_polled_soon_after_the_task_starts(harness: Harness) -> None:
    harness.drydock = BusyDrydock(versions=True, polls_to_finish=2)
    harness.services.drydock = harness.drydock
    slow_design(harness)
    start = harness.clock()
    view = redeploy(harness)
    assert view["state"] == "complete"
    assert 3 * FIRST_POLL <= harness.clock() - start < INTERVAL


def test_the_join_wait_long_polls_promenade_from_the_last_version(harness: Harness) -> None:
    harness.drydock.versions = True
    promenade = WatchingPromenade(ready_after=3)
    harness.promenade = harness.services.promenade = promenade
    slow_design(harness)
    start = harness.clock()
    view = redeploy(harness)
    assert view["state"] == "complete"
    assert harness.clock() == start
    assert promenade.since == [None, "1", "2"]  # each look waits from the previous answer


def test_without_node_versions_the_join_wait_polls_soon_after_its_first_look(
        harness: Harness) -> None:
    harness.drydock.versions = True
    harness.promenade.ready_after = 2
    slow_design(harness)
    start = harness.clock()
    view = redeploy(harness)
    assert view["state"] == "complete"
    assert FIRST_POLL <= harness.clock() - start < INTERVAL  # one wait: FIRST_POLL


@dataclass
class BusyPromenade(FakePromenade):
    """Versions, but every long-poll refused as over the cap; the node joins `after` s after
    the first look at it."""

    after: float = 3.0
    looks: list[float] = field(default_factory=list)
    now: Any = None

    def watch_node(self, node: str, *, since: str | None, wait: float,
                   ctx: RequestContext) -> NodeWatch:
        self.looks.append(self.now())
        ready = "True" if self.now() - self.looks[0] >= self.after else "Unknown"
        status: Any = {**(self.node_status(node, ctx=ctx) or {}),
                       "kubelet": {"ready": ready, "ready_since": None}}
        return NodeWatch(status, "7", busy=True)


def test_a_busy_promenade_is_asked_again_soon_and_at_most_every_interval(
        harness: Harness) -> None:
    harness.drydock.versions = True
    promenade = BusyPromenade(now=harness.clock, after=3.0)
    harness.promenade = harness.services.promenade = promenade
    slow_design(harness)
    view = redeploy(harness)
    assert view["state"] == "complete"
    ready = promenade.looks[0] + 3.0
    assert 0 <= promenade.looks[-1] - ready <= 1.0  # not a whole INTERVAL later
    gaps = [b - a for a, b in zip(promenade.looks, promenade.looks[1:], strict=False)]
    assert gaps[0] == FIRST_POLL and max(gaps) <= INTERVAL
