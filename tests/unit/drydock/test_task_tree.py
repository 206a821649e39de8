"""A task tree (?layers=-1) lists each level's messages as the per-task query does."""

from __future__ import annotations

from common.context import RequestContext
from tests.unit.drydock.conftest import SiteFactory


def test_tree_bodies_equal_each_task_rendered_alone(make_site: SiteFactory) -> None:
    site = make_site(["n1", "n2", "n3"])
    site.maas.fail_release["n2"] = "MAAS said no"  # messages with errors too
    svc = site.runtime.service
    body, _ = svc.create({"action": "destroy_nodes", "design_ref": site.href,
                          "node_filter": None, "options": {}}, RequestContext(user="admin"), None)
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
