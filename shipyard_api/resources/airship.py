"""Routes Airship's shipyard client calls besides the action routes: step logs, validations,
note details and workflows, each under Airship's policy rule (through Berth's own name)."""

from __future__ import annotations

import falcon

from common.api import API_PREFIX as P
from common.policy import authorize, check
from shipyard_api.actions import airship
from shipyard_api.actions.service import ActionService

TEXT = "text/plain; charset=utf-8"


class ActionStepLogsResource:
    def __init__(self, service: ActionService) -> None:
        self._service = service

    @authorize("shipyard:get_action_step_logs")
    def on_get(self, req: falcon.Request, resp: falcon.Response, action_id: str,
               step_id: str) -> None:
        resp.content_type = TEXT
        resp.text = airship.step_log(self._service.store, action_id, step_id,
                                     req.get_param("try"), req.get_param("tail"))


class ActionValidationResource:
    def __init__(self, service: ActionService) -> None:
        self._service = service

    @authorize("shipyard:get_action_validation")
    def on_get(self, req: falcon.Request, resp: falcon.Response, action_id: str,
               validation_id: str) -> None:
        resp.media = airship.validation(self._service.store, action_id, validation_id)


class NoteDetailsResource:
    """The details of a note, as text (JSON of the step's recorded details)."""

    def __init__(self, service: ActionService) -> None:
        self._service = service

    @authorize("shipyard:get_notedetails")
    def on_get(self, req: falcon.Request, resp: falcon.Response, note_id: str) -> None:
        _, details = airship.note_details(self._service.store, note_id,
                                          lambda rule: check(req, rule))
        resp.content_type = falcon.MEDIA_JSON
        resp.text = airship.details_text(details)


class WorkflowsResource:
    def __init__(self, service: ActionService) -> None:
        self._service = service

    @authorize("shipyard:list_workflows")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = airship.workflows(self._service.store, req.get_param("since"),
                                       self._service.clock)


class WorkflowResource:
    def __init__(self, service: ActionService) -> None:
        self._service = service

    @authorize("shipyard:get_workflow")
    def on_get(self, req: falcon.Request, resp: falcon.Response, workflow_id: str) -> None:
        resp.media = airship.workflow(self._service.store, workflow_id)


def airship_routes(service: ActionService) -> list[tuple[str, object]]:
    return [
        (f"{P}/actions/{{action_id}}/steps/{{step_id}}/logs", ActionStepLogsResource(service)),
        (f"{P}/actions/{{action_id}}/validations/{{validation_id}}",
         ActionValidationResource(service)),
        (f"{P}/notedetails/{{note_id}}", NoteDetailsResource(service)),
        (f"{P}/workflows", WorkflowsResource(service)),
        (f"{P}/workflows/{{workflow_id}}", WorkflowResource(service)),
    ]
