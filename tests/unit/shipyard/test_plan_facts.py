"""The re-check rules of plan facts (pure), and plans stored on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from common.context import RequestContext
from shipyard_api.db import session_factory
from shipyard_api.plans import facts
from shipyard_api.plans.service import PlanService
from shipyard_api.plans.store import PlanStore
from tests.unit.shipyard.conftest import Harness


@pytest.mark.parametrize("rule, planned, now, holds", [
    ("equal", "graceful", "graceful", True),
    ("equal", "graceful", "fence-first", False),
    ("at_least", 1, 2, True),
    ("at_least", 1, 0, False),
    ("at_least", 1, None, True),  # the budget was deleted: nothing tighter remains
    ("keeps", ["a", "b"], ["a", "b", "c"], True),
    ("keeps", ["a", "b"], ["a"], False),
    ("keeps", ["a"], None, False),  # the cluster could not be read: nothing is known healthy
    ("no_new", ["l1"], [], True),
    ("no_new", [], ["l2"], False),
])
def test_each_rule(rule: str, planned: object, now: object, holds: bool) -> None:
    planned_facts = [facts.fact("s", "f", planned, rule)]
    current = [] if now is None else [facts.fact("s", "f", now, rule)]
    changes = facts.compare(planned_facts, current)
    assert (changes == []) is holds
    if changes:
        assert changes[0]["planned"] == planned and changes[0]["now"] == now


def test_decommission_facts_leave_out_the_actions_own_targets_and_fenced_budgets() -> None:
    preview = {"fenced": False, "drain": {"budgets": [{"budget": "ns/b",
                                                       "disruptions_allowed": 2}],
                                          "eviction_locks": ["x"]},
               "etcd": [{"cluster": "k", "learners": [], "members": [
                   {"name": "n1", "healthy": True}, {"name": "n2", "healthy": True},
                   {"name": "n3", "healthy": False}]}]}
    found = {f["fact"]: f["value"] for f in facts.decommission_facts("n1", preview, ["n1"])}
    assert found == {"PodDisruptionBudget ns/b disruptions allowed": 2,
                     "eviction locks held on n1": ["x"], "etcd k healthy members": ["n2"],
                     "etcd k learners": []}
    fenced = facts.decommission_facts("n1", {**preview, "fenced": True}, ["n1"])
    assert [f["fact"] for f in fenced] == ["etcd k healthy members", "etcd k learners"]


def test_diff_text_names_each_change() -> None:
    changes = facts.compare([facts.fact("s", "etcd k healthy members", ["a", "b"], "keeps")],
                            [facts.fact("s", "etcd k healthy members", ["a"], "keeps")])
    assert facts.diff_text(changes) == "etcd k healthy members: no longer: b"


def test_plans_are_stored_and_read_back_on_both_databases(any_harness: Harness) -> None:
    h = any_harness
    h.commit(tag="site-action-success")
    store = PlanStore(session_factory(h.engine_db))
    service = PlanService(store, h.api, ttl=60, clock=h.clock)
    plan = service.create("redeploy_server", {"target_nodes": "node01"},
                          RequestContext(marker="6f1c3d2e-0000-4000-8000-0000000000bb"))
    again = service.get(plan["id"])
    assert again["nodes"] == plan["nodes"] and again["facts"] == plan["facts"]
    assert store.facts(plan["id"]) == plan["facts"]
