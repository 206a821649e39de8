"""/plans over HTTP and the `shipyard plan` CLI: codes, bodies, 4xx, and acting on a plan."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import make_server

import falcon.testing
import pytest
from click.testing import CliRunner

from shipyard_api import config
from shipyard_api.app import create_app
from shipyard_api.cli.main import cli
from shipyard_api.db import session_factory
from shipyard_api.plans.service import PlanService
from shipyard_api.plans.store import PlanStore
from tests.support.procs import free_port
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.test_cli import Quiet

P = "/api/v1.0"


@pytest.fixture
def app(harness: Harness, tmp_path: Path) -> tuple[Any, dict[str, str]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    store = PlanStore(session_factory(harness.engine_db))
    harness.services.plans = store
    plans = PlanService(store, harness.api, clock=harness.clock)
    harness.api.plans = plans
    conf = config.load(str(tmp_path / "shipyard.conf"))
    return create_app(conf, harness.deps(plans=plans)), tokens


def post(client: Any, token: str, path: str, body: Any) -> Any:
    return client.simulate_post(f"{P}{path}", body=json.dumps(body), headers={
        "X-Auth-Token": token, "Content-Type": "application/json"})


def test_post_plan_201_then_get_and_act_on_it(app: Any, harness: Harness) -> None:
    wsgi, tokens = app
    client = falcon.testing.TestClient(wsgi)
    harness.commit(tag="site-action-success")
    body = {"name": "redeploy_server", "parameters": {"target_nodes": "node01"}}
    resp = post(client, tokens["reader"], "/plans", body)  # planning is a read
    assert resp.status_code == 201, resp.text
    plan = resp.json
    assert resp.headers["Location"] == f"{P}/plans/{plan['id']}"
    assert plan["verdict"] == "clear" and plan["nodes"][0]["node"] == "node01"
    got = client.simulate_get(f"{P}/plans/{plan['id']}",
                              headers={"X-Auth-Token": tokens["reader"]})
    assert got.status_code == 200 and got.json["id"] == plan["id"]
    assert harness.api.list() == []
    acted = post(client, tokens["admin"], "/actions", {**body, "plan_id": plan["id"]})
    assert acted.status_code == 201, acted.text
    assert acted.json["parameters"]["plan_id"] == plan["id"]


def test_a_plan_request_is_checked_against_the_openapi_document(app: Any,
                                                                harness: Harness) -> None:
    """PlanRequest of schemas/openapi/shipyard.yaml: every way the body breaks it in one 400."""
    wsgi, tokens = app
    client = falcon.testing.TestClient(wsgi)
    harness.commit(tag="site-action-success")
    bad = post(client, tokens["admin"], "/plans", {"name": "deploy_site", "parameters": [],
                                                   "x": 1})
    assert bad.status_code == 400 and bad.json["reason"] == "BadRequest", bad.json
    assert [m["message"] for m in bad.json["details"]["messageList"]] == [
        "unknown field 'x'", "parameters must be an object"]


def test_bad_plan_requests_are_4xx_listing_every_problem(app: Any, harness: Harness) -> None:
    wsgi, tokens = app
    client = falcon.testing.TestClient(wsgi)
    harness.commit(tag="site-action-success")
    bad = post(client, tokens["admin"], "/plans", {"name": "redeploy_server", "parameters": {
        "preserve-local-storage": "maybe", "colour": "red"}})
    assert bad.status_code == 400
    assert len(bad.json["details"]["messageList"]) == 3  # target_nodes, boolean, unknown
    assert post(client, tokens["admin"], "/plans", {"name": "nope"}).status_code == 400
    assert post(client, tokens["admin"], "/plans", {"name": "deploy_site",
                                                    "x": 1}).status_code == 400
    missing = client.simulate_get(f"{P}/plans/01NOPE", headers={"X-Auth-Token": tokens["admin"]})
    assert missing.status_code == 404 and missing.json["reason"] == "PlanNotFound"
    unknown_plan = post(client, tokens["admin"], "/actions", {
        "name": "redeploy_server", "parameters": {"target_nodes": "node01"}, "plan_id": "01NOPE"})
    assert unknown_plan.status_code == 404
    assert harness.api.list() == []


@pytest.fixture
def served(app: Any) -> Iterator[tuple[str, dict[str, str]]]:
    wsgi, tokens = app
    port = free_port()
    server = make_server("127.0.0.1", port, wsgi, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", tokens
    finally:
        server.shutdown()
        server.server_close()


def run(served: tuple[str, dict[str, str]], *args: str) -> Any:
    url, tokens = served
    return CliRunner().invoke(cli, list(args), env={"SHIPYARD_URL": url,
                                                    "SHIPYARD_TOKEN": tokens["admin"]})


def test_cli_plan_table_blockers_first_then_json_and_act_with_plan(
        served: Any, harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.promenade.previews["node02"] = {"blockers": [
        "PodDisruptionBudget demo/web allows 0 disruptions now"]}
    result = run(served, "plan", "redeploy_server", "--param", "target_nodes=node01,node02")
    assert result.exit_code == 0, result.output
    lines = result.output
    assert "BLOCKED" in lines.splitlines()[0]
    assert lines.index("Blockers") < lines.index("Nodes")
    assert "allows 0 disruptions" in lines and "graceful" in lines
    result = run(served, "plan", "redeploy_server", "--param", "target_nodes=node01",
                 "-o", "json")
    plan = json.loads(result.output)
    assert plan["verdict"] == "clear"
    yaml_out = run(served, "describe", f"plan/{plan['id']}", )
    assert plan["id"] in yaml_out.output
    made = run(served, "-o", "json", "create", "action", "redeploy_server", "--param",
               "target_nodes=node01", "--plan", plan["id"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["parameters"]["plan_id"] == plan["id"]


def test_cli_site_plan_shows_groups(served: Any, harness: Harness) -> None:
    from tests.unit.shipyard.test_plans import strategy_design

    harness.commit(strategy_design())
    result = run(served, "plan", "deploy_site")
    assert result.exit_code == 0, result.output
    assert "Groups, in order" in result.output and "control" in result.output
    assert "percent_successful_nodes=100" in result.output
    hint = result.output.split("Act on it: ", 1)[1].split()
    assert hint[:4] == ["shipyard", "create", "action", "deploy_site"]
    made = run(served, *hint[1:])  # the hint works as printed
    assert made.exit_code == 0, made.output
