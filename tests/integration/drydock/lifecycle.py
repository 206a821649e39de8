"""A simulated site with Promenade and Drydock for the lifecycle, retirement and reboot tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from sitesim.site import Site
from tests.fixtures.site import start_test_site, stop_site
from tests.integration.drydock.conftest import TIMINGS, Env, drydock_sections
from tests.support.procs import free_port
from tests.support.services import ServiceProcess, write_tokens

SITE = Path(__file__).with_name("lifecycle_site.yaml")


class LifecycleEnv(Env):
    """Env plus node endpoints of Drydock."""

    def api(self, method: str, path: str, token: str | None = None,
            **kwargs: Any) -> requests.Response:
        headers = {"X-Auth-Token": token or self.admin}
        return requests.request(method, f"{self.url}/api/v1.0{path}", headers=headers,
                                timeout=30, **kwargs)

    def node(self, name: str) -> Any:
        return self.api("GET", f"/nodes/{name}", params={"design_ref": self.href}).json()

    def run(self, action: str, nodes: list[str], timeout: float = 60, **options: Any) -> Any:
        resp = self.post_task(nodes, action, **options)
        assert resp.status_code == 201, resp.text
        return self.wait(resp.json()["task_id"], timeout)

    def until(self, check: Any, timeout: float = 30, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def lc_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LifecycleEnv]:
    site: Site = start_test_site(SITE, overrides={"timings": dict(TIMINGS)})
    work = tmp_path_factory.mktemp("drydock-lc")
    tokens = write_tokens(work / "tokens.yaml")
    (work / "design.yaml").write_text(site.design_yaml())
    prom_port = free_port()
    peers = {"promenade_url": f"http://127.0.0.1:{prom_port}", "retries": 1, "backoff": 0.05}
    auth = {"strategy": "token", "token_file": work / "tokens.yaml",
            "service_token": tokens["admin"]}
    promenade = drydock = None
    try:
        promenade = ServiceProcess("promenade", work, {
            "auth": auth, "logging": {"json": "false", "level": "INFO"},
            "kubernetes": {"kubeconfig": site.promenade_kubeconfig,
                           "lease_namespace": site.lease_namespace, "poll_interval": 0.05}},
            port=prom_port)
        sections = drydock_sections(site, work, auth=auth, peers=peers,
                                    steps={"enlist_timeout": 20,
                                           "commission_timeout": 20, "deploy_timeout": 20},
                                    reboot={"interval": 0.05, "lease_seconds": 2,
                                            "soft_timeout": 0.5})
        drydock = ServiceProcess("drydock", work, sections)
        yield LifecycleEnv(site, drydock.url, tokens["admin"], f"file://{work}/design.yaml",
                           work)
    finally:
        for proc in (drydock, promenade):
            if proc is not None:
                proc.stop()
        stop_site(site)
