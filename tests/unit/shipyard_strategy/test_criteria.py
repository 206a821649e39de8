"""Success criteria arithmetic, each criterion evaluated on its own."""

from __future__ import annotations

import pytest

from shipyard_api.strategy.criteria import missed_criteria
from shipyard_api.strategy.model import SuccessCriteria

C = SuccessCriteria
CASES = [
    # criteria, succeeded, failed, total, passes
    (C(), 0, 4, 4, True),                                   # no criteria: nothing is checked
    (C(percent_successful_nodes=75), 3, 1, 4, True),        # the spec's 3 of 4
    (C(percent_successful_nodes=75), 2, 2, 4, False),
    (C(percent_successful_nodes=50), 1, 1, 2, True),
    (C(percent_successful_nodes=50), 0, 2, 2, False),
    (C(percent_successful_nodes=90), 3, 0, 3, True),
    (C(percent_successful_nodes=90), 2, 1, 3, False),
    (C(percent_successful_nodes=100), 2, 0, 3, False),      # a node never sent counts against
    (C(percent_successful_nodes=66.7), 2, 1, 3, False),
    (C(percent_successful_nodes=66.6), 2, 1, 3, True),
    (C(percent_successful_nodes=0), 0, 5, 5, True),
    (C(minimum_successful_nodes=3), 3, 5, 8, True),
    (C(minimum_successful_nodes=3), 2, 0, 2, False),
    (C(minimum_successful_nodes=1), 0, 1, 1, False),
    (C(maximum_failed_nodes=1), 2, 1, 3, True),
    (C(maximum_failed_nodes=1), 1, 2, 3, False),
    (C(maximum_failed_nodes=0), 3, 0, 3, True),
    # several criteria: any one missed fails the group
    (C(90, 3, 1), 3, 0, 3, True),
    (C(90, 3, 1), 3, 1, 4, False),                          # 75% < 90%
    (C(50, 3, 1), 2, 1, 3, False),                          # fewer than 3
    (C(50, 1, 1), 4, 2, 6, False),                          # 2 failed > 1
    # a group selecting no nodes: 100% successful, but minimum and maximum fail
    (C(percent_successful_nodes=100), 0, 0, 0, True),
    (C(minimum_successful_nodes=0), 0, 0, 0, False),
    (C(minimum_successful_nodes=1), 0, 0, 0, False),
    (C(maximum_failed_nodes=5), 0, 0, 0, False),
    (C(), 0, 0, 0, True),
]


@pytest.mark.parametrize(("criteria", "ok", "bad", "total", "passes"), CASES)
def test_criteria_table(criteria: SuccessCriteria, ok: int, bad: int, total: int,
                        passes: bool) -> None:
    assert (missed_criteria(criteria, ok, bad, total) == []) is passes


def test_each_missed_criterion_is_reported_separately() -> None:
    missed = missed_criteria(C(90, 3, 0), 1, 1, 2)
    assert len(missed) == 3
    assert "50% of nodes successful (1 of 2), 90% required" in missed[0]
    assert "at least 3 required" in missed[1]
    assert "at most 0 allowed" in missed[2]


def test_an_empty_group_says_it_selects_no_nodes() -> None:
    missed = missed_criteria(C(minimum_successful_nodes=1, maximum_failed_nodes=0), 0, 0, 0)
    assert all("selects no nodes" in m for m in missed) and len(missed) == 2
