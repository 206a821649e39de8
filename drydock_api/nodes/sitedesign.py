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

from cachetools import TTLCache

from common.clients.shipyard import ShipyardClient, design_ref
from common.context import RequestContext
from common.errors import BerthError
from common.jsontypes import JSON

LOG = logging.getLogger(__name__)
_MISS = object()


class SiteDesign:
    """Callable: the design reference to use when none is given, or None."""

    def __init__(self, shipyard: ShipyardClient | None, shipyard_url: str,
                 fallback: Callable[[], JSON], *, ttl: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._shipyard = shipyard
        self._base = shipyard_url.rstrip("/")
        self._fallback = fallback
        self._lock = threading.Lock()
        self._cached: TTLCache[str, str | None] = TTLCache(maxsize=1, ttl=ttl, timer=clock)
        self.error: str | None = None

    def committed(self) -> str | None:
        """Shipyard's committed revision as a design reference (cached), or None."""
        if self._shipyard is None:
            return None
        with self._lock:
            hit = self._cached.get("committed", _MISS)
        if hit is None or isinstance(hit, str):  # not _MISS: cached
            return hit
        ref, error = self._ask()
        with self._lock:
            self._cached["committed"], self.error = ref, error
        return ref

    def _ask(self) -> tuple[str | None, str | None]:
        assert self._shipyard is not None
        try:
            committed = self._shipyard.committed_revision(RequestContext())
        except BerthError as exc:
            LOG.info("Shipyard's committed design unknown: %s", exc.message)
            return None, f"Shipyard could not be asked for its committed design: {exc.message}"
        if committed is None:
            return None, "Shipyard has no committed design revision"
        return design_ref(self._base, committed), None

    def __call__(self) -> JSON:
        return self.committed() or self._fallback()
