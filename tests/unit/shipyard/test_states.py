"""The action and step state machines are tables; illegal moves are refused with 409."""

from __future__ import annotations

import pytest

from common.errors import Conflict
from shipyard_api.workflow.states import (
    ACTION_TRANSITIONS,
    STEP_TRANSITIONS,
    TERMINAL_ACTION,
    TERMINAL_STEP,
    ActionState,
    StepState,
    check_action,
    check_step,
    sources_of,
)

A, S = ActionState, StepState


def test_action_table_names_every_state_and_terminal_states_have_no_exit() -> None:
    assert set(ACTION_TRANSITIONS) == set(ActionState)
    for state in TERMINAL_ACTION:
        assert ACTION_TRANSITIONS[state] == frozenset()


def test_step_table_names_every_state_and_terminal_states_have_no_exit() -> None:
    assert set(STEP_TRANSITIONS) == set(StepState)
    for state in TERMINAL_STEP:
        assert STEP_TRANSITIONS[state] == frozenset()


@pytest.mark.parametrize(("current", "target"), [
    (A.PENDING, A.RUNNING), (A.RUNNING, A.PAUSED), (A.PAUSED, A.RUNNING),
    (A.RUNNING, A.STOPPING), (A.PAUSED, A.STOPPING), (A.STOPPING, A.STOPPED),
    (A.RUNNING, A.COMPLETE), (A.RUNNING, A.FAILED)])
def test_legal_action_transitions_pass(current: ActionState, target: ActionState) -> None:
    check_action(current, target)


@pytest.mark.parametrize(("current", "target"), [
    (A.COMPLETE, A.RUNNING), (A.FAILED, A.PAUSED), (A.STOPPED, A.RUNNING),
    (A.PAUSED, A.PAUSED), (A.STOPPING, A.RUNNING), (A.PENDING, A.COMPLETE)])
def test_illegal_action_transitions_raise_conflict(current: ActionState,
                                                   target: ActionState) -> None:
    with pytest.raises(Conflict) as err:
        check_action(current, target)
    assert err.value.code == 409


@pytest.mark.parametrize(("current", "target"), [
    (S.SUCCESS, S.RUNNING), (S.PENDING, S.SUCCESS), (S.SKIPPED, S.PENDING),
    (S.FAILED, S.WAITING)])
def test_illegal_step_transitions_raise_conflict(current: StepState, target: StepState) -> None:
    with pytest.raises(Conflict):
        check_step(current, target)


def test_running_step_may_be_resumed_after_a_crash() -> None:
    check_step(S.RUNNING, S.RUNNING)


def test_sources_of_unpause_is_only_paused() -> None:
    assert sources_of(A.RUNNING) == {A.PENDING, A.PAUSED}
