"""GET /actions/{id}?wait=S&since=V: answered as soon as the action changes, at the timeout
with it unchanged, at once for an old version or over the waiter cap; bad parameters are
400; the CLI's watch follows an action by long-polling it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from common.longpoll import ChangeWaiters, notify_on_commit
from shipyard_api import config
from shipyard_api.app import create_app
from shipyard_api.cli.watch import views
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

P = "/api/v1.0/actions"


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, dict[str, str],
                                                   ChangeWaiters]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"},
                                            "api": {"long_poll_max_wait": 30.0,
                                                    "long_poll_recheck": 30.0,
                                                    "long_poll_waiters": 1}})
    conf = config.load(str(tmp_path / "shipyard.conf"))
    waiters = ChangeWaiters(max_waiters=1, recheck=30.0)
    notify_on_commit(harness.engine_db, waiters)
    app = create_app(conf, harness.deps(waiters=waiters))
    return falcon.testing.TestClient(app), tokens, waiters


def created(harness: Harness, client: falcon.testing.TestClient,
            tokens: dict[str, str]) -> tuple[str, str]:
    harness.commit(tag="site-action-success")
    action_id = harness.create("redeploy_server", {"target_nodes": "node01"})["id"]
    resp = client.simulate_get(f"{P}/{action_id}", headers={"X-Auth-Token": tokens["reader"]})
    return action_id, resp.headers["X-Action-Version"]


def test_a_long_poll_returns_as_soon_as_the_action_changes(api: Any, harness: Harness) -> None:
    client, tokens, waiters = api
    action_id, version = created(harness, client, tokens)
    answers: list[Any] = []
    poll = threading.Thread(target=lambda: answers.append(client.simulate_get(
        f"{P}/{action_id}", params={"wait": "30", "since": version},
        headers={"X-Auth-Token": tokens["reader"]})))
    poll.start()
    for _ in range(2000):
        if waiters.waiting:
            break
        threading.Event().wait(0.005)
    assert waiters.waiting == 1 and not answers
    harness.engine().run_once()  # the engine runs the action's first steps
    poll.join(20)
    resp = answers[0]
    assert resp.status_code == 200 and resp.headers["X-Long-Poll"] == "changed"
    assert resp.json["state"] != "pending"
    assert resp.headers["X-Action-Version"] != version


def test_a_long_poll_ends_at_its_wait_with_the_action_unchanged(api: Any,
                                                               harness: Harness) -> None:
    client, tokens, _ = api
    action_id, version = created(harness, client, tokens)
    resp = client.simulate_get(f"{P}/{action_id}", params={"wait": "0.05", "since": version},
                               headers={"X-Auth-Token": tokens["reader"]})
    assert resp.status_code == 200 and resp.headers["X-Long-Poll"] == "timeout"
    assert resp.headers["X-Action-Version"] == version and resp.json["state"] == "pending"


def test_an_old_version_is_answered_at_once(api: Any, harness: Harness) -> None:
    client, tokens, _ = api
    action_id, version = created(harness, client, tokens)
    resp = client.simulate_get(f"{P}/{action_id}", params={"wait": "30", "since": "1"},
                               headers={"X-Auth-Token": tokens["reader"]})
    assert resp.status_code == 200 and "X-Long-Poll" not in resp.headers
    assert resp.headers["X-Action-Version"] == version


def test_over_the_waiter_cap_a_long_poll_is_answered_at_once(api: Any,
                                                            harness: Harness) -> None:
    client, tokens, waiters = api
    action_id, version = created(harness, client, tokens)
    with waiters.slot():  # the one place is taken
        resp = client.simulate_get(f"{P}/{action_id}", params={"wait": "30", "since": version},
                                   headers={"X-Auth-Token": tokens["reader"]})
    assert resp.headers["X-Long-Poll"] == "busy" and resp.json["state"] == "pending"


def test_bad_wait_and_since_are_400_listing_both(api: Any, harness: Harness) -> None:
    client, tokens, _ = api
    action_id, _ = created(harness, client, tokens)
    resp = client.simulate_get(f"{P}/{action_id}", params={"wait": "soon", "since": "x;1"},
                               headers={"X-Auth-Token": tokens["reader"]})
    assert resp.status_code == 400 and resp.json["details"]["errorCount"] == 2


class LongPolling:
    """A Shipyard whose every look after the first waits for the next scripted view."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = script
        self.looks: list[tuple[str | None, float]] = []

    def long_poll(self, path: str, since: str | None, wait: float
                  ) -> tuple[Any, str | None, str | None]:
        self.looks.append((since, wait))
        view = self.script.pop(0)
        return view, str(len(self.script)), "changed" if since else None


def test_the_cli_watch_long_polls_and_never_sleeps() -> None:
    script = [{"id": "A1", "state": s, "steps": []} for s in ("pending", "running", "complete")]
    sy = LongPolling(list(script))
    slept: list[float] = []
    seen = list(views(sy, "A1", 2.0, None, sleep=slept.append))  # type: ignore[arg-type]
    assert [v["state"] for v in seen] == ["pending", "running", "complete"]
    assert slept == []
    assert sy.looks[0][0] is None and [s for s, _ in sy.looks[1:]] == ["2", "1"]
    assert all(wait > 1 for _, wait in sy.looks[1:])

