"""Routes of /actions: create, list, show, steps, and control (pause, unpause, stop)."""

from __future__ import annotations

import falcon

from common import policy
from common.api import API_PREFIX as P
from common.body import read_json_object
from common.bodyschema import require_schema
from common.encoded import send_json
from common.errors import BadRequest
from common.longpoll import ChangeWaiters, wait_params
from common.policy import authorize
from shipyard_api.actions import disruption
from shipyard_api.actions.notes import MIN_VERBOSITY, parse_verbosity
from shipyard_api.actions.params import DEFAULT_MAX_TARGETS, check_targets
from shipyard_api.actions.service import ActionService
from shipyard_api.actions.statuses import SiteStatuses

VERSION_HEADER = "X-Action-Version"
WAITED_HEADER = "X-Long-Poll"  # changed | timeout | busy (over the cap: answered at once)

TRUE_WORDS = ("true", "t", "yes", "y", "1", "on", "")  # "" : the parameter named alone
FALSE_WORDS = ("false", "f", "no", "n", "0", "off")


def query_bool(raw: str | None, name: str) -> bool | None:
    """A boolean query parameter read as Falcon reads one (Airship's server): 400 otherwise."""
    if raw is None:
        return None
    word = raw.strip().lower()
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise BadRequest(f"{name} must be true or false, not {raw!r}", reason="InvalidParameter")


class ActionsResource:
    def __init__(self, service: ActionService,
                 max_target_nodes: int = DEFAULT_MAX_TARGETS) -> None:
        self._service = service
        self._max_targets = max_target_nodes

    @authorize("shipyard:list_actions")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if parse_verbosity(req.get_param("verbosity")) < MIN_VERBOSITY:
            resp.media = [{**a, "notes": []} for a in self._service.list()]
            return
        send_json(req, resp, *self._service.list_json())

    @authorize("shipyard:create_action")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        definition = self._service.definition(body.get("name"))  # UnknownAction first
        require_schema("shipyard", "ActionRequest", body, "Invalid action request",
                       reason="BadRequest")
        policy.check(req, f"shipyard:action_{definition.name}")
        if disruption.requested(body.get("parameters")):
            policy.check(req, disruption.RULE)
        parameters = check_targets(body.get("parameters"), self._max_targets)
        allow = query_bool(req.get_param("allow-intermediate-commits"),
                           "allow-intermediate-commits")
        view = self._service.create(definition.name, parameters, req.context.berth,
                                    plan_id=body.get("plan_id"),
                                    allow_intermediate_commits=bool(allow))
        resp.status = falcon.HTTP_201
        resp.location = f"{P}/actions/{view['id']}"
        resp.media = view


class ActionResource:
    """An action; `?wait=S&since=V` answers as soon as the action's version (header
    X-Action-Version) differs from V, or after S seconds (at most `max_wait`) unchanged."""

    def __init__(self, service: ActionService, waiters: ChangeWaiters | None = None,
                 max_wait: float = 0.0) -> None:
        self._service = service
        self._waiters = waiters
        self._max_wait = max_wait

    @authorize("shipyard:get_action")
    def on_get(self, req: falcon.Request, resp: falcon.Response, action_id: str) -> None:
        verbosity = req.get_param("verbosity")
        if verbosity is not None:  # Airship's notes verbosity: the view is built, not cached
            resp.media = self._service.get(action_id, parse_verbosity(verbosity))
            return
        wait, since = wait_params(req.get_param("wait"), req.get_param("since"), self._max_wait)
        version, data, packed = self._service.get_json(action_id)
        if since == str(version) and wait > 0 and self._waiters is not None:
            woken = self._waiters.wait(
                lambda: self._service.get_json(action_id)[0] != version, wait)
            resp.set_header(WAITED_HEADER, woken.value)
            version, data, packed = self._service.get_json(action_id)
        resp.set_header(VERSION_HEADER, str(version))
        send_json(req, resp, data, packed, etag=f"{action_id}.{version}")


class ActionStepResource:
    def __init__(self, service: ActionService) -> None:
        self._service = service

    @authorize("shipyard:get_action_step")
    def on_get(self, req: falcon.Request, resp: falcon.Response, action_id: str,
               step_id: str) -> None:
        resp.media = self._service.step(action_id, step_id,
                                        parse_verbosity(req.get_param("verbosity")))


class ActionControlResource:
    def __init__(self, service: ActionService) -> None:
        self._service = service

    @authorize("shipyard:invoke_action_control")
    def on_post(self, req: falcon.Request, resp: falcon.Response, action_id: str,
                control_verb: str) -> None:
        resp.status = falcon.HTTP_202
        resp.media = self._service.control(action_id, control_verb, req.context.berth)


class SiteStatusesResource:
    def __init__(self, statuses: SiteStatuses) -> None:
        self._statuses = statuses

    @authorize("shipyard:get_site_statuses")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        filters = [f.strip() for v in req.get_param_as_list("filters") or [] for f in
                   v.split(",") if f.strip()]
        resp.media = self._statuses.get(filters, req.context.berth)


def site_status_routes(statuses: SiteStatuses) -> list[tuple[str, object]]:
    return [(f"{P}/site_statuses", SiteStatusesResource(statuses))]


def action_routes(service: ActionService, max_target_nodes: int = DEFAULT_MAX_TARGETS,
                  waiters: ChangeWaiters | None = None,
                  max_wait: float = 0.0) -> list[tuple[str, object]]:
    return [
        (f"{P}/actions", ActionsResource(service, max_target_nodes)),
        (f"{P}/actions/{{action_id}}", ActionResource(service, waiters, max_wait)),
        (f"{P}/actions/{{action_id}}/steps/{{step_id}}", ActionStepResource(service)),
        (f"{P}/actions/{{action_id}}/control/{{control_verb}}", ActionControlResource(service)),
    ]
