"""An action as the web view shows it: the stored view, plus the live Drydock task tree of
each step whose task still runs (a finished step keeps the tree it recorded)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.context import RequestContext
from common.errors import BerthError
from shipyard_api.actions.service import ActionService
from shipyard_api.clients.ports import DrydockPort

LIVE = ("running", "waiting")


def running_task(step: Mapping[str, Any]) -> str | None:
    """The id of the Drydock task a live step follows, unless it already holds its tree."""
    details = step.get("details")
    if step.get("state") not in LIVE or not isinstance(details, Mapping) or "tree" in details:
        return None
    task = details.get("task")
    task_id = task.get("task_id") if isinstance(task, Mapping) else None
    return str(task_id) if task_id else None


class ActionPages:
    def __init__(self, actions: ActionService, drydock: DrydockPort | None) -> None:
        self._actions, self._drydock = actions, drydock

    def list(self) -> list[dict[str, Any]]:
        return self._actions.list()

    def get(self, action_id: str, ctx: RequestContext) -> dict[str, Any]:
        view = self._actions.get(action_id)
        for step in view.get("steps") or []:
            task_id = running_task(step)
            if task_id is None or self._drydock is None:
                continue
            try:
                tree = self._drydock.task_tree(task_id, ctx=ctx)
            except BerthError:
                continue  # the page shows the task's last known status instead
            step["details"] = {**step["details"], "tree": tree}
        return view
