"""The /ui routes: sign-in keeps the token in a cookie, pages need a token and a policy,
the API never authenticates by cookie, and nothing on a page points outside Shipyard."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from shipyard_api import config
from shipyard_api.app import create_app
from shipyard_api.resources.ui import cookie_auth
from tests.support.services import write_conf, write_tokens
from tests.unit.shipyard.conftest import Harness

HOSTILE = "node<b>07</b>"


@pytest.fixture
def ui(harness: Harness, tmp_path: Path) -> Iterator[tuple[falcon.testing.TestClient,
                                                           dict[str, str]]]:
    tokens = write_tokens(tmp_path / "tokens.yaml")
    write_conf(tmp_path / "shipyard.conf", {"auth": {"token_file": tmp_path / "tokens.yaml"}})
    app = create_app(config.load(str(tmp_path / "shipyard.conf")), harness.deps())
    harness.commit(tag="site-action-success")
    yield falcon.testing.TestClient(cookie_auth(app)), tokens


def signed_in(client: falcon.testing.TestClient, token: str) -> str:
    result = client.simulate_post("/ui/login", body=f"token={token}&next=/ui/actions",
                                  headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert result.status_code == 303
    assert result.headers["location"].endswith("/ui/actions")
    cookie = result.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
    return f"berth_token={token}"


def test_pages_without_a_token_answer_401_with_the_sign_in_form(ui: Any) -> None:
    client, _ = ui
    page = client.simulate_get("/ui/site")
    assert page.status_code == 401
    assert page.headers["content-type"].startswith("text/html")
    assert '<form method="post" action="/ui/login"' in page.text


def test_a_signed_in_reader_sees_the_site_and_actions(ui: Any, harness: Harness) -> None:
    client, tokens = ui
    harness.drydock.node_list.append({"hostname": HOSTILE, "rack": "rack09",
                                      "power_state": "off", "maas_status": "Ready"})
    cookie = signed_in(client, tokens["reader"])
    site = client.simulate_get("/ui/site", headers={"Cookie": cookie})
    assert site.status_code == 200, site.text
    assert "node01" in site.text and "Rack rack09" in site.text
    assert "node&lt;b&gt;07&lt;/b&gt;" in site.text and "<b>07" not in site.text
    filtered = client.simulate_get("/ui/site", params={"rack": "rack09"},
                                   headers={"Cookie": cookie})
    assert "node01" not in filtered.text and "node&lt;b&gt;07" in filtered.text
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    listing = client.simulate_get("/ui/actions", headers={"Cookie": cookie})
    assert action["id"] in listing.text and 'http-equiv="refresh"' in listing.text
    one = client.simulate_get(f"/ui/actions/{action['id']}", headers={"Cookie": cookie})
    assert one.status_code == 200 and 'data-step="decommission.node01"' in one.text


def test_a_role_less_caller_gets_403_and_an_unknown_action_404(ui: Any) -> None:
    client, tokens = ui
    denied = client.simulate_get("/ui/actions", headers={"X-Auth-Token": tokens["nobody"]})
    assert denied.status_code == 403 and "shipyard:list_actions" in denied.text
    missing = client.simulate_get("/ui/actions/NOPE",
                                  headers={"Cookie": f"berth_token={tokens['admin']}"})
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")


def test_a_rejected_token_says_so(ui: Any) -> None:
    client, _ = ui
    page = client.simulate_get("/ui/site", headers={"Cookie": "berth_token=wrong"})
    assert page.status_code == 401 and "not accepted" in page.text


def test_the_api_never_authenticates_with_the_cookie(ui: Any) -> None:
    client, tokens = ui
    api = client.simulate_get("/api/v1.0/actions",
                              headers={"Cookie": f"berth_token={tokens['admin']}"})
    assert api.status_code == 401


def test_sign_in_from_another_site_and_empty_tokens_are_refused(ui: Any) -> None:
    client, tokens = ui
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    other = client.simulate_post("/ui/login", body=f"token={tokens['admin']}",
                                 headers={**form, "Origin": "https://evil.example"})
    assert other.status_code == 403 and "set-cookie" not in other.headers
    empty = client.simulate_post("/ui/login", body="token=", headers=form)
    assert empty.status_code == 400


def test_sign_out_clears_the_cookie(ui: Any) -> None:
    client, _ = ui
    out = client.simulate_post("/ui/logout")
    assert out.status_code == 303 and "berth_token=\"\"; expires" in out.headers["set-cookie"]


def test_pages_forbid_anything_but_shipyard(ui: Any) -> None:
    client, tokens = ui
    page = client.simulate_get("/ui/site", headers={"X-Auth-Token": tokens["admin"]})
    assert "default-src 'none'" in page.headers["content-security-policy"]
    urls = re.findall(r'(?:href|src|action)="([^"]*)"', page.text)
    assert urls and all(u.startswith(("/ui", "#")) for u in urls)


def test_a_token_that_cannot_be_a_cookie_is_refused(ui: Any) -> None:
    client, _ = ui
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    odd = client.simulate_post("/ui/login", body="token=%E4%B8%AD&next=/ui/%C3%A9",
                               headers=form)
    assert odd.status_code == 400 and "set-cookie" not in odd.headers


def test_the_cookie_is_secure_behind_a_tls_proxy(ui: Any) -> None:
    client, tokens = ui
    result = client.simulate_post("/ui/login", body=f"token={tokens['admin']}", headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-Proto": "https"})
    assert result.status_code == 303 and "Secure" in result.headers["set-cookie"]
