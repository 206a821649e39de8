"""POST /tasks/preview: what a task would do to each node, and that asking touches nothing."""

from __future__ import annotations

from tests.unit.drydock.test_api import ADMIN, api, post, task_request  # noqa: F401

PREVIEW = "/api/v1.0/tasks/preview"


READS = ("power_state", "drives")  # what may be asked of a BMC: nothing else


def _touched(site) -> list[tuple[str, str]]:
    return [k for k, n in site.oob.calls.items() if n and k[0] not in READS]


def test_destroy_preview_shows_steps_bmc_maas_and_each_disk(api):  # noqa: F811
    client, site = api
    site.oob.drives[site.address("n1")] = ["sda", "sdb"]
    resp = post(client, PREVIEW, task_request(site, options={"preserve_local_storage": True}))
    assert resp.status_code == 200, resp.json
    [node] = resp.json["nodes"]
    assert node["node"] == "n1" and node["steps"][:3] == ["plan_wipe", "power_off",
                                                           "wipe_disks"]
    assert node["bmc"]["reachable"] is True and node["bmc"]["power_state"] == "on"
    assert node["maas_status"] == "Deployed" and node["retired"] is False
    assert [(d["disk"], d["result"]) for d in node["wipe"]["disks"]] == [("sda", "wiped"),
                                                                         ("sdb", "kept")]
    assert resp.json["blockers"] == []
    assert _touched(site) == []
    assert [k for k, n in site.maas.calls.items() if n and k[0] not in ("find", "list")] == []
    assert client.simulate_get("/api/v1.0/tasks", headers=ADMIN).json == []


def test_preview_blockers_dead_bmc_and_storage_that_cannot_be_kept(api):  # noqa: F811
    client, site = api
    site.oob.unreachable.add(site.address("n1"))
    resp = post(client, PREVIEW, task_request(site, options={"preserve_local_storage": True}))
    [node] = resp.json["nodes"]
    assert node["bmc"]["reachable"] is False and node["bmc"]["error"]
    assert any("did not report a power state" in b for b in node["blockers"])
    assert any("could not say which drives" in b or "alone" in b for b in node["blockers"])


def test_preview_refuses_what_post_tasks_refuses_with_every_problem(api):  # noqa: F811
    client, site = api
    resp = post(client, PREVIEW, task_request(site, node_filter=None,
                                              options={"erase": "paranoid"}, extra=1))
    assert resp.status_code == 400
    messages = " ".join(m["message"] for m in resp.json["details"]["messageList"])
    assert "unknown field 'extra'" in messages and "selects every node" in messages


def test_prepare_preview_leaves_retired_nodes_out(api):  # noqa: F811
    client, site = api
    site.runtime.nodes.update("n2", retired=True, retired_reason="bad disk")
    resp = post(client, PREVIEW, task_request(site, action="prepare_nodes", node_filter=None))
    assert resp.status_code == 200, resp.json
    assert [n["node"] for n in resp.json["nodes"]] == ["n1", "n3"]
    assert resp.json["skipped"] == [{"node": "n2", "reason": "retired: left out by "
                                     "prepare_nodes"}]
