"""A Drydock task's nodes as chains of steps on the common schedule (common.schedule): each
node runs on one piece at a time (its steps in order until one waits or the node ends) and
comes back when its waiting step is due; between pieces no thread is held."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from common.engine import Attempts
from common.schedule import Start, Watch
from drydock_api.db.models import TaskRow
from drydock_api.nodes.design import NodeDef
from drydock_api.tasks.context import NodeContext, NodeStep, Ports


@dataclass
class NodeRun:
    """One node of a running task: the steps still to run, the current step (its row, its
    context, whose `state` survives its attempts) and where its attempts stand."""

    node: NodeDef
    sub: TaskRow
    options: dict[str, Any]
    pending: list[NodeStep]
    previous: dict[str, Any] = field(default_factory=dict)
    recorded: dict[str, TaskRow] | None = None
    teardown: bool = False  # a teardown action: the node's teardown record follows it
    design_grace: float | None = None  # the design's power.grace_period (nodes.power)
    earlier: dict[str, dict[str, Any]] = field(default_factory=dict)
    step: NodeStep | None = None
    row: TaskRow | None = None
    ctx: NodeContext | None = None
    seen: Attempts = field(default_factory=lambda: Attempts(started=0.0))
    retake: bool = False  # resumed after take_budget_slot: hold the slots again first
    blocked: list[str] = field(default_factory=list)  # what the retake last waited for
    waiting_since: float | None = None  # when the retake first found a domain full
    ports: Ports | None = None  # the ports of the task design's provisioner
    found: dict[str, Any] | None = None  # the node's teardown record as this task began it
    saved: str | None = None  # what the running step's last save held (NodeJournal.save)
    saved_at: float = 0.0
    started: TaskRow | None = None  # the next step's row, started as the last one ended
    watch: Watch[int] | None = None  # the schedule's watch over the node's running piece

    @property
    def stuck(self) -> bool:
        """An attempt ran past its attempt timeout: the node failed, StepStuck."""
        return self.watch is not None and self.watch.stuck


Advance = Callable[[NodeRun, Watch[int]], float | None]  # run a node on; when to come back


class NodeChains:
    """The schedule's plan for a task's nodes: a heap of due times, one entry per node not
    running; `advance` runs a node on, `stuck` fails a node whose attempt was found stuck."""

    def __init__(self, runs: list[NodeRun], now: float, advance: Advance,
                 stuck: Callable[[NodeRun, float, float], None]) -> None:
        self.runs = runs
        self.heap: list[tuple[float, int]] = [(now, i) for i in range(len(runs))]
        self._advance, self._stuck = advance, stuck

    def due(self, now: float, running: Collection[int]) -> list[Start[int, float | None]]:
        starts: list[Start[int, float | None]] = []
        while self.heap and self.heap[0][0] <= now:
            _, i = heapq.heappop(self.heap)
            starts.append(Start(i, partial(self._advance, self.runs[i]), marks=True))
        return starts

    def next_due(self) -> float | None:
        return self.heap[0][0] if self.heap else None

    def idle(self, now: float) -> float | None:
        return self.next_due()  # None: every node ended

    def ended(self, i: int, again: float | None) -> None:
        if again is not None:
            heapq.heappush(self.heap, (again, i))

    def stuck(self, i: int, began: float, now: float) -> None:
        self._stuck(self.runs[i], began, now)
