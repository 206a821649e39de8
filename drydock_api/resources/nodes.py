"""Node resources: list and show nodes, resolve node filters, validate designs."""

from __future__ import annotations

from collections.abc import Callable

import falcon

from common.body import read_json_object
from common.bodyschema import require_schema
from common.context import RequestContext
from common.designref import href_of
from common.documents import Document
from common.encoded import send_json
from common.errors import InvalidNodeName, ValidationFailed
from common.jsontypes import JSON, as_list, as_object
from common.nodenames import check_names
from common.policy import authorize
from common.status import status_body, validation_message
from drydock_api.bootactions.service import BootActionService
from drydock_api.db.nodes import NodeStore
from drydock_api.drivers.ports import EraseInterface, MachineLookup
from drydock_api.drivers.provisioners import Backends
from drydock_api.nodes.design import Design
from drydock_api.nodes.filters import require_filter, select_nodes
from drydock_api.nodes.inventory import Inventory
from drydock_api.nodes.service import NodeService
from drydock_api.nodes.validation import validate_design
from drydock_api.resources.names import check_filter_names, checked_name
from drydock_api.tasks import destroy, wipe

BOOLS = {"true": True, "false": False}


def bool_param(req: falcon.Request, name: str) -> bool | None:
    raw = req.get_param(name)
    if raw is None:
        return None
    if raw.lower() not in BOOLS:
        raise ValidationFailed(f"Invalid query parameter {name}", messages=[validation_message(
            f"{name} must be true or false, not {raw!r}", name="QueryParameter")])
    return BOOLS[raw.lower()]


class NodesResource:
    def __init__(self, inventory: Inventory) -> None:
        self._inventory = inventory

    @authorize("drydock:list_nodes")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        retired = bool_param(req, "retired")
        data, packed = self._inventory.nodes_json(req.context.berth, req.get_param("design_ref"),
                                                  retired=retired)
        send_json(req, resp, data, packed)


class NodeResource:
    def __init__(self, inventory: Inventory, service: NodeService,
                 bootactions: BootActionService | None = None) -> None:
        self._inventory = inventory
        self._service = service
        self._bootactions = bootactions

    @authorize("drydock:get_node")
    @checked_name
    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        """The node now; `bootactions`: its boot actions of its latest deploy and their
        reports, `bootaction_refusals`: the boot action requests refused lately."""
        view = self._inventory.node(req.context.berth, name, req.get_param("design_ref"))
        if self._bootactions is not None:
            resp.media = {**view, **self._bootactions.node_view(name)}
            return
        resp.media = view

    @authorize("drydock:update_node")
    @checked_name
    def on_patch(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        body = read_json_object(req)
        resp.media = self._service.retire(req.context.berth, name, body,
                                          req.get_param("design_ref"))


class NodeFilterResource:
    def __init__(self, designs: Callable[[JSON, RequestContext], Design],
                 nodes: NodeStore) -> None:
        self._designs = designs
        self._nodes = nodes

    @authorize("drydock:node_filter")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        check_filter_names(body.get("node_filter"))
        require_schema("drydock", "NodeFilterRequest", body, "Invalid node filter request")
        exclude = body.get("exclude_retired", False)
        require_filter(body.get("node_filter"))
        href_of(body["design_ref"])
        design = self._designs(body["design_ref"], req.context.berth)
        names = select_nodes(body.get("node_filter"), design.nodes, design.rack_labels)
        if exclude:
            names = [n for n in names if not self._nodes.retired(n)[0]]
        resp.media = names


class WipePlanResource:
    """How destroy_nodes would keep or wipe each disk of these nodes, or why it refuses a
    node: asked before anything is touched (Shipyard's redeploy_server preflight)."""

    def __init__(self, designs: Callable[[JSON, RequestContext], Design], erase: EraseInterface,
                 maas: MachineLookup | None = None, backends: Backends | None = None) -> None:
        self._designs = designs
        self._erase = erase
        self._maas = maas
        self._backends = backends  # the design's provisioner reports its machines

    @authorize("drydock:wipe_plan")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        options = body.get("options") or {}
        own = destroy.check_options(options) if isinstance(options, dict) else []
        require_schema("drydock", "WipePlanRequest", body, "Invalid wipe plan request",
                       extra=[p for p in own if "all_nodes" not in p])
        found = check_names(as_list(body["node_names"]))  # an array: the schema held
        if not found.ok:
            raise InvalidNodeName("node_names holds names that are not valid node names",
                                  messages=found.messages("node_names", "WipePlanRequest"))
        href_of(body["design_ref"])
        design = self._designs(body["design_ref"], req.context.berth)
        names = list(found.names)
        select_nodes({"filter_set_type": "union", "filter_set": [{"node_names": [*names]}]},
                     design.nodes, design.rack_labels)
        maas = self._backends.get(design.provisioner).port if self._backends else self._maas
        resp.media = [wipe.plan_for(design.nodes[n], as_object(options), self._erase,
                                    wipe.machine_of(maas, n) if maas else None)
                      for n in names]


class ValidateDesignResource:
    def __init__(self, documents: Callable[[JSON, RequestContext], list[Document]],
                 provisioners: list[str] | None = None) -> None:
        self._documents = documents
        self._provisioners = provisioners  # those configured: a design naming another fails

    @authorize("drydock:validate_design")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        require_schema("drydock", "ValidateDesignRequest", body,
                       "Invalid design validation request")
        ref = body if "href" in body else body.get("design_ref")
        docs = self._documents(href_of(ref), req.context.berth)
        messages = validate_design(docs, self._provisioners)
        if any(m["error"] for m in messages):
            raise ValidationFailed("Design validation failed", messages=messages)
        resp.media = status_body(200, "Design is valid", reason="Validation",
                                 messages=messages or [validation_message(
                                     "Design is valid", name="DesignValidation", error=False,
                                     level="Info")])
