"""A design reference naming a Shipyard revision id no database can hold (1,000 digits) is
400 at Drydock's edge, before anything is fetched or stored, not a 502 from the fetch."""

from __future__ import annotations

from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS, post

P = "/api/v1.0"
SHIPYARD = "http://127.0.0.1:9000"  # [peers] shipyard_url's default: its revisions are allowed
HUGE = f"deckhand+{SHIPYARD}/api/v1.0/revisions/{'1' * 1000}/rendered-documents"


@pytest.fixture
def api(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, Site]:
    site = make_site(["n1", "n2"])
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site


def test_a_thousand_digit_revision_is_400_everywhere_a_design_ref_is_taken(api: Any) -> None:
    client, _ = api
    answers = [
        post(client, f"{P}/validatedesign", {"rel": "design", "href": HUGE}),
        post(client, f"{P}/tasks", {"action": "destroy_nodes", "design_ref": HUGE,
                                    "node_filter": None}),
        post(client, f"{P}/nodefilter", {"design_ref": HUGE, "node_filter": None}),
        client.simulate_get(f"{P}/nodes", params={"design_ref": HUGE}, headers=ADMIN),
    ]
    assert [(a.status_code, a.json["reason"]) for a in answers] == [
        (400, "InvalidDesignRef")] * 4
    assert "1 to 2147483647" in answers[0].json["message"]
    assert client.simulate_get(f"{P}/tasks", headers=ADMIN).json == []
