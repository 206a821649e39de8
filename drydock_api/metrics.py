"""Drydock's metrics: tasks by status (read at scrape time), driver calls by outcome."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from prometheus_client import CollectorRegistry, Histogram
from sqlalchemy import func, select

from common.metrics import BUCKETS, StateCounts, TimedCalls, observer
from drydock_api.db.models import TaskRow
from drydock_api.db.store import TaskStore

T = TypeVar("T")


class DrydockMetrics:
    """Created with the app's registry; wraps the drivers and watches the task store."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.driver_seconds = Histogram(
            "berth_drydock_driver_call_seconds",
            "Calls to MAAS and the BMCs (node operations) by driver, operation and outcome",
            ["driver", "operation", "outcome"], registry=self.registry, buckets=BUCKETS)

    def timed(self, driver: str, target: T) -> T:
        """`target` with every call timed under `driver` (maas, redfish, ipmi)."""
        proxy: T = TimedCalls(target, observer(self.driver_seconds, driver))  # type: ignore[assignment]
        return proxy

    def watch(self, store: TaskStore) -> None:
        """Serve top-level tasks by action, status and result (queried on each scrape)."""

        def tasks() -> Iterable[tuple[Sequence[str], float]]:
            query = (select(TaskRow.action, TaskRow.status, TaskRow.result, func.count())
                     .where(TaskRow.parent_id.is_(None))
                     .group_by(TaskRow.action, TaskRow.status, TaskRow.result))
            with store.reads() as s:
                return [((a, st, r), n) for a, st, r, n in s.execute(query).all()]

        self.registry.register(StateCounts("berth_drydock_tasks",
                                           "Top-level tasks stored, by action, status, result",
                                           ["action", "status", "result"], tasks))
