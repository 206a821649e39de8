"""Node verbs: provide (spec 003) and reboot requests (spec 004)."""

from __future__ import annotations

import falcon

from common.body import read_json_object
from common.policy import authorize
from drydock_api.nodes.service import NodeService
from drydock_api.resources.names import checked_name


class NodeProvideResource:
    def __init__(self, service: NodeService) -> None:
        self._service = service

    @authorize("drydock:provide_node")
    @checked_name
    def on_post(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        resp.media = self._service.provide(req.context.berth, name, req.get_param("design_ref"))


class NodeRebootResource:
    def __init__(self, service: NodeService) -> None:
        self._service = service

    @authorize("drydock:reboot_node")
    @checked_name
    def on_post(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        body = read_json_object(req)
        resp.media, created = self._service.add_reboot(req.context.berth, name, body,
                                                       req.get_param("design_ref"))
        resp.status = falcon.HTTP_201 if created else falcon.HTTP_200

    @authorize("drydock:get_reboot")
    @checked_name
    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        resp.media = self._service.reboots(req.context.berth, name, req.get_param("design_ref"))


class NodeRebootKeyResource:
    def __init__(self, service: NodeService) -> None:
        self._service = service

    @authorize("drydock:delete_reboot")
    @checked_name
    def on_delete(self, req: falcon.Request, resp: falcon.Response, name: str,
                  key: str) -> None:
        self._service.delete_reboot(req.context.berth, name, key, req.get_param("design_ref"))
        resp.status = falcon.HTTP_204
