"""redeploy_server's power policy end to end, through Shipyard on the simulated site: a host
that ignores ACPI (fault bmc.graceful_shutdown: ignore) is forced off after the action's grace
period with soft-then-hard, forced at once with hard, and left on with soft-only (the action
fails naming why, nothing forced); the out-of-service taint Berth puts on a fenced node is
gone once the node is Ready again after its redeploy."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.e2e.conftest import create, steps_of
from tests.e2e.test_redeploy_server import COMPUTE
from tests.fixtures.services import Berth, wait_for

pytestmark = pytest.mark.slow

NODE = "node04"  # a Redfish node of rack02 (compute)
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
MARK = "berth.io/out-of-service-taint"


@pytest.fixture
def ignores_acpi(berth: Berth) -> Iterator[str]:
    """NODE's host ignores a graceful shutdown until the test ends."""
    url = f"{berth.site.urls['sitesim']}/faults"
    resp = requests.post(url, json={"node": NODE, "operation": "bmc.graceful_shutdown",
                                    "effect": "ignore"}, timeout=10)
    assert resp.status_code < 300, resp.text
    try:
        yield NODE
    finally:
        requests.delete(url, timeout=10)


def redeploy(berth: Berth, node: str, **params: Any) -> dict[str, Any]:
    action = create(berth, "redeploy_server", target_nodes=node, **params)
    return berth.wait_action(action["id"], timeout=300)


def power_calls(berth: Berth, node: str) -> dict[str, int]:
    return {op: berth.calls(system="redfish", op=op, node=node)
            for op in ("graceful_shutdown", "power_off")}


def got(view: dict[str, Any], node: str) -> dict[str, Any]:
    """What the destroy step shows the node's power-off got."""
    shown = steps_of(view)[f"destroy_nodes.{node}"]["details"]["power"]
    assert [p["node"] for p in shown] == [node], shown
    return dict(shown[0])


def in_service(berth: Berth, node: str, view: dict[str, Any]) -> dict[str, Any]:
    assert view["state"] == "complete", view["message"]
    seen: dict[str, Any] = berth.sim(f"/nodes/{node}")
    assert seen["power"] == "on" and seen["maas_status"] == "Deployed"
    assert seen["kubernetes"]["ready"] and not seen["kubernetes"]["unschedulable"]
    assert COMPUTE.items() <= seen["kubernetes"]["labels"].items()
    return seen


def test_soft_then_hard_forces_a_host_ignoring_acpi_after_the_grace_period(
        berth: Berth, successful_revision: int, ignores_acpi: str) -> None:
    before = power_calls(berth, NODE)
    view = redeploy(berth, NODE, power_policy="soft-then-hard", grace_period=1)
    in_service(berth, NODE, view)
    power = got(view, NODE)
    assert power["outcome"] == "forced" and power["power_policy"] == "soft-then-hard"
    assert power["grace_period"] == 1 and power["grace_period_from"] == "request"
    assert power["forced_after"] >= 1.0
    assert "forced off after the graceful shutdown timed out" in power["summary"]
    # one graceful shutdown the host ignored, then one ForceOff
    assert power_calls(berth, NODE) == {"graceful_shutdown": before["graceful_shutdown"] + 1,
                                        "power_off": before["power_off"] + 1}
    task = steps_of(view)[f"destroy_nodes.{NODE}"]["details"]["task"]
    assert task["options"]["power_policy"] == "soft-then-hard"


def test_hard_forces_the_node_off_at_once(berth: Berth, successful_revision: int) -> None:
    before = power_calls(berth, NODE)
    view = redeploy(berth, NODE, power_policy="hard")
    in_service(berth, NODE, view)
    power = got(view, NODE)
    assert power["outcome"] == "hard" and "forced_after" not in power
    assert power_calls(berth, NODE) == {"graceful_shutdown": before["graceful_shutdown"],
                                        "power_off": before["power_off"] + 1}


def test_soft_only_on_a_host_ignoring_acpi_fails_and_forces_nothing(
        berth: Berth, successful_revision: int, ignores_acpi: str) -> None:
    before = power_calls(berth, NODE)
    try:
        view = redeploy(berth, NODE, power_policy="soft-only", grace_period=1)
        assert view["state"] == "failed", view["message"]
        step = steps_of(view)[f"destroy_nodes.{NODE}"]
        assert step["state"] == "failed"
        text = str(view["message"]) + str(step["details"])
        assert "GracefulShutdownTimeout" in text and "soft-only forbids forcing it" in text
        power = got(view, NODE)
        assert power["outcome"] == "not-off" and power["power_policy"] == "soft-only"
        assert berth.sim(f"/nodes/{NODE}")["power"] == "on"  # left on, never forced
        assert power_calls(berth, NODE) == {
            "graceful_shutdown": before["graceful_shutdown"] + 1,
            "power_off": before["power_off"]}
    finally:  # the node was drained and left on: put it back in service
        requests.delete(f"{berth.site.urls['sitesim']}/faults", timeout=10)
        in_service(berth, NODE, redeploy(berth, NODE))


class TaintWatch:
    """Samples a node's taints while a redeploy runs: was Berth's out-of-service taint on?"""

    def __init__(self, berth: Berth, node: str) -> None:
        self.berth, self.node = berth, node
        self.stop = threading.Event()
        self.marked: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        kube = self.berth.site.kube
        assert kube is not None
        while not self.stop.wait(0.1):
            found = kube.api.get(f"/api/v1/nodes/{self.node}") or {}
            notes = (found.get("metadata") or {}).get("annotations") or {}
            if MARK in notes and any(t.get("key") == OUT_OF_SERVICE
                                     for t in (found.get("spec") or {}).get("taints") or []):
                self.marked.append(notes)

    def __enter__(self) -> TaintWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def taints(berth: Berth, node: str) -> tuple[set[str], dict[str, str]]:
    assert berth.site.kube is not None
    found = berth.site.kube.api.get(f"/api/v1/nodes/{node}") or {}
    return ({t["key"] for t in (found.get("spec") or {}).get("taints") or []},
            (found.get("metadata") or {}).get("annotations") or {})


def test_berths_out_of_service_taint_is_gone_once_the_node_is_ready_again(
        berth: Berth, successful_revision: int) -> None:
    resp = requests.put(f"{berth.site.urls['sitesim']}/nodes/{NODE}/power",
                        json={"power": "off"}, timeout=10)
    assert resp.status_code == 200, resp.text
    wait_for(lambda: not berth.sim(f"/nodes/{NODE}")["kubernetes"]["ready"], 90,
             f"{NODE} to turn NotReady")
    with TaintWatch(berth, NODE) as watch:
        view = redeploy(berth, NODE)
    in_service(berth, NODE, view)
    steps = steps_of(view)
    assert steps[f"assess_node.{NODE}"]["details"]["path"] == "fence-first"
    assert watch.marked, "Berth's out-of-service taint was never seen on the fenced node"
    keys, notes = taints(berth, NODE)
    assert OUT_OF_SERVICE not in keys and MARK not in notes
    assert berth.sim(f"/nodes/{NODE}")["kubernetes"]["ready"]
