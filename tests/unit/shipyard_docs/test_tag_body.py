"""A tag's data is checked against TagData of Shipyard's document: anything but a mapping is
400 InvalidTag naming the problem, and no tag is made."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.shipyard_docs.support import ADMIN, READER, YAML_H
from tests.unit.shipyard_docs.test_api import client, good_design, post_docs  # noqa: F401

P = "/api/v1.0"


@pytest.mark.parametrize("headers,body", [
    ({"Content-Type": "application/json"}, "[1, 2]"),
    ({"Content-Type": "application/json"}, '"golden"'),
    (YAML_H, "- a\n- b\n"),
])
def test_tag_data_that_is_not_a_mapping_is_refused(client: Any, headers: dict[str, str],  # noqa: F811
                                                   body: str) -> None:
    post_docs(client, "site", good_design())
    url = f"{P}/revisions/1/tags"
    resp = client.simulate_post(f"{url}/golden", headers={**ADMIN, **headers}, body=body)
    assert resp.status_code == 400 and resp.json["reason"] == "InvalidTag"
    assert [m["message"] for m in resp.json["details"]["messageList"]] == [
        "body must be an object"]
    assert resp.json["details"]["messageList"][0]["name"] == "TagData"
    assert "golden" not in [t["tag"] for t in client.simulate_get(url, headers=READER).json]
