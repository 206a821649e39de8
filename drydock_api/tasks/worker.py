"""A task worker: the common runner (claims, leases, heartbeats, a thread per task) over
Drydock's task table, each claimed task run by the orchestrator."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

from common.runner import Runner, RunnerSettings
from drydock_api.db.models import TaskRow
from drydock_api.db.store import TaskStore
from drydock_api.tasks.orchestrator import Orchestrator


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class WorkerSettings:
    max_tasks: int = 8
    lease_seconds: float = 30.0
    poll_interval: float = 1.0


class Worker(Runner[TaskRow]):
    """Runs up to `max_tasks` top-level tasks at once; the failure-domain slots of the tasks
    it holds are renewed with their leases."""

    def __init__(self, store: TaskStore, orchestrator: Orchestrator, settings: WorkerSettings,
                 owner: str | None = None) -> None:
        super().__init__(store, orchestrator.run,
                         RunnerSettings(capacity=settings.max_tasks,
                                        lease_seconds=settings.lease_seconds,
                                        poll_interval=settings.poll_interval),
                         owner or default_owner(), key=lambda t: t.id, clock=store.clock,
                         renewed=orchestrator.renew_slots, name="task")
        self.orchestrator = orchestrator
        self.worker_settings = settings
