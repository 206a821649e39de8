"""Boot actions: made at deploy (records, the key handed over as a MAAS tag, the API in the
user data), served to the node with its key, reported by the node, shown on node and task."""

from __future__ import annotations

import base64
import io
import json
import tarfile
from typing import Any

import falcon.testing
import pytest
import yaml
from sqlalchemy import select

from drydock_api.app import Deps, create_app
from drydock_api.bootactions import render
from drydock_api.bootactions.design import Asset
from drydock_api.db.models import BootActionRow
from drydock_api.nodes.validation import validate_design
from tests.unit.drydock import designs as D
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_lifecycle import enlist_on_pxe, torn_down
from tests.unit.drydock.test_orchestrator import names, run_task

B = "/api/v1.0/bootactions"
UNIT = "[Unit]\nDescription=join {{ node.hostname }}\n[Service]\nExecStart=/opt/join.sh\n"


def boot_action(name: str = "promjoin", **data: Any) -> dict[str, Any]:
    body = {"signaling": True, "assets": [
        {"path": "/lib/systemd/system/promjoin.service", "type": "unit", "permissions": "444",
         "data": base64.b64encode(UNIT.encode()).decode(),
         "data_pipeline": ["base64_decode", "utf8_decode", "template"]},
        {"path": "/opt/report.sh", "type": "file", "permissions": "555",
         "data": "curl -X POST {{ action.report_url }}{{ action.action_id }} "
                 "-H 'X-Bootaction-Key: {{ action.action_key }}' # {{ node.network.default.ip }}",
         "data_pipeline": ["template"]}],
            "node_filter": {"filter_set_type": "union", "filter_set": [{"node_names": ["n1"]}]}}
    body.update(data)
    return D.doc("drydock/BootAction/v1", name, body)


@pytest.fixture
def deployed(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2"], docs=[*D.simple_site(["n1", "n2"]), boot_action()])
    torn_down(site, "n1")
    enlist_on_pxe(site)
    assert run_task(site, "prepare_nodes", names("n1"))["result"]["status"] == "success"
    task = run_task(site, "deploy_nodes", names("n1"))
    assert task["result"]["status"] == "success"
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    return falcon.testing.TestClient(app), site


def key_of(site: Site) -> str:
    tags = [t for tags in site.maas.machine_tags.values() for t in tags if "__baid__" in t]
    assert len(tags) == 1
    return tags[0].split("__baid__")[1]


def untar(data: bytes) -> dict[str, tuple[int, str]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: (m.mode, tar.extractfile(m).read().decode())  # type: ignore[union-attr]
                for m in tar.getmembers()}


def test_pipeline_decodes_and_templates_as_airship():
    asset = Asset(type="file", path="/x", data=base64.b64encode(b"hi {{ node.hostname }}").decode(),
                  data_pipeline=("base64_decode", "utf8_decode", "template"))
    out = render.render_asset(asset, {"node": {"hostname": "n1"}}, lambda url: b"")
    assert out.content == b"hi n1"
    with pytest.raises(render.AssetError, match="segment bogus"):
        render.run_pipeline(b"", ("bogus",), {})


def test_validation_names_an_asset_without_content():
    docs = [*D.simple_site(["n1"]), D.doc("drydock/BootAction/v1", "bad", {
        "assets": [{"type": "file", "path": "/x"}, {"type": "oops"}]})]
    texts = [m["message"] for m in validate_design(docs) if m["error"]]
    assert any("asset 0 has neither location nor data" in t for t in texts)
    assert any("oops" in t for t in texts)


def test_deploy_records_boot_actions_and_hands_the_key_to_maas(deployed):
    _, site = deployed
    key = key_of(site)
    assert len(key) == 64
    rows = site.runtime.store.sessions().scalars(select(BootActionRow)).all()
    assert [(r.node, r.name, r.status, len(r.action_id)) for r in rows] == [
        ("n1", "promjoin", "incomplete", 26)]
    assert rows[0].key_hash != key and key not in json.dumps(
        [r.details for r in rows])  # the key is kept only as its hash
    user_data = base64.b64decode(site.maas.user_data["n1"] or "").decode()
    files = yaml.safe_load(user_data)["write_files"]
    assert files[0]["path"] == "/etc/drydock/bootaction-api"
    assert files[0]["content"].strip().endswith("/api/v1.0/bootactions/")


def test_units_and_files_served_with_the_nodes_key(deployed):
    client, site = deployed
    key = key_of(site)
    units = client.simulate_get(f"{B}/nodes/n1/units", headers={"X-Bootaction-Key": key})
    assert units.status_code == 200 and units.headers["content-type"] == "application/gzip"
    assert untar(units.content) == {"/lib/systemd/system/promjoin.service": (
        0o444, UNIT.replace("{{ node.hostname }}", "n1"))}
    files = untar(client.simulate_get(f"{B}/nodes/n1/files",
                                      headers={"X-Bootaction-Key": key}).content)
    mode, text = files["/opt/report.sh"]
    action_id = site.runtime.bootactions.node_view("n1")["bootactions"][0]["action_id"]
    assert mode == 0o555 and f"bootactions/{action_id} " in text and key in text
    assert text.endswith("# 10.0.0.1")


def test_missing_or_wrong_key_is_refused_and_shown_on_the_node(deployed):
    client, site = deployed
    assert client.simulate_get(f"{B}/nodes/n1/units").status_code == 401
    wrong = client.simulate_get(f"{B}/nodes/n1/units", headers={"X-Bootaction-Key": "ab" * 32})
    assert wrong.status_code == 403 and wrong.json["reason"] == "Forbidden"
    assert client.simulate_get(f"{B}/nodes/n2/units",
                               headers={"X-Bootaction-Key": "ab"}).status_code == 404
    view = site.runtime.bootactions.node_view("n1")
    assert [r["reason"] for r in view["bootaction_refusals"]] == [
        "no X-Bootaction-Key", "invalid X-Bootaction-Key"]


def test_report_is_recorded_on_the_action_and_the_task(deployed):
    client, site = deployed
    key = key_of(site)
    action = site.runtime.bootactions.node_view("n1")["bootactions"][0]
    path, h = f"{B}/{action['action_id']}", {"X-Bootaction-Key": key,
                                              "Content-Type": "application/json"}
    bad = client.simulate_post(path, headers=h, body=json.dumps(
        {"status": "done", "details": [{"message": 1}], "x": 1}))
    assert bad.status_code == 400 and bad.json["details"]["errorCount"] == 4
    assert client.simulate_post(path, body="{}", headers={
        "X-Bootaction-Key": "cd" * 32, "Content-Type": "application/json"}).status_code == 403
    ok = client.simulate_post(path, headers=h, body=json.dumps(
        {"status": "Success", "details": [{"message": "joined", "error": False, "at": 3}]}))
    assert ok.status_code == 200, ok.text
    assert ok.json["action_status"] == "success" and "identity_key" not in ok.json
    again = client.simulate_post(path, headers=h, body=json.dumps({"status": "failure"}))
    assert again.status_code == 409
    view = site.runtime.bootactions.node_view("n1")["bootactions"][0]
    assert view["action_status"] == "success" and view["details"][0]["message"] == "joined"
    task = site.runtime.service.get(action["task_id"])
    texts = [m["message"] for m in task["result"]["details"]["messageList"]]
    assert "joined" in texts and "Boot action promjoin on n1: success" in texts


def test_an_asset_that_cannot_be_fetched_fails_its_boot_action(make_site: SiteFactory,
                                                                tmp_path: Any):
    action = boot_action(assets=[{"path": "/opt/promjoin.sh", "type": "file",
                                  "location": "promenade+http://promenade-api/api/v1.0/"
                                              "join-scripts?hostname={{ node.hostname }}",
                                  "location_pipeline": ["template"]}])
    site = make_site(["n1", "n2"], docs=[*D.simple_site(["n1", "n2"]), action],
                     peers={"retries": 0, "connect_timeout": 0.5})
    torn_down(site, "n1")
    enlist_on_pxe(site)
    run_task(site, "prepare_nodes", names("n1"))
    run_task(site, "deploy_nodes", names("n1"))
    client = falcon.testing.TestClient(create_app(make_conf(tmp_path),
                                                  Deps(runtime=site.runtime)))
    got = client.simulate_get(f"{B}/nodes/n1/files", headers={"X-Bootaction-Key": key_of(site)})
    assert got.status_code == 500 and got.json["reason"] == "BootActionAssetError"
    view = site.runtime.bootactions.node_view("n1")["bootactions"][0]
    assert view["action_status"] == "failure"
    assert "Promenade unreachable" in view["details"][0]["message"]
    assert "hostname=n1" in view["details"][0]["message"]


def test_a_new_deploy_supersedes_the_earlier_key(deployed):
    client, site = deployed
    old = key_of(site)
    task_id = site.runtime.bootactions.node_view("n1")["bootactions"][0]["task_id"]
    begun = site.runtime.bootactions.begin("n1", task_id, site.href, None)
    assert begun is not None and begun[0] != old
    refused = client.simulate_get(f"{B}/nodes/n1/units", headers={"X-Bootaction-Key": old})
    assert refused.status_code == 403
    assert client.simulate_get(f"{B}/nodes/n1/units",
                               headers={"X-Bootaction-Key": begun[0]}).status_code == 200
    assert [a["action_id"] for a in site.runtime.bootactions.node_view("n1")["bootactions"]] \
        == [begun[1][0]["action_id"]]
