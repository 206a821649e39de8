"""redeploy_server and failure-domain budgets (Drydock faked): a full domain makes the node's
chain wait, shown as a blocker naming the domain and its holders, or refuses the action at
POST with 409 (budget=refuse); slots are given back when the node is in service again."""

from __future__ import annotations

import pytest

from common.context import RequestContext
from common.errors import BerthError, ValidationFailed
from tests.unit.shipyard.conftest import Harness

OTHER = "shipyard:11111111-0000-4000-8000-000000000000:node09"


def test_full_domain_makes_the_node_wait_naming_domain_and_holder(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.budget = 1
    harness.drydock.slots[OTHER] = "node09"
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.run_until(lambda: harness.step(action["id"], "take_budget_slot.node01")
                      ["step_state"] == "waiting")
    step = harness.step(action["id"], "take_budget_slot.node01")
    blocker = step["details"]["blocked"]["blockers"][0]
    assert blocker["domain"] == "rack:all" and blocker["holders"][0]["holder"] == OTHER
    assert harness.step(action["id"], "fence_node.node01")["step_state"] == "pending"
    assert not harness.promenade.effects  # nothing was taken out of service
    del harness.drydock.slots[OTHER]  # the other holder gives its slot back
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert harness.drydock.slots == {}  # given back once the node was in service


def test_refuse_is_409_at_post_naming_domain_and_holder(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.budget = 1
    harness.drydock.slots[OTHER] = "node09"
    with pytest.raises(BerthError) as caught:
        harness.create("redeploy_server", {"target_nodes": "node01", "budget": "refuse"})
    err = caught.value
    assert err.code == 409 and err.instance_reason == "BudgetExhausted"
    assert "rack:all" in err.message and OTHER in err.message
    assert harness.api.list() == []
    assert list(harness.drydock.slots) == [OTHER]


def test_budget_choice_is_validated(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    with pytest.raises(ValidationFailed) as caught:
        harness.create("redeploy_server", {"target_nodes": "node01", "budget": "maybe"})
    assert "budget" in caught.value.message + str(caught.value.messages)


def test_failed_action_gives_its_slots_back(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.budget = 1
    harness.drydock.fail.add(("destroy_nodes", "node01"))
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert harness.drydock.slots == {}


def test_live_actions_slots_are_renewed_and_a_dead_workers_are_not(harness: Harness) -> None:
    from sqlalchemy import update

    from shipyard_api.actions.budget import SlotRenewer
    from shipyard_api.workflow.models import ActionRow

    harness.commit(tag="site-action-success")
    harness.drydock.budget = 2
    harness.drydock.polls_to_finish = 10**6  # Drydock's tasks never end: the node stays out
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.run_until(lambda: harness.step(action["id"], "take_budget_slot.node01")
                      ["state"] == "success")
    assert harness.step(action["id"], "release_budget_slot.node01")["step_state"] == "pending"
    renewer = SlotRenewer(harness.store, harness.services, clock=harness.clock)
    assert renewer.renew_once() == 1
    with harness.store._sessions.begin() as s:  # its worker died: lease owned, run out
        s.execute(update(ActionRow).where(ActionRow.id == action["id"]).values(
            lease_owner="dead-worker", lease_expires=harness.clock() - 1))
    assert renewer.renew_once() == 0


def test_plan_names_a_full_domain_as_wait_or_blocker(harness: Harness) -> None:
    from shipyard_api.db import session_factory
    from shipyard_api.plans.service import PlanService
    from shipyard_api.plans.store import PlanStore

    store = PlanStore(session_factory(harness.engine_db))
    harness.services.plans = store
    planner = PlanService(store, harness.api, ttl=600, clock=harness.clock)
    harness.commit(tag="site-action-success")
    harness.drydock.budget = 1
    harness.drydock.slots[OTHER] = "node09"
    ctx = RequestContext(marker="6f1c3d2e-0000-4000-8000-000000000009", user="admin")
    waits = planner.create("redeploy_server", {"target_nodes": "node01"}, ctx)
    assert waits["verdict"] != "blocked"
    assert any("node01 would wait for its slot" in w["message"] and OTHER in w["message"]
               for w in waits["warnings"]), waits["warnings"]
    refuses = planner.create("redeploy_server", {"target_nodes": "node01",
                                                 "budget": "refuse"}, ctx)
    assert refuses["verdict"] == "blocked"
    assert any("rack:all" in b["message"] and OTHER in b["message"]
               for b in refuses["blockers"]), refuses["blockers"]
    assert list(harness.drydock.slots) == [OTHER]  # a plan takes no slot


def test_drydock_tasks_of_a_redeploy_act_under_its_slot(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.budget = 1
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    holders = {harness.drydock.tasks[t]["action"]: h
               for t, h in harness.drydock.budget_holders.items()}
    expected = f"shipyard:{view['context_marker']}:node01"
    assert holders["destroy_nodes"] == holders["prepare_nodes"] == expected
    assert holders["deploy_nodes"] == expected  # no second slot taken in Drydock


def test_drydock_tasks_without_a_domain_carry_no_holder(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    assert harness.drive(action["id"])["state"] == "complete"
    assert set(harness.drydock.budget_holders.values()) == {None}


def test_deploy_site_shows_the_nodes_drydock_holds_back_as_a_blocker(
        harness: Harness) -> None:
    harness.commit()
    action = harness.create("deploy_site")
    harness.run_until(lambda: any(t["action"] == "deploy_nodes"
                                  for t in harness.drydock.tasks.values()))
    harness.drydock.polls_to_finish = 10**6  # the group's deploy task runs on
    task = next(t for t in harness.drydock.tasks.values() if t["action"] == "deploy_nodes")
    held = {"domain": "rack:rack01", "budget": 1, "holders": [{"holder": "drydock:k:node01"}],
            "message": "failure domain rack:rack01 has its budget of 1 out of service taken "
                       "by drydock:k:node01 (node01, deploy_nodes task t)"}
    task["result"] = {"status": "incomplete", "details": {"messageList": [  # as Drydock has it
        {"node": "node01", "step": "take_budget_slot", "message": "slots taken"},
        {"node": "node02", "step": "take_budget_slot", "reason": "BudgetExhausted",
         "message": "node02: waiting ...", "blockers": [held]},
        {"node": "node03", "step": "take_budget_slot", "reason": "BudgetExhausted",
         "message": "node03: waiting ...", "blockers": [held]},
        {"node": "node03", "step": "take_budget_slot", "message": "slots taken"}]}}
    harness.run_until(lambda: "blocked" in harness.step(action["id"], "baremetal")["details"])
    blocked = harness.step(action["id"], "baremetal")["details"]["blocked"]
    assert blocked["reason"] == "BudgetExhausted" and blocked["nodes"] == ["node02"]
    assert blocked["blockers"][0]["domain"] == "rack:rack01"
    assert "node02: failure domain rack:rack01" in blocked["message"]
    assert "drydock:k:node01" in blocked["message"]


def test_a_node_in_no_failure_domain_has_nothing_to_renew(harness: Harness) -> None:
    """Its take step took no slot (the design declares no budget for it): Drydock is not
    asked to renew a holder it does not know, once per quarter lease for the whole action."""
    from shipyard_api.actions.budget import SlotRenewer

    harness.commit(tag="site-action-success")
    harness.drydock.budget = None  # no failure domain: the take answers no slot
    harness.drydock.polls_to_finish = 10**6
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.run_until(lambda: harness.step(action["id"], "take_budget_slot.node01")
                      ["state"] == "success")
    renewer = SlotRenewer(harness.store, harness.services, clock=harness.clock)
    assert renewer.renew_once() == 0
    assert harness.drydock.renewals == []
