"""The live part of an action page: /ui/actions/{id}/live answers the section that changes
with the action's version, holds a request whose version is current (as the API's
long-poll), and the page's script and style are served from Shipyard itself."""

from __future__ import annotations

import time
from pathlib import Path

import falcon.testing

from common.longpoll import ChangeWaiters
from shipyard_api import config
from shipyard_api.app import create_app
from shipyard_api.resources.ui import cookie_auth
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness


def client(harness: Harness, tmp_path: Path) -> tuple[falcon.testing.TestClient, str]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"},
                                            "api": {"long_poll_max_wait": 5}})
    waiters = ChangeWaiters(max_waiters=4, recheck=0.05)
    app = create_app(config.load(str(tmp_path / "shipyard.conf")), harness.deps(waiters=waiters))
    harness.commit(tag="site-action-success")
    return falcon.testing.TestClient(cookie_auth(app)), f"berth_token={tokens['reader']}"


def test_the_live_part_follows_the_action_s_version(harness: Harness, tmp_path: Path) -> None:
    ui, cookie = client(harness, tmp_path)
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    page = ui.simulate_get(f"/ui/actions/{action['id']}", headers={"Cookie": cookie})
    assert page.status_code == 200
    assert f'data-live="/ui/actions/{action["id"]}/live"' in page.text
    assert '<script src="/ui/static/live.js" defer></script>' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    part = ui.simulate_get(f"/ui/actions/{action['id']}/live", headers={"Cookie": cookie})
    version = part.headers["x-action-version"]
    assert part.status_code == 200 and f'data-version="{version}"' in page.text
    assert part.text.startswith('<p class="summary"') and "<html" not in part.text
    assert 'data-step="decommission.node01" data-state="pending"' in part.text
    started = time.monotonic()
    held = ui.simulate_get(f"/ui/actions/{action['id']}/live", headers={"Cookie": cookie},
                           params={"since": version, "wait": "0.3"})
    assert time.monotonic() - started >= 0.3 and held.headers["x-action-version"] == version
    harness.drive(action["id"])
    moved = ui.simulate_get(f"/ui/actions/{action['id']}/live", headers={"Cookie": cookie},
                            params={"since": version, "wait": "5"})
    assert moved.headers["x-action-version"] != version
    assert 'data-action-state="complete" data-ended' in moved.text
    ended = ui.simulate_get(f"/ui/actions/{action['id']}", headers={"Cookie": cookie})
    assert "live.js" not in ended.text and "The action has ended." in ended.text


def test_the_live_part_needs_a_token_and_valid_parameters(harness: Harness,
                                                          tmp_path: Path) -> None:
    ui, cookie = client(harness, tmp_path)
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    anonymous = ui.simulate_get(f"/ui/actions/{action['id']}/live")
    assert anonymous.status_code == 401
    bad = ui.simulate_get(f"/ui/actions/{action['id']}/live", headers={"Cookie": cookie},
                          params={"since": "x<y", "wait": "soon"})
    assert bad.status_code == 400 and "since must be" in bad.text and "wait must be" in bad.text
    missing = ui.simulate_get("/ui/actions/NOPE/live", headers={"Cookie": cookie})
    assert missing.status_code == 404


def test_the_style_and_script_are_served_to_anyone_and_nothing_else_is(
        harness: Harness, tmp_path: Path) -> None:
    ui, _ = client(harness, tmp_path)
    css = ui.simulate_get("/ui/static/berth.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    js = ui.simulate_get("/ui/static/live.js")
    assert js.status_code == 200 and "text/javascript" in js.headers["content-type"]
    assert "fetch(" in js.text and "location.reload" not in js.text
    assert ui.simulate_get("/ui/static/../app.py").status_code == 404
    assert ui.simulate_get("/ui/static/other.js").status_code == 404
