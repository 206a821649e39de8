"""Task requests from the API: validate and admit new tasks, read task trees, terminate."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple, TypedDict

from cachetools import LRUCache
from sqlalchemy import bindparam, select

from common.bodyschema import schema_problems
from common.clients.drydock import Task
from common.context import RequestContext
from common.designref import href_of
from common.errors import BadRequest, ValidationFailed
from common.jsontypes import JSON, JSONObject
from common.status import Message, validation_message
from drydock_api.db.models import TaskRow
from drydock_api.db.progress import ProgressStore, TreeMessages
from drydock_api.db.states import FINAL, TaskResult, TaskStatus
from drydock_api.db.store import TaskStore
from drydock_api.drivers.provisioners import Backends
from drydock_api.nodes.design import Design
from drydock_api.nodes.filters import CRITERIA, select_nodes
from drydock_api.tasks import budget
from drydock_api.tasks.actions import ALL_ACTIONS, ActionDef
from drydock_api.tasks.render import task_body

TREE_CACHE = 8  # encoded task bodies and trees kept per process


class ErrorDetails(TypedDict):
    errorCount: int
    messageList: list[Message]


class SubtaskErrors(TypedDict):
    """A subtask's error messages (?subtaskerrors=true)."""

    details: ErrorDetails


class TaskWithErrors(Task):
    """A task with its subtasks' errors (GET /tasks/{id}?subtaskerrors=true)."""

    subtask_errors: dict[str, SubtaskErrors]


class _Sub(NamedTuple):
    """What a task's body shows of each subtask (read as columns, not whole rows)."""

    id: str
    step: str | None
    node: str | None
    status: str
    result: str


SUBTASKS = select(TaskRow.id, TaskRow.step, TaskRow.node, TaskRow.status, TaskRow.result) \
    .where(TaskRow.parent_id == bindparam("parent")).order_by(TaskRow.id)

TaskTree = dict[str, Task | str]  # ?layers: each task of the tree by id, and `init_task_id`


def _version(key: tuple[int, int | None]) -> str:
    changes, last_message = key
    return f"{changes}.{last_message or 0}"


def _encode(body: object) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


class UnsupportedAction(BadRequest):
    reason, title = "UnsupportedAction", "Action not supported"


def _invalid(problems: list[str]) -> ValidationFailed:
    return ValidationFailed("Invalid task request", messages=[
        validation_message(p, name="TaskRequest") for p in problems])


def _filter_or_all(action: str, node_filter: JSON, options: JSONObject) -> list[str]:
    """A destructive action without a node filter would select every node of the design:
    only with an explicit `options.all_nodes: true`."""
    selects_all = node_filter is None
    entries = node_filter.get("filter_set") if isinstance(node_filter, dict) else None
    if isinstance(node_filter, dict) and isinstance(entries, list):
        bare = [isinstance(e, dict) and not any(e.get(k) for k in CRITERIA) for e in entries]
        union = node_filter.get("filter_set_type", "union") == "union"
        selects_all = bool(bare) and (any(bare) if union else all(bare))
    if selects_all and options.get("all_nodes") is not True:
        return [f"{action} without a node_filter selects every node of the design: give a "
                "node_filter, or options.all_nodes: true to really mean every node"]
    return []


class TaskService:
    def __init__(self, store: TaskStore, progress: ProgressStore,
                 actions: dict[str, ActionDef],
                 designs: Callable[[JSON, RequestContext], tuple[Design, str | None]]) -> None:
        self._store = store
        self._progress = progress
        self._actions = actions
        self._designs = designs
        self._trees: LRUCache[tuple[str, int, bool],
                              tuple[tuple[int, int | None], bytes, bytes | None]] = \
            LRUCache(TREE_CACHE)
        self._trees_lock = threading.Lock()
        self.on_created: Callable[[], None] = lambda: None  # wakes this process's workers
        self.budgets: budget.TaskBudgets | None = None  # failure-domain slots of tasks
        self.provisioners: Backends | None = None  # the configured provisioners

    def check_body(self, body: JSONObject) -> tuple[ActionDef, JSONObject]:
        """The body against the document's TaskRequest, then what the action itself allows
        (its options; a node filter for a destructive one), every problem in one 400."""
        problems = schema_problems("drydock", "TaskRequest", body)
        action = body.get("action")
        given = body.get("options")
        options: JSONObject = given if isinstance(given, dict) else {}
        if isinstance(action, str) and action in self._actions:
            own = self._actions[action].check_options(options)
            named = {p.split(" ", 1)[0] for p in own}  # one problem per field: the action's
            problems = [p for p in problems if p.split(" ", 1)[0] not in named] + own
            if self._actions[action].needs_filter:
                problems += _filter_or_all(action, body.get("node_filter"), options)
        if problems:
            raise _invalid(list(dict.fromkeys(problems)))
        if action not in self._actions:
            raise UnsupportedAction(f"Action {action} is not supported yet")
        return self._actions[str(action)], options

    def create(self, body: JSONObject, ctx: RequestContext,
               idempotency_key: str | None) -> tuple[Task, bool]:
        """Admit a task (201) or return the one created earlier with the same key."""
        action, options = self.check_body(body)
        href_of(body["design_ref"])
        # resolved once and kept: the task records the digest its workers read
        design, digest = self._designs(body["design_ref"], ctx)
        if action.needs_provisioner and self.provisioners is not None:
            self.provisioners.get(design.provisioner)  # 422 when not configured
        nodes: list[str] = []
        if action.site is None:
            nodes = select_nodes(body.get("node_filter"), design.nodes, design.rack_labels)
        replayed = self._store.by_key(idempotency_key) if idempotency_key else None
        if replayed is not None:  # the first request's task stands (no slot taken again)
            return self.render(replayed), False
        kept = self.budgets.admit(action.name, body, nodes, ctx) if self.budgets else {}
        try:
            row, created = self._create(action, body, digest, {**options, **kept}, nodes, ctx,
                                        idempotency_key)
        except Exception:
            if self.budgets is not None:
                self.budgets.forget(kept, nodes)  # e.g. 409 NodesBusy: give back what it took
            raise
        if created:
            self.on_created()
        elif self.budgets is not None:
            self.budgets.forget(kept, nodes)  # a replay: the first request's task stands
        return self.render(row), created

    def _create(self, action: ActionDef, body: JSONObject, digest: str | None,
                options: JSONObject, nodes: list[str], ctx: RequestContext,
                idempotency_key: str | None) -> tuple[TaskRow, bool]:
        return self._store.create_task(
            action=action.name, design_ref=body["design_ref"], design_digest=digest,
            node_filter=body.get("node_filter"), options=options,
            node_names=nodes,
            created_by=ctx.end_user or ctx.user, marker=ctx.marker,
            idempotency_key=idempotency_key, exclusive=action.exclusive)

    def render(self, row: TaskRow, children: list[TaskRow] | None = None,
               tree: TreeMessages | None = None) -> Task:
        subs: list[TaskRow] | list[_Sub] = children if children is not None \
            else self._subtasks(row.id)
        nodes = [s for s in subs if s.step is None]
        if row.parent_id is None and row.status not in FINAL:
            ok = sorted(str(s.node) for s in nodes if s.result == TaskResult.SUCCESS)
            bad = sorted(str(s.node) for s in nodes if s.result == TaskResult.FAILURE)
        else:
            ok, bad = list(row.successes or []), list(row.failures or [])
        skipped = sorted(str(s.node) for s in nodes
                         if s.status == TaskStatus.COMPLETE
                         and s.result == TaskResult.INCOMPLETE)
        messages = tree.messages(row) if tree is not None else self._progress.messages(row)
        return task_body(row, messages=messages,
                         subtask_ids=[s.id for s in subs], successes=ok, failures=bad,
                         skipped=skipped)

    def _subtasks(self, task_id: str) -> list[_Sub]:
        with self._store.reads() as s:
            return [_Sub(*r) for r in s.execute(SUBTASKS, {"parent": task_id})]

    def get(self, task_id: str, *, layers: int = 0,
            subtask_errors: bool = False) -> Task | TaskWithErrors | TaskTree:
        """The task (`task`), or with `layers` its tree (`tree`)."""
        if layers == 0:
            return self.task(task_id, subtask_errors=subtask_errors)
        return self.tree(task_id, layers)

    def task(self, task_id: str, *, subtask_errors: bool = False) -> Task | TaskWithErrors:
        row = self._store.get(task_id)
        body = self.render(row)
        if not subtask_errors:
            return body
        with_errors: TaskWithErrors = {**body, "subtask_errors": self._subtask_errors(row)}
        return with_errors

    def tree(self, task_id: str, layers: int) -> TaskTree:
        """Each task `layers` levels down (all: -1) by id, and `init_task_id`."""
        row = self._store.get(task_id)
        tree: TaskTree = {"init_task_id": row.id}
        messages = self._progress.tree_messages(row.root_id)
        level, depth = [row], 0
        while level:
            children = self._store.children([r.id for r in level])
            by_parent: dict[str, list[TaskRow]] = {}
            for child in children:
                by_parent.setdefault(str(child.parent_id), []).append(child)
            for r in level:
                tree[r.id] = self.render(r, by_parent.get(r.id, []), messages)
            depth += 1
            level = children if (layers < 0 or depth < layers) else []
        return tree

    def root_of(self, task_id: str) -> str:
        """The top-level task of the tree holding `task_id` (404: no such task)."""
        return self._store.get(task_id).root_id

    def version(self, task_id: str) -> str:
        """What changes whenever the task or any task of its tree, or their messages, change
        (404: no such task); long-polls compare it with the caller's `since`."""
        return _version(self._progress.tree_key(task_id))

    def get_json(self, task_id: str, *, layers: int = 0,
                 subtask_errors: bool = False) -> tuple[str, bytes, bytes | None]:
        """`get()` as JSON (and gzipped JSON for trees) with the version it is of, encoded
        again only once a task of its tree or their messages changed: a body depends on
        nothing else, and its key (`tree_key`) is one small query, read once per call. A
        200-node destroy's own body is 0.6 MB (1,800 messages): ~14 ms to read and encode
        once its messages were read before (db.messages), ~23 ms when every one is parsed."""
        key = self._progress.tree_key(task_id)
        form = (task_id, layers, subtask_errors)
        with self._trees_lock:
            hit = self._trees.get(form)
            if hit is not None and hit[0] == key:
                return _version(key), hit[1], hit[2]
        data = _encode(self.get(task_id, layers=layers, subtask_errors=subtask_errors))
        packed = gzip.compress(data, compresslevel=6, mtime=0) if layers else None
        with self._trees_lock:
            self._trees[form] = (key, data, packed)
        return _version(key), data, packed

    def _subtask_errors(self, row: TaskRow) -> dict[str, SubtaskErrors]:
        """Each subtask's error messages, from one read of the tree's messages (not one
        query per subtask)."""
        errors: dict[str, list[Message]] = {}
        tree = self._progress.tree_messages(row.root_id)
        level = self._store.children([row.id])
        while level:
            for sub in level:
                found = [m for m in tree.messages(sub) if m.get("error")
                         and (sub.step is not None or not m.get("step"))]
                if found:
                    errors[sub.id] = found
            level = self._store.children([s.id for s in level])
        return {tid: {"details": {"errorCount": len(ms), "messageList": ms}}
                for tid, ms in errors.items()}

    def list(self, *, statuses: list[str], actions: list[str], since: str | None,
             limit: int, marker: str | None) -> list[Task]:
        problems = [f"status {s!r} is not one of {', '.join(t.value for t in TaskStatus)}"
                    for s in statuses if s not in {t.value for t in TaskStatus}]
        problems += [f"action {a!r} is not one of {', '.join(ALL_ACTIONS)}"
                     for a in actions if a not in ALL_ACTIONS]
        since_ts = None
        if since:
            try:
                parsed = datetime.fromisoformat(since.replace("Z", "+00:00"))
                if parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=UTC)
                since_ts = parsed.timestamp()
            except ValueError:
                problems.append(f"since {since!r} is not an ISO 8601 timestamp")
        if problems:
            raise _invalid(problems)
        rows = self._store.list_tasks(statuses=statuses, actions=actions, since=since_ts,
                                      limit=limit, marker=marker)
        return [self.render(r) for r in rows]

    def terminate(self, task_id: str, user: str | None) -> Task:
        return self.render(self._store.request_terminate(task_id, user))
