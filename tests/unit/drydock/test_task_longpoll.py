"""GET /tasks/{id}?wait=S&since=V: answered as soon as the task changes, at the timeout with
it unchanged, at once over the waiter cap or for an old version; a created task wakes this
process's worker."""

from __future__ import annotations

import threading
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from drydock_api.tasks.worker import Worker, WorkerSettings
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS, post, task_request

T = "/api/v1.0/tasks"


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2", "n3"])
    conf = make_conf(tmp_path, api={"long_poll_max_wait": 30.0, "long_poll_recheck": 30.0})
    app = create_app(conf, Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def created(client: falcon.testing.TestClient, site: Site) -> tuple[str, str]:
    task_id = post(client, T, task_request(site)).json["task_id"]
    version = client.simulate_get(f"{T}/{task_id}", headers=ADMIN).headers["X-Task-Version"]
    return task_id, version


def test_a_long_poll_returns_as_soon_as_the_task_changes(api):
    client, site = api
    task_id, version = created(client, site)
    answers: list[Any] = []
    poll = threading.Thread(target=lambda: answers.append(client.simulate_get(
        f"{T}/{task_id}", params={"wait": "30", "since": version}, headers=ADMIN)))
    poll.start()
    for _ in range(2000):
        if site.runtime.waiters.waiting:
            break
        threading.Event().wait(0.005)
    assert site.runtime.waiters.waiting == 1 and not answers
    client.simulate_post(f"{T}/{task_id}/terminate", headers=ADMIN)
    poll.join(20)
    resp = answers[0]
    assert resp.status_code == 200 and resp.headers["X-Long-Poll"] == "changed"
    assert resp.json["status"] == "terminated"
    assert resp.headers["X-Task-Version"] != version


def test_a_long_poll_ends_at_its_wait_with_the_task_unchanged(api):
    client, site = api
    task_id, version = created(client, site)
    resp = client.simulate_get(f"{T}/{task_id}", params={"wait": "0.05", "since": version},
                               headers=ADMIN)
    assert resp.status_code == 200 and resp.headers["X-Long-Poll"] == "timeout"
    assert resp.headers["X-Task-Version"] == version and resp.json["status"] == "queued"


def test_an_old_version_is_answered_at_once(api):
    client, site = api
    task_id, version = created(client, site)
    client.simulate_post(f"{T}/{task_id}/terminate", headers=ADMIN)
    resp = client.simulate_get(f"{T}/{task_id}", params={"wait": "30", "since": version},
                               headers=ADMIN)
    assert resp.status_code == 200 and "X-Long-Poll" not in resp.headers
    assert resp.json["status"] == "terminated"


def test_over_the_waiter_cap_a_long_poll_is_answered_at_once(api):
    client, site = api
    site.runtime.waiters.max_waiters = 0
    task_id, version = created(client, site)
    resp = client.simulate_get(f"{T}/{task_id}", params={"wait": "30", "since": version},
                               headers=ADMIN)
    assert resp.status_code == 200 and resp.headers["X-Long-Poll"] == "busy"
    assert resp.json["status"] == "queued"


def test_bad_long_poll_parameters_get_400_naming_each(api):
    client, site = api
    task_id, _ = created(client, site)
    resp = client.simulate_get(f"{T}/{task_id}", params={"wait": "-3", "since": "latest"},
                               headers=ADMIN)
    assert resp.status_code == 400
    assert resp.json["details"]["errorCount"] == 2
    assert client.simulate_get(f"{T}/no-such-task", params={"wait": "1", "since": "1.0"},
                               headers=ADMIN).status_code == 404


def test_a_created_task_wakes_the_worker_of_this_process(api):
    client, site = api
    rt = site.runtime
    worker = Worker(rt.store, rt.orchestrator, WorkerSettings(poll_interval=3600), "w")
    rt.workers.append(worker)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    task_id = post(client, T, task_request(site)).json["task_id"]
    for _ in range(4000):  # the worker sleeps an hour between looks unless woken
        if rt.store.get(task_id).status == "complete":
            break
        threading.Event().wait(0.005)
    assert rt.store.get(task_id).status == "complete"
    worker.stop()
    thread.join(10)
    assert not thread.is_alive()


def test_a_get_reads_the_tree_key_once_and_its_version_is_the_body_s(api, monkeypatch):
    """The version header and the body come from one read of the tree's key: a request costs
    one freshness query, and a write between two reads cannot give a body a later or an
    earlier version than its own."""
    client, site = api
    task_id, _ = created(client, site)
    reads: list[tuple[int, int | None]] = []
    tree_key = site.runtime.progress.tree_key

    def counted(tid: str) -> tuple[int, int | None]:
        reads.append(tree_key(tid))
        return reads[-1]

    monkeypatch.setattr(site.runtime.progress, "tree_key", counted)
    resp = client.simulate_get(f"{T}/{task_id}", params={"layers": "-1"}, headers=ADMIN)
    assert resp.status_code == 200 and len(reads) == 1
    changes, last_message = reads[0]
    assert resp.headers["X-Task-Version"] == f"{changes}.{last_message or 0}"
