"""deploy_site / update_site: intermediate-commit check, site-action tags; relabel; conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from common.context import RequestContext
from common.errors import BadRequest, Conflict
from tests.unit.shipyard.conftest import Harness


@pytest.mark.parametrize("name", ["deploy_site", "update_site"])
def test_successful_site_action_tags_the_revision_with_its_id(harness: Harness,
                                                               name: str) -> None:
    rev = harness.commit()
    action = harness.create(name)
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    assert (rev, "site-action-success", {"dag_id": action["id"]}) in harness.docs.tag_log
    actions = [t["action"] for t in harness.drydock.tasks.values()]
    assert actions == ["prepare_nodes", "deploy_nodes"]  # labels go to Promenade, not Drydock
    assert sorted(harness.promenade.labels) == ["node01", "node02", "node03"]  # every deployed


def test_failure_after_validation_tags_site_action_failure(harness: Harness) -> None:
    harness.promenade.unknown.add("node02")  # Kubernetes does not know it: relabel fails
    rev = harness.commit()
    action = harness.create("deploy_site")
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert (rev, "site-action-failure", {"dag_id": action["id"]}) in harness.docs.tag_log


def test_failure_before_validation_writes_no_site_action_tag(harness: Harness) -> None:
    harness.commit()
    harness.promenade.health = False
    action = harness.create("deploy_site")
    view = harness.drive(action["id"])
    assert view["state"] == "failed"
    assert [t for _, t, _ in harness.docs.tag_log if t.startswith("site-action")] == []


def test_intermediate_commits_are_refused_with_409(harness: Harness) -> None:
    harness.commit()
    harness.commit()
    with pytest.raises(Conflict) as err:
        harness.create("update_site")
    assert err.value.instance_reason == "IntermediateCommits"
    assert harness.api.list() == []


def test_intermediate_commit_check_counts_from_the_last_site_action(harness: Harness) -> None:
    harness.commit()
    harness.commit(tag="site-action-failure")
    harness.commit()  # one commit since the last site action: the one used
    action = harness.create("update_site")
    assert harness.drive(action["id"])["state"] == "complete"


def test_allow_intermediate_commits_overrides_and_is_recorded(harness: Harness) -> None:
    harness.commit()
    harness.commit()
    action = harness.create("update_site", {"allow-intermediate-commits": "true"})
    assert "skipped" in action["validations"][0]["message"]
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    notes = harness.step(action["id"], "intermediate_commit_check")["notes"]
    assert "skipped" in notes[-1]["message"]


def test_relabel_nodes_relabels_only_the_targets(harness: Harness) -> None:
    harness.commit()
    action = harness.create("relabel_nodes", {"target_nodes": ["node02"]})
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    assert harness.promenade.labels == {"node02": {"role": "compute"}}
    assert harness.drydock.tasks == {}  # Shipyard puts the labels on Promenade itself
    assert "role=compute" in harness.step(action["id"], "relabel_nodes")["notes"][-1]["message"]


def test_relabel_of_a_node_kubernetes_never_knows_fails_naming_it(harness: Harness) -> None:
    """Asked every relabel_nodes_interval (1 s) until relabel_nodes_timeout (60 s)."""
    harness.commit()
    harness.promenade.unknown.add("node03")
    action = harness.create("relabel_nodes", {"target_nodes": ["node02", "node03"]})
    view = harness.drive(action["id"], rounds=1000)
    assert view["state"] == "failed"
    step = harness.step(action["id"], "relabel_nodes")
    assert step["reason"] == "RelabelFailed" and "node03" in view["message"]
    assert harness.promenade.labels == {"node02": {"role": "compute"}}
    puts = [c.node for c in harness.promenade.calls if c.op == "put_labels"]
    assert puts.count("node02") == 1 and puts.count("node03") > 10


def test_relabel_waits_for_a_node_still_joining_kubernetes(harness: Harness) -> None:
    harness.commit()
    harness.promenade.unknown.add("node03")
    action = harness.create("relabel_nodes", {"target_nodes": ["node02", "node03"]})
    harness.run_until(lambda: "Waiting for node03 to join Kubernetes" in str(
        harness.step(action["id"], "relabel_nodes")["notes"]))
    harness.promenade.unknown.discard("node03")  # the kubelet registered the Node
    view = harness.drive(action["id"])
    assert view["state"] == "complete"
    assert set(harness.promenade.labels) == {"node02", "node03"}


def test_unknown_action_is_a_bad_request(harness: Harness) -> None:
    with pytest.raises(BadRequest) as err:
        harness.create("reboot_everything")
    assert "redeploy_server" in err.value.message


def test_node_action_conflicts_with_active_action_on_the_same_node(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    first = harness.create("redeploy_server", {"target_nodes": "node01,node02"})
    with pytest.raises(Conflict) as err:
        harness.create("redeploy_server", {"target_nodes": "node02"})
    assert first["id"] in err.value.message and "node02" in err.value.message
    with pytest.raises(Conflict):
        harness.create("relabel_nodes", {"target_nodes": "node01"})
    with pytest.raises(Conflict):
        harness.create("update_site", {"allow-intermediate-commits": True})
    harness.create("redeploy_server", {"target_nodes": "node03"})


def test_site_action_conflicts_with_any_node_action_until_it_ends(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    site = harness.create("update_site")
    with pytest.raises(Conflict):
        harness.create("redeploy_server", {"target_nodes": "node03"})
    harness.drive(site["id"])
    harness.create("redeploy_server", {"target_nodes": "node03"})


def test_site_relabel_follows_the_nodes_the_baremetal_step_deployed(harness: Harness) -> None:
    from shipyard_api.actions.site import relabel_nodes
    from shipyard_api.workflow.definitions import StepContext

    def ctx(outputs: dict[str, Any]) -> StepContext:
        return StepContext(
            action_id="A", action_name="deploy_site", parameters={}, marker="m", user=None,
            revision_id=1, step_id="relabel_nodes", name="relabel_nodes", node=None, attempt=1,
            memo={}, outputs={"resolve_design": {"design_ref": "ref", "config": {}},
                              **outputs}, services=harness.services, now=0.0)

    harness.commit()
    assert "nothing to relabel" in relabel_nodes(ctx({"baremetal": {"deployed": []}})).message
    assert harness.promenade.labels == {}
    relabel_nodes(ctx({"baremetal": {"deployed": ["node02", "node03"]}}))
    assert sorted(harness.promenade.labels) == ["node02", "node03"]


def test_stopping_deploy_site_terminates_the_group_task_in_flight(harness: Harness) -> None:
    harness.drydock.polls_to_finish = 10_000
    harness.commit()
    action = harness.create("deploy_site")
    harness.run_until(lambda: harness.drydock.created("prepare_nodes"))
    harness.api.control(action["id"], "stop", RequestContext(user="admin"))
    view = harness.drive(action["id"])
    assert view["state"] == "stopped"
    prepare = next(t for t in harness.drydock.tasks.values() if t["action"] == "prepare_nodes")
    assert harness.drydock.terminated == [prepare["task_id"]]
