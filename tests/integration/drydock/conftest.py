"""Drydock against a simulated site of its own (real Redfish emulator, real IPMI over UDP)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from sitesim.site import Site
from tests.fixtures.site import FAST_TIMINGS, start_test_site, stop_site
from tests.support.services import ServiceProcess, write_tokens

HERE = Path(__file__).parent
SITE = HERE / "site.yaml"
TIMINGS = {**FAST_TIMINGS, "release": 0.4, "erase": 0.4}


def drydock_sections(site: Site, work: Path, **over: dict[str, Any]) -> dict[str, Any]:
    sections: dict[str, dict[str, Any]] = {
        "auth": {"strategy": "token", "token_file": work / "tokens.yaml"},
        "database": {"connection": f"sqlite:///{work}/drydock.db"},
        "logging": {"json": "false", "level": "INFO"},
        "maas": {"url": site.urls["maas"], "api_key": site.spec.maas_api_key,
                 "timeout": 5, "retries": 1, "backoff": 0.01},
        # 5 s per BMC request: an IPMI BMC of a loaded machine took over 1 s to answer
        "oob": {"poll_interval": 0.02, "graceful_timeout": 2.0, "power_timeout": 10,
                "request_timeout": 5.0, "retries": 0},
        "steps": {"maas_poll_interval": 0.02, "step_retry_delay": 0.01,
                  "release_timeout": 15, "step_retries": 1, "outage_window": 0},
        "worker": {"threads": 1, "lease_seconds": 2.0, "poll_interval": 0.05},
        "site_design": {"source": "tasks"},  # no Shipyard here
    }
    for group, values in over.items():
        sections.setdefault(group, {}).update(values)
    return sections


@dataclass
class Env:
    site: Site
    url: str
    admin: str
    href: str
    work: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.admin}

    def sim(self, path: str, **params: Any) -> Any:
        return requests.get(f"{self.site.urls['sitesim']}{path}", params=params, timeout=10).json()

    def releases(self, node: str) -> int:
        return int(self.sim("/calls", system="maas", op="release", node=node)["count"])

    def fault(self, node: str, operation: str, effect: str) -> None:
        resp = requests.post(f"{self.site.urls['sitesim']}/faults", json={
            "node": node, "operation": operation, "effect": effect}, timeout=10)
        assert resp.status_code < 300, resp.text

    def clear_faults(self) -> None:
        requests.delete(f"{self.site.urls['sitesim']}/faults", timeout=10)

    def post_task(self, nodes: list[str] | None, action: str = "destroy_nodes",
                  **options: Any) -> requests.Response:
        node_filter = None if nodes is None else {
            "filter_set_type": "union", "filter_set": [{"node_names": nodes}]}
        return requests.post(f"{self.url}/api/v1.0/tasks", headers=self.headers, timeout=30,
                             json={"action": action, "design_ref": self.href,
                                   "node_filter": node_filter, "options": options})

    def task(self, task_id: str, **params: Any) -> Any:
        return requests.get(f"{self.url}/api/v1.0/tasks/{task_id}", headers=self.headers,
                            params=params, timeout=30).json()

    def wait(self, task_id: str, timeout: float = 180) -> Any:
        """Until the task is complete or terminated; the timeout only guards against hangs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            task = self.task(task_id)
            if task["status"] in ("complete", "terminated"):
                return task
            time.sleep(0.05)
        raise TimeoutError(f"task {task_id} did not finish: {task}")


@pytest.fixture(scope="module")
def dd_site() -> Iterator[Site]:
    """The site's servers, MAAS and BMCs; no cluster (Drydock never talks to Kubernetes)."""
    site = start_test_site(SITE, overrides={"timings": dict(TIMINGS), "kubernetes": False})
    try:
        yield site
    finally:
        stop_site(site)


@pytest.fixture(scope="module")
def dd_env(dd_site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    work = tmp_path_factory.mktemp("drydock")
    tokens = write_tokens(work / "tokens.yaml")
    (work / "design.yaml").write_text(dd_site.design_yaml())
    api = ServiceProcess("drydock", work, drydock_sections(dd_site, work))
    try:
        yield Env(dd_site, api.url, tokens["admin"], f"file://{work}/design.yaml", work)
    finally:
        api.stop()


from tests.integration.drydock.lifecycle import lc_env  # noqa: E402,F401
