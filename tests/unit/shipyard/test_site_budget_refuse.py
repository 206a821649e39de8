"""deploy_site / update_site with budget=refuse: a failure domain of the strategy's nodes
that other holders have filled refuses the action at POST (409 naming the domain and its
holders), nothing created, no slot taken; with room, or with wait, the action is created."""

from __future__ import annotations

import pytest

from common.errors import BerthError, ValidationFailed
from tests.unit.shipyard.conftest import Harness

OTHER = "shipyard:11111111-0000-4000-8000-000000000000:node09"


@pytest.mark.parametrize("name", ["deploy_site", "update_site"])
def test_a_full_domain_refuses_the_site_action_at_post(harness: Harness, name: str) -> None:
    harness.commit()
    harness.drydock.budget = 1
    harness.drydock.slots[OTHER] = "node09"
    with pytest.raises(BerthError) as caught:
        harness.create(name, {"budget": "refuse"})
    err = caught.value
    assert err.code == 409 and err.instance_reason == "BudgetExhausted"
    assert f"{name} refused (budget=refuse)" in err.message
    assert "rack:all" in err.message and OTHER in err.message
    assert err.details["blockers"][0]["holders"] == [{"holder": OTHER, "node": "node09"}]
    assert harness.api.list() == [] and harness.drydock.tasks == {}
    assert list(harness.drydock.slots) == [OTHER]  # nothing taken by the refused action


def test_with_room_or_with_wait_the_site_action_is_created(harness: Harness) -> None:
    harness.commit()
    harness.drydock.budget = 1
    refused = harness.create("deploy_site", {"budget": "refuse"})  # the domain has room
    assert refused["parameters"]["budget"] == "refuse"
    assert harness.drydock.slots == {}  # a dry run: the groups take their slots later
    harness.drive(refused["id"])
    harness.drydock.slots[OTHER] = "node09"
    waiting = harness.create("update_site", {"budget": "wait",
                                             "allow-intermediate-commits": True})
    assert waiting["parameters"]["budget"] == "wait"


def test_the_budget_choice_of_a_site_action_is_checked(harness: Harness) -> None:
    harness.commit()
    with pytest.raises(ValidationFailed) as caught:
        harness.create("deploy_site", {"budget": "maybe",
                                       "allow-intermediate-commits": "perhaps"})
    texts = [m["message"] for m in caught.value.messages]
    assert len(texts) == 2 and any("budget must be one of wait, refuse" in t for t in texts)
