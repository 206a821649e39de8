"""redeploy_server reads Promenade's 409 by its reason: the same decommission still running
under this Idempotency-Key (RequestInProgress, e.g. left by a Promenade process that died)
is asked again later; a refusal (not Ready, cancelled, PDB, quorum) is final."""

from __future__ import annotations

import pytest

from common.errors import Conflict
from common.status import status_body
from tests.unit.shipyard.conftest import Harness


def promenade_409(reason: str, retry: bool, retry_after: int | None = None) -> Conflict:
    """The error Shipyard's Promenade client raises for a 409 status body."""
    extra = {"retry_after": retry_after} if retry_after is not None else None
    body = status_body(409, "Conflict", reason=reason, retry=retry, extra=extra)
    return Conflict(f"Promenade: {reason}", reason=reason, retry=retry,
                    details={"peer_status": body})


def test_decommission_still_in_progress_is_asked_again_and_the_redeploy_completes(
        harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    answers = [promenade_409("RequestInProgress", True, 3)] * 3

    def busy(node: str) -> None:
        if answers:
            raise answers.pop()

    harness.promenade.on_decommission = busy
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    assert view["state"] == "complete", view["message"]
    step = harness.step(action["id"], "decommission.node01")
    assert step["state"] == "success" and step["attempts"] == 4
    assert any("still decommissioning" in n["message"] for n in step["notes"])
    assert harness.promenade.effects.count(("decommission", "node01")) == 1
    assert harness.drydock.created("destroy_nodes", "node01") == 1


@pytest.mark.parametrize("reason", ["NodeNotReady", "Cancelled", "Conflict"])
def test_a_refusal_409_of_decommission_is_final(harness: Harness, reason: str) -> None:
    harness.commit(tag="site-action-success")

    def refuse(node: str) -> None:
        raise promenade_409(reason, False)

    harness.promenade.on_decommission = refuse
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    view = harness.drive(action["id"])
    step = harness.step(action["id"], "decommission.node01")
    assert view["state"] == "failed" and step["reason"] == reason
    assert step["attempts"] == 1
    assert harness.drydock.created("destroy_nodes", "node01") == 0
