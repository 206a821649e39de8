"""POST/PUT/DELETE/GET /budgets/slots: a full domain is 409 naming it and its holders; bad
requests are 400 listing every problem; a lapsed lease cannot be renewed."""

from __future__ import annotations

import json
from typing import Any

import falcon.testing
import pytest

from drydock_api.app import Deps, create_app
from tests.unit.drydock import designs as D
from tests.unit.drydock.conftest import FakeClock, SiteFactory, make_conf
from tests.unit.drydock.test_api import ADMIN, TOKENS


@pytest.fixture
def client(make_site: SiteFactory, tmp_path: Any) -> tuple[falcon.testing.TestClient, str,
                                                          FakeClock]:
    docs = D.simple_site(["n1", "n2"]) + [D.node("n3", address="10.1.0.30", rack="rack02")]
    docs[2]["data"]["failure_domains"] = [{"name": "rack", "by": "rack", "budget": 1}]
    clock = FakeClock()
    site = make_site(docs=docs, clock=clock)
    app = create_app(make_conf(tmp_path), Deps(runtime=site.runtime))
    app.berth_spec.authenticator = TOKENS
    return falcon.testing.TestClient(app), site.href, clock


def call(client: falcon.testing.TestClient, method: str, path: str, body: Any = None) -> Any:
    return client.simulate_request(method, f"/api/v1.0{path}", headers={
        **ADMIN, "Content-Type": "application/json"},
        body=None if body is None else json.dumps(body))


def test_second_node_of_a_rack_is_refused_naming_rack_and_holder(client: Any) -> None:
    c, href, _ = client
    first = call(c, "POST", "/budgets/slots", {"holder": "a1", "node": "n1",
                                               "design_ref": href, "lease_seconds": 30})
    assert first.status_code == 200, first.text
    assert [s["domain"] for s in first.json["slots"]] == ["rack:rack01"]
    second = call(c, "POST", "/budgets/slots", {"holder": "a2", "node": "n2",
                                                "design_ref": href})
    assert second.status_code == 409 and second.json["reason"] == "BudgetExhausted"
    assert "rack:rack01" in second.json["message"] and "a1 (n1)" in second.json["message"]
    blocker = second.json["details"]["blockers"][0]
    assert blocker["domain"] == "rack:rack01" and blocker["holders"][0]["holder"] == "a1"
    other_rack = call(c, "POST", "/budgets/slots", {"holder": "a3", "node": "n3",
                                                    "design_ref": href})
    assert other_rack.status_code == 200
    assert call(c, "DELETE", "/budgets/slots/a1").status_code == 204
    assert call(c, "POST", "/budgets/slots", {"holder": "a2", "node": "n2",
                                              "design_ref": href}).status_code == 200
    held = call(c, "GET", "/budgets/slots").json["slots"]
    assert sorted(s["holder"] for s in held) == ["a2", "a3"]


def test_renewal_keeps_a_slot_and_a_lapsed_one_is_not_held(client: Any) -> None:
    c, href, clock = client
    assert call(c, "POST", "/budgets/slots", {"holder": "a1", "node": "n1",
                                              "design_ref": href,
                                              "lease_seconds": 10}).status_code == 200
    clock.advance(8)
    assert call(c, "PUT", "/budgets/slots/a1", {"lease_seconds": 10}).status_code == 200
    clock.advance(8)
    assert call(c, "GET", "/budgets/slots?holder=a1").json["slots"] != []
    clock.advance(3)
    lapsed = call(c, "PUT", "/budgets/slots/a1", {"lease_seconds": 10})
    assert lapsed.status_code == 404 and lapsed.json["reason"] == "SlotsNotHeld"
    assert call(c, "POST", "/budgets/slots", {"holder": "a2", "node": "n2",
                                              "design_ref": href}).status_code == 200


def test_bad_take_request_lists_every_problem(client: Any) -> None:
    c, _, _ = client
    bad = call(c, "POST", "/budgets/slots", {"holder": "/x", "lease_seconds": 0, "x": 1})
    assert bad.status_code == 400
    texts = " | ".join(m["message"] for m in bad.json["details"]["messageList"])
    for part in ("unknown field 'x'", "holder must match", "node is required",
                 "design_ref is required", "lease_seconds must be"):
        assert part in texts


def test_dry_run_names_what_taking_would_meet_and_takes_nothing(client: Any) -> None:
    c, href, _ = client
    assert call(c, "POST", "/budgets/slots", {"holder": "a1", "node": "n1",
                                              "design_ref": href}).status_code == 200
    probe = call(c, "POST", "/budgets/slots", {"holder": "a2", "node": "n2",
                                               "design_ref": href, "dry_run": True})
    assert probe.status_code == 200
    assert probe.json["domains"] == ["rack:rack01"]
    assert [(b["domain"], [h["holder"] for h in b["holders"]])
            for b in probe.json["blockers"]] == [("rack:rack01", ["a1"])]
    assert [s["holder"] for s in call(c, "GET", "/budgets/slots").json["slots"]] == ["a1"]
