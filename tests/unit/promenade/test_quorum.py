"""Quorum projection: unreachable and unhealthy members count as lost."""

from __future__ import annotations

from promenade_api.etcd.model import Member, MemberHealth
from promenade_api.etcd.quorum import project, quorum, stable


def health(*states: str) -> list[MemberHealth]:
    out = []
    for i, state in enumerate(states, start=1):
        m = Member(i, f"node0{i}")
        out.append(MemberHealth(m, reachable=state != "down", healthy=state == "ok"))
    return out


def test_quorum_sizes():
    assert [quorum(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_removing_one_of_three_healthy_members_is_allowed():
    assert project(health("ok", "ok", "ok"), {1}, 0).allowed


def test_removing_a_healthy_member_while_another_is_down_is_refused():
    verdict = project(health("ok", "ok", "down"), {1}, 0)
    assert not verdict.allowed and verdict.lost == ("node03",)
    assert "quorum" in verdict.reasons[0]


def test_unhealthy_members_count_as_lost():
    assert not project(health("ok", "ok", "sick"), {1}, 0).allowed


def test_removing_the_down_member_itself_is_allowed():
    assert project(health("ok", "ok", "down"), {3}, 0).allowed


def test_threshold_refuses_what_quorum_allows():
    verdict = project(health("ok", "ok"), {1}, 2)
    assert not verdict.allowed and "minimum_healthy_members" in verdict.reasons[0]


def test_removing_the_last_member_is_refused():
    assert not project(health("ok"), {1}, 0).allowed


def test_stable_ignores_the_node_being_removed():
    assert stable(health("down", "ok", "ok"), {"node01"}, 2)
    assert not stable(health("down", "ok", "sick"), {"node01"}, 2)
