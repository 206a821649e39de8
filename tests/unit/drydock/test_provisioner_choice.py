"""The design chooses its provisioner (drydock/Region/v1 `provisioner`): a design naming one
this Drydock has no connection settings for is answered by validation and refused at task
creation (422, nothing stored, nothing asked of MAAS); MAAS designs work as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from drydock_api.nodes.design import parse_design
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS, post, run_all

P = "/api/v1.0"


def ironic_design(names: list[str]) -> list[dict[str, Any]]:
    docs = designs.simple_site(names)
    for doc in docs:
        if doc["schema"] == "drydock/Region/v1":
            doc["data"]["provisioner"] = "ironic"
    return docs


@pytest.fixture
def maas_only(make_site: SiteFactory, tmp_path: Path
              ) -> tuple[falcon.testing.TestClient, Site, str]:
    site = make_site(["n1", "n2"])  # [ironic] url empty: MAAS only
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    href = designs.write(tmp_path / "ironic-site.yaml", ironic_design(["n1", "n2"]))
    return falcon.testing.TestClient(app), site, href


def test_the_region_names_the_provisioner_of_the_design() -> None:
    assert parse_design(designs.simple_site(["n1"])).provisioner == "maas"  # the default
    design = parse_design(ironic_design(["n1"]))
    assert design.provisioner == "ironic"
    bmc = design.nodes["n1"].bmc
    assert bmc is not None and bmc.provisioner == "ironic"  # its power goes through Ironic


def test_validation_answers_a_provisioner_drydock_is_not_configured_for(maas_only) -> None:
    client, site, href = maas_only
    resp = post(client, f"{P}/validatedesign", {"href": href})
    assert resp.status_code == 400, resp.text
    problems = [m for m in resp.json["details"]["messageList"] if m["error"]]
    assert [m["name"] for m in problems] == ["ProvisionerNotConfigured"]
    assert "provisioner is ironic" in problems[0]["message"]
    assert "[ironic] url" in problems[0]["message"]
    assert post(client, f"{P}/validatedesign", {"href": site.href}).status_code == 200


def test_a_task_on_such_a_design_is_refused_at_creation_touching_nothing(maas_only) -> None:
    client, site, href = maas_only
    for action in ("prepare_nodes", "verify_site", "destroy_nodes"):
        resp = post(client, f"{P}/tasks", {
            "action": action, "design_ref": href,
            "node_filter": {"filter_set": [{"node_names": ["n1"]}]}})
        assert resp.status_code == 422, resp.text
        assert resp.json["reason"] == "ProvisionerNotConfigured"
        assert "provisioner is ironic" in resp.json["message"]
        assert "configured: maas" in resp.json["message"]
    listed = client.simulate_get(f"{P}/tasks", headers=ADMIN)
    assert listed.status_code == 200 and listed.json == []
    assert not site.maas.calls and site.maas.status("n1") == "Deployed"


def test_a_validate_design_task_reports_the_problem(maas_only) -> None:
    client, site, href = maas_only
    resp = post(client, f"{P}/tasks", {"action": "validate_design", "design_ref": href})
    assert resp.status_code == 201, resp.text
    run_all(site)
    task = client.simulate_get(f"{P}/tasks/{resp.json['task_id']}", headers=ADMIN).json
    assert task["result"]["status"] == "failure"
    assert "ProvisionerNotConfigured" in json.dumps(task)


def test_a_maas_design_still_runs_on_maas(maas_only) -> None:
    client, site, _ = maas_only
    node = client.simulate_get(f"{P}/nodes/n1", params={"design_ref": site.href},
                               headers=ADMIN).json
    assert node["provisioner"] == "maas" and node["maas_status"] == "Deployed"
    resp = post(client, f"{P}/tasks", {"action": "verify_nodes", "design_ref": site.href})
    assert resp.status_code == 201, resp.text
    run_all(site)
    task = client.simulate_get(f"{P}/tasks/{resp.json['task_id']}", headers=ADMIN).json
    assert task["result"]["status"] == "success"
