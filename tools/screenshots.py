"""Regenerate the web view's screenshots (docs/ui-*.png) from the current UI.

    .venv/bin/python tools/screenshots.py                  # the site of .berth/env
    .venv/bin/python tools/screenshots.py --url http://127.0.0.1:9000 --token T
    .venv/bin/python tools/screenshots.py --start-site     # a test site on free ports

Against a running site it shoots the site, the actions, the newest action, the plans and
the newest plan. With --start-site it starts a simulated site and the three services on free
ports (the end-to-end fixtures), makes a blocked redeploy plan, a deploy_site plan and a
redeploy held by an eviction lock, shoots them while the lock holds, then stops everything.
Needs Debian's chromium and chromium-driver and selenium (the test extra).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selenium.webdriver.common.by import By  # noqa: E402

from tests.support.browser import sign_in, start_browser  # noqa: E402

LOCK = "eviction-lock.berth.io/backup"


def read_env(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, value = line.split("=", 1)
                out[key.strip()] = value.strip().strip("'\"")
    return out


def shoot(driver: Any, url: str, target: Path, wait_for: str | None = None) -> None:
    driver.set_window_size(1400, 900)
    driver.get(url)
    if wait_for:
        deadline = time.monotonic() + 30
        while not driver.find_elements(By.CSS_SELECTOR, wait_for) and \
                time.monotonic() < deadline:
            time.sleep(0.2)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, max(600, min(int(height) + 40, 2200)))
    time.sleep(0.3)
    driver.save_screenshot(str(target))
    print(f"{target}  ({url})")


def newest(base: str, token: str, path: str, key: str) -> str | None:
    listed = requests.get(f"{base}/api/v1.0{path}", headers={"X-Auth-Token": token},
                          timeout=30).json()
    ordered = sorted(listed, key=lambda a: str(a.get(key)), reverse=True)
    return str(ordered[0]["id"]) if ordered else None


def shoot_site(base: str, token: str, out: Path, action: str | None = None,
               plan: str | None = None) -> None:
    action = action or newest(base, token, "/actions", "datetime")
    plan = plan or newest(base, token, "/plans", "created")
    driver = start_browser()
    try:
        sign_in(driver, base, token)
        shoot(driver, f"{base}/ui/site", out / "ui-site.png")
        shoot(driver, f"{base}/ui/actions", out / "ui-actions.png")
        if action:
            shoot(driver, f"{base}/ui/actions/{action}", out / "ui-action.png")
        shoot(driver, f"{base}/ui/plans", out / "ui-plans.png")
        if plan:
            shoot(driver, f"{base}/ui/plans/{plan}", out / "ui-plan.png")
    finally:
        driver.quit()


class _Temp:
    """What run_berth asks of pytest's tmp_path_factory."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="berth-shots-"))

    def mktemp(self, name: str, numbered: bool = True) -> Path:
        path = self.root / name
        path.mkdir()
        return path


@contextmanager
def test_site() -> Iterator[Any]:
    """A simulated site and the services on free ports, stopped on the way out."""
    from tests.fixtures.services import run_berth, run_berth_site

    site_run = run_berth_site()
    site = next(site_run)
    try:
        berth_run = run_berth(site, _Temp())  # type: ignore[arg-type]
        berth = next(berth_run)
        try:
            yield berth
        finally:
            next(berth_run, None)
    finally:
        next(site_run, None)


@contextmanager
def budget_at_zero(kubeconfig: str) -> Iterator[None]:
    """The demo web Deployment's PodDisruptionBudget allows no disruption meanwhile."""
    from kubernetes import client

    from promenade_api.kube.client import load_api_client
    from sitesim.kube.workloads import DEMO_NAMESPACE

    policy = client.PolicyV1Api(load_api_client(kubeconfig))

    def set_min(n: int) -> None:
        policy.patch_namespaced_pod_disruption_budget(
            "web", DEMO_NAMESPACE, {"spec": {"minAvailable": n}})

    set_min(3)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = policy.read_namespaced_pod_disruption_budget("web", DEMO_NAMESPACE).status
            if status and status.observed_generation and status.disruptions_allowed == 0:
                break
            time.sleep(0.2)
        yield
    finally:
        set_min(2)


def staged(berth: Any, out: Path) -> None:
    """A blocked plan, a site plan and a redeploy held by an eviction lock, shot live."""
    from promenade_api.kube.client import KubeClient, load_api_client

    token = berth.tokens["admin"]
    berth.api("POST", f"/revisions/{berth.revision}/tags/site-action-success",
              json={"dag_id": "bootstrap"})
    kube = KubeClient(load_api_client(str(berth.site.kubeconfig)), request_timeout=10,
                      poll_interval=0.1)
    kube.patch_node("node05", annotations={LOCK: "nightly-backup"})
    try:
        berth.api("POST", "/plans", json={"name": "deploy_site", "parameters": {
            "allow-intermediate-commits": "true"}})
        with budget_at_zero(str(berth.site.kubeconfig)):
            plan = berth.api("POST", "/plans", json={"name": "redeploy_server", "parameters": {
                "target_nodes": ["node05", "node06"], "preserve-local-storage": "true"}}).json()
        action = berth.api("POST", "/actions", json={"name": "redeploy_server", "parameters": {
            "target_nodes": ["node05"]}}).json()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the drain reports the lock
            view = berth.api("GET", f"/actions/{action['id']}").json()
            if LOCK in str(view.get("steps")):
                break
            time.sleep(0.5)
        shoot_site(berth.shipyard, token, out, action["id"], plan["id"])
    finally:
        kube.patch_node("node05", annotations={LOCK: None})


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--env", type=Path, default=ROOT / ".berth" / "env",
                    help="file with SHIPYARD_URL and BERTH_TOKEN (default .berth/env)")
    ap.add_argument("--url", help="Shipyard's base URL (default: SHIPYARD_URL of --env)")
    ap.add_argument("--token", help="a token (default: BERTH_TOKEN of --env)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    ap.add_argument("--action", help="action id for the action page (default: the newest)")
    ap.add_argument("--plan", help="plan id for the plan page (default: the newest)")
    ap.add_argument("--start-site", action="store_true",
                    help="start a simulated site and the services on free ports")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.start_site:
        with test_site() as berth:
            staged(berth, args.out)
        return
    env = {**read_env(args.env), **os.environ}
    base = (args.url or env.get("SHIPYARD_URL") or "").rstrip("/")
    token = args.token or env.get("BERTH_TOKEN") or ""
    if not base or not token:
        ap.error(f"no Shipyard URL and token: give --url/--token, or --env with SHIPYARD_URL "
                 f"and BERTH_TOKEN ({args.env} has none), or --start-site")
    shoot_site(base, token, args.out, args.action, args.plan)


if __name__ == "__main__":
    main()
