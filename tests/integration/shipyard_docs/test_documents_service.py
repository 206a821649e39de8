"""Shipyard's document API as a real gunicorn process, with peers that fetch the design."""

from __future__ import annotations

import stat
import threading
import uuid
from typing import Any

import requests
import sqlalchemy
import yaml

from tests.integration.shipyard_docs.conftest import Shipyard
from tests.unit.shipyard_docs.support import deployment_configuration, doc, dump, node, secret

P = "/api/v1.0"
YAML_H = {"Content-Type": "application/x-yaml"}


def design(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [deployment_configuration(), node(), secret(value="hunter2-secret"), *extra]


def stage(sy: Shipyard, collection: str, docs: list[dict[str, Any]],
          mode: str | None = None) -> requests.Response:
    return requests.post(f"{sy.url}{P}/configdocs/{collection}", data=dump(docs),
                         headers=sy.headers(**YAML_H), timeout=30,
                         params={"buffermode": mode} if mode else {})


def commit(sy: Shipyard, **params: str) -> requests.Response:
    marker = str(uuid.uuid4())
    return requests.post(f"{sy.url}{P}/commitconfigdocs", params=params, timeout=60,
                         headers=sy.headers(**{"X-Context-Marker": marker}))


def test_commit_asks_both_peers_who_fetch_the_buffer_with_its_secrets(shipyard: Shipyard) -> None:
    sy = shipyard
    assert stage(sy, "site", design()).status_code == 201
    marker = str(uuid.uuid4())
    resp = requests.post(f"{sy.url}{P}/commitconfigdocs", timeout=60,
                         headers=sy.headers(**{"X-Context-Marker": marker}))
    assert resp.status_code == 200, resp.text
    assert resp.json()["details"]["committed"] is True
    ref = f"deckhand+{sy.url}{P}/revisions/1/rendered-documents"
    for peer in (sy.drydock, sy.promenade):
        [call] = peer.calls
        assert call["href"] == ref and call["marker"] == marker
        secrets = [d["data"] for d in call["docs"] if d["schema"] == "deckhand/Passphrase/v1"]
        assert secrets == ["hunter2-secret"]
    tags = requests.get(f"{sy.url}{P}/revisions/1/tags", headers=sy.headers("reader"),
                        timeout=10).json()
    assert [t["tag"] for t in tags] == ["committed"]


def test_a_peer_refusal_blocks_the_commit_unless_forced(shipyard: Shipyard) -> None:
    sy = shipyard
    stage(sy, "site", design(doc("test/Thing/v1", "invalid-for-promenade", {})))
    resp = commit(sy)
    body = resp.json()
    assert resp.status_code == 400 and body["code"] == 400
    refused = [m for m in body["details"]["messageList"] if m.get("source") == "promenade"]
    assert refused and refused[0]["error"] and "refuses" in refused[0]["message"]
    assert any(m.get("source") == "drydock" and not m["error"]
               for m in body["details"]["messageList"])
    dry = commit(sy, force="true", dryrun="true")
    assert dry.status_code == 200 and dry.json()["details"]["committed"] is False
    forced = commit(sy, force="true")
    assert forced.status_code == 200 and forced.json()["message"].startswith("FORCED")
    diff = requests.get(f"{sy.url}{P}/configdocs", headers=sy.headers("reader"), timeout=10)
    assert diff.json()[0]["new_status"] == "unmodified"


def test_a_writer_during_a_commit_gets_409(shipyard: Shipyard) -> None:
    sy = shipyard
    stage(sy, "site", design())
    sy.drydock.release.clear()
    results: list[requests.Response] = []
    worker = threading.Thread(target=lambda: results.append(commit(sy)))
    worker.start()
    try:
        assert sy.drydock.entered.wait(20)
        blocked = stage(sy, "more", [node("n2")], "append")
        assert blocked.status_code == 409 and blocked.json()["reason"] == "DocumentsLocked"
    finally:
        sy.drydock.release.set()
        worker.join(60)
    assert results[0].status_code == 200
    assert stage(sy, "more", [node("n2")], "append").status_code == 201


def test_secrets_are_encrypted_at_rest_and_redacted_for_readers(shipyard: Shipyard) -> None:
    sy = shipyard
    stage(sy, "site", design())
    assert stat.S_IMODE(sy.key_file.stat().st_mode) == 0o600
    engine = sqlalchemy.create_engine(sy.db_url)
    with engine.connect() as conn:
        stored = [r[0] for r in conn.execute(sqlalchemy.text("SELECT data FROM doc_documents"))]
    engine.dispose()
    assert len(stored) == 3 and not any("hunter2" in s for s in stored)
    url = f"{sy.url}{P}/revisions/1/rendered-documents"
    assert "hunter2" not in requests.get(url, headers=sy.headers("reader"), timeout=10).text
    assert "hunter2" in requests.get(url, headers=sy.headers("admin"), timeout=10).text
    collection = requests.get(f"{sy.url}{P}/configdocs/site", headers=sy.headers("admin"),
                              timeout=10)
    assert "hunter2" not in collection.text
    assert len(list(yaml.safe_load_all(collection.text))) == 3


def test_empty_commits_and_unknown_routes_are_refused(shipyard: Shipyard) -> None:
    sy = shipyard
    empty = commit(sy)
    assert empty.status_code == 409 and empty.json()["reason"] == "EmptyBuffer"
    nobody = requests.get(f"{sy.url}{P}/revisions", headers=sy.headers("nobody"), timeout=10)
    assert nobody.status_code == 403 and nobody.json()["kind"] == "Status"
    assert requests.put(f"{sy.url}{P}/revisions/1/documents", headers=sy.headers(),
                        timeout=10).status_code == 405
