"""A three-layer site (etc/designs/layered: global, type, site) committed through a real
Shipyard's configdocs API renders as Deckhand renders it; a broken layer is refused at commit
and at render with every problem listed. The expected documents are written by hand from
Deckhand's documented rules (layering.rst: merge, replace, delete; substitution.rst)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests
import yaml

from tests.integration.shipyard_docs.conftest import Shipyard
from tests.unit.shipyard_docs.support import deployment_configuration, dump

P = "/api/v1.0"
YAML_H = {"Content-Type": "application/x-yaml"}
LAYERED = Path(__file__).resolve().parents[3] / "etc" / "designs" / "layered"
SECRET = "bmc-S3cret-example"

# What Deckhand makes of layered-compute-rack1: the global profile, merged with the type
# profile (merge at .), merged with the site's own data, then .platform replaced by the
# site's (the type's kernel is gone), the inherited kernel-tuning label deleted, and the
# Passphrase's value put at .oob.credential.
EXPECTED_SITE_PROFILE = {
    "oob": {"type": "redfish", "network": "oob", "account": "admin", "credential": SECRET},
    "platform": {"image": "noble"},
    "metadata": {"tags": ["layered"], "rack": "rack1",
                 "owner_data": {"role": "compute", "hugepages": "on"}},
    "storage": {"physical_devices": {"sda": {"partitions": [
        {"name": "root", "size": "30g", "filesystem": {"mountpoint": "/", "fstype": "ext4"}}]}}},
}
EXPECTED_TYPE_PROFILE = {
    "oob": {"type": "redfish", "network": "oob", "account": "admin"},
    "platform": {"image": "jammy", "kernel": "hwe-22.04"},
    "metadata": {"tags": ["layered"],
                 "owner_data": {"role": "compute", "kernel-tuning": "default", "hugepages": "on"}},
    "storage": EXPECTED_SITE_PROFILE["storage"],
}


def stage_text(sy: Shipyard, collection: str, text: str) -> requests.Response:
    return requests.post(f"{sy.url}{P}/configdocs/{collection}", data=text, timeout=30,
                         headers=sy.headers(**YAML_H), params={"buffermode": "append"})


def stage_layers(sy: Shipyard, site_text: str | None = None) -> None:
    for layer in ("global", "type", "site"):
        text = (LAYERED / f"{layer}.yaml").read_text()
        if layer == "site" and site_text is not None:
            text = site_text
        resp = stage_text(sy, layer, text)
        assert resp.status_code == 201, resp.text


def rendered(sy: Shipyard, url: str, who: str = "admin") -> dict[str, Any]:
    resp = requests.get(f"{sy.url}{P}{url}", headers=sy.headers(who), timeout=30)
    assert resp.status_code == 200, resp.text
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(resp.text)}


def test_a_three_layer_site_commits_and_renders_as_deckhand_does(shipyard: Shipyard) -> None:
    sy = shipyard
    assert stage_text(sy, "config", dump([deployment_configuration()])).status_code == 201
    stage_layers(sy)
    commit = requests.post(f"{sy.url}{P}/commitconfigdocs", headers=sy.headers(), timeout=60)
    assert commit.status_code == 200, commit.text
    assert commit.json()["details"]["committed"] is True
    revision = commit.json()["details"]["revision_id"]

    docs = rendered(sy, f"/revisions/{revision}/rendered-documents")
    assert sorted(docs) == ["deployment-configuration", "layered-bmc-password",
                            "layered-compute", "layered-compute-rack1", "layering-policy"]
    assert docs["layered-compute-rack1"]["data"] == EXPECTED_SITE_PROFILE
    assert docs["layered-compute"]["data"] == EXPECTED_TYPE_PROFILE
    assert docs["layered-bmc-password"]["data"] == SECRET
    # The peers validated the same rendered design, fetched through the design reference.
    [call] = sy.drydock.calls
    fetched = {d["metadata"]["name"]: d for d in call["docs"]}
    assert fetched["layered-compute-rack1"]["data"] == EXPECTED_SITE_PROFILE

    hidden = rendered(sy, "/renderedconfigdocs?version=committed", who="reader")
    assert hidden["layered-bmc-password"]["data"] == "(redacted)"
    assert hidden["layered-compute-rack1"]["data"]["oob"]["credential"] == "(redacted)"
    assert SECRET not in yaml.safe_dump(list(hidden.values()))


def test_a_broken_layer_is_refused_at_commit_and_at_render(shipyard: Shipyard) -> None:
    sy = shipyard
    site = (LAYERED / "site.yaml").read_text()
    broken = site.replace("path: .platform", "path: .firmware").replace(
        "name: layered-bmc-password\n        path", "name: no-such-password\n        path")
    assert broken != site
    assert stage_text(sy, "config", dump([deployment_configuration()])).status_code == 201
    stage_layers(sy, broken)
    commit = requests.post(f"{sy.url}{P}/commitconfigdocs", headers=sy.headers(), timeout=60)
    assert commit.status_code == 400, commit.text
    names = sorted(m["name"] for m in commit.json()["details"]["messageList"] if m["error"])
    assert names == ["MissingDocumentKey", "SubstitutionSourceNotFound"]
    assert sy.drydock.calls == [] and sy.promenade.calls == []

    resp = requests.get(f"{sy.url}{P}/renderedconfigdocs", params={"version": "buffer"},
                        headers=sy.headers(), timeout=30)
    body = resp.json()
    assert resp.status_code == 400 and body["reason"] == "RenderingFailed"
    messages = " ".join(m["message"] for m in body["details"]["messageList"])
    assert ".firmware" in messages and "no-such-password" in messages
