"""A redeploy's end waits on no Drydock call for a slot its release step already gave back."""

from __future__ import annotations

from datetime import datetime

from common.context import RequestContext
from tests.unit.shipyard.conftest import Harness


def test_action_ends_without_asking_drydock_again_for_a_released_slot(
        harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    harness.drydock.budget = 1
    fake = harness.drydock
    release = fake.release_budget_slot

    def slow_when_already_released(holder: str, *, ctx: RequestContext) -> None:
        if holder not in fake.slots:
            harness.clock.sleep(5.0)  # a Drydock slow to answer a DELETE with nothing to do
        release(holder, ctx=ctx)

    fake.release_budget_slot = slow_when_already_released  # type: ignore[method-assign]
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    assert fake.slots == {}  # given back, once the node was in service
    released = harness.step(action["id"], "release_budget_slot.node01")
    step_end = datetime.fromisoformat(str(released["end"])).timestamp()
    # the engine found the action complete within a second (of its clock) of the release
    # step's end: its finish did not wait on Drydock (5 s before)
    assert harness.clock.now - step_end <= 1.0, harness.clock.now - step_end
