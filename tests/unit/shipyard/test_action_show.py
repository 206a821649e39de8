"""GET /actions/{id} answers the current action: its encoded body is reused only while the
action's version is unchanged, and every write of its view moves the version."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import falcon.testing
import pytest

from common.context import RequestContext
from common.errors import Conflict, NotFound
from shipyard_api import config
from shipyard_api.actions.service import ActionService, shown_size
from shipyard_api.actions.shown import ShownAction
from shipyard_api.actions.views import action_view
from shipyard_api.app import create_app
from shipyard_api.catalog import definitions
from shipyard_api.workflow.states import ActionState, StepState
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

Api = tuple[falcon.testing.TestClient, dict[str, str]]
ADMIN = RequestContext(user="admin")


@pytest.fixture
def api(harness: Harness, tmp_path: Path) -> Api:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    app = create_app(config.load(str(tmp_path / "shipyard.conf")), harness.deps())
    return falcon.testing.TestClient(app), tokens


def _shown(h: Harness, action_id: str) -> tuple[int, dict[str, object]]:
    version, raw, packed = h.api.get_json(action_id)
    data: dict[str, object] = json.loads(raw)
    assert data == h.api.get(action_id) and gzip.decompress(packed) == raw
    return version, data


def test_every_write_of_the_view_changes_the_body(any_harness: Harness) -> None:
    harness = any_harness  # SQLite and PostgreSQL
    harness.commit(tag="site-action-success")
    aid = harness.create("redeploy_server", {"target_nodes": "node01"})["id"]
    store, seen = harness.store, [_shown(harness, aid)]

    def changed() -> dict[str, object]:
        version, data = _shown(harness, aid)
        assert version not in [v for v, _ in seen] and data != seen[-1][1]
        seen.append((version, data))
        return data

    assert store.claim("w1", harness.clock(), 30.0) == aid
    assert store.transition(aid, ActionState.RUNNING, harness.clock())
    assert changed()["state"] == "running"  # an action state change
    first = store.steps(aid)[0].step_id
    store.save_step(aid, "w1", first, StepState.RUNNING, started_at=harness.clock())
    assert changed()["step_counts"].get("running") == 1  # type: ignore[attr-defined]
    assert store.report_progress(aid, "w1", first, {"done": 1})  # a step's live progress
    changed()
    with pytest.raises(Conflict):  # refused, but audited: an audit entry
        harness.api.control(aid, "unpause", ADMIN)
    assert "refused" in str(changed()["command_audit"])
    harness.api.control(aid, "pause", ADMIN)  # a control: state and audit
    assert changed()["state"] == "paused"


def test_unchanged_action_reuses_the_encoded_body(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    aid = harness.create("redeploy_server", {"target_nodes": "node01"})["id"]
    assert harness.api.get_json(aid)[1] is harness.api.get_json(aid)[1]
    with pytest.raises(NotFound):
        harness.api.get_json("no-such-action")


def test_a_client_holding_the_current_version_gets_304(api: Api, harness: Harness) -> None:
    client, tokens = api
    harness.commit(tag="site-action-success")
    aid = harness.create("redeploy_server", {"target_nodes": "node01"})["id"]
    path, reader = f"/api/v1.0/actions/{aid}", {"X-Auth-Token": tokens["reader"]}
    first = client.simulate_get(path, headers={**reader, "Accept-Encoding": "gzip"})
    etag = first.headers["etag"]
    assert first.status_code == 200 and etag.startswith('W/"')
    assert json.loads(gzip.decompress(first.content))["state"] == "pending"
    again = client.simulate_get(path, headers={**reader, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    other = client.simulate_get(path, headers={**reader, "If-None-Match": 'W/"stale"'})
    assert other.status_code == 200 and other.json["state"] == "pending"
    harness.api.control(aid, "pause", ADMIN)
    moved = client.simulate_get(path, headers={**reader, "If-None-Match": etag})
    assert moved.status_code == 200 and moved.json["state"] == "paused"
    assert moved.headers["etag"] != etag
    nobody = client.simulate_get(path, headers={"If-None-Match": etag})
    assert nobody.status_code == 401  # authorization comes first


def test_a_new_version_encodes_only_the_steps_that_changed(any_harness: Harness) -> None:
    """The body is the very bytes of the whole view encoded at once, while each version
    parses and encodes again only the changed steps (SQLite and PostgreSQL)."""
    harness = any_harness
    harness.commit(tag="site-action-success")
    aid = harness.create("redeploy_server", {"target_nodes": "node01"})["id"]
    store, shown = harness.store, ShownAction()

    def encode() -> int:
        before = shown.encoded
        body = shown.encode(*store.shown_rows(aid))
        whole = json.dumps(action_view(*store.with_details(aid)), ensure_ascii=False)
        assert body == whole
        return shown.encoded - before

    steps = len(store.steps(aid))
    assert steps > 5 and encode() == steps  # the first time: every step
    assert encode() == 0  # nothing changed
    assert store.claim("w1", harness.clock(), 30.0) == aid
    assert store.transition(aid, ActionState.RUNNING, harness.clock())
    assert encode() == 0  # the action's own fields: no step
    first, second = (s.step_id for s in store.steps(aid)[:2])
    store.save_step(aid, "w1", first, StepState.RUNNING, started_at=harness.clock())
    assert encode() == 1
    progress = {"task": {"status": "running", "note": "nœud prêt ✓", "nodes": ["node01"]}}
    assert store.report_progress(aid, "w1", first, progress)
    assert encode() == 1
    store.save_step(aid, "w1", first, StepState.SUCCESS, ended_at=harness.clock(),
                    output={"écrit": 1})
    store.save_step(aid, "w1", second, StepState.RUNNING, started_at=harness.clock())
    assert encode() == 2


def test_the_kept_bodies_are_bounded_in_bytes(harness: Harness) -> None:
    """Bodies and kept parts past `shown_bytes` go, the least recently read first; a body
    larger than the whole bound is answered and not kept."""
    harness.commit(tag="site-action-success")
    ids = [harness.create("redeploy_server", {"target_nodes": node})["id"]
           for node in ("node01", "node02", "node03")]
    one = shown_size((0, *harness.api.get_json(ids[0])[1:], shown_part(harness, ids[0])))

    def service(limit: float) -> ActionService:
        return ActionService(harness.store, definitions(), harness.docs, clock=harness.clock,
                             services=harness.services, shown_bytes=int(limit))

    two = service(one * 2.5)
    bodies = {aid: two.get_json(aid)[1] for aid in ids}  # the first one read goes
    assert two.get_json(ids[2])[1] is bodies[ids[2]]
    assert two.get_json(ids[1])[1] is bodies[ids[1]]
    again = two.get_json(ids[0])[1]
    assert again is not bodies[ids[0]] and again == bodies[ids[0]]
    none = service(one / 2)
    first = none.get_json(ids[0])[1]
    assert first == bodies[ids[0]] and none.get_json(ids[0])[1] is not first


def shown_part(harness: Harness, action_id: str) -> ShownAction:
    shown = ShownAction()
    shown.encode(*harness.store.shown_rows(action_id))
    return shown
