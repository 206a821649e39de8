"""A task worker: claims tasks with database leases, renews them, runs them in threads."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

from drydock_api.db.models import TaskRow
from drydock_api.db.store import TaskStore
from drydock_api.tasks.orchestrator import Orchestrator, TaskHold

LOG = logging.getLogger(__name__)


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class WorkerSettings:
    max_tasks: int = 8
    lease_seconds: float = 30.0
    poll_interval: float = 1.0


class Worker:
    """`poll_once` and `heartbeat_once` are the whole behaviour; `run` loops them."""

    def __init__(self, store: TaskStore, orchestrator: Orchestrator, settings: WorkerSettings,
                 owner: str | None = None) -> None:
        self.store = store
        self.orchestrator = orchestrator
        self.settings = settings
        self.owner = owner or default_owner()
        self._active: dict[str, TaskHold] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.stopping = threading.Event()

    def wake(self) -> None:
        """Look for queued tasks now (one was created in this process, or a task ended)."""
        self._wake.set()

    def active(self) -> list[str]:
        with self._lock:
            return list(self._active)

    def poll_once(self) -> int:
        """Claim what we have room for and start each claimed task in its own thread."""
        free = self.settings.max_tasks - len(self.active())
        if free <= 0 or self.stopping.is_set():
            return 0
        claimed = self.store.claim(self.owner, self.settings.lease_seconds, free)
        with self._lock:  # a task of ours whose lease lapsed (a late heartbeat) was taken
            new = [t for t in claimed if t.id not in self._active]  # back: it runs already
        for task in new:
            self.start(task)
        return len(new)

    def start(self, task: TaskRow) -> threading.Thread:
        lease = TaskHold(task.id)
        thread = threading.Thread(target=self._work, args=(task, lease),
                                  name=f"task-{task.id[:8]}", daemon=True)
        with self._lock:
            self._active[task.id] = lease
            self._threads[task.id] = thread
        thread.start()
        return thread

    def _work(self, task: TaskRow, lease: TaskHold) -> None:
        try:
            self.orchestrator.run(task, lease)
            if not lease.lost.is_set():
                self.store.release_lease(task.id, self.owner)
        except Exception:
            LOG.exception("Task %s failed in worker %s; its lease will expire", task.id,
                          self.owner)
        finally:
            with self._lock:
                self._active.pop(task.id, None)
                self._threads.pop(task.id, None)
            self.wake()  # room for another task

    def heartbeat_once(self) -> None:
        """Renew every lease we hold; a lease another worker took is marked lost."""
        with self._lock:
            leases = list(self._active.values())
        for lease in leases:
            try:
                if not self.store.renew(lease.task_id, self.owner, self.settings.lease_seconds):
                    LOG.warning("Lost the lease on task %s", lease.task_id)
                    lease.lose()
            except Exception:
                LOG.exception("Renewing the lease on %s failed", lease.task_id)
        try:
            self.orchestrator.renew_slots([h.task_id for h in leases if not h.lost.is_set()])
        except Exception:
            LOG.exception("Renewing failure-domain slots failed")

    def run(self) -> None:
        """Poll for work and renew leases until `stopping` is set."""
        beat = threading.Thread(target=self._heartbeat_loop, name="lease-heartbeat",
                                daemon=True)
        beat.start()
        while not self.stopping.is_set():
            self._wake.clear()
            try:
                claimed = self.poll_once()
            except Exception:
                LOG.exception("Polling for tasks failed")
                claimed = 0
            if not claimed:
                self._wake.wait(self.settings.poll_interval)

    def _heartbeat_loop(self) -> None:
        """Renew every `lease_seconds / 3`, counted from the previous renewal's start (a slow
        renewal does not push the next one later)."""
        interval = max(self.settings.lease_seconds / 3, 0.01)
        due = time.monotonic()
        while True:
            due = max(due + interval, time.monotonic())
            if self.stopping.wait(due - time.monotonic()):
                return
            self.heartbeat_once()

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        with self._lock:
            threads = list(self._threads.values())
        for thread in threads:
            thread.join(timeout)
