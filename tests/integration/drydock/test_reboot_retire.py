"""Reboot requests and retirement on the simulated site (real Redfish emulator, real IPMI)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from tests.integration.drydock.conftest import drydock_sections
from tests.integration.drydock.lifecycle import LifecycleEnv
from tests.support.services import ServiceProcess

pytestmark = pytest.mark.slow


def calls(env: LifecycleEnv, system: str, op: str, node: str) -> int:
    return int(env.sim("/calls", system=system, op=op, node=node)["count"])


def power(env: LifecycleEnv, node: str) -> str:
    return str(env.sim(f"/nodes/{node}")["power"])


def reboot(env: LifecycleEnv, node: str, **body: object) -> dict:
    resp = env.api("POST", f"/nodes/{node}/reboot", json=body,
                   params={"design_ref": env.href})
    assert resp.status_code in (200, 201), resp.text
    return resp.json()


def requests_of(env: LifecycleEnv, node: str) -> dict:
    return env.api("GET", f"/nodes/{node}/reboot").json()


def release(env: LifecycleEnv, node: str, key: str) -> None:
    assert env.api("DELETE", f"/nodes/{node}/reboot/{key}").status_code == 204


def rebooted(env: LifecycleEnv, node: str) -> dict | None:
    state = requests_of(env, node)
    done = (not state["requests"] and state["last_powered_on"]
            and state["last_powered_on"] > (state["pending_reboot_since"] or ""))
    return state if done and power(env, node) == "on" else None


def test_unkeyed_reboot_power_cycles_exactly_once(lc_env: LifecycleEnv):
    reboot(lc_env, "lc-rb-a")
    state = lc_env.until(lambda: rebooted(lc_env, "lc-rb-a"), what="reboot of lc-rb-a")
    assert state["pending_reboot_since"] and state["last_powered_on"]
    time.sleep(0.3)  # a few more reconciler passes change nothing
    assert calls(lc_env, "redfish", "graceful_shutdown", "lc-rb-a") == 1
    assert calls(lc_env, "redfish", "power_on", "lc-rb-a") == 1
    node = lc_env.node("lc-rb-a")
    assert node["last_powered_on"] == state["last_powered_on"]


def test_keyed_request_holds_an_ipmi_node_off_until_released(lc_env: LifecycleEnv):
    reboot(lc_env, "lc-rb-b", key="fencing", mode="hard", value={"machine": "m-1"})
    lc_env.until(lambda: power(lc_env, "lc-rb-b") == "off", what="lc-rb-b off")
    time.sleep(0.5)
    assert power(lc_env, "lc-rb-b") == "off"
    assert requests_of(lc_env, "lc-rb-b")["requests"][0]["value"] == {"machine": "m-1"}
    release(lc_env, "lc-rb-b", "fencing")
    lc_env.until(lambda: rebooted(lc_env, "lc-rb-b"), what="lc-rb-b back on")


def test_two_keyed_clients_must_both_release(lc_env: LifecycleEnv):
    reboot(lc_env, "lc-rb-c", key="a")
    reboot(lc_env, "lc-rb-c", key="b")
    lc_env.until(lambda: power(lc_env, "lc-rb-c") == "off", what="lc-rb-c off")
    release(lc_env, "lc-rb-c", "a")
    time.sleep(0.5)
    assert power(lc_env, "lc-rb-c") == "off"
    release(lc_env, "lc-rb-c", "b")
    lc_env.until(lambda: rebooted(lc_env, "lc-rb-c"), what="lc-rb-c back on")
    assert calls(lc_env, "redfish", "power_on", "lc-rb-c") == 1


def test_hard_request_wins_over_a_soft_one(lc_env: LifecycleEnv):
    reboot(lc_env, "lc-rb-e", key="hard-client", mode="hard")
    reboot(lc_env, "lc-rb-e", key="soft-client", mode="soft")
    lc_env.until(lambda: power(lc_env, "lc-rb-e") == "off", what="lc-rb-e off")
    assert calls(lc_env, "redfish", "power_off", "lc-rb-e") == 1
    assert calls(lc_env, "redfish", "graceful_shutdown", "lc-rb-e") == 0
    release(lc_env, "lc-rb-e", "hard-client")
    release(lc_env, "lc-rb-e", "soft-client")
    lc_env.until(lambda: rebooted(lc_env, "lc-rb-e"), what="lc-rb-e back on")


def test_an_unkeyed_request_posted_while_a_keyed_one_holds_the_node_off_acts_once(
        lc_env: LifecycleEnv):
    reboot(lc_env, "lc-rb-g", key="fencing")
    lc_env.until(lambda: power(lc_env, "lc-rb-g") == "off", what="lc-rb-g off")
    reboot(lc_env, "lc-rb-g")  # unkeyed, while held off: it has acted already (spec 004)
    lc_env.until(lambda: [r["key"] for r in requests_of(lc_env, "lc-rb-g")["requests"]]
                 == ["fencing"], what="the unkeyed request removed")
    release(lc_env, "lc-rb-g", "fencing")
    lc_env.until(lambda: rebooted(lc_env, "lc-rb-g"), what="lc-rb-g back on")
    assert calls(lc_env, "redfish", "power_on", "lc-rb-g") == 1


def test_a_reboot_that_cannot_act_says_why_in_the_node_view(lc_env: LifecycleEnv):
    lc_env.fault("lc-rb-h", "bmc.power", "fail")
    try:
        reboot(lc_env, "lc-rb-h", mode="hard")
        error = lc_env.until(lambda: lc_env.node("lc-rb-h")["reboot_error"],
                             what="reboot_error of lc-rb-h")
        assert "Redfish BMC" in error and "(retrying)" in error
        assert requests_of(lc_env, "lc-rb-h")["reboot_error"] == error
    finally:
        lc_env.clear_faults()
    lc_env.until(lambda: rebooted(lc_env, "lc-rb-h"), what="lc-rb-h rebooted")
    assert lc_env.node("lc-rb-h")["reboot_error"] is None


class FakeShipyard:
    """Serves a committed revision (1) and its rendered documents, as Shipyard does."""

    def __init__(self, design_yaml: str) -> None:
        body = design_yaml.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path == "/api/v1.0/revisions":
                    data, kind = json.dumps({"count": 1, "results": [  # Shipyard's shape
                        {"id": 1, "tags": ["committed"]}]}).encode(), \
                        "application/json"
                elif self.path.startswith("/api/v1.0/revisions/1/rendered-documents"):
                    data, kind = body, "application/x-yaml"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_fresh_drydock_acts_on_a_reboot_with_shipyards_committed_design(
        lc_env: LifecycleEnv, tmp_path: Path):
    """No task has run and the request names no design: Drydock asks Shipyard."""
    shipyard = FakeShipyard((lc_env.work / "design.yaml").read_text())
    (tmp_path / "tokens.yaml").write_text((lc_env.work / "tokens.yaml").read_text())
    sections = drydock_sections(lc_env.site, tmp_path, peers={"shipyard_url": shipyard.url},
                                site_design={"source": "shipyard"},
                                reboot={"interval": 0.05, "lease_seconds": 2})
    fresh = ServiceProcess("drydock", tmp_path, sections)
    try:
        headers = {"X-Auth-Token": lc_env.admin}
        resp = requests.post(f"{fresh.url}/api/v1.0/nodes/lc-rb-i/reboot", json={},
                             headers=headers, timeout=30)
        assert resp.status_code == 201, resp.text

        def done() -> bool:
            state = requests.get(f"{fresh.url}/api/v1.0/nodes/lc-rb-i/reboot",
                                 headers=headers, timeout=30).json()
            return bool(not state["requests"] and state["last_powered_on"]
                        and state["reboot_error"] is None)

        lc_env.until(done, what="the reboot of lc-rb-i by a fresh Drydock")
        assert calls(lc_env, "ipmi", "power_on", "lc-rb-i") == 1
        view = requests.get(f"{fresh.url}/api/v1.0/nodes/lc-rb-i", headers=headers,
                            timeout=30).json()
        assert view["in_design"] is True and view["oob_type"] == "ipmi"
    finally:
        fresh.stop()
        shipyard.stop()


def test_soft_reboot_falls_back_to_hard_when_shutdown_does_not_finish(lc_env: LifecycleEnv):
    reboot(lc_env, "lc-rb-d", mode="soft")
    lc_env.until(lambda: rebooted(lc_env, "lc-rb-d"), what="lc-rb-d rebooted")
    assert calls(lc_env, "redfish", "graceful_shutdown", "lc-rb-d") == 1
    assert calls(lc_env, "redfish", "power_off", "lc-rb-d") == 1


def test_teardown_clears_reboot_requests(lc_env: LifecycleEnv):
    reboot(lc_env, "lc-rb-f", key="held")
    lc_env.until(lambda: power(lc_env, "lc-rb-f") == "off", what="lc-rb-f off")
    task = lc_env.run("destroy_nodes", ["lc-rb-f"], erase="quick")
    assert task["result"]["status"] == "success", task["result"]
    state = requests_of(lc_env, "lc-rb-f")
    assert state["requests"] == [] and state["pending_reboot_since"] is None
    time.sleep(0.3)
    assert power(lc_env, "lc-rb-f") == "off"


def test_retiring_a_ready_node_is_409(lc_env: LifecycleEnv):
    assert lc_env.sim("/nodes/lc-ret-b")["maas_status"] == "Ready"
    resp = lc_env.api("PATCH", "/nodes/lc-ret-b", json={"retired": True},
                      params={"design_ref": lc_env.href})
    assert resp.status_code == 409 and resp.json()["reason"] == "InvalidNodeState"


def test_retiring_a_node_a_task_holds_is_409(lc_env: LifecycleEnv):
    lc_env.fault("lc-ret-d", "maas.release", "hang")
    try:
        resp = lc_env.post_task(["lc-ret-d"], "destroy_nodes", erase="quick")
        task_id = resp.json()["task_id"]
        lc_env.until(lambda: lc_env.sim("/nodes/lc-ret-d")["maas_status"] == "Releasing",
                     what="lc-ret-d releasing")
        refused = lc_env.api("PATCH", "/nodes/lc-ret-d", json={"retired": True},
                             params={"design_ref": lc_env.href})
        assert refused.status_code == 409 and refused.json()["reason"] == "NodeBusy"
        assert task_id in refused.text
        assert lc_env.node("lc-ret-d")["retired"] is False
    finally:
        lc_env.clear_faults()
    assert lc_env.wait(task_id)["result"]["status"] in ("success", "failure")


def test_retired_nodes_are_skipped_by_deploy_and_listed(lc_env: LifecycleEnv):
    resp = lc_env.api("PATCH", "/nodes/lc-ret-a", params={"design_ref": lc_env.href},
                      json={"retired": True, "retired_reason": "warranty ended"})
    assert resp.status_code == 200 and resp.json()["retired"] is True
    task = lc_env.run("deploy_nodes", ["lc-ret-a", "lc-ret-c"])
    assert task["result"]["status"] == "success"
    assert task["result"]["skipped"] == ["lc-ret-a"]
    assert task["result"]["successes"] == ["lc-ret-c"] and task["result"]["failures"] == []
    retired = lc_env.api("GET", "/nodes", params={"design_ref": lc_env.href,
                                                  "retired": "true"}).json()
    assert [n["hostname"] for n in retired] == ["lc-ret-a"]
    picked = lc_env.api("POST", "/nodefilter", json={
        "design_ref": lc_env.href, "exclude_retired": True,
        "node_filter": {"filter_set": [{"rack_names": ["rack02"]}]}}).json()
    assert picked == ["lc-ret-b", "lc-ret-c"]


def test_destroy_with_retire_leaves_the_node_off_and_provide_refused(lc_env: LifecycleEnv):
    task = lc_env.run("destroy_nodes", ["lc-ret-c"], retire=True, retired_reason="donated",
                      erase="quick")
    assert task["result"]["status"] == "success", task["result"]
    node = lc_env.node("lc-ret-c")
    assert node["retired"] and node["retired_reason"] == "donated" and node["torn_down"]
    assert power(lc_env, "lc-ret-c") == "off"
    refused = lc_env.api("POST", "/nodes/lc-ret-c/provide", params={"design_ref": lc_env.href})
    assert refused.status_code == 409 and refused.json()["reason"] == "NodeRetired"
    lc_env.api("PATCH", "/nodes/lc-ret-c", json={"retired": False},
               params={"design_ref": lc_env.href})
    provided = lc_env.api("POST", "/nodes/lc-ret-c/provide", params={"design_ref": lc_env.href})
    assert provided.status_code == 200 and provided.json()["torn_down"] is False
