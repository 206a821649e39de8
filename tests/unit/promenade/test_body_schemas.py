"""Promenade's design reference bodies are checked against DesignRef of its OpenAPI document:
without an href 400 MissingDesignRef (as the spec says); with a bad one 400 InvalidDesignRef
naming every problem; nothing is changed."""

from __future__ import annotations

import pytest

P = "/api/v1.0"
BAD = {"rel": 5, "href": "ftp://design.example/site.yaml", "type": ["yaml"]}
NAMED = ["href must match ^\\s*(file|https?|deckhand\\+https?)://", "rel must be a string",
         "type must be a string"]


def refused(result, reason):
    body = result.json
    assert result.status_code == 400, body
    assert body["kind"] == "Status" and body["reason"] == reason
    listed = body["details"]["messageList"]
    assert body["details"]["errorCount"] == len(listed)
    return sorted(m["message"] for m in listed)


@pytest.mark.parametrize("path", ["validatedesign", "nodes/node01/decommission",
                                  "nodes/node01/decommission/preview",
                                  "nodes/node01/remove-etcd", "nodes/node01/join-etcd"])
def test_a_bad_design_reference_names_every_problem_and_changes_nothing(api, kube, path):
    client, h = api
    before = kube.nodes["node01"]
    assert refused(client.simulate_post(f"{P}/{path}", json=BAD, headers=h),
                   "InvalidDesignRef") == NAMED
    assert kube.nodes["node01"] == before


@pytest.mark.parametrize("body", [None, {}, {"rel": "design"}, {"href": 7}, ["file:///x"]])
def test_a_body_without_an_href_is_missing_design_ref(api, body):
    client, h = api
    result = client.simulate_post(f"{P}/validatedesign", json=body, headers=h)
    assert result.status_code == 400 and result.json["reason"] == "MissingDesignRef"


def test_a_bare_href_is_checked_too(api):
    client, h = api
    assert refused(client.simulate_post(f"{P}/validatedesign", json="gopher://x", headers=h),
                   "InvalidDesignRef") == [
        "body must match ^\\s*(file|https?|deckhand\\+https?)://"]
    assert refused(client.simulate_post(
        f"{P}/validatedesign", body="gopher://x",
        headers={**h, "Content-Type": "text/plain"}), "InvalidDesignRef") == [
        "body must match ^\\s*(file|https?|deckhand\\+https?)://"]
