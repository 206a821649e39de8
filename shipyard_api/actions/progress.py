"""Follow a long synchronous call to a peer and record its progress into the running step.

Promenade's decommission answers only when it is over; meanwhile its drain publishes progress
(pods left, grouped by why they are still there) that any Promenade process serves in the
node view. `follow` runs the call in a thread and copies each new progress record of this
action (matched by its context marker) into the step's details.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from common.clients.promenade import DrainProgress, NodeView

LOG = logging.getLogger(__name__)
POLL_INTERVAL = 2.0
T = TypeVar("T")
R = TypeVar("R", bound=Mapping[str, object])  # a progress record


def drain_record(status: NodeView | None, marker: str) -> DrainProgress | None:
    """The node view's drain progress when it belongs to the drain this action started."""
    record = status.get("drain_progress") if status else None
    if isinstance(record, dict) and record.get("marker") == marker:
        return record
    return None


def follow(call: Callable[[], T], poll: Callable[[], R | None],
           report: Callable[[R], None], *,
           interval: float = POLL_INTERVAL) -> tuple[T, R | None]:
    """Run `call`; every `interval` s while it runs, `poll` for progress and `report` each
    new record. Returns the call's result and the last record seen (errors of `call`
    propagate; a failing poll or report is only logged)."""
    last: R | None = None
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(contextvars.copy_context().run, call)
        while True:
            try:
                return future.result(timeout=interval), last
            except FutureTimeout:
                pass
            try:
                record = poll()
                if record is not None and record != last:
                    report(record)
                    last = record
            except Exception as exc:  # progress is informative; the call decides the step
                LOG.info("progress poll failed: %s", exc)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def progress_lines(step: Mapping[str, object]) -> list[str]:
    """The live detail of a step: a drain's pods left, grouped by reason."""
    details = step.get("details")
    drain = details.get("drain") if isinstance(details, Mapping) else None
    if not isinstance(drain, dict):
        return []
    left = int(drain.get("pods_left") or 0)
    head = f"{plural(left, 'pod')} left ({drain.get('phase')}, " \
           f"{int(drain.get('removed') or 0)} removed)"
    return [head] + [f"{g.get('reason')}: {plural(int(g.get('count') or 0), 'pod')}"
                     for g in drain.get("groups") or [] if isinstance(g, dict)]


def step_state(step: Mapping[str, object]) -> object:
    """Berth's own state of a step view: `step_state` (`state` holds Airflow's name for it;
    views from before both were shown have only `state`)."""
    return step.get("step_state", step.get("state"))
