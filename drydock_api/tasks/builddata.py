"""Build data in Airship's shape: what Drydock's tasks recorded about a node, step by step,
and what MAAS's commissioning scripts reported of it.

Each finished step of a node that recorded an output (the MAAS system id enlistment found,
the MAAS status commissioning and deployment ended in, the disks a teardown kept or wiped,
the power state a BMC reported, ...) is one item: generator `<action>:<step>`, data_format
application/json, data_element that output as JSON text. The results MAAS keeps of the
machine's last commissioning are items too, as Airship collects them: generator
`commission:<script>`, text/plain, the script's output; they belong to the node's latest
commission step (task_id null when no Drydock task commissioned it) and are read from MAAS
when asked for (none while MAAS does not answer).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from common.clients.generated.drydock import BuildData as BuildDataItem
from common.errors import BerthError, NotFound
from drydock_api.db.history import StepRecord, TaskHistory
from drydock_api.drivers.ports import MachineLookup, ScriptResult

LOG = logging.getLogger(__name__)
DATA_FORMAT: Final = "application/json"
COMMISSION_STEP = "commission"

Item = BuildDataItem  # one build data item as the API answers it


class NoBuildData(NotFound):
    reason, title = "NoBuildData", "No build data found"


def item(record: StepRecord) -> Item:
    """One build data item (Airship's BuildData.to_dict fields)."""
    return {
        "node_name": record.node,
        "task_id": record.task_id,
        "collected_date": datetime.fromtimestamp(record.completed, tz=UTC).isoformat(),
        "generator": f"{record.action}:{record.step}",
        "data_format": DATA_FORMAT,
        "data_element": json.dumps(record.output, sort_keys=True),
    }


def _maas_date(raw: str | None) -> str | None:
    """MAAS's date (UTC, without a zone) as an ISO 8601 timestamp with its zone."""
    if not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return raw
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()


def script_item(node: str, task_id: str | None, result: ScriptResult) -> Item:
    return {"node_name": node, "task_id": task_id, "collected_date": _maas_date(result.updated),
            "generator": f"commission:{result.name}", "data_format": "text/plain",
            "data_element": result.output}


def _when(it: Item) -> tuple[float, str]:
    try:
        return datetime.fromisoformat(str(it["collected_date"])).timestamp(), str(it["task_id"])
    except ValueError:
        return 0.0, str(it["task_id"])


def latest_only(items: list[Item]) -> list[Item]:
    """The newest item of each (node, generator), in the order they were collected."""
    newest: dict[tuple[str, str], Item] = {}
    for it in sorted(items, key=_when):  # a later one replaces an earlier one
        newest[(it["node_name"], it["generator"])] = it
    return sorted(newest.values(), key=_when)


def _under(task_id: str) -> Callable[[StepRecord], bool]:
    """Whether a step is the task `task_id` or below it."""
    return lambda r: task_id in (r.task_id, r.parent_id, r.root_id)


class BuildData:
    def __init__(self, history: TaskHistory, maas: MachineLookup | None = None) -> None:
        self._history = history
        self._maas = maas

    def of_node(self, hostname: str, *, latest: bool = False) -> list[Item]:
        """404 NoBuildData when none was collected for the node (as Airship answers)."""
        records = self._history.step_records(node=hostname)
        commissions = [r for r in records if r.step == COMMISSION_STEP]
        items = [item(r) for r in records] + self._scripts(
            hostname, commissions[-1].task_id if commissions else None)
        if not items:
            raise NoBuildData(f"No build data found for node {hostname}")
        items.sort(key=_when)
        return latest_only(items) if latest else items

    def of_task(self, task_id: str) -> list[Item]:
        """Collected by the task or a task below it (empty list: none; 404: no such task)."""
        return self._collect(self._history.step_records(task_id=task_id),
                             lambda r: True)

    def of_tree(self, task_ids: list[str], root_id: str) -> dict[str, list[Item]]:
        """`of_task` of each of `task_ids`, all of the tree `root_id`."""
        records = self._history.step_records(task_id=root_id)
        return {tid: self._collect(records, _under(tid)) for tid in task_ids}

    def require_of_task(self, task_id: str) -> list[Item]:
        """`of_task`, with 404 NoBuildData when there is none (Airship's builddata route)."""
        items = self.of_task(task_id)
        if not items:
            raise NoBuildData(f"No build data found for task {task_id}")
        return items

    def _collect(self, records: list[StepRecord],
                 belongs: Callable[[StepRecord], bool]) -> list[Item]:
        """Items of the records that belong, and MAAS's results of each node whose latest
        commission step is one of them."""
        items = [item(r) for r in records if belongs(r)]
        for r in records:
            if r.step == COMMISSION_STEP and belongs(r) and self._latest_commission(r):
                items += self._scripts(r.node, r.task_id)
        return sorted(items, key=_when)

    def _latest_commission(self, record: StepRecord) -> bool:
        mine = [r for r in self._history.step_records(node=record.node)
                if r.step == COMMISSION_STEP]
        return bool(mine) and mine[-1].task_id == record.task_id

    def _scripts(self, hostname: str, task_id: str | None) -> list[Item]:
        reader = getattr(self._maas, "commissioning_results", None)
        if self._maas is None or reader is None:
            return []
        try:
            machine = self._maas.find_machine(hostname)
            results: list[ScriptResult] = reader(machine.system_id) if machine else []
        except BerthError as exc:
            LOG.warning("MAAS commissioning results of %s not read: %s", hostname, exc.message)
            return []
        return [script_item(hostname, task_id, r) for r in results]
