"""What an action's steps cost Shipyard's database: a redeploy on fake peers stays under a
ceiling of statements per step (the engine's own time between steps follows them), and the
audit chain still holds every step's every change."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import event

from common import audit as chain
from tests.unit.shipyard.conftest import Harness

# Reached: 27.3 statements per step of a redeploy (410 for its 15 steps), as before each
# step's save ran as Core statements built once and its audit entry went through
# `append_many`: the count pins the shape; what those changes removed was building the
# statements anew and running them through the ORM on every save (30 redeploys on fake peers
# took 0.22-0.28 s each, now 0.11-0.16 s on the same machine).
MAX_STATEMENTS_PER_STEP = 29.0


def test_a_step_costs_at_most_the_pinned_statements_and_is_audited(harness: Harness) -> None:
    harness.commit(tag="site-action-success")
    seen: Counter[str] = Counter()

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen["statements"] += 1

    event.listen(harness.engine_db, "before_cursor_execute", count)
    try:
        action = harness.create("redeploy_server", {"target_nodes": "node01"})
        view = harness.drive(action["id"])
    finally:
        event.remove(harness.engine_db, "before_cursor_execute", count)
    assert view["state"] == "complete", view["message"]
    steps = view["steps"]
    per_step = seen["statements"] / len(steps)
    assert per_step <= MAX_STATEMENTS_PER_STEP, f"{per_step:.1f} statements per step"
    with harness.engine_db.connect() as conn:
        verified = chain.verify(conn)
        assert verified.ok, verified.broken
        ended = {e["object"].rsplit("/", 1)[1] for e in chain.entries(conn, limit=1000)
                 if e["change"] == "state" and e["new"] == "success"
                 and "/step/" in e["object"]}
    assert ended == {s["id"] for s in steps}
