"""The engine alone applies retries, backoff, timeouts, pause, unpause, stop and crash resume."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from common.context import RequestContext
from common.errors import BadGateway, Conflict
from shipyard_api.clients.fakes import FakeDrydock, FakePromenade
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.design import design


class Crash(BaseException):
    """Stands for the worker process dying (not an error the engine may handle)."""


def _redeploy(h: Harness, nodes: str = "node01") -> dict[str, Any]:
    h.commit(tag="site-action-success")
    return h.create("redeploy_server", {"target_nodes": nodes})


def test_unhealthy_peer_is_retried_with_exponential_backoff_then_fails(harness: Harness) -> None:
    harness.drydock.health = False
    action = _redeploy(harness)
    view = harness.drive(action["id"])
    step = harness.step(action["id"], "preflight")
    assert view["state"] == "failed" and view["reason"] == "ServiceUnavailable"
    assert step["attempts"] == 3  # one try and two retries (step_retries = 2)


def test_backoff_doubles_between_retries(harness: Harness) -> None:
    harness.drydock.health = False
    action = _redeploy(harness)
    engine = harness.engine(hold=0.0)
    engine.run_once()
    first = harness.store.steps(action["id"])[0]
    assert first.next_attempt_at == pytest.approx(harness.clock.now + 5.0)
    harness.clock.now = first.next_attempt_at or 0
    engine.run_once()
    second = harness.store.steps(action["id"])[0]
    assert second.next_attempt_at == pytest.approx(harness.clock.now + 10.0)


def test_step_that_keeps_polling_fails_with_timeout(harness: Harness) -> None:
    harness.drydock.polls_to_finish = 10_000
    action = _redeploy(harness)
    view = harness.drive(action["id"], rounds=2000)
    step = harness.step(action["id"], "destroy_nodes.node01")
    assert view["state"] == "failed" and view["reason"] == "Timeout"
    assert step["state"] == "failed" and step["reason"] == "Timeout"
    assert harness.drydock.created("prepare_nodes") == 0


def test_idempotency_key_is_the_same_on_every_retry_of_a_step(harness: Harness) -> None:
    flaky = FlakyDrydock(failures=2)
    harness.services.drydock = flaky
    action = _redeploy(harness)
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    keys = [c.key for c in flaky.calls if c.op == "create:destroy_nodes"]
    assert len(keys) == 3 and len(set(keys)) == 1
    assert keys[0] == f"{action['id']}:destroy_nodes.node01"
    assert flaky.created("destroy_nodes") == 1


class FlakyDrydock(FakeDrydock):
    """Fails the first `failures` task creations like a Drydock that answered 502."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def create_task(self, action: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        result = super().create_task(action, *args, **kwargs)
        if action == "destroy_nodes" and self.failures:
            self.failures -= 1
            raise BadGateway("Drydock: answered 502")
        return result


def test_pause_holds_before_the_next_step_and_unpause_resumes(harness: Harness) -> None:
    action = _redeploy(harness)
    ctx = RequestContext(user="admin")
    harness.promenade.on_decommission = lambda node: harness.api.control(action["id"], "pause",
                                                                          ctx)
    view = harness.drive(action["id"], until=("paused",))
    assert view["state"] == "paused"
    states = {s["id"]: s["step_state"] for s in view["steps"]}
    assert states["decommission.node01"] == "success"
    assert states["destroy_nodes.node01"] == "pending"
    assert harness.engine("w2").run_once() is False  # a paused action is not claimed
    harness.promenade.on_decommission = None
    harness.api.control(action["id"], "unpause", ctx)
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    assert [a["command"] for a in view["command_audit"]] == ["create", "pause", "unpause"]


def test_stop_ends_after_the_current_step_and_skips_the_rest(harness: Harness) -> None:
    action = _redeploy(harness)
    ctx = RequestContext(user="admin")
    harness.promenade.on_decommission = lambda node: harness.api.control(action["id"], "stop",
                                                                          ctx)
    view = harness.drive(action["id"])
    states = {s["id"]: s["step_state"] for s in view["steps"]}
    assert view["state"] == "stopped"
    assert states["decommission.node01"] == "success"
    assert {states[k] for k in states if k.startswith(("destroy", "deploy"))} == {"skipped"}
    assert harness.drydock.tasks == {}


def test_controls_refused_in_the_wrong_state_with_409(harness: Harness) -> None:
    action = _redeploy(harness)
    ctx = RequestContext(user="admin")
    with pytest.raises(Conflict):
        harness.api.control(action["id"], "unpause", ctx)
    harness.drive(action["id"])
    for verb in ("pause", "unpause", "stop"):
        with pytest.raises(Conflict):
            harness.api.control(action["id"], verb, ctx)
    outcomes = [a["outcome"] for a in harness.api.get(action["id"])["command_audit"]]
    assert outcomes.count("refused in state complete") == 3


def test_paused_action_can_be_stopped(harness: Harness) -> None:
    action = _redeploy(harness)
    ctx = RequestContext(user="admin")
    harness.api.control(action["id"], "pause", ctx)
    harness.api.control(action["id"], "stop", ctx)
    view = harness.drive(action["id"])
    assert view["state"] == "stopped"
    assert harness.promenade.calls == []


class CrashingPromenade(FakePromenade):
    """Dies right after Promenade performed the decommission (before Shipyard recorded it)."""

    crashed = False

    def decommission(self, node: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        answer = super().decommission(node, *args, **kwargs)
        if not self.crashed:
            self.crashed = True
            raise Crash()
        return answer


class CrashingDrydock(FakeDrydock):
    """Dies right after Drydock created the destroy task."""

    crashed = False

    def create_task(self, action: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        task = super().create_task(action, *args, **kwargs)
        if action == "destroy_nodes" and not self.crashed:
            self.crashed = True
            raise Crash()
        return task


def test_crashed_worker_is_taken_over_after_lease_expiry_without_repeating_effects(
        harness: Harness) -> None:
    harness.services.promenade = harness.promenade = CrashingPromenade()
    harness.services.drydock = harness.drydock = CrashingDrydock()
    action = _redeploy(harness)
    first = harness.engine("w1", lease=30)
    with pytest.raises(Crash):
        first.run_once()
    assert harness.step(action["id"], "decommission.node01")["state"] == "running"
    second = harness.engine("w2", lease=30)
    assert second.run_once() is False  # the dead worker's lease still holds
    harness.clock.sleep(31)
    with pytest.raises(Crash):  # resumes decommission, then dies again creating the task
        second.run_once()
    third = harness.engine("w3", lease=30)
    harness.clock.sleep(31)
    view = harness.drive(action["id"], third)
    assert view["state"] == "complete"
    assert harness.promenade.count("decommission", "node01") == 1
    assert harness.drydock.created("destroy_nodes", "node01") == 1
    steps = {s["id"]: s for s in view["steps"]}
    assert steps["preflight"]["attempts"] == 1  # completed steps are not run again
    assert steps["decommission.node01"]["attempts"] == 2
    keys = {c.key for c in harness.promenade.calls if c.op == "decommission"}
    assert keys == {f"{action['id']}:decommission.node01"}


def test_other_worker_cannot_claim_an_action_being_run(harness: Harness) -> None:
    action = _redeploy(harness)
    assert harness.store.claim("w1", harness.clock(), 30) == action["id"]
    assert harness.store.claim("w2", harness.clock(), 30) is None
    harness.clock.sleep(31)
    assert harness.store.claim("w2", harness.clock(), 30) == action["id"]
    assert harness.store.renew(action["id"], "w1", harness.clock(), 30) is False


def test_engine_hands_back_an_action_waiting_longer_than_hold(harness: Harness) -> None:
    harness.commit(design(config={"physical_provisioner": {"destroy_interval": 60}}),
                   tag="site-action-success")
    harness.drydock.polls_to_finish = 10_000  # the task runs on
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    engine = harness.engine()  # holds the action 5 s at most
    engine.run_once()  # its polls are held while due within 5 s (a young task's)
    row = harness.store.get(action["id"])
    assert row.lease_owner is None
    assert 5 < row.next_run_at - harness.clock.now <= 60
    assert harness.step(action["id"], "destroy_nodes.node01")["step_state"] == "waiting"


def test_a_run_renews_the_lease_once_per_third_of_it_not_on_every_turn(
        harness: Harness) -> None:
    """Each turn of a run (one per attempt ended) used to renew the action's lease, a write
    per turn; a run renews it when a third of the lease passed since its last renewal, and
    every step's write still checks the holder (ActionStore.save_step)."""
    harness.drydock.polls_to_finish = 40  # each Drydock task waits: the run's clock moves
    action = _redeploy(harness)
    renewals: list[float] = []
    renew = harness.store.renew

    def counted(action_id: str, owner: str, now: float, ttl: float) -> bool:
        renewals.append(now)
        return renew(action_id, owner, now, ttl)

    harness.store.renew = counted  # type: ignore[method-assign]
    started = harness.clock.now
    view = harness.drive(action["id"], harness.engine("w1", lease=30))
    assert view["state"] == "complete"
    turns = sum(s["attempts"] for s in view["steps"])
    elapsed = harness.clock.now - started
    assert elapsed > 60 and turns > 20
    assert len(renewals) < turns / 10  # 135 turns, 10 renewals over 95 s
    assert all(b - a >= 10 for a, b in pairwise(renewals))
