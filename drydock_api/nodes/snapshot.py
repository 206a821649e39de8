"""The machines MAAS knows, listed at most every few seconds for long node lists.

Listing every machine of a 10,000-machine MAAS returns tens of MB and takes seconds, so a
GET /nodes over a large site reads the last listing instead: one younger than `max_age` is
used as it is; an older one is still used while one background refresh runs (so no request
waits for MAAS once a listing exists); only the very first listing is waited for. A refresh
that finds what the last listing held keeps that listing (the same object), so what was built
from it (the encoded node lists) stays valid and is not built again every `max_age`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from common.errors import BerthError
from drydock_api.drivers.ports import Machine

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Listing:
    machines: dict[str, Machine]
    error: str | None


class MachineSnapshot:
    def __init__(self, list_machines: Callable[[], list[Machine]], max_age: float,
                 clock: Callable[[], float],
                 on_refresh: Callable[[], None] | None = None) -> None:
        self._list = list_machines
        self._on_refresh = on_refresh  # called in the background thread after its listing
        self._max_age = max_age
        self._clock = clock
        self._last: Listing | None = None
        self._taken = 0.0  # when MAAS was last listed
        self._refreshing = False
        self._lock = threading.Lock()

    def get(self) -> Listing:
        """The last listing (refreshed in the background when older than max_age)."""
        with self._lock:
            last, stale = self._last, self._last is None or \
                self._clock() - self._taken >= self._max_age
            start = stale and last is not None and not self._refreshing
            if start:
                self._refreshing = True
        if last is None:
            return self.refresh()
        if start:
            threading.Thread(target=self._refresh_in_background, name="maas-listing",
                             daemon=True).start()
        return last

    def refresh(self) -> Listing:
        """List MAAS now (a failure is kept as the listing's error, with no machines); the
        last listing itself when MAAS answered the same."""
        taken = self._clock()
        try:
            listing = Listing({m.hostname: m for m in self._list()}, None)
        except BerthError as exc:
            listing = Listing({}, exc.message)
        with self._lock:
            if self._last is not None and listing == self._last:
                listing = self._last
            self._last, self._taken = listing, taken
        return listing

    def _refresh_in_background(self) -> None:
        with self._lock:
            before = self._last
        try:
            changed = self.refresh() is not before
        except Exception:
            LOG.exception("Listing the MAAS machines failed")
            changed = False
        finally:
            with self._lock:
                self._refreshing = False
        if changed and self._on_refresh is not None:
            try:
                self._on_refresh()
            except Exception:
                LOG.exception("Preparing node lists after a MAAS listing failed")
