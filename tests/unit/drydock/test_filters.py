"""Node filter semantics as a table: union, intersection, labels AND, racks, unknown names."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import ValidationFailed
from drydock_api.nodes.design import parse_design
from drydock_api.nodes.filters import UnknownNodes, require_filter, select_nodes
from tests.unit.drydock import designs as D

DOCS = [
    D.profile(), D.passphrase(),
    D.region({"rack01": {"zone": "a", "power": "pdu1"}, "rack02": {"zone": "b"}}),
    D.node("ctl1", rack="rack01", tags=["control"],
           labels={"kubernetes-etcd": "enabled", "ucp-control-plane": "enabled"}),
    D.node("ctl2", rack="rack02", tags=["control"],
           labels={"kubernetes-etcd": "enabled", "ucp-control-plane": "enabled"}),
    D.node("cmp1", rack="rack01", tags=["compute"], labels={"openstack-compute-node": "enabled"}),
    D.node("cmp2", rack="rack02", tags=["compute", "gpu"],
           labels={"openstack-compute-node": "enabled"}),
]
DESIGN = parse_design(DOCS)


def fs(*entries: dict[str, Any], set_type: str = "union") -> dict[str, Any]:
    return {"filter_set_type": set_type, "filter_set": list(entries)}


CASES = [
    ("null selects every node", None, ["ctl1", "ctl2", "cmp1", "cmp2"]),
    ("names", fs({"node_names": ["cmp2", "ctl1"]}), ["ctl1", "cmp2"]),
    ("tags match any listed tag", fs({"node_tags": ["gpu", "control"]}), ["ctl1", "ctl2", "cmp2"]),
    ("labels: every pair must match",
     fs({"node_labels": {"kubernetes-etcd": "enabled", "ucp-control-plane": "enabled"}}),
     ["ctl1", "ctl2"]),
    ("labels: one wrong pair excludes",
     fs({"node_labels": {"kubernetes-etcd": "enabled", "openstack-compute-node": "enabled"}}),
     []),
    ("labels as a list of pairs (spec 001 selectors)",
     fs({"node_labels": [{"openstack-compute-node": "enabled"}]}), ["cmp1", "cmp2"]),
    ("rack names", fs({"rack_names": ["rack02"]}), ["ctl2", "cmp2"]),
    ("rack labels", fs({"rack_labels": {"zone": "a"}}), ["ctl1", "cmp1"]),
    ("entry intersection of criteria", fs({"rack_names": ["rack01"], "node_tags": ["compute"]}),
     ["cmp1"]),
    ("entry union of criteria",
     fs({"filter_type": "union", "rack_names": ["rack01"], "node_tags": ["gpu"]}),
     ["ctl1", "cmp1", "cmp2"]),
    ("set union of entries", fs({"node_names": ["ctl1"]}, {"rack_names": ["rack02"]}),
     ["ctl1", "ctl2", "cmp2"]),
    ("set intersection of entries",
     fs({"node_tags": ["compute"]}, {"rack_names": ["rack02"]}, set_type="intersection"),
     ["cmp2"]),
    ("empty entry selects all", fs({}), ["ctl1", "ctl2", "cmp1", "cmp2"]),
    ("empty filter set selects none", fs(), []),
    ("empty criteria lists are ignored", fs({"node_names": [], "node_tags": ["gpu"]}), ["cmp2"]),
]


@pytest.mark.parametrize("node_filter,expected", [(c[1], c[2]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_node_filter_selects(node_filter: Any, expected: list[str]) -> None:
    assert select_nodes(node_filter, DESIGN.nodes, DESIGN.rack_labels) == expected


def test_unknown_node_names_are_refused_listing_each() -> None:
    with pytest.raises(UnknownNodes) as err:
        select_nodes(fs({"node_names": ["ctl1", "typo1", "typo2"]}), DESIGN.nodes)
    assert err.value.code == 400
    assert "typo1, typo2" in err.value.message
    assert len(err.value.messages) == 2


@pytest.mark.parametrize("bad", [
    {"filter_set_type": "xor", "filter_set": []},
    {"filter_set": [{"filter_type": "nand"}]},
    {"filter_set": [{"node_names": "ctl1"}]},
    {"filter_set": [{"node_labels": ["a"]}]},
    {"filter_set": [{"color": ["red"]}]},
    {"filter_set": "all"},
    {"filter_set": [{"node_names": ["n" * 254]}]},
    ["ctl1"],
])
def test_malformed_filters_are_refused_at_the_edge(bad: Any) -> None:
    with pytest.raises(ValidationFailed):
        require_filter(bad)
