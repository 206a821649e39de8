"""GET /join-scripts (Airship's parameters, a script per node, 400 listing every problem) and
POST /validatedesign in Airship's answer shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from promenade_api import joinscript
from promenade_api import policy as promenade_policy

from .conftest import etcd_doc, kubernetes_cluster

P = "/api/v1.0"


def node_doc(name: str) -> dict:
    return {"schema": "drydock/BaremetalNode/v1", "metadata": {"name": name}, "data": {}}


@pytest.fixture
def href(design) -> str:
    return design(etcd_doc([kubernetes_cluster()]), node_doc("node04"), node_doc("node05"))


def test_parse_accepts_both_label_spellings_and_lists():
    request, problems = joinscript.parse_request({
        "design_ref": "file:///d.yaml", "hostname": "node04", "ip": "10.0.0.14",
        "labels.dynamic": ["rack=r1", "zone=a,tier=web"], "static.labels": "role=compute"})
    assert problems == []
    assert request is not None
    assert request.labels == {"dynamic": {"rack": "r1", "zone": "a", "tier": "web"},
                              "static": {"role": "compute"}}


def test_parse_lists_every_missing_and_bad_parameter():
    request, problems = joinscript.parse_request({
        "hostname": "Node_04", "ip": "10.0.0.999", "external_ip": "x",
        "dynamic.labels": ["novalue", "bad key!=v"], "colour": "blue"})
    assert request is None
    text = "\n".join(problems)
    for expected in ("Unknown query parameter 'colour'", "design_ref query parameter is "
                     "required", "hostname 'Node_04'", "ip '10.0.0.999'", "external_ip 'x'",
                     "'novalue' is not key=value", "Invalid label key 'bad key!'"):
        assert expected in text
    assert len(problems) == 7


def test_script_declares_registration_labels_and_kubelet():
    request, _ = joinscript.parse_request({
        "design_ref": "file:///d.yaml", "hostname": "node04", "ip": "10.0.0.14",
        "labels.static": "role=compute", "labels.dynamic": "rack=r 1".replace(" ", "")})
    assert request is not None
    script = joinscript.render_script(request)
    assert script.startswith("#!/bin/bash\n")
    steps = script.split(joinscript.STEPS_MARKER, 1)[1].split("\n")
    assert [s for s in steps if s] == [
        "join_register_node node04 10.0.0.14 local 127.0.0.1",
        "join_label static role=compute", "join_label dynamic rack=r1",
        "join_start_kubelet", "join_done"]


def test_get_join_script_is_the_nodes_shell_script(api, href):
    client, h = api
    result = client.simulate_get(f"{P}/join-scripts", headers=h, params={
        "design_ref": href, "hostname": "node04", "ip": "10.0.0.14",
        "labels.dynamic": "openstack-compute-node=enabled"})
    assert result.status_code == 200, result.text
    assert result.headers["content-type"] == "text/x-shellscript"
    assert "join_register_node node04 10.0.0.14" in result.text
    assert "join_label dynamic openstack-compute-node=enabled" in result.text


def test_get_join_script_400_lists_every_problem(api):
    client, h = api
    result = client.simulate_get(f"{P}/join-scripts", headers=h,
                                 query_string="hostname=node04&labels.static=x")
    assert result.status_code == 400
    body = result.json
    assert body["kind"] == "Status" and body["details"]["errorCount"] == 3
    texts = [m["message"] for m in body["details"]["messageList"]]
    assert any("design_ref" in t for t in texts) and any("The ip" in t for t in texts)


def test_get_join_script_for_a_host_the_design_lacks_is_400(api, href):
    client, h = api
    result = client.simulate_get(f"{P}/join-scripts", headers=h, params={
        "design_ref": href, "hostname": "ghost", "ip": "10.0.0.9"})
    assert result.status_code == 400
    assert "'ghost' is not a node of the design" in result.json["message"]


def test_join_scripts_need_airships_policy_rule(api, href, tmp_path: Path):
    client, _ = api
    tokens = yaml.safe_load((tmp_path / "tokens.yaml").read_text())
    reader = next(t for t, v in tokens.items() if v["user"] == "reader")
    result = client.simulate_get(f"{P}/join-scripts", headers={"X-Auth-Token": reader},
                                 params={"design_ref": href, "hostname": "node04",
                                         "ip": "10.0.0.14"})
    assert result.status_code == 403
    assert "kubernetes_provisioner:get_join_scripts" in result.json["message"]
    names = {r.name for r in promenade_policy.list_rules()}
    assert {"kubernetes_provisioner:get_join_scripts",
            "kubernetes_provisioner:post_validatedesign"} <= names


def test_validatedesign_answers_airships_shape(api, href, design):
    client, h = api
    ok = client.simulate_post(f"{P}/validatedesign", headers=h, json={"href": href})
    assert ok.status_code == 200
    assert ok.json["reason"] == "Validation" and ok.json["status"] == "Success"
    assert ok.json["message"] == "Promenade validations succeeded"
    bad = design(etcd_doc([{"name": "x", "client_endpoints": [], "members": []}]),
                 name="bad.yaml")
    failed = client.simulate_post(f"{P}/validatedesign", headers=h, json={"href": bad})
    assert failed.status_code == 400
    body = failed.json
    assert body["reason"] == "Validation" and body["status"] == "Failure"
    assert body["details"]["errorCount"] >= 1
    assert all(m["kind"] == "ValidationMessage" and m["level"] == "Error"
               for m in body["details"]["messageList"])
