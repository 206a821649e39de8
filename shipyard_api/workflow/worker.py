"""Worker loops: engine threads that claim due actions until told to stop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from common.pgwake import Listener
from shipyard_api.workflow.engine import Engine

LOG = logging.getLogger(__name__)


class WorkerPool:
    """`count` threads, each an Engine with its own lease identity."""

    def __init__(self, make_engine: Callable[[int], Engine], count: int,
                 poll_interval: float) -> None:
        self._make_engine = make_engine
        self._count = count
        self._poll = poll_interval
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self.listener: Listener | None = None  # wakes us on other processes' news
        # loops run beside the engines while they run (each gets the stop event)
        self.companions: list[Callable[[threading.Event], None]] = []

    def start(self) -> None:
        if self.listener is not None:  # API processes without engine threads listen too
            self.listener.start()
        for n in range(self._count):
            engine = self._make_engine(n)
            thread = threading.Thread(target=self._loop, args=(engine,), daemon=True,
                                      name=f"shipyard-engine-{n}")
            thread.start()
            self._threads.append(thread)
        for n, companion in enumerate(self.companions if self._count else []):
            thread = threading.Thread(target=companion, args=(self._stop,), daemon=True,
                                      name=f"shipyard-companion-{n}")
            thread.start()
            self._threads.append(thread)

    def wake(self) -> None:
        """Look for work now (an action was created or unpaused)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        if self.listener is not None:
            self.listener.stop()
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)

    def run_forever(self) -> None:
        """Run in the calling thread too (the shipyard-worker process)."""
        self.start()
        while not self._stop.wait(1.0):
            pass

    def _loop(self, engine: Engine) -> None:
        while not self._stop.is_set():
            try:
                busy = engine.run_once()
            except Exception:  # keep the worker alive; the action is retried after its lease
                LOG.exception("Engine iteration failed")
                busy = False
            if not busy:
                self._wake.wait(self._poll)
                self._wake.clear()
