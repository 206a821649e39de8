"""The workflow store on SQLite and PostgreSQL: leases, conditional transitions, audit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from shipyard_api.actions.redeploy import definition
from shipyard_api.workflow.states import ActionState
from tests.unit.shipyard.conftest import Harness


def test_redeploy_completes_on_both_databases(any_harness: Harness) -> None:
    h = any_harness
    h.commit(tag="site-action-success")
    action = h.create("redeploy_server", {"target_nodes": "node01,node03"})
    view = h.drive(action["id"])
    assert view["state"] == "complete"
    per_node = sum(1 for step in definition().steps if step.per_node)
    assert per_node == 13 and len(view["steps"]) == 2 + per_node * 2


def test_only_one_of_many_concurrent_claimers_gets_the_action(any_harness: Harness) -> None:
    h = any_harness
    h.commit(tag="site-action-success")
    action = h.create("redeploy_server", {"target_nodes": "node01"})
    now = h.clock()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda n: h.store.claim(f"w{n}", now, 30), range(16)))
    assert [r for r in results if r] == [action["id"]]


def test_expired_lease_is_taken_over(any_harness: Harness) -> None:
    h = any_harness
    h.commit(tag="site-action-success")
    action = h.create("redeploy_server", {"target_nodes": "node01"})
    assert h.store.claim("a", h.clock(), 10) == action["id"]
    assert h.store.claim("b", h.clock() + 5, 10) is None
    assert h.store.claim("b", h.clock() + 11, 10) == action["id"]
    assert h.store.get(action["id"]).lease_owner == "b"


def test_transition_is_conditional_on_the_current_state(any_harness: Harness) -> None:
    h = any_harness
    h.commit(tag="site-action-success")
    action = h.create("redeploy_server", {"target_nodes": "node01"})
    assert h.store.transition(action["id"], ActionState.COMPLETE, h.clock()) is False
    assert h.store.transition(action["id"], ActionState.RUNNING, h.clock()) is True
    assert h.store.transition(action["id"], ActionState.COMPLETE, h.clock()) is True
    assert h.store.get(action["id"]).ended_at == h.clock()


def test_actions_are_listed_in_creation_order_with_ulid_ids(any_harness: Harness) -> None:
    h = any_harness
    h.commit(tag="site-action-success")
    first = h.create("redeploy_server", {"target_nodes": "node01"})
    h.clock.sleep(1)
    second = h.create("redeploy_server", {"target_nodes": "node02"})
    ids = [a["id"] for a in h.api.list()]
    assert ids == [first["id"], second["id"]]
    assert all(len(i) == 26 for i in ids)


def test_an_action_is_read_with_its_steps_and_audit_in_one_go(tmp_path) -> None:
    from common.errors import NotFound
    from shipyard_api.db import make_engine, session_factory, upgrade
    from shipyard_api.workflow.definitions import PlannedStep
    from shipyard_api.workflow.models import ActionRow
    from shipyard_api.workflow.store import ActionStore

    url = f"sqlite:///{tmp_path}/s.db"
    upgrade(url)
    store = ActionStore(session_factory(make_engine(url)))
    row = ActionRow(id="a1", name="redeploy_server", parameters={}, state="pending",
                    marker="m", user="admin", created_at=1.0, updated_at=1.0, next_run_at=1.0,
                    revision_id=1, site_wide=False, target_nodes=["n1"], validations=[])
    store.create(row, [PlannedStep("first", "first", None, ()),
                       PlannedStep("second", "second", "n1", ("first",))], lambda active: None)
    action, steps, audit = store.with_details("a1")
    assert action.id == "a1" and [s.step_id for s in steps] == ["first", "second"]
    assert [a.command for a in audit] == ["create"]
    with pytest.raises(NotFound):
        store.with_details("nope")
