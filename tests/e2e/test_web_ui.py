"""The web view in a real browser (headless Chromium, Selenium) on the simulated site: pages
render, a running redeploy_server shows its steps advancing with its drain's progress, and no
page asks anything of anyone but Shipyard."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from promenade_api.kube.client import KubeClient, load_api_client
from tests.e2e.conftest import create
from tests.fixtures.services import Berth
from tests.support.browser import (
    chromium_available,
    foreign,
    requested_urls,
    sign_in,
    start_browser,
)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not chromium_available(),
                                 reason="needs Debian's chromium and chromium-driver")]
By: Any = pytest.importorskip("selenium.webdriver.common.by").By
LOCK = "eviction-lock.berth.io/e2e-web"


@pytest.fixture(scope="module")
def browser(berth: Berth) -> Iterator[Any]:
    driver = start_browser()
    try:
        sign_in(driver, berth.shipyard, berth.tokens["reader"])
        yield driver
    finally:
        driver.quit()


def step_states(driver: Any) -> dict[str, str]:
    return {row.get_attribute("data-step"): row.get_attribute("data-state")
            for row in driver.find_elements(By.CSS_SELECTOR, "table.steps tr[data-step]")}


def action_state(driver: Any) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "p.summary")
               .get_attribute("data-action-state"))


def test_the_pages_render_and_ask_only_shipyard(berth: Berth, browser: Any,
                                               successful_revision: int) -> None:
    requested_urls(browser)
    browser.get(f"{berth.shipyard}/ui/site")
    nodes = [r.get_attribute("data-node")
             for r in browser.find_elements(By.CSS_SELECTOR, "table.nodes tr[data-node]")]
    assert sorted(nodes) == ["node01", "node02", "node03", "node04", "node05", "node06"], \
        browser.page_source[:4000]
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert headings == ["Rack rack01", "Rack rack02"]
    browser.get(f"{berth.shipyard}/ui/site?rack=rack02&ready=yes")
    shown = [r.get_attribute("data-node")
             for r in browser.find_elements(By.CSS_SELECTOR, "table.nodes tr[data-node]")]
    assert shown == ["node04", "node05", "node06"]
    browser.get(f"{berth.shipyard}/ui/actions")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Actions"
    plan = berth.api("POST", "/plans", json={"name": "redeploy_server", "parameters": {
        "target_nodes": ["node06"], "preserve-local-storage": "true"}})
    assert plan.status_code == 201, plan.text
    browser.get(f"{berth.shipyard}/ui/plans")
    row = browser.find_element(By.CSS_SELECTOR, f"tr[data-plan='{plan.json()['id']}']")
    assert "blocked" in row.text
    row.find_element(By.TAG_NAME, "a").click()
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert headings[0].startswith("Blockers (") and headings[1].startswith("Warnings (")
    blockers = browser.find_elements(By.CSS_SELECTOR, "ul.blockers li")
    assert any("node06" in b.text for b in blockers), [b.text for b in blockers]
    site = berth.api("POST", "/plans", json={"name": "deploy_site", "parameters": {
        "allow-intermediate-commits": "true"}})
    assert site.status_code == 201, site.text
    browser.get(f"{berth.shipyard}/ui/plans/{site.json()['id']}")
    drawn = browser.find_elements(By.CSS_SELECTOR, "svg.groups g.group")
    assert sorted(g.get_attribute("data-group") for g in drawn) == sorted(
        g["name"] for g in site.json()["groups"]) and drawn
    urls = requested_urls(browser)
    assert any(u.endswith("/ui/site?rack=rack02&ready=yes") for u in urls)
    assert foreign(urls, berth.shipyard) == []


def test_a_running_redeploy_shows_its_steps_advancing(berth: Berth, browser: Any,
                                                      successful_revision: int) -> None:
    kube = KubeClient(load_api_client(str(berth.site.kubeconfig)), request_timeout=10,
                      poll_interval=0.1)
    kube.patch_node("node05", annotations={LOCK: "e2e-holder"})
    requested_urls(browser)
    action = create(berth, "redeploy_server", target_nodes=["node05"])
    seen: list[dict[str, str]] = []
    lock_shown = False
    try:
        browser.get(f"{berth.shipyard}/ui/actions/{action['id']}")
        deadline = time.monotonic() + 120
        while not lock_shown and time.monotonic() < deadline:
            seen.append(step_states(browser))
            lock_shown = f"eviction lock {LOCK} held by e2e-holder" in browser.page_source
            time.sleep(0.5)
            browser.refresh()
        assert lock_shown, "the drain's lock never showed on the action page"
        assert seen[-1]["decommission.node05"] == "running"
        assert browser.find_elements(By.CSS_SELECTOR, "meta[http-equiv='refresh']")
    finally:
        kube.patch_node("node05", annotations={LOCK: None})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        browser.refresh()
        seen.append(step_states(browser))
        if action_state(browser) in ("complete", "failed", "stopped"):
            break
        time.sleep(0.5)
    final = berth.wait_action(action["id"])
    assert final["state"] == "complete", final.get("message")
    done = [sum(1 for s in states.values() if s == "success") for states in seen]
    assert done == sorted(done) and len(set(done)) >= 4, done  # advancing, seen step by step
    assert all(s == "success" for s in seen[-1].values())
    assert not browser.find_elements(By.CSS_SELECTOR, "meta[http-equiv='refresh']")
    assert foreign(requested_urls(browser), berth.shipyard) == []
