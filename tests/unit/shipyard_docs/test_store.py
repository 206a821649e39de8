"""The document store on SQLite and PostgreSQL: buffer rules, versions, diffs, tags, locks."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy

from common.errors import BadRequest, Conflict, NotFound, ValidationFailed
from shipyard_api.documents.diff import BufferMode
from shipyard_api.documents.lock import DocumentsLocked
from shipyard_api.documents.render import REDACTED
from shipyard_api.documents.store import DocumentStore
from tests.unit.shipyard_docs.support import deployment_configuration, doc, node, secret

APPEND, REPLACE, REJECT = BufferMode.APPEND, BufferMode.REPLACE, BufferMode.REJECT_ON_CONTENTS


def commit(store: DocumentStore) -> int:
    rev = store.revision_id("buffer")
    assert rev is not None
    store.add_tag(rev, "committed")
    return rev


def names(docs: list[dict]) -> list[str]:
    return [d["metadata"]["name"] for d in docs]


class TestBufferRules:
    def test_an_empty_buffer_accepts_every_mode(self, store: DocumentStore) -> None:
        for i, mode in enumerate((REJECT, APPEND, REPLACE)):
            store.put_collection(f"c{i}", [node(f"n{i}")], mode)
            commit(store)
        assert store.revision_id("committed") == 3

    def test_rejectoncontents_refuses_a_non_empty_buffer(self, store: DocumentStore) -> None:
        store.put_collection("site", [node()], REJECT)
        with pytest.raises(Conflict) as err:
            store.put_collection("other", [node("n2")], REJECT)
        assert err.value.instance_reason == "BufferNotEmpty"
        assert store.revisions()[-1]["buckets"] == ["site"]

    def test_append_adds_another_collection_to_the_buffer(self, store: DocumentStore) -> None:
        store.put_collection("site", [node()], REJECT)
        store.put_collection("secrets", [secret()], APPEND)
        assert store.buffer_changes() == {"site": "created", "secrets": "created"}

    def test_append_refuses_a_collection_already_modified_in_the_buffer(
            self, store: DocumentStore) -> None:
        store.put_collection("site", [node()], REJECT)
        with pytest.raises(Conflict) as err:
            store.put_collection("site", [node("n2")], APPEND)
        assert err.value.instance_reason == "CollectionInBuffer"

    def test_replace_discards_the_buffer_first(self, store: DocumentStore) -> None:
        store.put_collection("site", [node()], REJECT)
        commit(store)
        store.put_collection("site", [node("n9")], REJECT)
        store.put_collection("extra", [secret()], APPEND)
        store.put_collection("other", [node("n5")], REPLACE)
        buffer = store.revision_id("buffer")
        assert buffer is not None
        assert store.buffer_changes() == {"other": "created"}
        assert names(store.documents(buffer, collection="site")) == ["node01"]

    def test_a_document_in_two_collections_is_refused(self, store: DocumentStore) -> None:
        store.put_collection("site", [node()], REJECT)
        with pytest.raises(Conflict) as err:
            store.put_collection("again", [node()], APPEND)
        assert err.value.instance_reason == "DocumentInOtherCollection"
        assert "node01" in err.value.messages[0]["message"]

    def test_an_empty_collection_deletes_it_in_the_buffer(self, store: DocumentStore) -> None:
        store.put_collection("site", [node()], REJECT)
        store.put_collection("gone", [node("n2")], APPEND)
        commit(store)
        result = store.put_collection("gone", [], REJECT)
        assert result.created and store.buffer_changes() == {"gone": "deleted"}

    def test_staging_identical_documents_creates_no_revision(self, store: DocumentStore) -> None:
        first = store.put_collection("site", [node(), secret()], REJECT)
        again = store.put_collection("site", [node(), secret()], REPLACE)
        assert again.revision_id == first.revision_id and not again.created

    def test_staging_committed_documents_again_leaves_the_buffer_empty(
            self, store: DocumentStore) -> None:
        store.put_collection("site", [node(), secret()], REJECT)
        commit(store)
        store.put_collection("site", [node(), secret()], REJECT)
        assert store.buffer_changes() == {}

    def test_malformed_documents_are_refused_listing_every_fault(
            self, store: DocumentStore) -> None:
        bad = [{"schema": "x/Y/v1", "metadata": {"name": "a"}},
               {"schema": "bad", "metadata": {"schema": "m", "name": ""}, "data": {}},
               doc("x/Y/v1", "b", {}, storagePolicy="sometimes"), node(), node()]
        with pytest.raises(ValidationFailed) as err:
            store.put_collection("site", bad, REJECT)
        assert len(err.value.messages) >= 5
        assert store.revisions() == []

    def test_invalid_collection_names_are_refused(self, store: DocumentStore) -> None:
        with pytest.raises(BadRequest):
            store.put_collection("../etc", [node()], REJECT)


class TestRevisions:
    def test_revisions_are_immutable_snapshots(self, store: DocumentStore) -> None:
        first = store.put_collection("site", [node()], REJECT).revision_id
        store.put_collection("site", [node("n2")], REPLACE)
        assert names(store.documents(first)) == ["node01"]
        latest = store.revision_id("buffer")
        assert latest is not None and latest > first
        assert names(store.documents(latest)) == ["n2"]

    def test_versions_name_the_tagged_revisions(self, store: DocumentStore) -> None:
        assert store.revision_id("committed") is None and store.revision_id("buffer") is None
        r1 = store.put_collection("site", [node()], REJECT).revision_id
        commit(store)
        store.add_tag(r1, "site-action-failure", {"dag_id": "A1"})
        r2 = store.put_collection("site", [node("n2")], REJECT).revision_id
        commit(store)
        store.add_tag(r2, "site-action-success", {"dag_id": "A2"})
        r3 = store.put_collection("site", [node("n3")], REJECT).revision_id
        assert store.revision_id("buffer") == r3
        assert store.revision_id("committed") == r2
        assert store.revision_id("successful-site-action") == r2
        assert store.revision_id("last_site_action") == r2
        store.add_tag(r3, "committed")
        store.add_tag(r3, "site-action-failure")
        assert store.revision_id("last_site_action") == r3
        assert store.revision_id("successful_site_action") == r2
        assert store.revision_id("buffer") is None

    def test_unknown_versions_are_bad_requests(self, store: DocumentStore) -> None:
        with pytest.raises(BadRequest):
            store.revision_id("tomorrow")

    def test_missing_revisions_are_not_found(self, store: DocumentStore) -> None:
        with pytest.raises(NotFound):
            store.documents(42)
        with pytest.raises(NotFound):
            store.tags(42)

    def test_revision_list_shows_buckets_and_tags(self, store: DocumentStore) -> None:
        store.put_collection("site", [node()], REJECT, user="alice")
        commit(store)
        [rev] = store.revisions()
        assert rev["buckets"] == ["site"] and rev["tags"] == ["committed"]
        assert rev["createdBy"] == "alice"

    def test_design_ref_points_at_rendered_documents(self, store: DocumentStore) -> None:
        assert store.design_ref(7, "http://10.0.0.1:9000/") == (
            "deckhand+http://10.0.0.1:9000/api/v1.0/revisions/7/rendered-documents")


class TestDiff:
    def test_statuses_between_committed_and_buffer(self, store: DocumentStore) -> None:
        store.put_collection("same", [node("a")], REJECT)
        store.put_collection("changed", [node("b")], APPEND)
        store.put_collection("dropped", [node("c")], APPEND)
        commit(store)
        store.put_collection("changed", [node("b", "other-profile")], REJECT)
        store.put_collection("dropped", [], APPEND)
        store.put_collection("new", [node("d")], APPEND)
        diff = {d["collection_name"]: d["new_status"] for d in store.diff("committed", "buffer")}
        assert diff == {"same": "unmodified", "changed": "modified", "dropped": "deleted",
                        "new": "created"}

    def test_diff_between_site_action_versions(self, store: DocumentStore) -> None:
        r1 = store.put_collection("site", [node("a")], REJECT).revision_id
        commit(store)
        store.add_tag(r1, "site-action-success")
        r2 = store.put_collection("site", [node("b")], REJECT).revision_id
        commit(store)
        store.add_tag(r2, "site-action-failure")
        store.put_collection("more", [node("c")], REJECT)
        rows = store.diff("successful_site_action", "last-site-action")
        assert [(r["collection_name"], r["new_status"], r["base_revision"], r["new_revision"])
                for r in rows] == [("site", "modified", r1, r2)]
        rows = store.diff("last_site_action", "buffer")
        assert {r["collection_name"]: r["new_status"] for r in rows} == {
            "more": "created", "site": "unmodified"}

    def test_a_missing_committed_version_compares_as_empty(self, store: DocumentStore) -> None:
        store.put_collection("site", [node("a")], REJECT)
        [row] = store.diff("committed", "buffer")
        assert row["new_status"] == "created" and row["base_revision"] == 0

    @pytest.mark.parametrize("missing", ["successful_site_action", "last-site-action"])
    def test_a_missing_site_action_version_is_404_not_revision_0(
            self, store: DocumentStore, missing: str) -> None:
        store.put_collection("site", [node("a")], REJECT)
        commit(store)
        for pair in ((missing, "buffer"), ("committed", missing)):
            with pytest.raises(NotFound) as info:
                store.diff(*pair)
            assert info.value.instance_reason == "VersionNotFound"
            assert missing.replace("-", "_") in info.value.message

    def test_an_encrypted_secret_staged_again_is_unmodified(self, store: DocumentStore) -> None:
        store.put_collection("secrets", [secret()], REJECT)
        commit(store)
        store.put_collection("secrets", [secret()], REJECT)
        store.put_collection("site", [node()], APPEND)
        rows = {r["collection_name"]: r["new_status"] for r in store.diff("committed", "buffer")}
        assert rows == {"secrets": "unmodified", "site": "created"}


class TestSecrets:
    def test_secrets_are_encrypted_at_rest(self, store: DocumentStore, db_url: str) -> None:
        store.put_collection("secrets", [secret(value="hunter2-very-secret"), node()], REJECT)
        engine = sqlalchemy.create_engine(db_url)
        with engine.connect() as conn:
            rows = conn.execute(sqlalchemy.text(
                "SELECT name, data, encrypted FROM doc_documents")).all()
        engine.dispose()
        raw = {r[0]: (r[1], bool(r[2])) for r in rows}
        assert raw["bmc-password"][1] and "hunter2" not in raw["bmc-password"][0]
        assert not raw["node01"][1] and "default" in raw["node01"][0]

    def test_secrets_are_redacted_unless_cleartext(self, store: DocumentStore) -> None:
        rev = store.put_collection("s", [secret(value="hunter2")], REJECT).revision_id
        assert store.documents(rev, cleartext=False)[0]["data"] == REDACTED
        assert store.documents(rev)[0]["data"] == "hunter2"
        assert store.rendered_documents(rev, cleartext=False)[0]["data"] == REDACTED


class TestTags:
    def test_tags_are_added_listed_replaced_and_deleted(self, store: DocumentStore) -> None:
        rev = store.put_collection("site", [node()], REJECT).revision_id
        store.add_tag(rev, "site-action-success", {"dag_id": "A1"})
        store.add_tag(rev, "site-action-success", {"dag_id": "A2"})
        store.add_tag(rev, "committed")
        tags = store.tags(rev)
        assert [(t["tag"], t["data"]) for t in tags] == [
            ("committed", {}), ("site-action-success", {"dag_id": "A2"})]
        store.delete_tag(rev, "committed")
        assert [t["tag"] for t in store.tags(rev)] == ["site-action-success"]
        with pytest.raises(NotFound):
            store.delete_tag(rev, "committed")
        with pytest.raises(NotFound):
            store.add_tag(rev + 1, "x")

    def test_tag_names_are_checked(self, store: DocumentStore) -> None:
        rev = store.put_collection("site", [node()], REJECT).revision_id
        with pytest.raises(BadRequest):
            store.add_tag(rev, "bad tag/name")


class TestIntermediateCommits:
    def _commits(self, store: DocumentStore, count: int) -> list[int]:
        revs = []
        for i in range(count):
            store.put_collection("site", [node(f"n{len(store.revisions())}-{i}")], REPLACE)
            revs.append(commit(store))
        return revs

    def test_without_site_actions_counts_from_revision_zero(self, store: DocumentStore) -> None:
        r1, r2, r3 = self._commits(store, 3)
        assert store.intermediate_commits(r3) == [r1, r2]
        assert store.intermediate_commits(r1) == [r2, r3]

    def test_a_single_commit_since_the_last_site_action_is_fine(
            self, store: DocumentStore) -> None:
        r1, r2 = self._commits(store, 2)
        store.add_tag(r1, "site-action-success")
        assert store.intermediate_commits(r2) == []
        store.add_tag(r2, "site-action-failure")
        assert store.intermediate_commits(r2) == []

    def test_commits_between_the_last_site_action_and_the_one_used(
            self, store: DocumentStore) -> None:
        r1, r2, r3, r4 = self._commits(store, 4)
        store.add_tag(r1, "site-action-success")
        assert store.intermediate_commits(r4) == [r2, r3]
        store.put_collection("site", [node("uncommitted")], REPLACE)
        assert store.intermediate_commits(r4) == [r2, r3]


class TestLock:
    def test_a_second_writer_gets_409_while_the_lock_is_held(self, store: DocumentStore) -> None:
        with store.lock.held(), pytest.raises(DocumentsLocked) as err:
            store.put_collection("site", [node()], REJECT)
        assert err.value.code == 409
        store.put_collection("site", [node()], REJECT)

    def test_an_expired_lease_is_taken_over(self, db_url: str) -> None:
        from tests.unit.shipyard_docs.support import Clock, make_store

        store = make_store(db_url, lease=10)
        clock = store._clock
        assert isinstance(clock, Clock)
        owner = store.lock.acquire()
        clock.now += timedelta(seconds=11)
        store.put_collection("site", [node()], REJECT)
        assert not store.lock.holds(owner)


class TestRendering:
    def test_abstract_documents_are_not_rendered(self, store: DocumentStore) -> None:
        abstract = doc("drydock/HostProfile/v1", "base", {}, layeringDefinition={
            "abstract": True, "layer": "global"})
        rev = store.put_collection("site", [abstract, node()], REJECT).revision_id
        assert names(store.rendered_documents(rev)) == ["node01"]
        assert names(store.documents(rev)) == ["base", "node01"]

    def test_substitutions_copy_secrets_only_in_cleartext(self, store: DocumentStore) -> None:
        target = doc("x/Conf/v1", "conf", {"auth": {"password": "PLACEHOLDER-x"}},
                     substitutions=[{"src": {"schema": "deckhand/Passphrase/v1",
                                             "name": "bmc-password", "path": "."},
                                     "dest": {"path": ".auth.password",
                                              "pattern": "PLACEHOLDER"}}])
        rev = store.put_collection("site", [secret(value="pw"), target], REJECT).revision_id
        clear = store.rendered_documents(rev)
        assert clear[1]["data"] == {"auth": {"password": "pw-x"}}
        hidden = store.rendered_documents(rev, cleartext=False)
        assert "pw" not in str(hidden[1]["data"]).replace(REDACTED, "")

    def test_a_broken_substitution_is_reported(self, store: DocumentStore) -> None:
        target = doc("x/Conf/v1", "conf", {}, substitutions=[
            {"src": {"schema": "deckhand/Passphrase/v1", "name": "missing", "path": "."},
             "dest": {"path": ".pw"}}])
        rev = store.put_collection("site", [target, deployment_configuration()],
                                   REJECT).revision_id
        docs, errors = store.rendered(rev)
        assert len(docs) == 2 and "missing" in errors[0]["message"]


def test_concurrent_writers_lose_no_update(store: DocumentStore) -> None:
    import threading

    outcomes: dict[str, str] = {}
    start = threading.Barrier(6)

    def write(name: str) -> None:
        start.wait()
        try:
            store.put_collection(name, [node(f"{name}-node")], APPEND)
            outcomes[name] = "ok"
        except DocumentsLocked:
            outcomes[name] = "locked"

    threads = [threading.Thread(target=write, args=(f"c{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    written = sorted(n for n, o in outcomes.items() if o == "ok")
    assert len(outcomes) == 6 and written
    assert sorted(store.buffer_changes()) == written
    assert len(store.revisions()) == len(written)
