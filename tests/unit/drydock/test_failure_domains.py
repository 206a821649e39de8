"""Failure-domain declarations of the design: the domains of each node, and every problem of
a bad declaration listed at once."""

from __future__ import annotations

from typing import Any

from drydock_api.budgets.slots import Claim
from drydock_api.nodes import domains
from drydock_api.nodes.design import parse_design
from drydock_api.nodes.validation import validate_design
from tests.unit.drydock import designs as D


def site(failure_domains: list[Any]) -> list[dict[str, Any]]:
    region = D.region()
    region["data"]["failure_domains"] = failure_domains
    etcd = D.doc("promenade/EtcdClusters/v1", "etcd-clusters", {"clusters": [
        {"name": "kubernetes", "client_endpoints": ["http://127.0.0.1:2379"],
         "members": [{"name": "n1", "node": "n1"}, {"name": "n2", "node": "n2"}]}]})
    return [D.profile(), D.passphrase(), region, etcd,
            D.node("n1", rack="rack01", labels={"pdu": "pdu-a"}),
            D.node("n2", rack="rack01", labels={"pdu": "pdu-b"}),
            D.node("n3", rack="rack02")]


GOOD = [{"name": "rack", "by": "rack", "budget": 2, "budgets": {"rack02": 1}},
        {"name": "pdu", "by": "label", "label": "pdu", "budget": 1},
        {"name": "etcd", "by": "etcd_cluster", "budget": 1}]


def test_each_node_claims_its_rack_label_and_etcd_domains() -> None:
    docs = site(GOOD)
    design = parse_design(docs)
    assert validate_design(docs) == []
    assert domains.claims("n1", design, docs) == [
        Claim("rack:rack01", 2), Claim("pdu:pdu-a", 1), Claim("etcd:kubernetes", 1)]
    assert domains.claims("n3", design, docs) == [Claim("rack:rack02", 1)]


def test_a_design_without_declarations_limits_nothing() -> None:
    docs = D.simple_site(["n1"])
    assert domains.claims("n1", parse_design(docs), docs) == []


def test_every_problem_of_bad_declarations_is_listed() -> None:
    docs = site([
        {"name": "rack", "by": "rack", "budget": 0},                 # budget below 1
        {"name": "pdu", "by": "label", "budget": 1},                 # by label, no label
        {"name": "room", "by": "room", "budget": 1},                 # unknown grouping
        {"name": "rack", "by": "rack", "budget": 1,                  # declared twice,
         "budgets": {"rack09": 1}},                                  # a rack no node is in
        {"name": "Bad Name", "by": "etcd_cluster", "budget": 1, "label": "x"},
    ])
    texts = [m["message"] for m in validate_design(docs) if m["error"]]
    assert any("failure_domains/0/budget" in t for t in texts), texts
    assert any("failure_domains/1" in t and "label" in t for t in texts), texts
    assert any("failure_domains/2/by" in t for t in texts), texts
    assert any("failure_domains/4/name" in t for t in texts), texts
    assert any("failure_domains/4" in t and "label" in t for t in texts), texts
    assert "failure_domains: rack is declared twice" in texts
    assert any("rack gives a budget to rack09, which no node" in t for t in texts), texts
