"""Hostile input on Shipyard's document routes: nothing unsafe is stored, so the reads that
list it keep answering; YAML alias bombs are refused at upload."""

from __future__ import annotations

from typing import Any

from shipyard_api.documents.store import DocumentStore
from tests.support.hostile import ALIAS_BOMB
from tests.unit.shipyard_docs.support import ADMIN, READER, YAML_H, dump, make_client
from tests.unit.shipyard_docs.test_api import good_design, post_docs

P = "/api/v1.0"


def test_a_lone_surrogate_in_tag_data_is_refused_and_tags_stay_readable(
        sqlite_store: DocumentStore) -> None:
    client = make_client(sqlite_store)
    post_docs(client, "site", good_design())
    url = f"{P}/revisions/1/tags"
    bad = client.simulate_post(f"{url}/t1", body='{"note": "\\ud800"}',
                               headers={**ADMIN, "Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json["reason"] == "UnsafeInput"
    bad_yaml = client.simulate_post(f"{url}/t2", body='a: "\\ud800"\nb: "\\0"\n',
                                    headers={**ADMIN, **YAML_H})
    assert bad_yaml.status_code == 400 and len(bad_yaml.json["details"]["messageList"]) == 2
    listed = client.simulate_get(url, headers=READER)
    assert listed.status_code == 200 and listed.json == []


def test_a_yaml_alias_bomb_is_refused_at_upload_and_nothing_is_staged(
        sqlite_store: DocumentStore) -> None:
    client = make_client(sqlite_store)
    resp = client.simulate_post(f"{P}/configdocs/site", body=ALIAS_BOMB,
                                headers={**ADMIN, **YAML_H})
    assert resp.status_code == 400 and "aliases" in str(resp.json["details"])
    status = client.simulate_get(f"{P}/configdocs", headers=READER)
    assert status.status_code == 200 and status.json == []


def test_a_surrogate_in_a_document_is_refused_at_upload(sqlite_store: DocumentStore) -> None:
    client = make_client(sqlite_store)
    text = ('schema: drydock/BaremetalNode/v1\nmetadata: {schema: metadata/Document/v1, '
            'name: "n\\ud800"}\ndata: {}\n')
    resp = client.simulate_post(f"{P}/configdocs/site", body=text, headers={**ADMIN, **YAML_H})
    assert resp.status_code == 400 and resp.json["reason"] == "UnsafeInput"


def test_configdocs_post_honours_idempotency_keys(sqlite_store: DocumentStore) -> None:
    client = make_client(sqlite_store)
    headers: dict[str, Any] = {**ADMIN, **YAML_H, "Idempotency-Key": "docs-1"}

    def stage(docs: list[dict]) -> Any:
        return client.simulate_post(f"{P}/configdocs/site", body=dump(docs), headers=headers)

    one, two = stage(good_design()), stage(good_design())
    assert one.status_code == two.status_code == 201 and one.json == two.json
    assert two.headers["Idempotent-Replayed"] == "true"
    assert stage(good_design()[:1]).status_code == 422
