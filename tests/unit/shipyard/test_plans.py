"""Plans: composed from the peers' previews, stored with an expiry, changing nothing; actions
created from a plan whose steps stop when a fact the plan relied on changed."""

from __future__ import annotations

from typing import Any

import pytest

from common.context import RequestContext
from common.errors import Conflict, NotFound, ValidationFailed
from shipyard_api.db import session_factory
from shipyard_api.plans.service import PlanService
from shipyard_api.plans.store import PlanStore
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.design import design, document

CTX = RequestContext(marker="6f1c3d2e-0000-4000-8000-0000000000aa", user="admin")
WEB_BUDGET = {"budget": "demo/web", "disruptions_allowed": 1, "current_healthy": 3,
              "desired_healthy": 2, "expected_pods": 3, "unhealthy": 0,
              "pods_on_node": ["demo/web-1"], "never_allows": False}


def etcd_entry(down: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"cluster": "kubernetes", "threshold": 1, "learners": [],
            "members": [{"name": n, "healthy": n not in down} for n in ("node01", "node02")],
            "removing": ["node01"], "leader_move": False, "removal_in_flight": None,
            "allowed": True}


def drain(budgets: list[dict[str, Any]], locks: list[str] | None = None) -> dict[str, Any]:
    return {"evict": [{"pod": "demo/web-1", "reason": "evicted"}], "skipped": [],
            "budgets": budgets, "eviction_locks": locks or [], "can_finish": True,
            "blocked_by": []}


@pytest.fixture
def planner(harness: Harness) -> PlanService:
    store = PlanStore(session_factory(harness.engine_db))
    harness.services.plans = store
    service = PlanService(store, harness.api, ttl=600, clock=harness.clock)
    harness.api.plans = service
    return service


def _effects(harness: Harness) -> list[Any]:
    writes = [c for c in harness.drydock.calls if c.op.startswith("create:")]
    return writes + harness.promenade.effects


def test_redeploy_plan_answers_per_node_and_changes_nothing(harness: Harness,
                                                           planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.previews["node01"] = {"drain": drain([WEB_BUDGET]),
                                            "etcd": [etcd_entry()]}
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    assert plan["verdict"] == "clear" and plan["blockers"] == []
    [node] = plan["nodes"]
    assert node["path"]["path"] == "graceful"
    assert node["drain"]["budgets"][0]["budget"] == "demo/web"
    assert node["baremetal"]["bmc"]["reachable"] is True
    requests = [c["request"] for c in node["calls"]]
    assert requests[0].startswith("POST /api/v1.0/nodes/node01/decommission?drain-node-timeout=")
    assert [c["step"] for c in node["calls"]] == [
        "decommission", "destroy_nodes", "remove_from_cluster", "prepare_nodes",
        "deploy_nodes", "wait_node_ready", "relabel_nodes"]
    assert "assess_node.node01" in plan["steps"]
    rules = {f["fact"]: f["rule"] for f in plan["facts"]}
    assert rules["PodDisruptionBudget demo/web disruptions allowed"] == "at_least"
    assert rules["etcd kubernetes healthy members"] == "keeps"
    assert _effects(harness) == [] and harness.api.list() == []
    assert planner.get(plan["id"])["expires"] > plan["created"]


def test_plan_with_blockers_pdb_at_zero_quorum_and_ipmi_keeping_storage(
        harness: Harness, planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.previews["node01"] = {"blockers": [
        "PodDisruptionBudget demo/web allows 0 disruptions now",
        "etcd cluster kubernetes: removing node01 is refused: below the quorum of 2"]}
    harness.drydock.wipe_refusals["node02"] = ("Node node02: preserve_local_storage must erase "
                                               "the OS disk sda alone ... its BMC (ipmi)")
    plan = planner.create("redeploy_server", {"target_nodes": "node01,node02",
                                              "preserve-local-storage": True}, CTX)
    assert plan["verdict"] == "blocked"
    found = [(b["node"], b["source"], b["message"][:24]) for b in plan["blockers"]]
    assert ("node01", "promenade", "PodDisruptionBudget demo") in found
    assert ("node01", "promenade", "etcd cluster kubernetes:") in found
    assert ("node02", "drydock", "Node node02: preserve_lo") in found
    with pytest.raises(ValidationFailed):  # Drydock refuses the wipe at creation too
        harness.api.create("redeploy_server", {"target_nodes": "node01,node02",
                                               "preserve-local-storage": True}, CTX,
                           plan_id=plan["id"])
    blocked = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    with pytest.raises(Conflict) as err:
        harness.api.create("redeploy_server", {"target_nodes": "node01"}, CTX,
                           plan_id=blocked["id"])
    assert err.value.instance_reason == "PlanBlocked"
    assert "PodDisruptionBudget demo/web allows 0" in err.value.message
    assert harness.api.list() == []


def test_dead_bmc_blocks_and_powered_off_node_plans_fence_first(harness: Harness,
                                                               planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.bmc_down.add("node01")
    harness.drydock.power["node02"] = "off"
    plan = planner.create("redeploy_server", {"target_nodes": ["node01", "node02"]}, CTX)
    one, two = plan["nodes"]
    assert one["path"]["path"] is None and "nothing was changed" in one["path"]["reason"]
    assert two["path"]["path"] == "fence-first"
    assert two["calls"][0]["request"].endswith('power_off_nodes {"force": true}')
    assert "fenced=true" in two["calls"][1]["request"]
    assert any(c.op == "decommission_preview" and c.node == "node02"
               for c in harness.promenade.calls)


def test_running_action_on_the_same_node_is_a_conflict_blocker(harness: Harness,
                                                              planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    running = harness.create("redeploy_server", {"target_nodes": "node01"})
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    assert [c["id"] for c in plan["conflicts"]] == [running["id"]]
    assert any("Conflicting actions" in b["message"] for b in plan["blockers"])


def test_running_action_on_another_member_of_the_same_etcd_cluster_is_a_warning(
        harness: Harness, planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    running = harness.create("redeploy_server", {"target_nodes": "node02"})
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    assert plan["blockers"] == []
    assert any(w["message"].startswith(f"redeploy_server {running['id']} (pending) also "
                                       "removes members of etcd cluster(s) kubernetes")
               for w in plan["warnings"])
    other = planner.create("redeploy_server", {"target_nodes": "node03"}, CTX)
    assert other["warnings"] == []  # node03 holds no etcd member in this design


def test_action_from_plan_runs_when_nothing_changed(harness: Harness,
                                                    planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.previews["node01"] = {"drain": drain([WEB_BUDGET]),
                                            "etcd": [etcd_entry()]}
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    action = harness.api.create("redeploy_server", {"target_nodes": "node01"}, CTX,
                                plan_id=plan["id"])
    assert action["parameters"]["plan_id"] == plan["id"]
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]


@pytest.mark.parametrize("change, expected", [
    ({"drain": drain([{**WEB_BUDGET, "disruptions_allowed": 0}]), "etcd": [etcd_entry()]},
     "PodDisruptionBudget demo/web disruptions allowed: 1 -> 0"),
    ({"drain": drain([WEB_BUDGET]), "etcd": [etcd_entry(down=("node02",))]},
     "etcd kubernetes healthy members: no longer: node02"),
    ({"drain": drain([WEB_BUDGET], locks=["eviction-lock.berth.io/x"]),
      "etcd": [etcd_entry()]},
     "eviction locks held on node01: new: eviction-lock.berth.io/x"),
])
def test_action_from_plan_stops_at_the_step_whose_fact_changed(
        harness: Harness, planner: PlanService, change: dict[str, Any], expected: str) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.previews["node01"] = {"drain": drain([WEB_BUDGET]),
                                            "etcd": [etcd_entry()]}
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    action = harness.api.create("redeploy_server", {"target_nodes": "node01"}, CTX,
                                plan_id=plan["id"])
    harness.promenade.previews["node01"] = change
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    step = harness.step(action["id"], "decommission.node01")
    assert step["state"] == "failed" and step["reason"] == "PlanFactsChanged"
    assert [f"{c['fact']}: {c['change']}" for c in step["details"]["changes"]] == [expected]
    assert expected in view["message"] or expected in " ".join(
        n["message"] for n in step["notes"])
    assert harness.promenade.effects == []  # nothing was decommissioned


def test_path_change_stops_the_action_at_assessment(harness: Harness,
                                                    planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    action = harness.api.create("redeploy_server", {"target_nodes": "node01"}, CTX,
                                plan_id=plan["id"])
    harness.drydock.power["node01"] = "off"
    harness.drive(action["id"])
    step = harness.step(action["id"], "assess_node.node01")
    assert step["reason"] == "PlanFactsChanged"
    assert {c["fact"] for c in step["details"]["changes"]} == {"path", "BMC power state"}


def test_acting_on_a_plan_needs_the_same_action_and_parameters_and_a_live_plan(
        harness: Harness, planner: PlanService) -> None:
    harness.commit(tag="site-action-success")
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    with pytest.raises(ValidationFailed):
        harness.api.create("redeploy_server", {"target_nodes": "node02"}, CTX,
                           plan_id=plan["id"])
    with pytest.raises(NotFound):
        harness.api.create("redeploy_server", {"target_nodes": "node01"}, CTX,
                           plan_id="01NOSUCHPLAN")
    harness.clock.sleep(601)
    with pytest.raises(Conflict) as err:
        harness.api.create("redeploy_server", {"target_nodes": "node01"}, CTX,
                           plan_id=plan["id"])
    assert err.value.instance_reason == "PlanExpired"
    assert planner.get(plan["id"])["expired"] is True
    assert harness.api.list() == []


def strategy_design() -> list[dict[str, Any]]:
    groups = [
        {"name": "control", "critical": True, "depends_on": [],
         "selectors": [{"node_names": ["node01"]}],
         "success_criteria": {"percent_successful_nodes": 100}},
        {"name": "compute", "critical": False, "depends_on": ["control"],
         "selectors": [{"node_names": ["node02", "node03"]}],
         "success_criteria": {"minimum_successful_nodes": 1}}]
    docs = design()
    for d in docs:
        if d["schema"] == "shipyard/DeploymentConfiguration/v1":
            d["data"]["physical_provisioner"]["deployment_strategy"] = "deployment-strategy"
    return [*docs, document("shipyard/DeploymentStrategy/v1", "deployment-strategy",
                            {"groups": groups})]


@pytest.mark.parametrize("name", ["deploy_site", "update_site"])
def test_site_plan_lists_groups_in_order_with_nodes_and_criteria(
        harness: Harness, planner: PlanService, name: str) -> None:
    harness.commit(strategy_design())
    harness.drydock.bmc_down.add("node01")
    plan = planner.create(name, {}, CTX)
    assert [(g["name"], g["position"], g["nodes"]) for g in plan["groups"]] == [
        ("control", 1, ["node01"]), ("compute", 2, ["node02", "node03"])]
    assert plan["groups"][0]["success_criteria"] == {"percent_successful_nodes": 100}
    assert plan["groups"][1]["depends_on"] == ["control"]
    assert any("Group control: node01 would fail" in b["message"] and "critical" in b["message"]
               for b in plan["blockers"])
    assert [f["fact"] for f in plan["facts"]] == ["group control nodes", "group compute nodes",
                                                  "retired nodes"]
    assert _effects(harness) == [] and harness.api.list() == []


def test_site_action_from_plan_stops_when_a_group_changed(harness: Harness,
                                                          planner: PlanService) -> None:
    harness.commit(strategy_design())
    plan = planner.create("deploy_site", {}, CTX)
    action = harness.api.create("deploy_site", {}, CTX, plan_id=plan["id"])
    harness.drydock.node_list[2]["retired"] = True  # node03 retired meanwhile
    view = harness.drive(action["id"])
    step = harness.step(action["id"], "baremetal")
    assert view["state"] == "failed" and step["reason"] == "PlanFactsChanged"
    changed = {c["fact"] for c in step["details"]["changes"]}
    assert changed == {"group compute nodes", "retired nodes"}
    assert [t for t in harness.drydock.tasks.values()] == []


def test_intermediate_commits_are_a_blocker_of_a_site_plan(harness: Harness,
                                                           planner: PlanService) -> None:
    harness.commit()
    harness.commit()
    plan = planner.create("update_site", {}, CTX)
    assert plan["blockers"][0]["message"].startswith("Committed revisions [1]")
    assert plan["parameters"]["allow-intermediate-commits"] is False
    assert plan["groups"][0]["nodes"] == ["node01", "node02", "node03"]


def test_relabel_plan_lists_nodes_and_the_promenade_call(harness: Harness,
                                                          planner: PlanService) -> None:
    harness.commit()
    plan = planner.create("relabel_nodes", {"target_nodes": ["node02"]}, CTX)
    assert [n["node"] for n in plan["nodes"]] == ["node02"]
    assert plan["nodes"][0]["labels"] == {"role": "compute"}
    [put] = plan["calls"]
    assert (put["service"], put["request"]) == ("promenade",
                                                "PUT /api/v1.0/node-labels/node02")
    assert "role=compute" in put["why"]


def test_action_whose_plan_is_no_longer_stored_stops_before_doing_anything(
        harness: Harness, planner: PlanService) -> None:
    from sqlalchemy import delete

    from shipyard_api.plans.store import PlanRow

    harness.commit(tag="site-action-success")
    plan = planner.create("redeploy_server", {"target_nodes": "node01"}, CTX)
    action = harness.api.create("redeploy_server", {"target_nodes": "node01"}, CTX,
                                plan_id=plan["id"])
    with session_factory(harness.engine_db).begin() as s:
        s.execute(delete(PlanRow))
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert harness.step(action["id"], "preflight")["reason"] == "PlanNotFound"
    assert _effects(harness) == []
