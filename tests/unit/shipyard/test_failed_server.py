"""redeploy_server on dead, half-dead and half-torn-down nodes: paths, outages, stop, messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from common.context import RequestContext
from common.errors import BadGateway
from shipyard_api.actions.fencing import FENCE_FIRST, GRACEFUL, Facts, choose
from shipyard_api.clients.fakes import FakeDrydock
from tests.unit.shipyard.conftest import Harness

ADMIN = RequestContext(user="admin")
DEAD = {"name": "node03", "kubelet": {"ready": "Unknown", "ready_since": "2026-11-24T03:00:00Z"}}


def facts(kubernetes: str = "Ready", power: str | None = "on", **kw: Any) -> Facts:
    return Facts(node="node03", kubernetes=kubernetes, not_ready_for=kw.get("since"),
                 power=power, bmc="127.0.0.1:6231", bmc_error=kw.get("error"),
                 maas_status="Deployed", etcd=())


@pytest.mark.parametrize(("kube", "power", "path"), [
    ("Ready", "on", GRACEFUL), ("absent", "on", GRACEFUL), ("absent", "off", GRACEFUL),
    ("Ready", "off", FENCE_FIRST), ("Unknown", "on", FENCE_FIRST),
    ("NotReady", "off", FENCE_FIRST), ("Unknown", None, None), ("Ready", None, None)])
def test_path_table(kube: str, power: str | None, path: str | None) -> None:
    assert choose(facts(kube, power, error="timeout")).path == path


def test_refusal_names_the_node_the_bmc_and_what_was_not_confirmed() -> None:
    error = "IPMI BMC ipmi 127.0.0.1:6231 did not answer power state"
    reason = choose(facts("Unknown", None, since=95, error=error)).reason
    assert reason.startswith(f"node03: {error}; ")
    assert "power-off could not be confirmed" in reason and "Unknown for 95 s" in reason
    assert reason.endswith("nothing was changed")


def _redeploy(h: Harness, node: str = "node03") -> dict[str, Any]:
    h.commit(tag="site-action-success")
    return h.create("redeploy_server", {"target_nodes": node})


def test_not_ready_node_with_a_dead_bmc_is_refused_at_once_and_untouched(
        harness: Harness) -> None:
    harness.promenade.views["node03"] = DEAD
    harness.drydock.bmc_down.add("node03")
    action = _redeploy(harness)
    view = harness.drive(action["id"])
    step = harness.step(action["id"], "assess_node.node03")
    assert view["state"] == "failed" and view["reason"] == "PowerOffUnconfirmed"
    assert step["attempts"] == 1
    assert "node03: BMC bmc-node03 did not answer" in view["message"]
    assert harness.promenade.effects == [] and harness.drydock.tasks == {}


def test_dead_node_is_fenced_before_its_pods_are_removed(harness: Harness) -> None:
    harness.promenade.views["node03"] = DEAD
    harness.promenade.on_decommission = lambda node: harness.promenade.views.pop(node)
    action = _redeploy(harness)
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assess = harness.step(action["id"], "assess_node.node03")
    assert assess["details"]["path"] == FENCE_FIRST
    assert assess["notes"][-1]["message"].startswith("fence-first: node03 is Unknown")
    first = next(iter(harness.drydock.tasks.values()))
    assert first["action"] == "power_off_nodes" and first["options"] == {"force": True}
    assert harness.promenade.fenced == ["node03"]


def test_healthy_node_takes_the_graceful_path_unfenced(harness: Harness) -> None:
    action = _redeploy(harness)
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    assert harness.step(action["id"], "assess_node.node03")["details"]["path"] == GRACEFUL
    assert harness.promenade.fenced == [] and harness.drydock.created("power_off_nodes") == 0


class OutageDrydock(FakeDrydock):
    """Answers 502 to every task read until the clock reaches `back_at`."""

    def __init__(self, clock: Any, back_at: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.clock, self.back_at = clock, back_at

    def get_task(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]:
        if self.clock.now < self.back_at:
            raise BadGateway("Drydock unreachable for GET /tasks: connection refused")
        return super().get_task(task_id, ctx=ctx)


def with_outage(harness: Harness, drydock: OutageDrydock, backoff: float,
                window: float) -> None:
    harness.services.drydock = drydock
    harness.services.settings = replace(harness.settings, step_retries=1, step_backoff=backoff,
                                        max_backoff=backoff * 2, outage_window=window)


def test_a_drydock_outage_longer_than_the_retries_is_ridden_out(harness: Harness) -> None:
    drydock = OutageDrydock(harness.clock, harness.clock.now + 15, polls_to_finish=3)
    with_outage(harness, drydock, backoff=2.0, window=20.0)
    action = _redeploy(harness)
    view = harness.drive(action["id"], rounds=2000)
    assert view["state"] == "complete", view["message"]
    assert drydock.created("destroy_nodes") == 1  # re-attached, never a second task
    notes = [n["message"] for s in view["steps"] for n in s["notes"]]
    assert any("failing for" in n for n in notes)


def test_an_outage_beyond_the_window_fails_saying_how_long(harness: Harness) -> None:
    with_outage(harness, OutageDrydock(harness.clock, float("inf")), backoff=2.5, window=12.0)
    action = _redeploy(harness)
    view = harness.drive(action["id"], rounds=2000)
    assert view["state"] == "failed" and view["reason"] == "BadGateway"
    assert "connection refused (failing for" in view["message"]


def test_stop_terminates_the_drydock_task_the_step_waits_for(harness: Harness) -> None:
    harness.drydock.polls_to_finish = 10_000
    action = _redeploy(harness)
    harness.run_until(lambda: harness.drydock.created("destroy_nodes"))
    harness.api.control(action["id"], "stop", ADMIN)
    view = harness.drive(action["id"])
    assert view["state"] == "stopped"
    destroy = next(t for t in harness.drydock.tasks.values() if t["action"] == "destroy_nodes")
    assert harness.drydock.terminated == [destroy["task_id"]]
    assert destroy["status"] == "terminated"


def test_stop_during_decommission_cancels_it(harness: Harness) -> None:
    action = _redeploy(harness)
    harness.promenade.on_decommission = lambda node: harness.api.control(action["id"], "stop",
                                                                          ADMIN)
    engine = harness.engine()
    engine.run_once()
    run = engine.store.get(action["id"])
    assert run.state in ("stopping", "stopped")
    view = harness.drive(action["id"])
    assert view["state"] == "stopped"


def test_a_step_timeout_terminates_its_drydock_task(harness: Harness) -> None:
    harness.drydock.polls_to_finish = 10_000
    action = _redeploy(harness)
    view = harness.drive(action["id"], rounds=2000)
    assert view["state"] == "failed" and view["reason"] == "Timeout"
    destroy = next(t for t in harness.drydock.tasks.values() if t["action"] == "destroy_nodes")
    assert harness.drydock.terminated == [destroy["task_id"]]


def test_failed_drydock_task_message_reaches_the_action(harness: Harness) -> None:
    harness.drydock.fail.add(("destroy_nodes", "node03"))
    action = _redeploy(harness)
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert view["message"].startswith("Step destroy_nodes.node03 failed: DrydockTaskFailed: ")
    assert "destroy_nodes task" in view["message"]
