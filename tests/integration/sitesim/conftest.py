"""Helpers of the simulated-site integration tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from requests_oauthlib import OAuth1

from sitesim.site import Site
from tests.fixtures.site import DEMO, start_test_site, stop_site


@pytest.fixture(scope="package")
def sitesim_site(request: pytest.FixtureRequest) -> Iterator[Site]:
    """A site of these tests' own: other suites' teardowns never touch it."""
    site = start_test_site(getattr(request, "param", DEMO))
    try:
        yield site
    finally:
        stop_site(site)


def wait_for(predicate: Callable[[], Any], timeout: float = 90.0, interval: float = 0.02) -> Any:
    """Poll until `predicate()` is truthy; fail the test (never on speed alone) after timeout,
    which is long enough for the control plane to see a node NotReady (lease, then the
    node-monitor grace period) or Ready again on a loaded machine."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(interval)


def node(site: Site, name: str) -> dict[str, Any]:
    reply = requests.get(f"{site.urls['sitesim']}/nodes/{name}", timeout=10)
    reply.raise_for_status()
    result: dict[str, Any] = reply.json()
    return result


def calls(site: Site, **query: str) -> int:
    reply = requests.get(f"{site.urls['sitesim']}/calls", params=query, timeout=10)
    reply.raise_for_status()
    return int(reply.json()["count"])


def maas_auth(api_key: str) -> OAuth1:
    consumer, token, secret = api_key.split(":")
    return OAuth1(consumer, "", token, secret, signature_method="PLAINTEXT")


@pytest.fixture
def clean_faults(sitesim_site: Site):
    yield
    requests.delete(f"{sitesim_site.urls['sitesim']}/faults", timeout=10)
