"""Drydock's audit log through its API: tasks, subtasks, node lifecycle fields, retirement and
reboot requests are recorded with the token's user (a worker's: drydock on behalf of who asked),
and verify finds an edited row."""

from __future__ import annotations

import json
from typing import Any

import falcon.testing
import pytest
from sqlalchemy import text

from drydock_api.app import Deps, create_app
from tests.unit.drydock.conftest import FakeClock, Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import TOKENS, run_all, task_request
from tests.unit.drydock.test_reboot import drive

P = "/api/v1.0"
SPOOF = {"X-End-User": "mallory", "X-User": "mallory", "X-User-Name": "mallory"}


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2"], clock=FakeClock(), reboot={"soft_timeout": 5.0})
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def send(client: Any, method: str, path: str, site: Site, body: Any = None) -> Any:
    return client.simulate_request(
        method, f"{P}{path}", params={"design_ref": site.href},
        headers={"X-Auth-Token": "admin", "Content-Type": "application/json", **SPOOF},
        body=None if body is None else json.dumps(body))


def entries(client: Any, stream: str) -> list[dict[str, Any]]:
    resp = client.simulate_get(f"{P}/audit", params={"stream": stream, "limit": "1000"},
                               headers={"X-Auth-Token": "admin"})
    assert resp.status_code == 200, resp.text
    return list(resp.json["entries"])


def who(e: dict[str, Any]) -> tuple[str, str | None]:
    return e["user"], e["on_behalf_of"]


def test_node_reboot_retirement_and_task_changes_are_audited_with_the_token_user(
        api: Any) -> None:
    client, site = api
    assert send(client, "POST", "/nodes/n1/reboot", site, {"mode": "hard"}).status_code == 201
    drive(site, 10)
    assert send(client, "PATCH", "/nodes/n1", site,
                {"retired": True, "retired_reason": "end of warranty"}).status_code == 200
    assert send(client, "PATCH", "/nodes/n1", site, {"retired": False}).status_code == 200
    created = send(client, "POST", "/tasks", site, task_request(
        site, node_filter={"filter_set_type": "union",
                           "filter_set": [{"node_names": ["n2"]}]}))
    assert created.status_code == 201, created.text
    task_id = created.json["task_id"]
    run_all(site)

    nodes = entries(client, "drydock.nodes")
    requested = [e for e in nodes if e["object"] == "node/n1/reboot/-"]
    assert [(e["change"], e["new"], who(e)) for e in requested][0] == (
        "requested", {"mode": "hard", "value": None}, ("admin", None))
    assert requested[-1]["change"] == "released"  # done: the reconciler removed it
    assert who(requested[-1]) == ("system:drydock", "admin")
    n1 = [e for e in nodes if e["object"] == "node/n1"]
    reboot = [e for e in n1 if "pending_reboot_since" in e["new"]]
    assert reboot and who(reboot[0]) == ("system:drydock", "admin")
    retired = [(e["old"]["retired"], e["new"]["retired"], who(e)) for e in n1
               if "retired" in e["new"]]
    assert retired == [(False, True, ("admin", None)), (True, False, ("admin", None))]
    n2 = [e for e in nodes if e["object"] == "node/n2"]
    assert any(e["new"].get("torn_down") is True and who(e) == ("system:drydock", "admin")
               for e in n2), n2

    tasks = entries(client, "drydock.tasks")
    mine = [(e["old"], e["new"], who(e)) for e in tasks if e["object"] == f"task/{task_id}"]
    assert mine == [(None, "queued", ("admin", None)),
                    ("queued", "running", ("system:drydock", "admin")),
                    ("running", "complete", ("system:drydock", "admin"))]
    subtasks = [e for e in tasks if e["object"] != f"task/{task_id}"]
    assert subtasks and {who(e) for e in subtasks} == {("system:drydock", "admin")}
    assert "mallory" not in json.dumps(nodes + tasks)

    verified = client.simulate_get(f"{P}/audit/verify", headers={"X-Auth-Token": "admin"})
    assert verified.status_code == 200, verified.text
    assert verified.json["details"]["chains"]["drydock.tasks"]["entries"] == len(tasks)


def test_verify_answers_409_naming_a_deleted_entry(api: Any) -> None:
    client, site = api
    for retired in (True, False, True):
        send(client, "PATCH", "/nodes/n2", site, {"retired": retired})
    with site.runtime.store.engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_entries WHERE stream = 'drydock.nodes' "
                          "AND seq = 2"))
    resp = client.simulate_get(f"{P}/audit/verify", headers={"X-Auth-Token": "admin"})
    assert resp.status_code == 409, resp.text
    broken = resp.json["details"]["broken"]
    assert (broken["stream"], broken["seq"]) == ("drydock.nodes", 2)
    assert "missing" in broken["problem"]
    reader = client.simulate_get(f"{P}/audit/verify", headers={"X-Auth-Token": "reader"})
    assert reader.status_code == 403
