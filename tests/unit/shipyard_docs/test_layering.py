"""Rendering follows Deckhand: layering actions, parent selection, abstract documents,
substitution (patterns, secrets, sources), replacement, and the errors Deckhand raises.
Expected data are Deckhand's documented examples (doc/source/users/layering.rst,
substitution.rst, replacement.rst)."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import Conflict, ValidationFailed
from shipyard_api.documents.diff import BufferMode
from shipyard_api.documents.render import REDACTED, render
from shipyard_api.documents.store import DocumentStore

POLICY = {"schema": "deckhand/LayeringPolicy/v1",
          "metadata": {"schema": "metadata/Control/v1", "name": "layering-policy"},
          "data": {"layerOrder": ["global", "type", "site"]}}
CHILD = {"a": {"x": 7, "z": 3}, "b": 4}
PARENT = {"a": {"x": 1, "y": 2}, "c": 9}


def doc(name: str, data: Any, *, layer: str = "site", schema: str = "example/Kind/v1",
        abstract: bool = False, labels: dict[str, str] | None = None,
        selector: dict[str, str] | None = None, actions: list[dict[str, str]] | None = None,
        subs: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    ld: dict[str, Any] = {"layer": layer, "abstract": abstract}
    if selector:
        ld["parentSelector"] = selector
        ld["actions"] = actions or [{"method": "merge", "path": "."}]
    metadata: dict[str, Any] = {"schema": "metadata/Document/v1", "name": name,
                                "layeringDefinition": ld, "storagePolicy": "cleartext", **meta}
    if labels:
        metadata["labels"] = labels
    if subs:
        metadata["substitutions"] = subs
    return {"schema": schema, "metadata": metadata, "data": data}


def two_layers(actions: list[dict[str, str]], child: Any = None,
               parent: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    docs = [POLICY,
            doc("global-1", PARENT if parent is None else parent, layer="global",
                abstract=True, labels={"key1": "value1"}),
            doc("site-1", CHILD if child is None else child, selector={"key1": "value1"},
                actions=actions)]
    return render(docs)


def data_of(docs: list[dict[str, Any]], name: str) -> Any:
    return next(d["data"] for d in docs if d["metadata"]["name"] == name)


def errors(messages: list[dict[str, Any]]) -> list[str]:
    return [m["name"] for m in messages if m["error"]]


class TestActions:
    @pytest.mark.parametrize(("path", "expected"), [
        (".", {"a": {"x": 7, "y": 2, "z": 3}, "b": 4, "c": 9}),
        (".a", {"a": {"x": 7, "y": 2, "z": 3}, "c": 9}),
        (".b", {"a": {"x": 1, "y": 2}, "b": 4, "c": 9}),
    ])
    def test_merge_deep_merges_nested_dicts_child_first(self, path: str, expected: Any) -> None:
        out, messages = two_layers([{"method": "merge", "path": path}])
        assert errors(messages) == []
        assert data_of(out, "site-1") == expected

    @pytest.mark.parametrize(("path", "expected"), [
        (".", {"a": {"x": 7, "z": 3}, "b": 4}),
        (".a", {"a": {"x": 7, "z": 3}, "c": 9}),
        (".b", {"a": {"x": 1, "y": 2}, "b": 4, "c": 9}),
    ])
    def test_replace_overwrites_at_the_path(self, path: str, expected: Any) -> None:
        out, messages = two_layers([{"method": "replace", "path": path}])
        assert errors(messages) == []
        assert data_of(out, "site-1") == expected

    @pytest.mark.parametrize(("path", "expected"), [
        (".", {}), (".a", {"c": 9}), (".c", {"a": {"x": 1, "y": 2}}),
    ])
    def test_delete_removes_the_parents_data_at_the_path(self, path: str, expected: Any) -> None:
        out, messages = two_layers([{"method": "delete", "path": path}])
        assert errors(messages) == []
        assert data_of(out, "site-1") == expected

    @pytest.mark.parametrize("action", [{"method": "merge", "path": ".c"},
                                        {"method": "replace", "path": ".c"},
                                        {"method": "delete", "path": ".b"}])
    def test_a_path_missing_where_the_action_reads_it_is_missing_document_key(
            self, action: dict[str, str]) -> None:
        _, messages = two_layers([action])
        assert errors(messages) == ["MissingDocumentKey"]
        assert "site-1" in messages[0]["message"] and action["path"] in messages[0]["message"]

    def test_actions_apply_in_order_and_paths_may_index_lists(self) -> None:
        parent = {"a": {"b": [{"k": 1, "v": "p"}, {"k": 2}]}, "keep": True}
        child = {"a": {"b": [{"v": "c", "w": 0}]}, "drop": 1}
        out, messages = two_layers([{"method": "merge", "path": ".a.b[0]"},
                                    {"method": "delete", "path": ".keep"},
                                    {"method": "replace", "path": "$.data.drop"}],
                                   child=child, parent=parent)
        assert errors(messages) == []
        assert data_of(out, "site-1") == {"a": {"b": [{"k": 1, "v": "c", "w": 0}, {"k": 2}]},
                                          "drop": 1}

    def test_merge_of_lists_without_an_index_takes_the_childs_list(self) -> None:
        out, _ = two_layers([{"method": "merge", "path": "."}],
                            child={"l": [3]}, parent={"l": [1, 2], "m": 1})
        assert data_of(out, "site-1") == {"l": [3], "m": 1}

    def test_a_selector_without_a_parent_keeps_the_childs_data_with_a_note(self) -> None:
        docs = [POLICY, doc("global-1", PARENT, layer="global", labels={"key1": "other"}),
                doc("site-1", CHILD, selector={"key1": "value1"})]
        out, messages = render(docs)
        assert data_of(out, "site-1") == CHILD
        assert errors(messages) == []
        assert [m["name"] for m in messages] == ["ParentNotFound"]


class TestParentSelection:
    def test_the_nearest_layer_above_wins_and_abstract_documents_are_not_rendered(
            self) -> None:
        # layering.rst, "Parent Selection": site-1234 layers on region-1234, not global-1234.
        docs = [POLICY,
                doc("global-1234", {"a": {"x": 1, "y": 2}}, layer="global", abstract=True,
                    labels={"key1": "value1"}),
                doc("type-1234", {"a": {"z": 3}}, layer="type", abstract=True,
                    labels={"key1": "value1"}, selector={"key1": "value1"},
                    actions=[{"method": "replace", "path": ".a"}]),
                doc("site-1234", {"b": 4}, selector={"key1": "value1"})]
        out, messages = render(docs)
        assert errors(messages) == []
        assert [d["metadata"]["name"] for d in out] == ["layering-policy", "site-1234"]
        assert data_of(out, "site-1234") == {"a": {"z": 3}, "b": 4}
        out, _ = render([d for d in docs if d["metadata"]["name"] != "type-1234"])
        assert data_of(out, "site-1234") == {"a": {"x": 1, "y": 2}, "b": 4}

    def test_the_selector_must_be_a_subset_of_the_parents_labels(self) -> None:
        docs = [POLICY, doc("g1", {"v": 1}, layer="global", labels={"a": "1", "b": "2"}),
                doc("g2", {"v": 2}, layer="global", labels={"a": "1"}),
                doc("s", {}, selector={"a": "1", "b": "2"})]
        out, messages = render(docs)
        assert errors(messages) == [] and data_of(out, "s") == {"v": 1}

    def test_two_parents_in_the_nearest_layer_are_indeterminate(self) -> None:
        docs = [POLICY, doc("t1", {"v": 1}, layer="type", labels={"a": "1"}),
                doc("t2", {"v": 2}, layer="type", labels={"a": "1"}),
                doc("s", {}, selector={"a": "1"})]
        _, messages = render(docs)
        assert errors(messages) == ["IndeterminateDocumentParent"]
        assert "Found: 2" in messages[0]["message"]

    def test_a_matching_document_of_another_schema_or_lower_layer_is_an_invalid_parent(
            self) -> None:
        docs = [POLICY, doc("g", {}, layer="global", labels={"a": "1"}, schema="other/Kind/v1"),
                doc("s2", {}, labels={"a": "1"}), doc("s", {}, selector={"a": "1"})]
        _, messages = render(docs)
        assert errors(messages) == ["InvalidDocumentParent", "InvalidDocumentParent"]

    def test_a_layer_outside_the_layer_order_is_invalid(self) -> None:
        _, messages = render([POLICY, doc("r", {}, layer="region")])
        assert errors(messages) == ["InvalidDocumentLayer"]

    def test_a_selector_without_a_layering_policy_is_refused(self) -> None:
        _, messages = render([doc("g", {}, layer="global", labels={"a": "1"}),
                              doc("s", {}, selector={"a": "1"})])
        assert errors(messages) == ["LayeringPolicyNotFound"]

    def test_malformed_layering_metadata_is_invalid_document_format(self) -> None:
        bad = doc("s", {}, selector={"a": "1"}, actions=[{"method": "append", "path": "."}])
        _, messages = render([POLICY, bad])
        assert "InvalidDocumentFormat" in errors(messages)


def passphrase(name: str, value: str) -> dict[str, Any]:
    return doc(name, value, schema="deckhand/Passphrase/v1", storagePolicy="encrypted")


class TestSubstitution:
    def test_a_pattern_is_replaced_by_a_passphrase_and_hidden_without_cleartext(self) -> None:
        # substitution.rst, "Substitution with Patterns".
        chart = doc("example-chart-01", {"chart": {"values": {
            "some_url": "http://admin:INSERT_PASSWORD_HERE@service-name:8080/v1"}}},
            subs=[{"dest": {"path": ".chart.values.some_url", "pattern": "INSERT_[A-Z]+_HERE"},
                   "src": {"schema": "deckhand/Passphrase/v1", "name": "example-password",
                           "path": "."}}])
        docs = [passphrase("example-password", "my-secret-password"), chart]
        out, messages = render(docs)
        assert errors(messages) == []
        assert data_of(out, "example-chart-01")["chart"]["values"]["some_url"] == \
            "http://admin:my-secret-password@service-name:8080/v1"
        hidden, _ = render(docs, cleartext=False)
        assert data_of(hidden, "example-password") == REDACTED
        assert data_of(hidden, "example-chart-01")["chart"]["values"]["some_url"] == \
            f"http://admin:{REDACTED}@service-name:8080/v1"

    def test_values_from_a_source_path_go_to_every_destination(self) -> None:
        src = doc("common", {"net": {"cidr": "10.0.0.0/24", "vlan": 5}}, schema="x/Common/v1")
        dst = doc("d", {"keep": 1}, subs=[{
            "src": {"schema": "x/Common/v1", "name": "common", "path": ".net"},
            "dest": [{"path": ".a.b[1]"}, {"path": ".copy"}]}])
        out, messages = render([src, dst])
        assert errors(messages) == []
        net = {"cidr": "10.0.0.0/24", "vlan": 5}
        assert data_of(out, "d") == {"keep": 1, "a": {"b": [{}, net]}, "copy": net}

    def test_recurse_replaces_the_pattern_in_every_string_below(self) -> None:
        dst = doc("d", {"v": {"u1": "a:PW@x", "n": {"u2": "b:PW@y"}, "other": "z"}}, subs=[{
            "src": {"schema": "deckhand/Passphrase/v1", "name": "pw", "path": "."},
            "dest": {"path": ".v", "pattern": "PW", "recurse": {"depth": -1}}}])
        out, _ = render([passphrase("pw", "s3"), dst])
        assert data_of(out, "d") == {"v": {"u1": "a:s3@x", "n": {"u2": "b:s3@y"}, "other": "z"}}

    def test_missing_source_missing_data_and_missing_pattern_are_each_listed(self) -> None:
        src = doc("common", {"a": 1}, schema="x/Common/v1")
        dst = doc("d", {"s": 5}, subs=[
            {"src": {"schema": "x/Common/v1", "name": "nowhere", "path": "."},
             "dest": {"path": ".x"}},
            {"src": {"schema": "x/Common/v1", "name": "common", "path": ".b"},
             "dest": {"path": ".y"}},
            {"src": {"schema": "x/Common/v1", "name": "common", "path": ".a"},
             "dest": {"path": ".s", "pattern": "P"}}])
        out, messages = render([src, dst])
        assert errors(messages) == ["SubstitutionSourceNotFound",
                                    "SubstitutionSourceDataNotFound", "MissingDocumentPattern"]
        assert data_of(out, "d") == {"s": 5}

    def test_malformed_substitutions_are_listed_and_rendering_goes_on(self) -> None:
        dst = doc("d", {"a": 1}, subs=["nonsense", {"src": "x", "dest": {"path": ".a"}}])
        out, messages = render([dst])
        assert set(errors(messages)) == {"InvalidDocumentFormat"}
        assert data_of(out, "d") == {"a": 1}

    def test_abstract_documents_are_no_substitution_source(self) -> None:
        src = doc("common", {"a": 1}, schema="x/Common/v1", abstract=True)
        dst = doc("d", {}, subs=[{"src": {"schema": "x/Common/v1", "name": "common",
                                          "path": ".a"}, "dest": {"path": ".a"}}])
        _, messages = render([src, dst])
        assert errors(messages) == ["SubstitutionSourceNotFound"]

    def test_sources_render_first_and_a_cycle_is_reported(self) -> None:
        a = doc("a", {"v": 1, "w": 0}, schema="x/A/v1", subs=[
            {"src": {"schema": "x/B/v1", "name": "b", "path": ".v"}, "dest": {"path": ".w"}}])
        b = doc("b", {"v": 0}, schema="x/B/v1", subs=[
            {"src": {"schema": "x/C/v1", "name": "c", "path": ".v"}, "dest": {"path": ".v"}}])
        c = doc("c", {"v": 42}, schema="x/C/v1")
        out, messages = render([a, b, c])
        assert errors(messages) == [] and data_of(out, "a")["w"] == 42
        c["metadata"]["substitutions"] = [
            {"src": {"schema": "x/A/v1", "name": "a", "path": ".v"}, "dest": {"path": ".v"}}]
        _, messages = render([a, b, c])
        assert "SubstitutionDependencyCycle" in errors(messages)

    def test_layering_happens_before_the_childs_substitutions(self) -> None:
        child = doc("s", {"x": 1}, selector={"k": "v"}, subs=[
            {"src": {"schema": "deckhand/Passphrase/v1", "name": "pw", "path": "."},
             "dest": {"path": ".auth", "pattern": "PLACEHOLDER"}}])
        parent = doc("g", {"auth": "user:PLACEHOLDER"}, layer="global", labels={"k": "v"})
        out, messages = render([POLICY, parent, child, passphrase("pw", "sekrit")])
        assert errors(messages) == []
        assert data_of(out, "s") == {"auth": "user:sekrit", "x": 1}


class TestReplacement:
    def docs(self, **child_meta: Any) -> list[dict[str, Any]]:
        parent = doc("chart", {"debug": False, "image": "a:1"}, layer="global",
                     labels={"sel": "foo"})
        child = doc("chart", {"debug": True}, selector={"sel": "foo"}, **child_meta)
        user = doc("user", {"flag": None}, schema="x/User/v1", subs=[
            {"src": {"schema": "example/Kind/v1", "name": "chart", "path": ".debug"},
             "dest": {"path": ".flag"}}])
        return [POLICY, parent, child, user]

    def test_the_replacement_stands_for_its_parent_everywhere(self) -> None:
        out, messages = render(self.docs(replacement=True))
        assert errors(messages) == []
        charts = [d for d in out if d["metadata"]["name"] == "chart"]
        assert len(charts) == 1 and charts[0]["metadata"]["layeringDefinition"]["layer"] == "site"
        assert charts[0]["data"] == {"debug": True, "image": "a:1"}
        assert data_of(out, "user") == {"flag": True}

    def test_same_schema_and_name_without_replacement_is_invalid(self) -> None:
        _, messages = render(self.docs())
        assert "InvalidDocumentReplacement" in errors(messages)

    def test_a_replacement_needs_a_parent_of_the_same_name(self) -> None:
        docs = self.docs(replacement=True)
        docs[1]["metadata"]["name"] = "other"
        _, messages = render(docs)
        assert "InvalidDocumentReplacement" in errors(messages)


def test_a_design_without_layering_renders_as_before() -> None:
    node = doc("node01", {"host_profile": "default"})
    secret = passphrase("bmc", "pw")
    out, messages = render([secret, node])
    assert messages == [] and out == [secret, node]


class TestStoredReplacement:
    def test_a_replacement_and_its_parent_are_stored_and_rendered_as_one(
            self, store: DocumentStore) -> None:
        docs = TestReplacement().docs(replacement=True)
        rev = store.put_collection("site", docs, BufferMode.REJECT_ON_CONTENTS).revision_id
        assert len(store.documents(rev)) == 4
        charts = [d for d in store.rendered_documents(rev) if d["metadata"]["name"] == "chart"]
        assert [c["data"] for c in charts] == [{"debug": True, "image": "a:1"}]

    def test_the_same_schema_name_and_layer_twice_is_still_refused(
            self, store: DocumentStore) -> None:
        one = doc("chart", {}, layer="global")
        with pytest.raises(ValidationFailed) as err:
            store.put_collection("site", [one, one], BufferMode.REJECT_ON_CONTENTS)
        assert err.value.messages[0]["name"] == "DuplicateDocument"
        store.put_collection("a", [one], BufferMode.REJECT_ON_CONTENTS)
        with pytest.raises(Conflict):
            store.put_collection("b", [one], BufferMode.APPEND)

    def test_malformed_layering_metadata_is_refused_when_staged(
            self, store: DocumentStore) -> None:
        bad = doc("s", {}, selector={"a": "1"}, actions=[{"method": "append", "path": "."}])
        bad["metadata"]["substitutions"] = [{"src": {"schema": "x/Y/v1"}, "dest": {}}]
        with pytest.raises(ValidationFailed) as err:
            store.put_collection("site", [POLICY, bad], BufferMode.REJECT_ON_CONTENTS)
        found = [m["message"] for m in err.value.messages if m["name"] == "InvalidDocumentFormat"]
        assert len(found) == 4, found  # the method, src.name, src.path, dest.path
        assert store.revisions() == []
