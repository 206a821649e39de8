"""redeploy_server's leave to disrupt named PodDisruptionBudgets: checked (400 listing every
problem), its own policy rule (403), recorded with the authenticated user, passed to
Promenade's decommission with that user, and the drain's deletions shown in the step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import falcon.testing
import pytest
import yaml

from common.context import RequestContext
from common.status import simple_message, status_body
from shipyard_api import config
from shipyard_api.app import create_app
from tests.support.services import write_conf
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.test_api import post

LEAVE = {"disrupt-pdbs": [{"namespace": "demo", "name": "solo"}], "disrupt-after": 3}


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = {"admin": "admin-token-0123", "reader": "reader-token-0123",
              "operator": "operator-token-0123"}
    (tmp_path / "tokens.yaml").write_text(yaml.safe_dump({
        tokens["admin"]: {"user": "admin", "roles": ["admin"]},
        tokens["reader"]: {"user": "reader", "roles": ["reader"]},
        tokens["operator"]: {"user": "olga", "roles": ["operator"]}}))
    # an operator may redeploy, but the leave to disrupt keeps its admin default
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump({
        "shipyard:create_action": "role:admin or role:operator",
        "shipyard:action_redeploy_server": "role:admin or role:operator"}))
    write_conf(tmp_path / "shipyard.conf", {
        "auth": {"token_file": tmp_path / "tokens.yaml"},
        "oslo_policy": {"policy_file": tmp_path / "policy.yaml"}})
    conf = config.load(str(tmp_path / "shipyard.conf"))
    return falcon.testing.TestClient(create_app(conf, harness.deps())), tokens


def redeploy(**params: Any) -> dict[str, Any]:
    return {"name": "redeploy_server", "parameters": {"target_nodes": "node01", **params}}


def test_bad_leave_parameters_are_400_listing_every_problem(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    resp = post(client, tokens["admin"], redeploy(**{
        "disrupt-pdbs": [{"namespace": "Demo", "name": "solo"}, "web",
                         {"namespace": "demo", "name": "a", "extra": 1},
                         {"namespace": "demo", "name": "a"}],
        "disrupt-after": 90000}))
    assert resp.status_code == 400, resp.json
    messages = [m["message"] for m in resp.json["details"]["messageList"]]
    assert len(messages) == 5, messages
    for part in ("disrupt-pdbs[0]: a namespace", "disrupt-pdbs[1] must be an object",
                 "disrupt-pdbs[2]: unknown field(s) extra", "demo/a is named twice",
                 "between 0 and 86400"):
        assert any(part in m for m in messages), (part, messages)
    assert harness.api.list() == []
    alone = post(client, tokens["admin"], redeploy(**{"disrupt-after": 3}))
    assert alone.status_code == 400 and "disrupt-after needs disrupt-pdbs" in alone.text
    neither = post(client, tokens["admin"], redeploy(**{"disrupt-pdbs": 5}))
    assert [m["message"] for m in neither.json["details"]["messageList"]] == [
        "disrupt-pdbs must be a list of {namespace, name} objects or namespace/name,...",
        "disrupt-pdbs needs disrupt-after: the seconds a named budget must have blocked the "
        "drain before its pods are deleted (at most 86400)"]


def test_the_leave_needs_its_own_rule(api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    assert post(client, tokens["reader"], redeploy(**LEAVE)).status_code == 403
    denied = post(client, tokens["operator"], redeploy(**LEAVE))
    assert denied.status_code == 403
    assert "shipyard:action_disrupt_pdbs" in denied.json["message"]
    assert harness.api.list() == []
    allowed = post(client, tokens["operator"], redeploy())  # the same action without it
    assert allowed.status_code == 201, allowed.json


def test_the_leave_is_recorded_with_the_authenticated_user_not_a_header(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    body = post(client, tokens["admin"], redeploy(**LEAVE),
                headers={"X-End-User": "mallory"}).json
    assert body["parameters"]["disrupt-pdbs-allowed-by"] == "admin"
    assert body["parameters"]["disrupt-pdbs"] == LEAVE["disrupt-pdbs"]
    assert body["parameters"]["disrupt-after"] == 3
    as_cli = post(client, tokens["admin"], {"name": "redeploy_server", "parameters": {
        "target_nodes": "node02", "disrupt-pdbs": "demo/solo,demo/web",
        "disrupt-after": "3"}}).json  # as the CLI's --param gives them
    assert as_cli["parameters"]["disrupt-pdbs"] == [{"namespace": "demo", "name": "solo"},
                                                    {"namespace": "demo", "name": "web"}]
    forged = post(client, tokens["admin"], redeploy(**{"disrupt-pdbs-allowed-by": "alice"}))
    assert forged.status_code == 400


def test_promenade_gets_the_leave_and_the_user_and_the_step_shows_the_deletions(
        harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    deleted = {"pod": "demo/solo-1", "budget": "demo/solo", "node": "node01",
               "at": 1_000_010.0, "allowed_by": "admin", "disruptions_allowed": 0}

    real = harness.promenade.decommission

    def decommission(*args: Any, **kw: Any) -> dict[str, Any]:
        real(*args, **kw)  # and Promenade's drain deleted a pod past the named budget
        return status_body(200, "done", messages=[simple_message(
            "drain: evicted 0 pod(s)", error=False, step="drain",
            report={"disrupted": [deleted]})])

    harness.promenade.decommission = decommission  # type: ignore[method-assign]
    action = harness.create("redeploy_server", {"target_nodes": "node01", **LEAVE})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert harness.promenade.disrupts == {"node01": {
        "disrupt-pdbs": "demo/solo", "disrupt-after": "3", "end_user": "admin"}}
    assert view["parameters"]["disrupt-pdbs-allowed-by"] == "admin"
    step = harness.step(action["id"], "decommission.node01")
    assert step["details"]["disrupted"] == [deleted]


def test_without_a_leave_promenade_is_asked_for_none(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    assert harness.drive(action["id"])["state"] == "complete"
    assert harness.promenade.disrupts == {}


def test_a_plan_with_the_leave_turns_only_the_named_budget_into_a_warning(
        harness: Harness) -> None:
    from shipyard_api.db import session_factory
    from shipyard_api.plans.service import PlanService
    from shipyard_api.plans.store import PlanStore

    harness.commit(tag="site-action-success")
    planner = PlanService(PlanStore(session_factory(harness.engine_db)), harness.api, ttl=600,
                          clock=harness.clock)
    harness.promenade.previews["node01"] = {"blockers": [
        "PodDisruptionBudget demo/solo allows 0 disruptions now (needs 1 healthy, has 1); "
        "it covers demo/solo-1",
        "PodDisruptionBudget demo/web allows 0 disruptions now (needs 3 healthy, has 3); "
        "it covers demo/web-1"]}
    ctx = RequestContext(marker="6f1c3d2e-0000-4000-8000-0000000000ab", user="admin")
    plain = planner.create("redeploy_server", {"target_nodes": "node01"}, ctx)
    assert len(plain["blockers"]) == 2
    plan = planner.create("redeploy_server", {"target_nodes": "node01", **LEAVE}, ctx)
    assert [b["message"][:35] for b in plan["blockers"]] == [
        "PodDisruptionBudget demo/web allows"]
    assert any(w["message"].startswith("PodDisruptionBudget demo/solo allows 0") and
               "disrupt-pdbs names it: if it still refuses 3 s" in w["message"]
               for w in plan["warnings"])
    [node] = plan["nodes"]
    assert "disrupt-pdbs=demo%2Fsolo&disrupt-after=3" in node["calls"][0]["request"]


def test_a_failed_decommission_step_names_what_blocked_the_drain(harness: Harness) -> None:
    from common.errors import BadGateway

    harness.commit(tag="site-action-success")
    blocker = {"kind": "PodDisruptionBudget", "name": "demo/web", "disruptions_allowed": 0,
               "pods": ["demo/web-1"]}
    lock = {"kind": "EvictionLock", "annotation": "eviction-lock.berth.io/backup",
            "holder": "nightly-backup", "pods": ["demo/web-1"]}

    def decommission(*args: Any, **kw: Any) -> dict[str, Any]:
        raise BadGateway("Promenade: decommission failed", peer_status=status_body(
            500, "Decommission of node01 failed at step drain",
            reason="DisassociateStepFailure", messages=[
                simple_message("PodDisruptionBudget demo/web (disruptionsAllowed 0) refuses "
                               "the eviction of demo/web-1", step="drain", blocker=blocker),
                simple_message("Eviction lock eviction-lock.berth.io/backup held by "
                               "nightly-backup holds back demo/web-1", step="drain",
                               blocker=lock)]))

    harness.promenade.decommission = decommission  # type: ignore[method-assign]
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    assert harness.drive(action["id"])["state"] == "failed"
    step = harness.step(action["id"], "decommission.node01")
    assert step["details"]["blockers"] == [blocker, lock]
