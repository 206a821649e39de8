"""Selectors: Drydock node filters (union of intersections), and the local index agreeing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drydock_api.nodes.design import NodeDef
from drydock_api.nodes.filters import select_nodes
from shipyard_api.strategy.model import Group, parse_group
from shipyard_api.strategy.selectors import NodeIndex, NodeInfo, node_filter
from tests.unit.shipyard_strategy.example import example_nodes, example_strategy


def g(selectors: list[dict[str, object]]) -> Group:
    return parse_group({"name": "g", "critical": False, "depends_on": [],
                        "selectors": selectors})


def test_the_spec_selector_example_becomes_a_union_of_intersections() -> None:
    group = g([{"node_names": ["node01", "node02"], "rack_names": ["rack01"],
                "node_tags": ["control"]},
               {"node_names": ["node04"], "node_labels": [{"ucp_control_plane": "enabled"}]}])
    assert node_filter(group) == {"filter_set_type": "union", "filter_set": [
        {"filter_type": "intersection", "node_names": ["node01", "node02"],
         "node_tags": ["control"], "rack_names": ["rack01"]},
        {"filter_type": "intersection", "node_names": ["node04"],
         "node_labels": {"ucp_control_plane": "enabled"}}]}


def test_no_selectors_or_an_empty_selector_selects_all_nodes() -> None:
    assert node_filter(g([])) is None
    assert node_filter(g([{"node_tags": ["x"]}, {"node_names": [], "rack_names": []}])) is None
    index = NodeIndex(example_nodes())
    assert index.select(g([])) == [n.name for n in example_nodes()]


def test_the_example_groups_select_the_expected_nodes() -> None:
    index = NodeIndex(example_nodes())
    chosen = {grp.name: index.select(grp) for grp in example_strategy().groups}
    assert chosen == {
        "control-nodes": ["control01", "control02", "control03"],
        "compute-nodes-1": ["compute01", "compute02"],
        "compute-nodes-2": ["compute03", "compute04"],
        "monitoring-nodes": ["monitoring01", "monitoring02", "monitoring03"],
        "ntp-node": ["ntp01"],
    }


def test_retired_nodes_are_never_selected() -> None:
    index = NodeIndex(example_nodes(retired=["control02", "ntp01"]))
    strategy = example_strategy()
    assert index.select(strategy.group("control-nodes")) == ["control01", "control03"]
    assert index.select(strategy.group("ntp-node")) == []
    assert "control02" not in index.select(g([]))


def test_labels_must_all_match() -> None:
    nodes = [NodeInfo("a", labels={"x": "1", "y": "2"}), NodeInfo("b", labels={"x": "1"})]
    index = NodeIndex(nodes)
    assert index.select(g([{"node_labels": [{"x": "1"}, {"y": "2"}]}])) == ["a"]
    assert index.select(g([{"node_labels": [{"x": "1"}]}])) == ["a", "b"]


NAMES = [f"n{i}" for i in range(8)]
TAGS, RACKS = ["t1", "t2", "t3"], ["r1", "r2"]
LABELS = [("k1", "a"), ("k1", "b"), ("k2", "a")]
node_st = st.builds(
    lambda tags, rack, labels: (tuple(tags), rack, dict(labels)),
    st.lists(st.sampled_from(TAGS), max_size=2, unique=True),
    st.sampled_from([*RACKS, None]),
    st.lists(st.sampled_from(LABELS), max_size=2, unique_by=lambda p: p[0]))
selector_st = st.fixed_dictionaries({}, optional={
    "node_names": st.lists(st.sampled_from(NAMES), max_size=3, unique=True),
    "node_tags": st.lists(st.sampled_from(TAGS), max_size=2, unique=True),
    "rack_names": st.lists(st.sampled_from(RACKS), max_size=2, unique=True),
    "node_labels": st.lists(st.sampled_from(LABELS).map(lambda p: {p[0]: p[1]}), max_size=2),
})


@settings(max_examples=300, deadline=None)
@given(st.lists(node_st, min_size=len(NAMES), max_size=len(NAMES)),
       st.lists(selector_st, max_size=3))
def test_local_selection_agrees_with_drydocks_node_filter(
        nodes: list[tuple[tuple[str, ...], str | None, dict[str, str]]],
        selectors: list[dict[str, object]]) -> None:
    group = g(selectors)  # two values for one label key: the last one, as Drydock reads it
    defs = {name: NodeDef(name, rack, tags, labels, None, None, None, None, (), None)
            for name, (tags, rack, labels) in zip(NAMES, nodes, strict=True)}
    infos = [NodeInfo(name, tags, rack, labels) for name, (tags, rack, labels)
             in zip(NAMES, nodes, strict=True)]
    listing = [{"hostname": name, "rack": rack, "tags": list(tags), "labels": labels,
                "retired": False} for name, (tags, rack, labels) in zip(NAMES, nodes, strict=True)]
    expected = select_nodes(node_filter(group), defs)
    assert NodeIndex(infos).select(group) == expected
    assert NodeIndex.of_listing(listing).select(group) == expected  # as Drydock lists nodes


def test_a_label_selects_only_nodes_having_that_key_with_that_value() -> None:
    nodes = [NodeInfo("a", labels={"x": "1"}), NodeInfo("b", labels={"y": "1"}),
             NodeInfo("c", rack="r1", labels={"x": "1"}), NodeInfo("d", rack="r1")]
    index = NodeIndex(nodes)
    assert index.select(g([{"node_labels": [{"x": "1"}]}])) == ["a", "c"]
    assert index.select(g([{"rack_names": ["r1"], "node_labels": [{"x": "1"}]}])) == ["c"]
    assert index.select(g([{"node_names": ["d", "zz"]}, {"node_labels": [{"y": "1"}]}])) \
        == ["b", "d"]
