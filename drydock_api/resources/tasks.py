"""Task resources: create, list, show (tree), terminate."""

from __future__ import annotations

from collections.abc import Callable

import falcon

from common.api import API_PREFIX
from common.body import read_json_object
from common.clients.drydock import Task
from common.encoded import send_json
from common.errors import (
    BadRequest,
    Forbidden,
    MethodNotAllowed,
    Unauthenticated,
    UnprocessableEntity,
)
from common.httpclient import IDEMPOTENCY_HEADER
from common.jsontypes import JSON, JSONObject
from common.longpoll import ChangeWaiters, wait_params
from common.policy import authorize, check
from drydock_api.resources.names import check_filter_names
from drydock_api.tasks.actions import ALL_ACTIONS
from drydock_api.tasks.builddata import BuildData
from drydock_api.tasks.preview import TaskPreview
from drydock_api.tasks.retention import TaskRetention, parse_days
from drydock_api.tasks.service import TaskService

MAX_LIMIT = 1000
VERSION_HEADER = "X-Task-Version"
WAITED_HEADER = "X-Long-Poll"  # changed | timeout | busy (over the cap: answered at once)


def _may_create_some_task(req: falcon.Request) -> None:
    """403 before the body is read when the caller may create no task at all."""
    for action in ALL_ACTIONS:
        try:
            check(req, f"drydock:{action}")
            return
        except Forbidden:
            continue
    raise Forbidden("No policy drydock:<action> allows this caller to create tasks")


def _differs(task: Task, body: JSONObject) -> bool:
    """Whether `body` asks for something else than the task created earlier under its key
    (a replica that did not answer the first request finds the task by the key alone)."""
    return (task["action"], task.get("design_ref"), task.get("node_filter")) != (
        body.get("action"), body.get("design_ref"), body.get("node_filter"))


class TasksResource:
    def __init__(self, service: TaskService,
                 check_ref: Callable[[JSON], str] | None = None,
                 retention: TaskRetention | None = None) -> None:
        self._service = service
        self._check_ref = check_ref
        self._retention = retention

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        ctx = req.context.berth
        if not ctx.authenticated:
            raise Unauthenticated("Missing or invalid X-Auth-Token")
        _may_create_some_task(req)
        body = read_json_object(req)
        action = body.get("action")
        check(req, f"drydock:{action}" if action in ALL_ACTIONS else "drydock:destroy_nodes")
        check_filter_names(body.get("node_filter"))
        if self._check_ref is not None and isinstance(body.get("design_ref"), (str, dict)):
            self._check_ref(body["design_ref"])
        key = req.get_header(IDEMPOTENCY_HEADER)
        if key is not None and not (0 < len(key) <= 255):
            raise BadRequest("Idempotency-Key must be 1 to 255 characters")
        task, created = self._service.create(body, ctx, key)
        if not created and _differs(task, body):
            raise UnprocessableEntity(
                f"{IDEMPOTENCY_HEADER} {key} was used for task {task['task_id']} with a "
                "different request; use a new key", reason="IdempotencyKeyReused")
        resp.status = falcon.HTTP_201 if created else falcon.HTTP_200
        resp.set_header("Location", f"{API_PREFIX}/tasks/{task['task_id']}")
        resp.media = task

    @authorize("drydock:list_tasks")
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        limit = req.get_param_as_int("limit", min_value=1, max_value=MAX_LIMIT) or 100
        statuses = [s for v in req.get_param_as_list("status") or [] for s in v.split(",") if s]
        actions = [a for v in req.get_param_as_list("action") or [] for a in v.split(",") if a]
        tasks = self._service.list(statuses=statuses, actions=actions,
                                   since=req.get_param("since"), limit=limit,
                                   marker=req.get_param("marker"))
        if len(tasks) == limit:
            resp.set_header("X-Next-Marker", tasks[-1]["task_id"])
            resp.append_link(f"/api/v1.0/tasks?limit={limit}&marker={tasks[-1]['task_id']}",
                             "next")
        resp.media = tasks

    @authorize("drydock:delete_tasks")
    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        """Airship's task purge: `days` (default 90) of finished tasks kept."""
        if self._retention is None:
            raise MethodNotAllowed("Task purge is not configured here")
        resp.media = self._retention.purge(parse_days(req.get_param("days")))


class TaskResource:
    """A task; `?wait=S&since=V` answers as soon as the task's version (header
    X-Task-Version) differs from V, or after S seconds (at most `max_wait`) with the task
    unchanged."""

    def __init__(self, service: TaskService, waiters: ChangeWaiters | None = None,
                 max_wait: float = 0.0, builddata: BuildData | None = None) -> None:
        self._service = service
        self._waiters = waiters
        self._max_wait = max_wait
        self._builddata = builddata

    @authorize("drydock:get_task")
    def on_get(self, req: falcon.Request, resp: falcon.Response, task_id: str) -> None:
        layers = req.get_param_as_int("layers", min_value=-1) or 0
        errors = req.get_param_as_bool("subtaskerrors") or False
        wait, since = wait_params(req.get_param("wait"), req.get_param("since"), self._max_wait)
        if since is not None and wait > 0 and self._waiters is not None \
                and self._service.version(task_id) == since:
            woken = self._waiters.wait(lambda: self._service.version(task_id) != since, wait)
            resp.set_header(WAITED_HEADER, woken.value)
        if req.get_param_as_bool("builddata") and self._builddata is not None:
            resp.set_header(VERSION_HEADER, self._service.version(task_id))
            resp.media = self._with_build_data(task_id, layers, errors)
            return
        version, data, packed = self._service.get_json(task_id, layers=layers,
                                                       subtask_errors=errors)
        resp.set_header(VERSION_HEADER, version)
        send_json(req, resp, data, packed)


    def _with_build_data(self, task_id: str, layers: int, errors: bool) -> dict[str, object]:
        """The task (or, with layers, each task of the tree) with its `build_data`."""
        assert self._builddata is not None
        if not layers:
            body = self._service.task(task_id, subtask_errors=errors)
            return {**body, "build_data": self._builddata.of_task(task_id)}
        tree = self._service.tree(task_id, layers)
        ids = [k for k in tree if k != "init_task_id"]
        found = self._builddata.of_tree(ids, self._service.root_of(task_id))
        return {k: v if isinstance(v, str) else {**v, "build_data": found[k]}
                for k, v in tree.items()}


class TaskTerminateResource:
    def __init__(self, service: TaskService) -> None:
        self._service = service

    @authorize("drydock:terminate_task")
    def on_post(self, req: falcon.Request, resp: falcon.Response, task_id: str) -> None:
        resp.media = self._service.terminate(task_id, req.context.berth.user)


class TaskPreviewResource:
    """POST /tasks/preview: what a task with this body would do to each node (nothing is
    touched; the body is validated like POST /tasks)."""

    def __init__(self, preview: TaskPreview) -> None:
        self._preview = preview

    @authorize("drydock:preview_task")
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json_object(req)
        check_filter_names(body.get("node_filter"))
        resp.media = self._preview.preview(body, req.context.berth)
