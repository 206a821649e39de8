"""Routes of /plans: plan an action (nothing is changed anywhere), read a plan."""

from __future__ import annotations

import falcon

from common.api import API_PREFIX as P
from common.body import read_json_object
from common.bodyschema import require_schema
from common.policy import authorize
from shipyard_api.actions.params import DEFAULT_MAX_TARGETS, check_targets
from shipyard_api.plans.service import PlanService


class PlansResource:
    def __init__(self, service: PlanService, max_target_nodes: int = DEFAULT_MAX_TARGETS) -> None:
        self._service = service
        self._max_targets = max_target_nodes

    @authorize("shipyard:create_plan")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        definition = self._service.actions.definition(body.get("name"))  # UnknownAction first
        require_schema("shipyard", "PlanRequest", body, "Invalid plan request",
                       reason="BadRequest")
        parameters = check_targets(body.get("parameters"), self._max_targets)
        view = self._service.create(definition.name, parameters, req.context.berth)
        resp.status = falcon.HTTP_201
        resp.location = str(view["url"])
        resp.media = view


class PlanResource:
    def __init__(self, service: PlanService) -> None:
        self._service = service

    @authorize("shipyard:get_plan")
    def on_get(self, req: falcon.Request, resp: falcon.Response, plan_id: str) -> None:
        resp.media = self._service.get(plan_id)


def plan_routes(service: PlanService,
                max_target_nodes: int = DEFAULT_MAX_TARGETS) -> list[tuple[str, object]]:
    return [(f"{P}/plans", PlansResource(service, max_target_nodes)),
            (f"{P}/plans/{{plan_id}}", PlanResource(service))]


