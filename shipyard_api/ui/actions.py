"""An action as the web view shows it: the stored view, plus the live Drydock task tree of
each step whose task still runs (a finished step keeps the tree it recorded)."""

from __future__ import annotations

from collections.abc import Mapping

from common.context import RequestContext
from common.errors import BerthError, NotFound
from common.longpoll import ChangeWaiters
from shipyard_api.actions.progress import step_state
from shipyard_api.actions.service import ActionService
from shipyard_api.clients.ports import DrydockPort

LIVE = ("running", "waiting")


def running_task(step: Mapping[str, object]) -> str | None:
    """The id of the Drydock task a live step follows, unless it already holds its tree."""
    details = step.get("details")
    if step_state(step) not in LIVE or not isinstance(details, Mapping) or "tree" in details:
        return None
    task = details.get("task")
    task_id = task.get("task_id") if isinstance(task, Mapping) else None
    return str(task_id) if task_id else None


class ActionPages:
    """Actions for the pages; `changed` waits for an action to move as GET /actions/{id}
    does with ?since=&wait= (the same waiters, the same cap)."""

    def __init__(self, actions: ActionService, drydock: DrydockPort | None,
                 waiters: ChangeWaiters | None = None, max_wait: float = 0.0) -> None:
        self._actions, self._drydock = actions, drydock
        self._waiters, self._max_wait = waiters, max_wait

    def list(self) -> list[dict[str, object]]:
        return self._actions.list()

    def version(self, action_id: str) -> int:
        version = self._actions.store.version(action_id)
        if version is None:
            raise NotFound(f"No action {action_id}")
        return int(version)

    def changed(self, action_id: str, since: str | None, wait: float) -> int:
        """The action's version once it differs from `since`, or after `wait` s (capped)."""
        version = self.version(action_id)
        wait = min(wait, self._max_wait)
        if since == str(version) and wait > 0 and self._waiters is not None:
            self._waiters.wait(lambda: self.version(action_id) != version, wait)
            version = self.version(action_id)
        return version

    def get(self, action_id: str, ctx: RequestContext) -> dict[str, object]:
        view = self._actions.get(action_id)
        steps = view.get("steps")
        for step in steps if isinstance(steps, list) else []:
            task_id = running_task(step) if isinstance(step, dict) else None
            if task_id is None or self._drydock is None:
                continue
            try:
                tree = self._drydock.task_tree(task_id, ctx=ctx)
            except BerthError:
                continue  # the page shows the task's last known status instead
            step["details"] = {**step["details"], "tree": tree}
        return view
