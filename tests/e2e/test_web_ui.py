"""The web view in a real browser (headless Chromium, Selenium) on the simulated site: each
page renders what an operator needs first (the site's nodes per rack at a glance, a plan's
verdict and blockers by reason, an action's live progress per node), the action page updates
without a reload while a redeploy runs and shows the lock that holds its drain, every page
passes the accessibility checks (labels, contrast, keyboard, landmarks, alternative text),
and no page asks anything of anyone but Shipyard."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promenade_api.kube.client import KubeClient, load_api_client
from shipyard_api.ui.site_page import GLANCE
from tests.e2e.conftest import create, web_node
from tests.fixtures.services import Berth
from tests.support import a11y
from tests.support.axe import axe_script, violations
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
STATES = """return [...document.querySelectorAll('table.steps tr[data-step]')].map(
    r => [r.dataset.step, r.dataset.state]);"""


@pytest.fixture(scope="module")
def browser(berth: Berth) -> Iterator[Any]:
    driver = start_browser()
    try:
        sign_in(driver, berth.shipyard, berth.tokens["reader"])
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def axe() -> Path | None:
    """axe-core from npm (cached), besides our own checks; required under CI=true."""
    script = axe_script()
    if script is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("axe-core could not be fetched with npm (npm pack axe-core)")
        warnings.warn("axe-core unavailable (no npm?): only our own checks run", stacklevel=1)
    return script


def accessible(driver: Any, page: str, axe: Path | None) -> None:
    found = a11y.problems(driver) + (violations(driver, axe) if axe else [])
    assert found == [], f"{page}: " + "\n".join(found)


def texts(driver: Any, css: str) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def test_the_site_shows_each_rack_s_nodes_with_their_state_in_words(
        berth: Berth, browser: Any, axe: Path | None, successful_revision: int) -> None:
    requested_urls(browser)
    browser.get(f"{berth.shipyard}/ui/login")
    accessible(browser, "sign-in", axe)
    browser.get(f"{berth.shipyard}/ui/site")
    racks = {r.get_attribute("data-rack"): sorted(
        c.get_attribute("data-node") for c in r.find_elements(By.CSS_SELECTOR, "li.card"))
        for r in browser.find_elements(By.CSS_SELECTOR, "section.rack")}
    assert racks == {"rack01": ["node01", "node02", "node03"],
                     "rack02": ["node04", "node05", "node06"]}, browser.page_source[:4000]
    cards = browser.find_elements(By.CSS_SELECTOR, "li.card")
    for c in cards:  # the state in words, on its colour
        word = c.find_element(By.CSS_SELECTOR, "h3 .badge")
        assert word.text == c.get_attribute("data-state") != ""
        assert "tone-" in str(word.get_attribute("class"))
    assert {c.get_attribute("data-state") for c in cards} <= set(GLANCE)
    assert texts(browser, "h2") == ["Rack rack01", "Rack rack02"]
    accessible(browser, "site", axe)
    browser.get(f"{berth.shipyard}/ui/site?rack=rack02&ready=yes")
    shown = [c.get_attribute("data-node") for c in browser.find_elements(
        By.CSS_SELECTOR, "li.card")]
    assert shown == ["node04", "node05", "node06"]
    browser.get(f"{berth.shipyard}/ui/actions")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Actions"
    accessible(browser, "actions", axe)
    assert foreign(requested_urls(browser), berth.shipyard) == []


def test_a_plan_leads_with_its_verdict_then_blockers_by_reason_then_node_timelines(
        berth: Berth, browser: Any, axe: Path | None, successful_revision: int) -> None:
    requested_urls(browser)
    plan = berth.api("POST", "/plans", json={"name": "redeploy_server", "parameters": {
        "target_nodes": ["node05", "node06"], "preserve-local-storage": "true"}})
    assert plan.status_code == 201, plan.text
    browser.get(f"{berth.shipyard}/ui/plans")
    row = browser.find_element(By.CSS_SELECTOR, f"tr[data-plan='{plan.json()['id']}']")
    assert "blocked" in row.text
    accessible(browser, "plans", axe)
    row.find_element(By.TAG_NAME, "a").click()
    verdict = browser.find_element(By.CSS_SELECTOR, "main .verdict")
    assert verdict.text.startswith("BLOCKED") and "would be refused" in verdict.text
    assert verdict.location["y"] < browser.find_element(By.CSS_SELECTOR, "h2").location["y"]
    headings = texts(browser, "h2")
    assert headings[0].startswith("Blockers (") and headings[1] == "Nodes (2)", headings
    wipe = browser.find_element(By.CSS_SELECTOR, "section.reason-group[data-reason='wipe']")
    assert wipe.find_element(By.TAG_NAME, "h3").text.startswith("Disk wipe (")
    assert "disks of node06" in texts(browser, "section[data-reason='wipe'] .obj")
    rows = {r.get_attribute("data-node"): r
            for r in browser.find_elements(By.CSS_SELECTOR, "table.plan-nodes tr[data-node]")}
    assert sorted(rows) == ["node05", "node06"]
    for r in rows.values():
        assert r.find_element(By.CSS_SELECTOR, "[data-path]").text == "graceful"
        phases = [c.get_attribute("data-phase") for c in r.find_elements(
            By.CSS_SELECTOR, "ol.timeline .chip")]
        assert phases.index("decommission") < phases.index("drain") \
            < phases.index("destroy_nodes") < phases.index("deploy_nodes"), phases
    blocked = rows["node06"].find_element(By.CSS_SELECTOR, "[data-mark='blocked']")
    assert blocked.get_attribute("data-phase") == "destroy_nodes"
    assert not browser.find_elements(By.CSS_SELECTOR, "table table")  # no nested dumps
    accessible(browser, "plan", axe)
    site = berth.api("POST", "/plans", json={"name": "deploy_site", "parameters": {
        "allow-intermediate-commits": "true"}})
    assert site.status_code == 201, site.text
    browser.get(f"{berth.shipyard}/ui/plans/{site.json()['id']}")
    assert browser.find_element(By.CSS_SELECTOR, "main .verdict").text.startswith("GO")
    drawn = browser.find_elements(By.CSS_SELECTOR, "svg.groups g.group")
    assert sorted(g.get_attribute("data-group") for g in drawn) == sorted(
        g["name"] for g in site.json()["groups"]) and drawn
    accessible(browser, "site plan", axe)
    assert foreign(requested_urls(browser), berth.shipyard) == []


def blocking_objects(driver: Any) -> list[str]:
    return list(driver.execute_script(
        "return [...document.querySelectorAll('section.reason-group .obj')]"
        ".map(e => e.closest('section').dataset.reason + ': ' + e.textContent);"))


def test_a_running_redeploy_updates_in_place_and_names_the_lock_that_holds_it(
        berth: Berth, browser: Any, axe: Path | None, successful_revision: int) -> None:
    kube = KubeClient(load_api_client(str(berth.site.kubeconfig)), request_timeout=10,
                      poll_interval=0.1)
    node_name = web_node(berth)  # a node with pods the lock holds back (pods move around)
    kube.patch_node(node_name, annotations={LOCK: "e2e-holder"})
    requested_urls(browser)
    action = create(berth, "redeploy_server", target_nodes=[node_name])
    seen: list[dict[str, str]] = []
    try:
        browser.get(f"{berth.shipyard}/ui/actions/{action['id']}")
        browser.execute_script("window.berthSamePage = true;")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            seen.append(dict(browser.execute_script(STATES)))
            if f"lock: lock {LOCK} (held by e2e-holder)" in blocking_objects(browser):
                break
            time.sleep(0.3)
        assert f"lock: lock {LOCK} (held by e2e-holder)" in blocking_objects(browser), \
            browser.page_source[:6000]
        assert seen[-1][f"decommission.{node_name}"] == "running"
        node = browser.find_element(By.CSS_SELECTOR,
                                    f"table.nodes-progress tr[data-node='{node_name}']")
        assert "decommission" in node.text and "pods left" in node.text
        accessible(browser, "action", axe)
    finally:
        kube.patch_node(node_name, annotations={LOCK: None})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        seen.append(dict(browser.execute_script(STATES)))
        state = browser.execute_script(
            "return document.querySelector('p.summary').dataset.actionState;")
        if state in ("complete", "failed", "stopped"):
            break
        time.sleep(0.3)
    final = berth.wait_action(action["id"])
    assert final["state"] == "complete", final.get("message")
    assert browser.execute_script("return window.berthSamePage === true;"), "page reloaded"
    assert browser.execute_script(
        "return performance.getEntriesByType('navigation').length;") == 1
    done = [sum(1 for s in states.values() if s == "success") for states in seen]
    assert done == sorted(done) and len(set(done)) >= 4, done  # advancing, seen step by step
    assert all(s == "success" for s in seen[-1].values())
    assert "The action has ended." in browser.find_element(By.ID, "live-status").text
    logs = browser.find_elements(By.CSS_SELECTOR, "table.steps details[id^='log-'] li")
    assert logs, "no step logs shown"
    urls = requested_urls(browser)
    assert any(f"/ui/actions/{action['id']}/live" in u for u in urls)
    assert sum(1 for u in urls if u.endswith(f"/ui/actions/{action['id']}")) == 1
    assert foreign(urls, berth.shipyard) == []


BAD_PAGE = """<!DOCTYPE html><html><head><title>t</title><style>
.faint{color:#aaa;background:#fff} a:focus{outline:none}</style></head><body>
<h1>One</h1><h3>Skipped a level</h3><p class="faint">hard to read</p>
<input name="unlabelled"><img src="x.png"><a href="#x">link without focus style</a>
<div style="display:none"><a href="#y">hidden</a></div></body></html>"""


def test_the_accessibility_checks_catch_what_they_look_for(tmp_path: Any,
                                                           axe: Path | None) -> None:
    page = tmp_path / "bad.html"
    page.write_text(BAD_PAGE)
    driver = start_browser()
    try:
        driver.get(page.as_uri())
        found = "\n".join(a11y.problems(driver))
        flagged = "\n".join(violations(driver, axe)) if axe else ""
    finally:
        driver.quit()
    if axe:
        for rule in ("image-alt", "label", "color-contrast", "html-has-lang", "heading-order"):
            assert f"{rule} (" in flagged, flagged
    for expected in ("label: no label for input[name=unlabelled]", "contrast: 2.32:1",
                     "landmarks: 0 main elements", "landmarks: no nav",
                     "landmarks: html has no lang", 'H3 "Skipped a level" skips a level',
                     "alt: img without alt", 'keyboard: no visible focus style on a "link'):
        assert expected in found, found
    assert "hidden" not in found
