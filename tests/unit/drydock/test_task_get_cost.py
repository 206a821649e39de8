"""What one GET of a large task costs Drydock's database: a body is read and encoded again
only after its tree changed, and the subtasks' errors are one read, not one per subtask;
the bodies stay those of rendering the task afresh, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import falcon.testing
from sqlalchemy import event

from drydock_api.app import Deps, create_app
from drydock_api.tasks.service import TaskService
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS
from tests.unit.drydock.test_orchestrator import run_task

NODES = 20
# Statements counted with their BEGIN (reads of the body's key are prepared and not seen
# here: one per GET). Reached: the first GET of a form 6 (the task, its children, its
# messages), with subtaskerrors 14 (also one read of the tree's messages and one per level
# of the tree); every further GET of an unchanged task none. Before: 6 on every GET, and
# with subtaskerrors 2 more per subtask (about 320 for 20 nodes, 3,172 for 200).
MAX_FIRST, MAX_FIRST_ERRORS, MAX_AGAIN = 6, 14, 0


def fresh_body(svc: TaskService, site: Site, task_id: str, errors: bool) -> bytes:
    """The body as rendered before bodies were kept: each subtask's errors read alone."""
    store, progress = site.runtime.store, site.runtime.progress
    row = store.get(task_id)
    body: dict[str, Any] = dict(svc.render(row))
    if errors:
        found: dict[str, Any] = {}
        level = store.children([row.id])
        while level:
            for sub in level:
                ms = [m for m in progress.messages(sub, errors_only=True)
                      if sub.step is not None or not m.get("step")]
                if ms:
                    found[sub.id] = {"details": {"errorCount": len(ms), "messageList": ms}}
            level = store.children([s.id for s in level])
        body["subtask_errors"] = found
    return json.dumps(body, ensure_ascii=False).encode()


def test_a_large_task_costs_its_get_the_pinned_statements_and_bodies_stay_fresh(
        make_site: SiteFactory, tmp_path: Any) -> None:
    nodes = [f"n{i:03d}" for i in range(NODES)]
    site = make_site(nodes)
    for n in nodes[:3]:
        site.maas.fail_release[n] = "MAAS said no"  # error messages in three subtrees
    root = run_task(site)["task_id"]
    svc = site.runtime.service
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    assert app.berth_spec is not None
    app.berth_spec.authenticator = TOKENS
    client = falcon.testing.TestClient(app)
    engine = site.runtime.store.engine
    seen = [0]

    def count(*_: Any) -> None:
        seen[0] += 1

    def get(params: dict[str, Any]) -> tuple[bytes, int]:
        seen[0] = 0
        event.listen(engine, "before_cursor_execute", count)
        try:
            resp = client.simulate_get(f"/api/v1.0/tasks/{root}", params=params,
                                       headers=ADMIN)
        finally:
            event.remove(engine, "before_cursor_execute", count)
        assert resp.status_code == 200
        return resp.content, seen[0]

    for params, first_max in (({}, MAX_FIRST), ({"subtaskerrors": "true"}, MAX_FIRST_ERRORS),
                              ({"since": "0.0", "wait": "1"}, MAX_FIRST)):
        errors = "subtaskerrors" in params
        first, statements = get(params)
        assert statements <= first_max, f"{statements} statements for {params}"
        assert first == fresh_body(svc, site, root, errors)
        for _ in range(3):
            again, statements = get(params)
            assert statements <= MAX_AGAIN, f"{statements} statements again for {params}"
            assert again == first
    errors_body = json.loads(get({"subtaskerrors": "true"})[0])
    assert len(errors_body["subtask_errors"]) >= 3
    # a write to the tree: the next GET of each form shows it
    site.runtime.progress.add_messages(site.runtime.store.get(root),
                                       [{"message": "late failure", "error": True}])
    for params in ({}, {"subtaskerrors": "true"}):
        body, _ = get(params)
        assert body == fresh_body(svc, site, root, "subtaskerrors" in params)
        assert json.loads(body)["result"]["details"]["messageList"][-1]["message"] == \
            "late failure"
