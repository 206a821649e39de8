"""Group ordering: a deterministic topological order (document order among ready groups)."""

from __future__ import annotations

import networkx as nx

from shipyard_api.strategy.model import Strategy


class CircularDependency(ValueError):
    """The strategy's groups depend on each other in a cycle (commit-time checks catch it)."""


def processing_order(strategy: Strategy) -> list[str]:
    """Every group after the groups it depends on; ties broken by position in the document.

    Dependencies on unknown groups are ignored here (the commit-time checks reject them).
    """
    position = {g.name: i for i, g in enumerate(strategy.groups)}
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(position)
    for g in strategy.groups:
        graph.add_edges_from((d, g.name) for d in g.depends_on if d in position)
    try:
        return list(nx.lexicographical_topological_sort(graph, key=lambda n: position[n]))
    except nx.NetworkXUnfeasible as exc:
        raise CircularDependency("The deployment strategy has circular dependencies") from exc
