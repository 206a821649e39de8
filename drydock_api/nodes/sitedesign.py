"""The site design Drydock manages without a task: Shipyard's committed revision.

Reboot requests and node views need the design (BMC addresses and credentials) even on a fresh
start, before any task has run. Drydock asks Shipyard for its revisions and takes the newest
one tagged `committed`; a design reference of a task is the fallback when Shipyard has none or
cannot be reached. Answers (and failures) are kept for `ttl` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from common.api import API_PREFIX
from common.context import RequestContext
from common.errors import BerthError

LOG = logging.getLogger(__name__)
COMMITTED_TAG = "committed"


class Requester(Protocol):
    def request(self, method: str, path: str, *, ctx: RequestContext | None = None) -> Any: ...


class SiteDesign:
    """Callable: the design reference to use when none is given, or None."""

    def __init__(self, shipyard: Requester | None, shipyard_url: str,
                 fallback: Callable[[], Any], *, ttl: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._shipyard = shipyard
        self._base = shipyard_url.rstrip("/")
        self._fallback = fallback
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[float, str | None] | None = None
        self.error: str | None = None

    def committed(self) -> str | None:
        """Shipyard's committed revision as a design reference (cached), or None."""
        if self._shipyard is None:
            return None
        now = self._clock()
        with self._lock:
            if self._cached is not None and now - self._cached[0] < self._ttl:
                return self._cached[1]
        ref, error = self._ask()
        with self._lock:
            self._cached, self.error = (now, ref), error
        return ref

    def _ask(self) -> tuple[str | None, str | None]:
        assert self._shipyard is not None
        try:
            revisions = self._shipyard.request("GET", f"{API_PREFIX}/revisions",
                                               ctx=RequestContext()) or []
        except BerthError as exc:
            LOG.info("Shipyard's committed design unknown: %s", exc.message)
            return None, f"Shipyard could not be asked for its committed design: {exc.message}"
        committed = [int(r["id"]) for r in revisions
                     if isinstance(r, dict) and COMMITTED_TAG in (r.get("tags") or [])]
        if not committed:
            return None, "Shipyard has no committed design revision"
        return (f"deckhand+{self._base}/api/v1.0/revisions/{max(committed)}/"
                "rendered-documents"), None

    def __call__(self) -> Any:
        return self.committed() or self._fallback()
