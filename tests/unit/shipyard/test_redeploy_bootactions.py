"""redeploy_server's wait_boot_actions: the node's boot action report decides, not only Ready."""

from __future__ import annotations

from typing import Any

import pytest

from shipyard_api.actions.bootactions import BMC_PACE
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.design import design


def with_bootactions(harness: Harness, monkeypatch: pytest.MonkeyPatch,
                     actions: list[dict[str, Any]], refusals: list[dict[str, Any]] | None = None
                     ) -> None:
    original = harness.drydock.node

    def node(name: str, design_ref: str, *, ctx: Any) -> dict[str, Any]:
        return {**original(name, design_ref, ctx=ctx), "bootactions": actions,
                "bootaction_refusals": refusals or []}

    monkeypatch.setattr(harness.drydock, "node", node)


def action(status: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"action_id": "01J0000000000000000000PROM", "action_name": "promjoin",
            "node_name": "node01", "action_status": status, "signaling": True,
            "details": details or []}


def redeploy(harness: Harness, rounds: int = 500) -> dict[str, Any]:
    harness.commit(tag="site-action-success")
    created = harness.create("redeploy_server", {"target_nodes": "node01"})
    return harness.drive(created["id"], rounds=rounds)


def test_a_success_report_lets_the_redeploy_go_on(harness: Harness, monkeypatch):
    with_bootactions(harness, monkeypatch, [action("success")])
    view = redeploy(harness)
    assert view["state"] == "complete", view["message"]
    step = next(s for s in view["steps"] if s["id"] == "wait_boot_actions.node01")
    assert step["state"] == "success"


def test_a_failure_report_fails_the_step_with_its_reason(harness: Harness, monkeypatch):
    with_bootactions(harness, monkeypatch, [action("failure", [
        {"message": "/opt/promjoin.sh: the script ends before join_done (cut short)",
         "error": True}])])
    view = redeploy(harness)
    assert view["state"] == "failed"
    step = harness.step(view["id"], "wait_boot_actions.node01")
    text = str(step)
    assert "BootActionFailed" in text and "cut short" in text
    assert harness.promenade.labels.get("node01") is None  # never relabelled: not joined


def test_no_report_in_time_names_the_missing_report(harness: Harness, monkeypatch):
    with_bootactions(harness, monkeypatch, [action("incomplete")],
                     [{"at": 1.0, "reason": "invalid X-Bootaction-Key"}])
    view = redeploy(harness, rounds=3000)
    assert view["state"] == "failed"
    text = str(harness.step(view["id"], "wait_boot_actions.node01"))
    assert "BootActionReportMissing" in text
    assert "No report of boot action promjoin (01J0000000000000000000PROM)" in text
    assert "invalid X-Bootaction-Key" in text


def test_a_late_report_is_seen_soon_not_a_whole_interval_later(harness: Harness,
                                                                monkeypatch):
    """The host reports 12 s after the step's first look; with node_status_interval 600 s the
    step sees it at the next look of its backoff, not 600 s later, and never asks Drydock
    (whose node view reads the BMC) more often than every BMC_PACE s."""
    looks: list[float] = []
    original = harness.drydock.node

    def node(name: str, design_ref: str, *, ctx: Any) -> dict[str, Any]:
        deployed = any(t["action"] == "deploy_nodes" for t in harness.drydock.tasks.values())
        looks.extend([harness.clock()] if deployed else [])  # not assess_node's read
        late = not looks or harness.clock() - looks[0] < 12.0
        return {**original(name, design_ref, ctx=ctx), "bootaction_refusals": [],
                "bootactions": [action("incomplete" if late else "success")]}

    monkeypatch.setattr(harness.drydock, "node", node)
    harness.commit(design(config={"kubernetes": {"node_status_interval": 600,
                                                 "node_status_timeout": 3600}}),
                   tag="site-action-success")
    created = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(created["id"], rounds=3000)
    assert view["state"] == "complete", view["message"]
    found = next(i for i, t in enumerate(looks) if t - looks[0] >= 12.0)
    assert looks[found] - (looks[0] + 12.0) <= BMC_PACE  # not a whole interval later
    waiting = looks[:found + 1]  # the step's own looks (later steps read the node too)
    assert min(b - a for a, b in zip(waiting, waiting[1:], strict=False)) >= BMC_PACE
