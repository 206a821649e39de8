"""Commit-time checks of DeploymentStrategy documents: every problem named, with its document."""

from __future__ import annotations

import copy
from typing import Any

from common.documents import validate_documents
from shipyard_api.documents.validation import shipyard_checks
from shipyard_api.strategy.checks import check_strategy
from tests.unit.shipyard_strategy.example import SITE, example_data

REF = {"schema": "shipyard/DeploymentStrategy/v1", "name": "deployment-strategy"}


def group(name: str, deps: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "critical": False, "depends_on": deps or [], "selectors": [], **extra}


def texts(data: Any, nodes: list[str] | None = None) -> list[str]:
    messages = check_strategy(data, REF, nodes)
    assert all(m["documents"] == [REF] and m["error"] and m["kind"] == "ValidationMessage"
               for m in messages)
    return [m["message"] for m in messages]


def doc(schema: str, name: str, data: Any) -> dict[str, Any]:
    return {"schema": schema, "metadata": {"schema": "metadata/Document/v1", "name": name,
                                           "layeringDefinition": {"abstract": False,
                                                                  "layer": "site"},
                                           "storagePolicy": "cleartext"}, "data": data}


def test_the_spec_example_is_valid() -> None:
    nodes = [n["name"] for n in SITE["nodes"]]
    assert texts(example_data(), nodes) == []
    assert validate_documents([doc(REF["schema"], REF["name"], example_data())]) == []


def test_a_cycle_names_every_group_on_it() -> None:
    data = {"groups": [group("a", ["c"]), group("b", ["a"]), group("c", ["b"]),
                       group("d", ["a"])]}
    [message] = texts(data)
    assert "circular dependency among groups a, b, c" in message
    assert "d" not in message.split("groups ")[1].split(" (")[0]


def test_separate_cycles_and_self_dependencies_are_each_reported() -> None:
    data = {"groups": [group("a", ["b"]), group("b", ["a"]), group("s", ["s"]), group("x")]}
    found = texts(data)
    assert len(found) == 2
    assert any("among groups a, b" in m for m in found)
    assert any("among groups s (s -> s" in m for m in found)


def test_depends_on_an_unknown_group() -> None:
    [message] = texts({"groups": [group("a", ["nope"])]})
    assert "group 'a' depends on 'nope', which is not a group of this strategy" in message


def test_duplicate_group_names() -> None:
    [message] = texts({"groups": [group("a"), group("b"), group("a")]})
    assert "group name 'a' is used by 2 groups (groups 0, 2)" in message


def test_labels_not_key_value() -> None:
    selectors = [{"node_labels": ["ucp-control-plane=enabled", {"a": "1", "b": "2"},
                                  {"flag": True}, {"ok": "yes"}]}]
    found = texts({"groups": [group("a", selectors=selectors)]})
    assert len(found) == 3
    assert "'ucp-control-plane=enabled' is not of the form 'key: value'" in found[0]
    assert "has 2 keys instead of one" in found[1]
    assert "value that is not a string" in found[2]


def test_labels_with_a_colon_or_a_blank_value_are_named() -> None:
    selectors = [{"node_labels": [{"ucp-control-plane": "enabled:true"}, {"rack": ""},
                                  {"zone": "   "}, {"a:b": "c"}, {"ok": "yes"}]}]
    found = texts({"groups": [group("a", selectors=selectors)]})
    assert len(found) == 4
    assert "{'ucp-control-plane': 'enabled:true'} has a ':' in its value" in found[0]
    assert "has a blank value for 'rack'" in found[1]
    assert "has a blank value for 'zone'" in found[2]
    assert "has a ':' in its key" in found[3]


def test_null_data_is_refused_by_name() -> None:
    [message] = texts(None)
    assert "deployment-strategy: data is null" in message
    assert "would deploy nothing" in message


def test_a_null_strategy_is_refused_at_commit() -> None:
    config = doc("shipyard/DeploymentConfiguration/v1", "deployment-configuration",
                 {"physical_provisioner": {}})
    messages = shipyard_checks([config, doc(REF["schema"], "deployment-strategy", None)])
    assert [m["documents"] for m in messages] == [[REF]]
    assert "data is null" in messages[0]["message"]


def test_criteria_out_of_range() -> None:
    criteria = {"percent_successful_nodes": 150, "minimum_successful_nodes": -1,
                "maximum_failed_nodes": 1.5}
    found = texts({"groups": [group("a", success_criteria=criteria)]})
    assert len(found) == 3
    assert "percent_successful_nodes 150 is out of range (0 to 100)" in found[0]
    assert "minimum_successful_nodes -1 is out of range" in found[1]
    assert "maximum_failed_nodes 1.5 is out of range" in found[2]


def test_selectors_naming_nodes_the_design_lacks() -> None:
    data = {"groups": [group("a", selectors=[{"node_names": ["n1", "ghost"]}])]}
    [message] = texts(data, ["n1"])
    assert "selects node 'ghost', which is not a node of the design" in message
    assert texts(data) == []  # without the design's nodes, nothing to compare


def test_every_problem_is_listed_at_once() -> None:
    data = {"groups": [group("a", ["b"]), group("b", ["a"]), group("b"), group("c", ["zz"]),
                       group("d", success_criteria={"percent_successful_nodes": -5})]}
    assert len(texts(data)) == 4


def test_commit_checks_use_the_strategy_the_configuration_names() -> None:
    bad = {"groups": [group("a", ["a"])]}
    config = doc("shipyard/DeploymentConfiguration/v1", "deployment-configuration",
                 {"physical_provisioner": {"deployment_strategy": "my-strategy"}})
    messages = shipyard_checks([config, doc(REF["schema"], "my-strategy", bad),
                                doc(REF["schema"], "deployment-strategy", example_data())])
    assert [m["documents"] for m in messages] == [
        [{"schema": REF["schema"], "name": "my-strategy"}]]
    assert "circular dependency" in messages[0]["message"]


def test_commit_checks_default_to_deployment_strategy_and_allow_none() -> None:
    config = doc("shipyard/DeploymentConfiguration/v1", "deployment-configuration",
                 {"physical_provisioner": {}})
    broken = copy.deepcopy(example_data())
    broken["groups"][0]["depends_on"] = ["missing-group"]
    messages = shipyard_checks([config, doc(REF["schema"], "deployment-strategy", broken)])
    assert len(messages) == 1 and "missing-group" in messages[0]["message"]
    assert shipyard_checks([config]) == []


def test_the_schema_rejects_a_group_without_required_fields() -> None:
    data = {"groups": [{"name": "a", "critical": "yes", "selectors": []}]}
    messages = validate_documents([doc(REF["schema"], "s", data)])
    found = " ".join(m["message"] for m in messages)
    assert "depends_on" in found and "'yes' is not of type 'boolean'" in found
