"""Spec 003 over the reboot reconciler: a retired node receives no reboot, and says so."""

from __future__ import annotations

from typing import Any

from tests.unit.drydock.conftest import FakeClock, SiteFactory
from tests.unit.drydock.test_nodes_api import call, patch
from tests.unit.drydock.test_reboot import calls, drive


def api_site(make_site: SiteFactory, tmp_path: Any) -> Any:
    import falcon.testing

    from drydock_api.app import Deps, create_app
    from tests.unit.drydock.conftest import make_conf
    from tests.unit.drydock.test_api import TOKENS

    site = make_site(["n1", "n2"], clock=FakeClock(), reboot={"soft_timeout": 5.0})
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def test_a_reboot_requested_before_the_node_was_retired_is_not_executed(
        make_site: SiteFactory, tmp_path: Any):
    client, site = api_site(make_site, tmp_path)
    assert call(client, "POST", "/nodes/n1/reboot", site, {"mode": "hard"}).status_code == 201
    retired = patch(client, site, "n1", {"retired": True, "retired_reason": "end of warranty"})
    assert retired.status_code == 200, retired.text
    drive(site, 10)
    assert calls(site, "graceful") == calls(site, "force_off") == calls(site, "power_on") == 0
    assert site.oob.power.get(site.address("n1"), "on") == "on"
    listed = call(client, "GET", "/nodes/n1/reboot", site, token="reader").json
    assert [r["mode"] for r in listed["requests"]] == ["hard"]  # kept, not executed
    assert listed["reboot_error"] == "skipped: node retired (end of warranty)"
    assert listed["pending_reboot_since"] is None
    node = call(client, "GET", "/nodes/n1", site, token="reader").json
    assert node["reboot_error"] == "skipped: node retired (end of warranty)"


def test_a_reboot_request_on_a_retired_node_is_409_and_unretiring_lets_one_run(
        make_site: SiteFactory, tmp_path: Any):
    client, site = api_site(make_site, tmp_path)
    call(client, "POST", "/nodes/n1/reboot", site, {})
    patch(client, site, "n1", {"retired": True})
    refused = call(client, "POST", "/nodes/n1/reboot", site, {"key": "other"})
    assert refused.status_code == 409 and refused.json["reason"] == "NodeRetired"
    drive(site, 5)
    assert calls(site, "graceful") == 0
    assert patch(client, site, "n1", {"retired": False}).status_code == 200
    drive(site, 10)
    assert calls(site, "graceful") == 1 and calls(site, "power_on") == 1
    listed = call(client, "GET", "/nodes/n1/reboot", site, token="reader").json
    assert listed["requests"] == [] and listed["reboot_error"] is None
