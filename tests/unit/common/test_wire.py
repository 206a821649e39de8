"""Each service's wire types (common/clients/<service>.py) mirror its OpenAPI document: every
TypedDict has exactly the schema's properties, and exactly its required ones are required."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, is_typeddict

import pytest

from common.app import load_openapi
from common.clients import drydock, promenade, shipyard

NODE = ("paths", "/api/v1.0/nodes/{node_id}", "get", "responses", "200", "content",
        "application/json", "schema")
PREVIEW = ("paths", "/api/v1.0/nodes/{node_id}/decommission/preview", "post", "responses",
           "200", "content", "application/json", "schema")
TASK = ("components", "schemas", "Task")
DETAILS = ("components", "schemas", "MessageDetails")
FILTER = ("components", "schemas", "NodeFilter")
REVISIONS = ("paths", "/api/v1.0/revisions", "get", "responses", "200", "content",
             "application/json", "schema")

# wire type -> (service, where its schema is in the service's OpenAPI document)
WHERE: dict[Any, tuple[str, tuple[str, ...]]] = {
    promenade.NodeView: ("promenade", NODE),
    promenade.Kubelet: ("promenade", (*NODE, "properties", "kubelet")),
    promenade.Pods: ("promenade", (*NODE, "properties", "pods")),
    promenade.EtcdMembership: ("promenade", (*NODE, "properties", "etcd", "items")),
    promenade.DecommissionPreview: ("promenade", PREVIEW),
    promenade.PreviewPhase: ("promenade", (*PREVIEW, "properties", "phases", "items")),
    drydock.Task: ("drydock", TASK),
    drydock.TaskResult: ("drydock", (*TASK, "properties", "result")),
    drydock.MessageDetails: ("drydock", DETAILS),
    drydock.Node: ("drydock", ("components", "schemas", "Node")),
    drydock.NodeFilter: ("drydock", FILTER),
    drydock.FilterItem: ("drydock", (*FILTER, "properties", "filter_set", "items")),
    shipyard.Revisions: ("shipyard", REVISIONS),
    shipyard.Revision: ("shipyard", (*REVISIONS, "properties", "results", "items")),
}


def _resolve(doc: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = doc
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def schema_at(service: str, where: tuple[str, ...]) -> dict[str, Any]:
    doc = load_openapi(service)
    node: Any = doc
    for part in where:
        node = _resolve(doc, _resolve(doc, node)[part])
    return dict(node)


def _wire_types(module: ModuleType) -> list[Any]:
    return [obj for _, obj in inspect.getmembers(module, is_typeddict)
            if obj.__module__ == module.__name__]


@pytest.mark.parametrize("wire", list(WHERE), ids=lambda t: t.__qualname__)
def test_wire_type_matches_the_openapi_document(wire: Any) -> None:
    schema = schema_at(*WHERE[wire])
    assert set(wire.__annotations__) == set(schema.get("properties", {}))
    assert set(wire.__required_keys__) == set(schema.get("required", []))


@pytest.mark.parametrize("module", [promenade, drydock, shipyard], ids=lambda m: m.__name__)
def test_every_wire_type_is_checked(module: ModuleType) -> None:
    assert set(_wire_types(module)) <= set(WHERE)
