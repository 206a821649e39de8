"""redeploy_server's power_policy and grace_period: checked at POST (one 400 listing every
problem, nothing created), passed to Drydock's destroy task (and to the fence when asked), and
what the power-off got shown in the step; soft-only that leaves the node on fails the step."""

from __future__ import annotations

import pytest

from common.errors import ValidationFailed
from common.workflow import Done, Failed
from shipyard_api.actions import power
from tests.unit.shipyard.conftest import Harness


def test_bad_power_parameters_are_one_400_listing_every_problem(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    with pytest.raises(ValidationFailed) as err:
        harness.create("redeploy_server", {"target_nodes": "node01", "power_policy": "gentle",
                                           "grace_period": -3, "erase": "paranoid"})
    texts = [m["message"] for m in err.value.messages]
    assert len(texts) == 3, texts
    assert any("power_policy must be one of soft-then-hard, soft-only, hard" in t
               for t in texts)
    assert any("grace_period must be a number of seconds from 0 to 86400" in t for t in texts)
    assert any("Parameter erase must be one of" in t for t in texts)
    with pytest.raises(ValidationFailed) as hard:
        harness.create("redeploy_server", {"target_nodes": "node01", "power_policy": "hard",
                                           "grace_period": "5"})
    assert [m["message"] for m in hard.value.messages] == [
        "Parameter grace_period is not used with power_policy=hard (no graceful shutdown "
        "is asked)"]
    assert harness.api.list() == [] and harness.drydock.tasks == {}


def test_the_power_policy_reaches_drydocks_destroy_task(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drive(harness.create("redeploy_server", {
        "target_nodes": "node01", "power-policy": "soft-only", "grace-period": "2.5"})["id"])
    harness.drive(harness.create("redeploy_server", {
        "target_nodes": "node02", "power_policy": "hard"})["id"])
    harness.drive(harness.create("redeploy_server", {"target_nodes": "node03"})["id"])
    destroy = [t["options"] for t in harness.drydock.tasks.values()
               if t["action"] == "destroy_nodes"]
    assert destroy == [
        {"preserve_local_storage": False, "power_policy": "soft-only", "grace_period": 2.5},
        {"preserve_local_storage": False, "power_policy": "hard"},
        {"preserve_local_storage": False}]  # Drydock's defaults


def test_the_fence_stays_hard_unless_a_policy_is_asked() -> None:
    assert power.fence_options({}) == {"force": True}
    assert power.fence_options({"power_policy": "soft-then-hard", "grace_period": 4}) == {
        "power_policy": "soft-then-hard", "grace_period": 4}


def task(*messages: dict[str, object]) -> dict[str, object]:
    return {"result": {"details": {"messageList": list(messages)}}}


FORCED = {"power_policy": "soft-then-hard", "grace_period": 1.0, "grace_period_from": "request",
          "outcome": "forced", "forced_after": 1.2,
          "summary": "forced off after the graceful shutdown timed out (1.2 s; ...)"}
NOT_OFF = {"power_policy": "soft-only", "grace_period": 1.0, "grace_period_from": "request",
           "outcome": "not-off", "summary": "not powered off: the graceful shutdown did not "
           "power the node off within the 1 s grace period (request), and power_policy "
           "soft-only forbids forcing it"}


def test_the_step_shows_what_the_power_off_got() -> None:
    shown = power.with_report(Done(details={"task": task(
        {"message": "node01: plan", "step": "plan_wipe", "node": "node01"},
        {"message": "node01: Powered off ...", "step": "power_off", "node": "node01",
         "power": FORCED})}))
    assert isinstance(shown, Done)
    assert shown.details["power"] == [{"node": "node01", **FORCED}]


def test_soft_only_that_leaves_the_node_on_fails_the_step_with_that_reason() -> None:
    shown = power.with_report(Failed("DrydockTaskFailed", "Drydock destroy_nodes task t1 "
                                     "ended complete with result failure", details={
                                         "task": task({"message": "node01: ...",
                                                       "step": "power_off", "node": "node01",
                                                       "error": True, "power": NOT_OFF})}))
    assert isinstance(shown, Failed) and shown.reason == "GracefulShutdownTimeout"
    assert shown.message.startswith("node01: not powered off")
    assert shown.message.endswith("nothing was forced")
    assert shown.details["power"][0]["outcome"] == "not-off"
