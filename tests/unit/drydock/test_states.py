"""The task transition table and result summary."""

from __future__ import annotations

import pytest

from drydock_api.db.states import (
    TRANSITIONS,
    IllegalTransition,
    TaskResult,
    TaskStatus,
    check_transition,
    summarize,
)

S = TaskStatus
ALLOWED = {
    (S.REQUESTED, S.QUEUED), (S.REQUESTED, S.RUNNING), (S.REQUESTED, S.TERMINATED),
    (S.QUEUED, S.RUNNING), (S.QUEUED, S.TERMINATING), (S.QUEUED, S.TERMINATED),
    (S.RUNNING, S.COMPLETE), (S.RUNNING, S.TERMINATING),
    (S.TERMINATING, S.TERMINATED),
}


@pytest.mark.parametrize("src", list(S))
@pytest.mark.parametrize("dst", list(S))
def test_transition_table(src: TaskStatus, dst: TaskStatus) -> None:
    if (src, dst) in ALLOWED:
        assert check_transition(src.value, dst.value) is dst
    else:
        with pytest.raises(IllegalTransition) as err:
            check_transition(src.value, dst.value)
        assert err.value.code == 409


def test_final_states_have_no_way_out() -> None:
    assert not TRANSITIONS[S.COMPLETE] and not TRANSITIONS[S.TERMINATED]


@pytest.mark.parametrize("ok,bad,unfinished,result", [
    (3, 0, 0, TaskResult.SUCCESS), (0, 0, 0, TaskResult.SUCCESS),
    (2, 1, 0, TaskResult.PARTIAL_SUCCESS), (0, 3, 0, TaskResult.FAILURE),
    (1, 0, 2, TaskResult.PARTIAL_SUCCESS), (0, 0, 2, TaskResult.INCOMPLETE),
    (0, 1, 2, TaskResult.FAILURE),
])
def test_summary(ok: int, bad: int, unfinished: int, result: TaskResult) -> None:
    assert summarize(ok, bad, unfinished) is result
