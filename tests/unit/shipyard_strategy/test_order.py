"""Group order: dependencies first, document order among ready groups."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shipyard_api.strategy.model import (
    default_strategy,
    parse_strategy,
    strategy_data,
    strategy_of,
)
from shipyard_api.strategy.order import (
    CircularDependency,
    ordered_by_dependencies,
    processing_order,
)
from tests.unit.shipyard_strategy.example import example_data, example_strategy


def test_the_example_runs_dependencies_first_in_document_order() -> None:
    assert processing_order(example_strategy()) == [
        "monitoring-nodes", "ntp-node", "control-nodes", "compute-nodes-1", "compute-nodes-2"]


def test_a_cycle_cannot_be_ordered() -> None:
    data = {"groups": [{"name": "a", "critical": False, "depends_on": ["b"], "selectors": []},
                       {"name": "b", "critical": False, "depends_on": ["a"], "selectors": []}]}
    with pytest.raises(CircularDependency):
        processing_order(parse_strategy(data))


def test_strategy_data_round_trips() -> None:
    strategy = example_strategy()
    assert parse_strategy(strategy_data(strategy)) == strategy


def doc(schema: str, name: str, data: object) -> dict[str, object]:
    return {"schema": schema, "metadata": {"name": name}, "data": data}


def test_the_configuration_names_the_strategy_with_deployment_strategy_by_default() -> None:
    config = doc("shipyard/DeploymentConfiguration/v1", "deployment-configuration",
                 {"physical_provisioner": {"deployment_strategy": "other"}})
    other = doc("shipyard/DeploymentStrategy/v1", "other", {"groups": []})
    default = doc("shipyard/DeploymentStrategy/v1", "deployment-strategy", example_data())
    assert strategy_of([config, other, default]).name == "other"
    assert strategy_of([default]) == parse_strategy(example_data(), "deployment-strategy")


def test_without_a_strategy_all_nodes_form_one_critical_group_needing_100_percent() -> None:
    strategy = strategy_of([doc("shipyard/DeploymentConfiguration/v1",
                                "deployment-configuration", {"physical_provisioner": {}})])
    assert strategy == default_strategy()
    [group] = strategy.groups
    assert group.critical and group.selects_all and not group.depends_on
    assert group.success_criteria.percent_successful_nodes == 100


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 7), max_size=3), min_size=1, max_size=8))
def test_the_order_is_networkx_lexicographical_topological_order(
        deps: list[list[int]]) -> None:
    names = [f"g{i}" for i in range(len(deps))]
    depends = {n: [f"g{d}" for d in ds] for n, ds in zip(names, deps, strict=True)}
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(names)
    graph.add_edges_from((d, n) for n, ds in depends.items() for d in ds if d in names)
    position = {n: i for i, n in enumerate(names)}
    try:
        expected: list[str] | None = list(
            nx.lexicographical_topological_sort(graph, key=position.__getitem__))
    except nx.NetworkXUnfeasible:
        expected = None
    assert ordered_by_dependencies(position, depends) == expected
