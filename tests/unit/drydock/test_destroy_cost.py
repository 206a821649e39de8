"""What a destroyed node costs Drydock's database with fake drivers: write transactions and
statements per node stay under a ceiling (the worker's CPU per node follows them), and the
audit chain still holds every change, entry for entry."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import event

from common import audit as chain
from tests.unit.drydock.conftest import SiteFactory
from tests.unit.drydock.test_orchestrator import names, run_task

NODES = 20
# Reached: 15.45 write transactions and 122.3 statements per node (BEGIN included); while
# each accepted request was saved on its own, 17.45 and 126.3; before the step writes ran as
# Core statements, 17.45 and 143.2. The margin holds one more progress save per node (at most
# 7 statements), which a slow machine can add: a waiting step's unchanged retry is saved
# again after 5 s.
MAX_WRITES_PER_NODE = 16.5
MAX_STATEMENTS_PER_NODE = 130.0


def test_a_destroyed_node_costs_at_most_the_pinned_writes_and_statements(
        make_site: SiteFactory) -> None:
    nodes = [f"n{i:03d}" for i in range(NODES)]
    site = make_site(nodes)
    engine = site.runtime.store.engine
    seen: Counter[str] = Counter()

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen["statements"] += 1
        seen["writes"] += statement == "BEGIN IMMEDIATE"

    event.listen(engine, "before_cursor_execute", count)
    try:
        task = run_task(site, "destroy_nodes", names(*nodes))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert task["result"]["status"] == "success"
    assert sorted(task["result"]["successes"]) == nodes
    writes, statements = seen["writes"] / NODES, seen["statements"] / NODES
    assert writes <= MAX_WRITES_PER_NODE, f"{writes:.2f} write transactions per node"
    assert statements <= MAX_STATEMENTS_PER_NODE, f"{statements:.1f} statements per node"
    with engine.connect() as conn:
        verified = chain.verify(conn)
        assert verified.ok, verified.broken
        steps_ended = [e for e in chain.entries(conn, stream="drydock.tasks", limit=1000)
                       if e["change"] == "state" and (e.get("detail") or {}).get("step")]
    # every node's every step ended in the chain (its start and end audited as before)
    assert {e["detail"]["node"] for e in steps_ended} == set(nodes)
