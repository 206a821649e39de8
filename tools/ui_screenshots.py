"""Screenshots of the web view's pages (PNG, into docs/) from a running suite (`make run`).

    .venv/bin/python tools/ui_screenshots.py                # reads .berth/env
    .venv/bin/python tools/ui_screenshots.py --action 01J...  # that action's page

Needs Debian's chromium and chromium-driver (`make debs`) and selenium (the test extra).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selenium.webdriver.common.by import By  # noqa: E402

from tests.support.browser import sign_in, start_browser  # noqa: E402


def read_env(path: Path) -> dict[str, str]:
    out = dict(os.environ)
    if path.exists():
        for line in path.read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, value = line.split("=", 1)
                out.setdefault(key.strip(), value.strip().strip("'\""))
    return out


def shoot(driver: object, url: str, target: Path) -> None:
    driver.get(url)  # type: ignore[attr-defined]
    height = driver.execute_script(  # type: ignore[attr-defined]
        "return document.documentElement.scrollHeight")
    driver.set_window_size(1400, max(600, min(int(height) + 40, 1600)))  # type: ignore
    time.sleep(0.3)
    driver.save_screenshot(str(target))  # type: ignore[attr-defined]
    print(f"{target}  ({url})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", type=Path, default=ROOT / ".berth" / "env")
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    ap.add_argument("--action", help="action id for the action page (default: the newest)")
    args = ap.parse_args()
    env = read_env(args.env)
    base, token = env["SHIPYARD_URL"].rstrip("/"), env["BERTH_TOKEN"]
    args.out.mkdir(parents=True, exist_ok=True)
    action = args.action
    if action is None:
        listed = requests.get(f"{base}/api/v1.0/actions", headers={"X-Auth-Token": token},
                              timeout=30).json()
        newest = sorted(listed, key=lambda a: str(a.get("datetime")), reverse=True)
        action = newest[0]["id"] if newest else None
    driver = start_browser()
    try:
        sign_in(driver, base, token)
        shoot(driver, f"{base}/ui/site", args.out / "ui-site.png")
        shoot(driver, f"{base}/ui/actions", args.out / "ui-actions.png")
        if action:
            shoot(driver, f"{base}/ui/actions/{action}", args.out / "ui-action.png")
        shoot(driver, f"{base}/ui/plans", args.out / "ui-plans.png")
        newest = driver.find_elements(By.CSS_SELECTOR, "table.plans tr[data-plan] a")
        if newest:
            shoot(driver, str(newest[0].get_attribute("href")), args.out / "ui-plan.png")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
