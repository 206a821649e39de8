"""Task messages as read back: each decoded once per process and kept, so a large task's body
read again after each change parses only the messages added since (a 200-node task holds
over a thousand). A message is never changed once written; it is kept under its id and its
tree's root task id, so an id SQLite hands out again after a purge never finds another
tree's message."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from itertools import islice

from common.status import Message

KEPT = 50_000  # decoded messages kept per process (a few hundred bytes each), oldest out first
Row = tuple[int, str, str, float]  # id, root task id, the body as stored (JSON text), ts


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


class DecodedMessages:
    """Decoded messages by (id, root id); callers must not change what they are given."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept: dict[tuple[int, str], Message] = {}  # in the order first decoded
        self._max = kept
        self._lock = threading.Lock()
        self.decoded = 0  # messages parsed so far (for tests)

    def of(self, rows: Iterable[Row]) -> list[Message]:
        """The messages of `rows`, in their order."""
        rows = list(rows)
        with self._lock:
            found = [self._kept.get((mid, root)) for mid, root, _, _ in rows]
        fresh: dict[tuple[int, str], Message] = {}
        out: list[Message] = []
        for (mid, root, text, ts), message in zip(rows, found, strict=True):
            if message is None:
                message = dict(json.loads(text), ts=iso(ts))
                fresh[(mid, root)] = message
            out.append(message)
        if fresh:
            with self._lock:
                self.decoded += len(fresh)
                self._kept.update(fresh)
                for key in list(islice(self._kept, max(len(self._kept) - self._max, 0))):
                    del self._kept[key]
        return out
