"""configdocs: an upload of more documents than [documents] max_documents is 413 before it is
parsed (the buffer unchanged); GET /configdocs against a site-action version that does not
exist is 404, as in Airship, not a comparison with revision 0."""

from __future__ import annotations

from typing import Any

import pytest

from shipyard_api.documents.store import DocumentStore
from shipyard_api.resources.documents import document_starts
from tests.unit.shipyard_docs.support import ADMIN, YAML_H, make_client, make_store

P = "/api/v1.0"


def many(count: int) -> bytes:
    one = "---\nschema: drydock/BaremetalNode/v1\nmetadata: {schema: metadata/Document/v1, " \
          "name: n%d, layeringDefinition: {abstract: false, layer: site}}\ndata: {}\n"
    return "".join(one % i for i in range(count)).encode()


@pytest.fixture
def limited(tmp_path: Any) -> tuple[Any, DocumentStore]:
    store = make_store(f"sqlite:///{tmp_path}/shipyard.db")
    store.max_documents = 100
    return make_client(store), store


def test_an_upload_over_the_document_limit_is_413_before_parsing(limited: Any) -> None:
    client, store = limited
    ok = client.simulate_post(f"{P}/configdocs/site", body=many(100), headers={**ADMIN, **YAML_H})
    assert ok.status_code == 201, ok.text
    # the last document is not even YAML: refused by count, the body was never parsed
    body = many(60_000) + b"---\nschema: [unclosed\n"
    resp = client.simulate_post(f"{P}/configdocs/more", body=body,
                                headers={**ADMIN, **YAML_H}, params={"buffermode": "append"})
    assert resp.status_code == 413 and resp.json["reason"] == "TooManyDocuments"
    assert "60001 documents" in resp.json["message"] and "at most 100" in resp.json["message"]
    assert [r["id"] for r in store.revisions()] == [1]


def test_the_default_limit_is_ten_thousand(tmp_path: Any) -> None:
    client = make_client(make_store(f"sqlite:///{tmp_path}/shipyard.db"))
    resp = client.simulate_post(f"{P}/configdocs/site", body=many(10_001),
                                headers={**ADMIN, **YAML_H})
    assert resp.status_code == 413 and "at most 10000" in resp.json["message"]


@pytest.mark.parametrize(("text", "count"), [
    (b"a: 1\n", 1), (b"---\na: 1\n---\nb: 2\n", 2), (b"a: 1\n---\nb: 2\n", 2),
    (b"# comment\n%YAML 1.2\n---\na: |\n  --- not a marker\n", 1), (b"", 0),
    (b"--- {a: 1}\n--- {b: 2}\n", 2), (b"----\n", 1)])
def test_documents_are_counted_without_parsing(text: bytes, count: int) -> None:
    assert document_starts(text) == count


@pytest.mark.parametrize("missing", ["successful_site_action", "last_site_action"])
def test_a_diff_against_a_site_action_version_that_does_not_exist_is_404(
        limited: Any, missing: str) -> None:
    client, _ = limited
    body = "---\n" + "schema: drydock/BaremetalNode/v1\nmetadata: {schema: metadata/Document/v1, " \
        "name: n1, layeringDefinition: {abstract: false, layer: site}}\ndata: {}\n"
    assert client.simulate_post(f"{P}/configdocs/site", body=body,
                                headers={**ADMIN, **YAML_H}).status_code == 201
    for query in (f"versions={missing},buffer", f"base_version={missing}",
                  f"versions=committed,{missing.replace('_', '-')}"):
        resp = client.simulate_get(f"{P}/configdocs", headers=ADMIN, query_string=query)
        assert resp.status_code == 404, (query, resp.text)
        assert resp.json["reason"] == "VersionNotFound" and missing in resp.json["message"]
    assert client.simulate_get(f"{P}/configdocs", headers=ADMIN).status_code == 200
