"""pyghmi's process-wide IO thread, kept running.

pyghmi reads every IPMI socket of a process (client sessions and simulated BMCs alike) in one
IO thread, which has no error handling of its own: one exception (a read of a socket closed
under it, say) ends it, and from then on every IPMI call of the process waits on an event
that nothing will set, with no timeout. `revive_io_thread` starts a new one when it has
ended (it then serves the waiters left queued, whose deadlines have passed); `IoWatchdog`
does so every half second in a daemon thread, once per process, for every user of pyghmi.
"""

from __future__ import annotations

import logging
import threading
import time

from pyghmi.ipmi.private import session as ipmisession

LOG = logging.getLogger(__name__)
_lock = threading.Lock()


def revive_io_thread() -> bool:
    """Start a new IO thread if pyghmi's has ended (True), else do nothing (False)."""
    with _lock:
        thread = ipmisession.iothread
        if thread is None or thread.is_alive():
            return False
        LOG.error("pyghmi's IPMI IO thread had stopped; starting a new one")
        worker = ipmisession.define_worker()()
        worker.daemon = True
        ipmisession.iothread = worker
        worker.start()
        return True


class IoWatchdog:
    """One daemon thread per process that revives pyghmi's IO thread within `interval`."""

    interval = 0.5
    _thread: threading.Thread | None = None
    _guard = threading.Lock()

    @classmethod
    def ensure(cls) -> None:
        """Start the process's watchdog unless it runs already."""
        with cls._guard:
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._run, name="pyghmi-io-watchdog",
                                               daemon=True)
                cls._thread.start()

    @classmethod
    def _run(cls) -> None:
        while True:  # as long as the process
            time.sleep(cls.interval)
            try:
                revive_io_thread()
            except Exception:  # keep watching: the next pass tries again
                LOG.exception("reviving pyghmi's IPMI IO thread failed")
