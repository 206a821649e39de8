"""Shipyard's audit log through its API: every change of actions, steps and documents is
recorded with the token's user (never a header the client chose), and verify finds an edit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest
from sqlalchemy import text

from shipyard_api import config
from shipyard_api.app import create_app
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard_docs.support import deployment_configuration, dump, node, secret

P = "/api/v1.0"
SPOOF = {"X-End-User": "mallory", "X-User": "mallory", "X-User-Name": "mallory"}


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    app = create_app(config.load(str(tmp_path / "shipyard.conf")), harness.deps())
    return falcon.testing.TestClient(app), tokens


def entries(client: Any, token: str, **params: Any) -> list[dict[str, Any]]:
    resp = client.simulate_get(f"{P}/audit", headers={"X-Auth-Token": token},
                               params={"limit": "1000", **params})
    assert resp.status_code == 200, resp.text
    return list(resp.json["entries"])


def test_action_step_and_document_changes_are_audited_with_the_token_user(
        api: Any, harness: Harness) -> None:
    client, tokens = api
    admin = {"X-Auth-Token": tokens["admin"], **SPOOF}
    harness.commit(tag="site-action-success")
    created = client.simulate_post(f"{P}/actions", headers={
        **admin, "Content-Type": "application/json"}, body=json.dumps(
        {"name": "redeploy_server", "parameters": {"target_nodes": "node01"}})).json
    action_id = created["id"]
    for verb in ("pause", "unpause"):
        assert client.simulate_post(f"{P}/actions/{action_id}/control/{verb}",
                                    headers=admin).status_code == 202
    assert harness.drive(action_id)["state"] == "complete"
    yaml_h = {**admin, "Content-Type": "application/x-yaml"}
    staged = client.simulate_post(f"{P}/configdocs/site", headers=yaml_h,
                                  body=dump([deployment_configuration(), node(), secret()]))
    assert staged.status_code == 201, staged.text
    revision = staged.json["details"]["revision_id"]
    assert client.simulate_post(f"{P}/commitconfigdocs", headers=admin,
                                params={"force": "true"}).status_code == 200
    assert client.simulate_post(f"{P}/revisions/{revision}/tags/golden",
                                headers=admin).status_code == 201
    assert client.simulate_delete(f"{P}/revisions/{revision}/tags/golden",
                                  headers=admin).status_code == 204

    actions = entries(client, tokens["admin"], stream="shipyard.actions")
    mine = [e for e in actions if e["object"] == f"action/{action_id}"]
    assert [(e["change"], e["old"], e["new"], e["user"], e["on_behalf_of"]) for e in mine] == [
        ("created", None, "pending", "admin", None),
        ("state", "pending", "paused", "admin", None),
        ("state", "paused", "running", "admin", None),
        ("state", "running", "complete", "system:shipyard", "admin"),
    ]
    steps = [e for e in actions if e["object"].startswith(f"action/{action_id}/step/")]
    preflight = [(e["old"], e["new"]) for e in steps
                 if e["object"].endswith("/step/preflight")]
    assert preflight[0] == ("pending", "running") and preflight[-1][1] == "success"
    assert {(e["user"], e["on_behalf_of"]) for e in steps} == {("system:shipyard", "admin")}

    docs = entries(client, tokens["admin"], stream="shipyard.documents")
    assert [(e["object"], e["change"], e["user"]) for e in docs] == [
        ("collection/site", "staged", "admin"),
        (f"revision/{revision}", "commit", "admin"),
        (f"revision/{revision}", "tag", "admin"),
        (f"revision/{revision}", "untag", "admin"),
    ]
    assert docs[0]["new"] == revision and docs[0]["detail"]["status"] == "created"
    assert "mallory" not in json.dumps(actions + docs)

    verified = client.simulate_get(f"{P}/audit/verify", headers={"X-Auth-Token": tokens["admin"]})
    assert verified.status_code == 200, verified.text
    chains = verified.json["details"]["chains"]
    assert chains["shipyard.documents"]["entries"] == 4
    assert chains["shipyard.actions"]["entries"] == len(actions)


def test_verify_answers_409_naming_an_edited_entry(api: Any, harness: Harness) -> None:
    client, tokens = api
    h = {"X-Auth-Token": tokens["admin"]}
    harness.commit(tag="site-action-success")
    created = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.drive(created["id"])
    assert client.simulate_get(f"{P}/audit/verify", headers=h).status_code == 200
    with harness.engine_db.begin() as conn:
        conn.execute(text("UPDATE audit_entries SET payload = replace(payload, "
                          "'\"complete\"', '\"failed\"') WHERE stream = 'shipyard.actions' "
                          "AND payload LIKE '%\"complete\"%'"))
        seq = conn.execute(text("SELECT seq FROM audit_entries WHERE payload LIKE "
                                "'%\"new\":\"failed\"%'")).scalar_one()
    resp = client.simulate_get(f"{P}/audit/verify", headers=h)
    assert resp.status_code == 409 and resp.json["reason"] == "AuditChainBroken"
    broken = resp.json["details"]["broken"]
    assert (broken["stream"], broken["seq"]) == ("shipyard.actions", seq)
    assert broken["expected"] != broken["found"]
    assert f"stream shipyard.actions seq {seq}" in resp.json["message"]


def test_audit_routes_are_admin_only_and_check_their_parameters(api: Any) -> None:
    client, tokens = api
    reader = {"X-Auth-Token": tokens["reader"]}
    assert client.simulate_get(f"{P}/audit", headers=reader).status_code == 403
    assert client.simulate_get(f"{P}/audit/verify", headers=reader).status_code == 403
    assert client.simulate_get(f"{P}/audit").status_code == 401
    bad = client.simulate_get(f"{P}/audit", headers={"X-Auth-Token": tokens["admin"]},
                              params={"limit": "0", "since": "yesterday"})
    assert bad.status_code == 400 and bad.json["details"]["errorCount"] == 2


def test_concurrent_creates_controls_and_engines_keep_one_chain(any_harness: Harness) -> None:
    """Threads creating and controlling actions while two engines run them (SQLite and
    PostgreSQL): one chain per stream, no deadlock, every change recorded once."""
    import threading

    from common import audit
    from common.context import RequestContext
    from common.errors import Conflict

    h = any_harness
    h.commit(tag="site-action-success")
    errors: list[BaseException] = []
    created: dict[str, str] = {}
    done: list[str] = []  # one per control accepted

    def operator(node: str) -> None:
        try:
            action = h.create("redeploy_server", {"target_nodes": node})
            created[node] = action["id"]
            for verb in ("pause", "unpause"):
                for _ in range(20):  # an engine may move the action in between: ask again
                    try:
                        h.api.control(action["id"], verb, RequestContext(user=f"op-{node}"))
                        done.append(node)
                        break
                    except Conflict:
                        continue
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def engine(owner: str) -> None:
        try:
            runner = h.engine(owner, hold=0.0)
            for _ in range(40):
                runner.run_once()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=operator, args=(n,)) for n in ("node01", "node02",
                                                                      "node03")]
    threads += [threading.Thread(target=engine, args=(f"w{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    with h.engine_db.connect() as conn:
        result = audit.verify(conn)
        rows = audit.entries(conn, stream="shipyard.actions", limit=1000)
    assert result.ok, result.broken
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    for name, action_id in created.items():
        mine = [(r["change"], r["user"]) for r in rows if r["object"] == f"action/{action_id}"]
        assert mine[0] == ("created", "admin")
        assert [u for c, u in mine if u.startswith("op-")] == [f"op-{name}"] * done.count(name)
