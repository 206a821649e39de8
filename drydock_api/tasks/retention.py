"""Task purge (Airship's DELETE /tasks?days=N): drop task trees that finished long ago."""

from __future__ import annotations

import time
from collections.abc import Callable

from common.errors import ValidationFailed
from common.status import status_body, validation_message
from drydock_api.db.history import TaskHistory

DEFAULT_DAYS = 90  # Airship's retention when no (or no usable) days is given
MAX_DAYS = 36500


def parse_days(raw: str | None) -> int:
    """`days` as given: absent → 90 (Airship's default); not a whole number 0..36500 → 400."""
    if raw is None:
        return DEFAULT_DAYS
    value = raw.strip()
    if not value.isdigit() or int(value) > MAX_DAYS:
        raise ValidationFailed("Invalid query parameter days", messages=[validation_message(
            f"days must be a whole number of days from 0 to {MAX_DAYS}, not {raw!r}",
            name="QueryParameter")])
    return int(value)


class TaskRetention:
    def __init__(self, history: TaskHistory,
                 clock: Callable[[], float] = time.time) -> None:
        self._history = history
        self._clock = clock

    def purge(self, days: int) -> dict[str, object]:
        """Remove the tasks (with their subtasks and messages) that finished more than `days`
        days ago; queued, running and terminating tasks stay, however old. A status body
        naming what was removed."""
        cutoff = self._clock() - days * 86400
        purged = self._history.purge(cutoff)
        return status_body(200, "Tables purged successfully.", reason="TasksPurged", extra={
            "days": days, "purged_tasks": len(purged.tasks), "task_ids": purged.tasks,
            "purged_rows": purged.rows, "purged_messages": purged.messages})
