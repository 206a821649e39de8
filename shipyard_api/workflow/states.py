"""Action and step states as enums with transition tables; illegal transitions raise 409."""

from __future__ import annotations

from enum import StrEnum

from common.workflow import IllegalTransition, transition


class ActionState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"
    COMPLETE = "complete"
    FAILED = "failed"
    STOPPED = "stopped"


class StepState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    SUCCESS = "success"
    FAILED = "failed"
    SKIPPED = "skipped"


A = ActionState
S = StepState

ACTION_TRANSITIONS: dict[ActionState, frozenset[ActionState]] = {
    A.PENDING: frozenset({A.RUNNING, A.PAUSED, A.STOPPING, A.FAILED}),
    A.RUNNING: frozenset({A.PAUSED, A.STOPPING, A.COMPLETE, A.FAILED}),
    A.PAUSED: frozenset({A.RUNNING, A.STOPPING}),
    A.STOPPING: frozenset({A.STOPPED, A.FAILED}),
    A.COMPLETE: frozenset(),
    A.FAILED: frozenset(),
    A.STOPPED: frozenset(),
}

STEP_TRANSITIONS: dict[StepState, frozenset[StepState]] = {
    S.PENDING: frozenset({S.RUNNING, S.SKIPPED}),
    # RUNNING -> RUNNING: a worker resumes a step whose previous worker died mid-run.
    S.RUNNING: frozenset({S.RUNNING, S.SUCCESS, S.WAITING, S.FAILED}),
    S.WAITING: frozenset({S.RUNNING, S.FAILED, S.SKIPPED}),
    S.SUCCESS: frozenset(),
    S.FAILED: frozenset(),
    S.SKIPPED: frozenset(),
}

# Control verbs (POST /actions/{id}/control/{verb}): the state each leads to, and from where.
CONTROLS: dict[str, ActionState] = {
    "pause": A.PAUSED,
    "unpause": A.RUNNING,
    "stop": A.STOPPING,
}
CONTROL_SOURCES: dict[str, frozenset[ActionState]] = {
    "pause": frozenset({A.PENDING, A.RUNNING}),
    "unpause": frozenset({A.PAUSED}),
    "stop": frozenset({A.PENDING, A.RUNNING, A.PAUSED}),
}

TERMINAL_ACTION = frozenset({A.COMPLETE, A.FAILED, A.STOPPED})
TERMINAL_STEP = frozenset({S.SUCCESS, S.FAILED, S.SKIPPED})
# States in which a worker may claim an action (when its lease is free and it is due).
CLAIMABLE = frozenset({A.PENDING, A.RUNNING, A.STOPPING})


def sources_of(target: ActionState) -> frozenset[ActionState]:
    """Every action state from which `target` may be reached."""
    return frozenset(s for s, targets in ACTION_TRANSITIONS.items() if target in targets)


def check_action(current: ActionState, target: ActionState) -> None:
    transition(ACTION_TRANSITIONS, current, target, "An action")


def check_control(verb: str, current: ActionState) -> None:
    if current not in CONTROL_SOURCES[verb]:
        raise IllegalTransition(f"Cannot {verb} an action that is {current.value}",
                       reason="InvalidStateTransition")


def check_step(current: StepState, target: StepState) -> None:
    transition(STEP_TRANSITIONS, current, target, "A step")
