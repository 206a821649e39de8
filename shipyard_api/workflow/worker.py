"""The engine's workers: the common runner (claims, leases, heartbeats, a thread per action)
over Shipyard's action table, each claimed action run by the engine."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial

from common.pgwake import Listener
from common.runner import Runner, RunnerSettings
from shipyard_api.workflow.engine import Engine

LOG = logging.getLogger(__name__)


class WorkerPool:
    """Runs up to `count` actions at once under one lease identity (the engine's owner); the
    leases of the actions it runs are renewed every lease/3 beside the engine's own loop."""

    def __init__(self, make_engine: Callable[[int], Engine], count: int,
                 poll_interval: float) -> None:
        self._make_engine = make_engine
        self._count = count
        self._poll = poll_interval
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.runner: Runner[str] | None = None
        self.listener: Listener | None = None  # wakes us on other processes' news
        # loops run beside the engines while they run (each gets the stop event)
        self.companions: list[Callable[[threading.Event], None]] = []

    def start(self) -> None:
        if self.listener is not None:  # API processes without engine threads listen too
            self.listener.start()
        if not self._count:
            return
        engine = self._make_engine(0)
        self.runner = Runner(engine.store, engine.run_claimed,
                             RunnerSettings(capacity=self._count,
                                            lease_seconds=engine.settings.lease_seconds,
                                            poll_interval=self._poll),
                             engine.owner, key=str, clock=engine.clock, name="action")
        self.runner.stopping = self._stop
        self._spawn(self.runner.run, "shipyard-engine")
        for n, companion in enumerate(self.companions):
            self._spawn(partial(companion, self._stop), f"shipyard-companion-{n}")

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, daemon=True, name=name)
        thread.start()
        self._threads.append(thread)

    def wake(self) -> None:
        """Look for work now (an action was created or unpaused)."""
        if self.runner is not None:
            self.runner.wake()

    def stop(self, timeout: float = 10.0) -> None:
        if self.listener is not None:
            self.listener.stop()
        self._stop.set()
        if self.runner is not None:
            self.runner.stop()
            self.runner.join(timeout)
        for thread in self._threads:
            thread.join(timeout)

    def run_forever(self) -> None:
        """Run in the calling thread too (the shipyard-worker process)."""
        self.start()
        while not self._stop.wait(1.0):
            pass
