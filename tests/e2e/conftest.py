"""Helpers of the end-to-end tests: the site's view of a node, faults, Drydock's abilities."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from drydock_api.tasks.actions import build_actions
from sitesim.site import Site
from tests.fixtures.services import Berth, run_berth, run_berth_site


def drydock_can(*actions: str) -> bool:
    """Whether this Drydock implements every one of `actions`."""
    implemented = build_actions()
    return all(a in implemented for a in actions)


@pytest.fixture
def faults(berth: Berth) -> Iterator[Any]:
    """Inject simulator faults; all are cleared afterwards."""
    url = f"{berth.site.urls['sitesim']}/faults"

    def inject(node: str, operation: str, effect: str = "hang") -> None:
        resp = requests.post(url, json={"node": node, "operation": operation, "effect": effect},
                             timeout=10)
        assert resp.status_code < 300, resp.text

    def clear() -> None:
        requests.delete(url, timeout=10)

    inject.clear = clear  # type: ignore[attr-defined]
    try:
        yield inject
    finally:
        clear()


# Package scope: the site and its control plane stop once the end-to-end tests are done.
@pytest.fixture(scope="package")
def berth_site() -> Iterator[Site]:
    yield from run_berth_site()


@pytest.fixture(scope="package")
def berth(berth_site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Berth]:
    yield from run_berth(berth_site, tmp_path_factory)


@pytest.fixture(scope="package")
def successful_revision(berth: Berth) -> int:
    """Tag the committed design as the last successful site action (as deploy_site would)."""
    resp = berth.api("POST", f"/revisions/{berth.revision}/tags/site-action-success",
                     json={"dag_id": "bootstrap"})
    assert resp.status_code == 201, resp.text
    return berth.revision


def create(berth: Berth, name: str, **params: Any) -> dict[str, Any]:
    resp = berth.api("POST", "/actions", json={"name": name, "parameters": params})
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


def steps_of(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in view["steps"]}


def web_node(berth: Berth, avoid: str = "") -> str:
    """A node running a pod of the demo web Deployment now (other tests move them around)."""
    assert berth.site.kube is not None
    pods = berth.site.kube.api.get(
        "/api/v1/namespaces/demo/pods?labelSelector=application%3Dweb") or {}
    nodes = sorted({p["spec"].get("nodeName") for p in pods.get("items", [])
                    if p.get("status", {}).get("phase") == "Running"
                    and not p["metadata"].get("deletionTimestamp")}  # not being evicted
                   - {None, avoid})
    assert nodes, "no running web pod"
    return str(nodes[0])
