"""Build data routes (Airship's): a node's, and a task's."""

from __future__ import annotations

import falcon

from common.policy import authorize
from drydock_api.resources.names import checked_name
from drydock_api.resources.nodes import bool_param
from drydock_api.tasks.builddata import BuildData


class NodeBuildDataResource:
    """GET /nodes/{hostname}/builddata[?latest=true]: 404 when none was collected."""

    def __init__(self, builddata: BuildData) -> None:
        self._builddata = builddata

    @authorize("drydock:read_build_data")
    @checked_name
    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        latest = bool_param(req, "latest") or False
        resp.media = self._builddata.of_node(name, latest=latest)


class TaskBuildDataResource:
    """GET /tasks/{task_id}/builddata: collected by the task and the tasks below it."""

    def __init__(self, builddata: BuildData) -> None:
        self._builddata = builddata

    @authorize("drydock:read_build_data")
    def on_get(self, req: falcon.Request, resp: falcon.Response, task_id: str) -> None:
        resp.media = self._builddata.require_of_task(task_id)
