"""Node resources: list and show nodes, resolve node filters, validate designs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import falcon

from common.body import read_json_object
from common.context import RequestContext
from common.designref import href_of
from common.documents import Document
from common.errors import ValidationFailed
from common.policy import authorize
from common.status import status_body, validation_message
from drydock_api.nodes.design import Design
from drydock_api.nodes.filters import select_nodes
from drydock_api.nodes.inventory import Inventory
from drydock_api.nodes.validation import validate_design


class NodesResource:
    def __init__(self, inventory: Inventory) -> None:
        self._inventory = inventory

    @authorize("drydock:list_nodes")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self._inventory.nodes(req.context.berth, req.get_param("design_ref"))


class NodeResource:
    def __init__(self, inventory: Inventory) -> None:
        self._inventory = inventory

    @authorize("drydock:get_node")
    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        resp.media = self._inventory.node(req.context.berth, name, req.get_param("design_ref"))


class NodeFilterResource:
    def __init__(self, designs: Callable[[Any, RequestContext], Design]) -> None:
        self._designs = designs

    @authorize("drydock:node_filter")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        unknown = [k for k in body if k not in ("design_ref", "node_filter")]
        if unknown or "design_ref" not in body:
            raise ValidationFailed("Invalid node filter request", messages=[
                validation_message(p, name="NodeFilterRequest")
                for p in [f"unknown field {k!r}" for k in unknown]
                + ([] if "design_ref" in body else ["design_ref is required"])])
        href_of(body["design_ref"])
        design = self._designs(body["design_ref"], req.context.berth)
        resp.media = select_nodes(body.get("node_filter"), design.nodes, design.rack_labels)


class ValidateDesignResource:
    def __init__(self, documents: Callable[[Any, RequestContext], list[Document]]) -> None:
        self._documents = documents

    @authorize("drydock:validate_design")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        ref = body if "href" in body else body.get("design_ref")
        docs = self._documents(href_of(ref), req.context.berth)
        messages = validate_design(docs)
        if any(m["error"] for m in messages):
            raise ValidationFailed("Design validation failed", messages=messages)
        resp.media = status_body(200, "Design is valid", reason="Validation",
                                 messages=messages or [validation_message(
                                     "Design is valid", name="DesignValidation", error=False,
                                     level="Info")])
