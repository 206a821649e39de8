"""A task tree (?layers=-1) lists each level's messages as the per-task query does."""

from __future__ import annotations

import gzip
import json
from typing import Any

import falcon.testing
import pytest

from common.context import RequestContext
from common.errors import NotFound
from drydock_api.app import Deps, create_app
from drydock_api.db.states import TaskResult, TaskStatus
from tests.unit.drydock.conftest import SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS


def test_tree_bodies_equal_each_task_rendered_alone(make_site: SiteFactory) -> None:
    site = make_site(["n1", "n2", "n3"])
    site.maas.fail_release["n2"] = "MAAS said no"  # messages with errors too
    svc = site.runtime.service
    body, _ = svc.create({"action": "destroy_nodes", "design_ref": site.href,
                          "node_filter": None, "options": {"all_nodes": True}},
                          RequestContext(user="admin"), None)
    worker = site.runtime.new_worker("w1")
    assert worker.poll_once() == 1
    worker.join(30)
    root = body["task_id"]
    for start in [root, *svc.get(root)["subtask_id_list"][:1]]:
        tree = svc.get(start, layers=-1)
        ids = [k for k in tree if k != "init_task_id"]
        assert len(ids) > 1 if start == root else len(ids) >= 1
        for task_id in ids:
            alone = svc.render(site.runtime.store.get(task_id))
            assert tree[task_id] == alone
        assert any(tree[k]["result"]["details"]["messageList"] for k in ids)


def test_encoded_tree_follows_the_task_and_is_reused_while_unchanged(
        make_site: SiteFactory) -> None:
    site = make_site(["n1", "n2"])
    svc = site.runtime.service
    body, _ = svc.create({"action": "destroy_nodes", "design_ref": site.href,
                          "node_filter": None, "options": {"all_nodes": True}},
                          RequestContext(user="admin"), None)
    root = body["task_id"]
    _, queued, packed = svc.get_json(root, layers=-1)
    assert json.loads(queued) == svc.get(root, layers=-1)
    assert packed is not None and gzip.decompress(packed) == queued
    assert json.loads(queued)[root]["status"] == "queued"
    assert svc.get_json(root, layers=-1)[1] is queued
    worker = site.runtime.new_worker("w1")
    assert worker.poll_once() == 1
    worker.join(30)
    done = json.loads(svc.get_json(root, layers=-1)[1])
    assert done == svc.get(root, layers=-1)
    assert done[root]["status"] == "complete" and len(done) > 3
    site.runtime.progress.add_messages(site.runtime.store.get(root),
                                       [{"message": "late note", "error": False}])
    again = json.loads(svc.get_json(root, layers=-1)[1])
    assert again[root]["result"]["details"]["messageList"][-1]["message"] == "late note"
    assert json.loads(svc.get_json(root)[1]) == svc.get(root)


def test_tree_is_gzipped_only_for_clients_that_accept_it(make_site: SiteFactory,
                                                          tmp_path: Any) -> None:
    site = make_site(["n1"])
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    assert app.berth_spec is not None
    app.berth_spec.authenticator = TOKENS
    client = falcon.testing.TestClient(app)
    body, _ = site.runtime.service.create({"action": "destroy_nodes", "design_ref": site.href,
                                           "node_filter": None, "options": {"all_nodes": True}},
                                          RequestContext(user="admin"), None)
    path = f"/api/v1.0/tasks/{body['task_id']}"
    plain = client.simulate_get(path, params={"layers": -1}, headers=ADMIN)
    packed = client.simulate_get(path, params={"layers": -1},
                                 headers={**ADMIN, "Accept-Encoding": "gzip"})
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(packed.content)) == plain.json
    single = client.simulate_get(path, headers={**ADMIN, "Accept-Encoding": "gzip"})
    assert "content-encoding" not in single.headers
    assert single.json["task_id"] == body["task_id"]


def test_every_write_to_a_tree_refreshes_its_encoded_body(make_site: SiteFactory) -> None:
    """Whatever writes a task of the tree (even within one clock tick), the next tree body
    shows it: the cache key counts writes, not times."""
    site = make_site(["n1", "n2"])
    svc, store, progress = site.runtime.service, site.runtime.store, site.runtime.progress
    store.clock = progress.clock = lambda: 1_000.0
    body, _ = svc.create({"action": "destroy_nodes", "design_ref": site.href,
                          "node_filter": None, "options": {"all_nodes": True}},
                          RequestContext(user="admin"), None)
    root_id = body["task_id"]

    def tree() -> dict[str, Any]:
        cached: dict[str, Any] = json.loads(svc.get_json(root_id, layers=-1)[1])
        assert cached == svc.get(root_id, layers=-1)
        return cached

    assert tree()[root_id]["status"] == "queued"
    store.transition(root_id, TaskStatus.RUNNING)
    assert tree()[root_id]["status"] == "running"
    nodes = progress.ensure_node_tasks(store.get(root_id), ["n1", "n2"])
    assert {nodes["n1"].id, nodes["n2"].id} <= set(tree())
    step = progress.start_step(nodes["n1"], "power_off")
    assert tree()[step.id]["status"] == "running"
    progress.finish(step, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE)
    assert tree()[step.id]["result"]["status"] == "success"
    progress.add_messages(nodes["n2"], [{"message": "BMC slow", "error": False}])
    assert tree()[nodes["n2"].id]["result"]["details"]["messageList"][-1]["message"] == \
        "BMC slow"
    store.request_terminate(root_id, "admin")
    assert tree()[root_id]["status"] == "terminating"
    with pytest.raises(NotFound):
        svc.get_json("no-such-task", layers=-1)
