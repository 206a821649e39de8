"""The document routes in-process: status codes, bodies, policy and every 4xx."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import yaml

from shipyard_api.documents.store import DocumentStore
from tests.unit.shipyard_docs.support import (
    ADMIN,
    NOBODY,
    READER,
    YAML_H,
    FakePeer,
    deployment_configuration,
    doc,
    dump,
    make_client,
    node,
    peer_error,
    secret,
)

P = "/api/v1.0"
AY = {**ADMIN, **YAML_H}


def post_docs(client: Any, collection: str, docs: list[dict], mode: str | None = None,
              **kw: Any) -> Any:
    params = {"buffermode": mode} if mode else {}
    return client.simulate_post(f"{P}/configdocs/{collection}", body=dump(docs), headers=AY,
                                params=params, **kw)


def good_design() -> list[dict]:
    return [deployment_configuration(), node(), secret()]


@pytest.fixture
def client(sqlite_store: DocumentStore) -> Any:
    return make_client(sqlite_store)


class TestCreateConfigdocs:
    def test_staging_a_collection_answers_201_with_the_revision(self, client: Any) -> None:
        resp = post_docs(client, "site", good_design())
        assert resp.status_code == 201
        body = resp.json
        assert body["code"] == 201 and body["details"]["revision_id"] == 1
        assert body["details"]["collection_status"] == "created"

    def test_buffer_rules_are_409(self, client: Any) -> None:
        assert post_docs(client, "site", good_design()).status_code == 201
        refused = post_docs(client, "other", [node("n2")])
        assert refused.status_code == 409 and refused.json["reason"] == "BufferNotEmpty"
        assert post_docs(client, "other", [node("n2")], "append").status_code == 201
        again = post_docs(client, "other", [node("n3")], "append")
        assert again.status_code == 409 and again.json["reason"] == "CollectionInBuffer"
        assert post_docs(client, "other", [node("n3")], "replace").status_code == 201

    def test_a_document_in_two_collections_is_409(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        resp = post_docs(client, "copy", [node()], "append")
        assert resp.status_code == 409 and resp.json["reason"] == "DocumentInOtherCollection"

    def test_malformed_yaml_is_400_naming_the_line(self, client: Any) -> None:
        body = "---\nschema: a/B/v1\nmetadata:\n  name: [unclosed\n"
        resp = client.simulate_post(f"{P}/configdocs/site", body=body, headers=AY)
        assert resp.status_code == 400
        assert "at line " in resp.json["details"]["messageList"][0]["message"]

    def test_malformed_documents_are_400_listing_each(self, client: Any) -> None:
        resp = client.simulate_post(f"{P}/configdocs/site", headers=AY,
                                    body="---\nschema: a/B/v1\n---\nfoo: 1\n")
        assert resp.status_code == 400 and resp.json["details"]["errorCount"] >= 3

    def test_unknown_buffermode_is_400(self, client: Any) -> None:
        assert post_docs(client, "site", [node()], "merge").status_code == 400

    def test_wrong_content_type_is_415(self, client: Any) -> None:
        resp = client.simulate_post(f"{P}/configdocs/site", body=dump([node()]),
                                    headers={**ADMIN, "Content-Type": "text/plain"})
        assert resp.status_code == 415

    def test_an_empty_body_needs_empty_collection(self, client: Any) -> None:
        assert client.simulate_post(f"{P}/configdocs/site", headers=ADMIN).status_code == 400
        post_docs(client, "site", good_design())
        resp = client.simulate_post(f"{P}/configdocs/site", headers=ADMIN,
                                    params={"empty-collection": "true",
                                            "buffermode": "replace"})
        assert resp.status_code == 201 and "deleted" in resp.json["message"]

    def test_auth_and_policy(self, client: Any) -> None:
        assert client.simulate_post(f"{P}/configdocs/site", body=dump([node()]),
                                    headers=YAML_H).status_code == 401
        assert client.simulate_post(f"{P}/configdocs/site", body=dump([node()]),
                                    headers={**READER, **YAML_H}).status_code == 403

    def test_an_oversized_body_is_413(self, sqlite_store: DocumentStore) -> None:
        client = make_client(sqlite_store)
        # the big scalar is put in after dumping (PyYAML's emitter takes a minute over it)
        big = dump([doc("x/Big/v1", "big", "BIG")]).replace("BIG", "x" * (11 * 1024 * 1024))
        resp = client.simulate_post(f"{P}/configdocs/site", body=big, headers=AY)
        assert resp.status_code == 413


class TestGetConfigdocs:
    def test_a_collection_at_each_version(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        resp = client.simulate_get(f"{P}/configdocs/site", headers=READER)
        assert resp.status_code == 200 and resp.headers["content-type"] == "application/x-yaml"
        assert len(list(yaml.safe_load_all(resp.text))) == 3
        missing = client.simulate_get(f"{P}/configdocs/site", headers=READER,
                                      params={"version": "committed"})
        assert missing.status_code == 404 and missing.json["reason"] == "VersionNotFound"
        assert client.simulate_get(f"{P}/configdocs/nope", headers=READER).status_code == 404
        assert client.simulate_get(f"{P}/configdocs/site", headers=READER,
                                   params={"version": "someday"}).status_code == 400

    def test_secrets_are_redacted_unless_cleartext_is_asked_and_allowed(
            self, client: Any) -> None:
        post_docs(client, "site", good_design())
        redacted = client.simulate_get(f"{P}/configdocs/site", headers=ADMIN)
        assert "s3cret-value" not in redacted.text
        clear = client.simulate_get(f"{P}/configdocs/site", headers=ADMIN,
                                    params={"cleartext-secrets": "true"})
        assert "s3cret-value" in clear.text
        denied = client.simulate_get(f"{P}/configdocs/site", headers=READER,
                                     params={"cleartext-secrets": "true"})
        assert denied.status_code == 403

    def test_json_when_the_client_prefers_it(self, client: Any) -> None:
        post_docs(client, "site", [node()])
        resp = client.simulate_get(f"{P}/configdocs/site",
                                   headers={**READER, "Accept": "application/json"})
        assert resp.json[0]["metadata"]["name"] == "node01"


class TestDiffAndRendered:
    def test_versions_parameters_compare_two_versions(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN)
        post_docs(client, "more", [node("n2")])
        for query in ("versions=committed&versions=buffer", "versions=committed,buffer",
                      "base_version=committed&diff_version=buffer", ""):
            resp = client.simulate_get(f"{P}/configdocs", headers=READER, query_string=query)
            assert {r["collection_name"]: r["new_status"] for r in resp.json} == {
                "more": "created", "site": "unmodified"}, query
        reverse = client.simulate_get(f"{P}/configdocs", headers=READER,
                                      query_string="versions=buffer&versions=committed")
        assert {r["collection_name"]: r["new_status"] for r in reverse.json}["more"] == "deleted"

    def test_bad_version_parameters_are_400(self, client: Any) -> None:
        for query in ("versions=committed", "versions=a,b,c", "versions=committed,later",
                      "versions=committed,buffer&base_version=committed"):
            resp = client.simulate_get(f"{P}/configdocs", headers=READER, query_string=query)
            assert resp.status_code == 400, query

    def test_rendered_configdocs(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        resp = client.simulate_get(f"{P}/renderedconfigdocs", headers=READER,
                                   params={"version": "buffer"})
        docs = list(yaml.safe_load_all(resp.text))
        assert [d["schema"] for d in docs][0] == "shipyard/DeploymentConfiguration/v1"
        assert "s3cret-value" not in resp.text
        assert client.simulate_get(f"{P}/renderedconfigdocs", headers=READER,
                                   params={"version": "committed"}).status_code == 404


class TestCommit:
    def test_a_valid_buffer_is_committed(self, sqlite_store: DocumentStore) -> None:
        peer = FakePeer("drydock")
        client = make_client(sqlite_store, [peer])
        post_docs(client, "site", good_design())
        resp = client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN)
        assert resp.status_code == 200 and resp.json["code"] == 200
        assert resp.json["details"]["committed"] is True
        assert sqlite_store.revision_id("committed") == 1
        assert peer.refs == ["deckhand+http://shipyard.test/api/v1.0/revisions/1/"
                             "rendered-documents"]

    def test_an_empty_buffer_is_409(self, client: Any) -> None:
        resp = client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN)
        assert resp.status_code == 409 and resp.json["reason"] == "EmptyBuffer"
        post_docs(client, "site", good_design())
        client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN)
        assert client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN,
                                    params={"dryrun": "true"}).status_code == 409

    def test_invalid_documents_are_400_and_nothing_is_committed(
            self, sqlite_store: DocumentStore) -> None:
        client = make_client(sqlite_store, [FakePeer("drydock", [peer_error("drydock", "no")])])
        bad = doc("promenade/EtcdClusters/v1", "etcd-clusters", {"clusters": "many"})
        post_docs(client, "site", [node(), bad])
        resp = client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN)
        assert resp.status_code == 400 and resp.json["code"] == 400
        names = {m["name"] for m in resp.json["details"]["messageList"]}
        assert {"DeploymentConfiguration", "drydockValidation"} <= names
        assert any(n.startswith("SchemaValidation") for n in names)
        assert sqlite_store.revision_id("committed") is None

    def test_peers_messages_are_merged_and_run_in_parallel(
            self, sqlite_store: DocumentStore) -> None:
        both = threading.Barrier(2, timeout=5)

        class Waiting(FakePeer):
            def __call__(self, design_ref: str, ctx: Any) -> list[dict]:
                both.wait()  # each peer waits for the other: only passes when parallel
                return super().__call__(design_ref, ctx)

        drydock = Waiting("drydock", [peer_error("drydock", "bad rack")])
        promenade = Waiting("promenade", [peer_error("promenade", "bad etcd")])
        client = make_client(sqlite_store, [drydock, promenade])
        post_docs(client, "site", good_design())
        resp = client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN)
        texts = [m["message"] for m in resp.json["details"]["messageList"]]
        assert resp.status_code == 400 and "bad rack" in texts and "bad etcd" in texts

    def test_force_commits_despite_errors_and_says_so(self, sqlite_store: DocumentStore) -> None:
        client = make_client(sqlite_store)
        post_docs(client, "site", [node()])
        resp = client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN,
                                    params={"force": "true"})
        assert resp.status_code == 200 and resp.json["message"].startswith("FORCED")
        assert resp.json["details"]["forced"] is True
        assert resp.json["details"]["errorCount"] == 1
        assert sqlite_store.revision_id("committed") == 1
        assert sqlite_store.tag(1, "committed")["data"] == {"user": "alice", "forced": True}

    def test_dryrun_tags_nothing(self, sqlite_store: DocumentStore) -> None:
        client = make_client(sqlite_store)
        post_docs(client, "site", good_design())
        resp = client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN,
                                    params={"dryrun": "true"})
        assert resp.status_code == 200 and resp.json["message"].startswith("DRYRUN")
        assert sqlite_store.revision_id("committed") is None
        bad = make_client(sqlite_store)
        post_docs(bad, "x", [node("n2")], "append")
        post_docs(bad, "site", [node()], "replace")
        resp = bad.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN,
                                 params={"dryrun": "true"})
        assert resp.status_code == 400 and sqlite_store.revision_id("committed") is None

    def test_commit_needs_the_admin_rule(self, client: Any) -> None:
        assert client.simulate_post(f"{P}/commitconfigdocs", headers=READER).status_code == 403
        assert client.simulate_post(f"{P}/commitconfigdocs").status_code == 401

    def test_a_writer_during_a_commit_gets_409(self, sqlite_store: DocumentStore) -> None:
        entered, release = threading.Event(), threading.Event()

        class Slow(FakePeer):
            def __call__(self, design_ref: str, ctx: Any) -> list[dict]:
                entered.set()
                release.wait(10)
                return []

        client = make_client(sqlite_store, [Slow("drydock")])
        post_docs(client, "site", good_design())
        results: list[Any] = []
        worker = threading.Thread(target=lambda: results.append(
            client.simulate_post(f"{P}/commitconfigdocs", headers=ADMIN)))
        worker.start()
        try:
            assert entered.wait(10)
            blocked = post_docs(client, "other", [node("n2")], "append")
            assert blocked.status_code == 409 and blocked.json["reason"] == "DocumentsLocked"
            assert blocked.json["retry"] is True
        finally:
            release.set()
            worker.join(10)
        assert results[0].status_code == 200
        assert post_docs(client, "other", [node("n2")], "append").status_code == 201


class TestRevisions:
    def test_list_documents_and_rendered_documents(self, client: Any) -> None:
        abstract = doc("drydock/HostProfile/v1", "base", {},
                       layeringDefinition={"abstract": True, "layer": "global"})
        post_docs(client, "site", [*good_design(), abstract])
        listing = client.simulate_get(f"{P}/revisions", headers=READER).json
        assert listing["count"] == 1 and listing["results"][0]["buckets"] == ["site"]
        raw = client.simulate_get(f"{P}/revisions/1/documents", headers=READER)
        assert len(list(yaml.safe_load_all(raw.text))) == 4
        rendered = client.simulate_get(f"{P}/revisions/1/rendered-documents", headers=READER)
        assert len(list(yaml.safe_load_all(rendered.text))) == 3
        filtered = client.simulate_get(f"{P}/revisions/1/documents", headers=READER,
                                       params={"schema": "test/Thing/v1"})
        assert [d["metadata"]["name"] for d in yaml.safe_load_all(filtered.text)] == ["node01"]

    def test_services_with_the_admin_role_get_cleartext(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        url = f"{P}/revisions/1/rendered-documents"
        assert "s3cret-value" in client.simulate_get(url, headers=ADMIN).text
        assert "s3cret-value" not in client.simulate_get(url, headers=READER).text
        assert "s3cret-value" not in client.simulate_get(
            url, headers=ADMIN, params={"cleartext-secrets": "false"}).text
        assert client.simulate_get(url, headers=READER,
                                   params={"cleartext-secrets": "true"}).status_code == 403

    def test_bad_and_missing_revisions(self, client: Any) -> None:
        assert client.simulate_get(f"{P}/revisions/abc/documents",
                                   headers=READER).status_code == 400
        assert client.simulate_get(f"{P}/revisions/0/documents",
                                   headers=READER).status_code == 400
        assert client.simulate_get(f"{P}/revisions/9/rendered-documents",
                                   headers=READER).status_code == 404
        assert client.simulate_get(f"{P}/revisions", headers=NOBODY).status_code == 403

    def test_revision_ids_beyond_the_integer_column_are_400_not_500(
            self, store: DocumentStore) -> None:
        client = make_client(store)
        for path in ("documents", "rendered-documents", "tags", "tags/x"):
            for method in ("GET", "DELETE") if path == "tags/x" else ("GET",):
                resp = client.simulate_request(method, f"{P}/revisions/2147483648/{path}",
                                               headers=ADMIN)
                assert resp.status_code == 400, (method, path)
                assert resp.json["reason"] == "InvalidRevision"
        huge = client.simulate_delete(f"{P}/revisions/591011022364257026048/tags/x",
                                      headers=ADMIN)
        assert huge.status_code == 400 and huge.json["code"] == 400
        assert client.simulate_get(f"{P}/revisions/2147483647/documents",
                                   headers=ADMIN).status_code == 404

    def test_revisions_cannot_be_modified(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        for method in ("PUT", "POST", "DELETE", "PATCH"):
            resp = client.simulate_request(method, f"{P}/revisions/1/documents", headers=AY,
                                           body=dump([node("n2")]))
            assert resp.status_code == 405, method
        assert client.simulate_delete(f"{P}/revisions", headers=ADMIN).status_code == 405


class TestTagRoutes:
    def test_add_list_show_and_delete(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        url = f"{P}/revisions/1/tags"
        made = client.simulate_post(f"{url}/site-action-success", headers=ADMIN,
                                    json={"dag_id": "01ABC"})
        assert made.status_code == 201 and made.json["data"] == {"dag_id": "01ABC"}
        yaml_tag = client.simulate_post(f"{url}/mark", headers=AY, body="dag_id: 01XYZ\n")
        assert yaml_tag.json["data"] == {"dag_id": "01XYZ"}
        assert client.simulate_post(f"{url}/bare", headers=ADMIN).status_code == 201
        assert [t["tag"] for t in client.simulate_get(url, headers=READER).json] == [
            "bare", "mark", "site-action-success"]
        assert client.simulate_get(f"{url}/mark", headers=READER).json["data"] == {
            "dag_id": "01XYZ"}
        assert client.simulate_delete(f"{url}/mark", headers=ADMIN).status_code == 204
        assert client.simulate_get(f"{url}/mark", headers=READER).status_code == 404
        assert client.simulate_delete(f"{url}/mark", headers=ADMIN).status_code == 404

    def test_tag_errors(self, client: Any) -> None:
        post_docs(client, "site", good_design())
        url = f"{P}/revisions/1/tags"
        assert client.simulate_post(f"{url}/x", headers=READER).status_code == 403
        assert client.simulate_post(f"{P}/revisions/5/tags/x", headers=ADMIN).status_code == 404
        assert client.simulate_post(f"{url}/x", headers={**ADMIN, "Content-Type":
                                    "application/json"}, body="{bad").status_code == 400
        assert client.simulate_post(f"{url}/x", headers=ADMIN, json=[1, 2]).status_code == 400
        assert client.simulate_post(f"{url}/x", headers={**ADMIN, "Content-Type":
                                    "text/plain"}, body="a").status_code == 415
        assert client.simulate_post(f"{url}/bad%20tag", headers=ADMIN).status_code == 400
