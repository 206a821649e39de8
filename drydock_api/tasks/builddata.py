"""Build data in Airship's shape: what Drydock's tasks recorded about a node, step by step.

Each finished step of a node that recorded an output (the MAAS system id enlistment found,
the MAAS status commissioning and deployment ended in, the disks a teardown kept or wiped,
the power state a BMC reported, ...) is one build data item: generator `<action>:<step>`,
data_format application/json, data_element that output as JSON text. MAAS's own
commissioning script output (lshw, lldp) is not collected.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from common.errors import NotFound
from drydock_api.db.history import StepRecord, TaskHistory

DATA_FORMAT = "application/json"


class NoBuildData(NotFound):
    reason, title = "NoBuildData", "No build data found"


def item(record: StepRecord) -> dict[str, Any]:
    """One build data item (Airship's BuildData.to_dict fields)."""
    return {
        "node_name": record.node,
        "task_id": record.task_id,
        "collected_date": datetime.fromtimestamp(record.completed, tz=UTC).isoformat(),
        "generator": f"{record.action}:{record.step}",
        "data_format": DATA_FORMAT,
        "data_element": json.dumps(record.output, sort_keys=True),
    }


def latest_only(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest item of each (node, generator), in the order they were collected."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for it in items:  # oldest first: a later one replaces an earlier one
        newest[(it["node_name"], it["generator"])] = it
    return sorted(newest.values(), key=lambda it: (it["collected_date"], it["task_id"]))


class BuildData:
    def __init__(self, history: TaskHistory) -> None:
        self._history = history

    def of_node(self, hostname: str, *, latest: bool = False) -> list[dict[str, Any]]:
        """404 NoBuildData when none was collected for the node (as Airship answers)."""
        items = [item(r) for r in self._history.step_records(node=hostname)]
        if not items:
            raise NoBuildData(f"No build data found for node {hostname}")
        return latest_only(items) if latest else items

    def of_task(self, task_id: str) -> list[dict[str, Any]]:
        """Collected by the task or a task below it (empty list: none; 404: no such task)."""
        return [item(r) for r in self._history.step_records(task_id=task_id)]

    def of_tree(self, task_ids: list[str], root_id: str) -> dict[str, list[dict[str, Any]]]:
        """`of_task` of each of `task_ids`, all of the tree `root_id`, in one query."""
        records = self._history.step_records(task_id=root_id)
        return {tid: [item(r) for r in records if tid in (r.task_id, r.parent_id, r.root_id)]
                for tid in task_ids}

    def require_of_task(self, task_id: str) -> list[dict[str, Any]]:
        """`of_task`, with 404 NoBuildData when there is none (Airship's builddata route)."""
        items = self.of_task(task_id)
        if not items:
            raise NoBuildData(f"No build data found for task {task_id}")
        return items
