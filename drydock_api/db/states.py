"""Task statuses and results (the wire enums of common.clients.drydock), the transition table,
and the one function that applies it."""

from __future__ import annotations

from common.clients.drydock import ResultStatus as TaskResult
from common.clients.drydock import TaskStatus
from common.workflow import IllegalTransition, transition

__all__ = ["ACTIVE", "FINAL", "TRANSITIONS", "IllegalTransition", "TaskResult", "TaskStatus",
           "check_transition", "summarize"]


S = TaskStatus

TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    S.REQUESTED: frozenset({S.QUEUED, S.RUNNING, S.TERMINATED}),
    S.QUEUED: frozenset({S.RUNNING, S.TERMINATING, S.TERMINATED}),
    S.RUNNING: frozenset({S.COMPLETE, S.TERMINATING}),
    S.TERMINATING: frozenset({S.TERMINATED}),
    S.TERMINATED: frozenset(),
    S.COMPLETE: frozenset(),
}

FINAL = frozenset({S.TERMINATED, S.COMPLETE})
ACTIVE = frozenset({S.REQUESTED, S.QUEUED, S.RUNNING, S.TERMINATING})


def check_transition(current: str, target: str) -> TaskStatus:
    """Return `target` as a TaskStatus when the table allows current → target, else 409."""
    return transition(TRANSITIONS, TaskStatus(current), TaskStatus(target), "A task",
                      reason="InvalidTaskState", title="Illegal task state transition")


def summarize(successes: int, failures: int, unfinished: int) -> TaskResult:
    """The result of a task from how many of its nodes succeeded, failed, or never finished."""
    if failures == 0 and unfinished == 0:
        return TaskResult.SUCCESS
    if successes == 0 and failures == 0:
        return TaskResult.INCOMPLETE
    if successes == 0:
        return TaskResult.FAILURE
    return TaskResult.PARTIAL_SUCCESS
