"""Headless Chromium (Debian's chromium + chromium-driver) driven by Selenium, with the
DevTools performance log on so a test can list every request a page made."""

from __future__ import annotations

import json
import shutil
from typing import Any
from urllib.parse import urlsplit

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def chromium_available() -> bool:
    return bool(shutil.which("chromium") and shutil.which("chromedriver"))


def start_browser(width: int = 1400, height: int = 1000) -> webdriver.Chrome:
    opts = Options()
    opts.binary_location = str(shutil.which("chromium"))
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--no-first-run", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--disable-default-apps",
                "--disable-extensions", f"--window-size={width},{height}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service(str(shutil.which("chromedriver"))), options=opts)


def sign_in(driver: webdriver.Chrome, base: str, token: str, page: str = "/ui/site") -> None:
    driver.get(base + page)
    field = driver.find_element(By.NAME, "token")
    field.send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "form[action='/ui/login'] button").click()
    try:
        WebDriverWait(driver, 30).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "header .who"))  # signed in
    except TimeoutException as exc:
        raise AssertionError(f"not signed in: {driver.current_url}\n"
                             f"{driver.page_source[:3000]}") from exc


def requested_urls(driver: webdriver.Chrome) -> list[str]:
    """Every URL the pages asked for since the last call (DevTools Network events)."""
    urls = []
    for entry in driver.get_log("performance"):
        message: dict[str, Any] = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(str(message["params"]["request"]["url"]))
    return urls


def foreign(urls: list[str], base: str) -> list[str]:
    """URLs that are not on the Shipyard at `base`."""
    home = urlsplit(base).netloc
    return [u for u in urls if urlsplit(u).netloc != home]
