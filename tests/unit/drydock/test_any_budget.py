"""Drydock's code names its types: `Any` stays within a small budget (issue 28, item 3)."""

from __future__ import annotations

import re
from pathlib import Path

import drydock_api

BUDGET = 50  # `Any` words in drydock_api, imports included (464 before the types were named)
WORD = re.compile(r"\bAny\b")


def _count(root: Path) -> dict[str, int]:
    found = {str(p.relative_to(root)): len(WORD.findall(p.read_text()))
             for p in sorted(root.rglob("*.py"))}
    return {path: n for path, n in found.items() if n}


def test_drydock_names_its_types_instead_of_any() -> None:
    counts = _count(Path(drydock_api.__file__).parent)
    total = sum(counts.values())
    assert total <= BUDGET, f"{total} Any in drydock_api (budget {BUDGET}): {counts}"


def test_step_contexts_carry_no_any() -> None:
    """What a step reads and writes (options, state, earlier outputs, teardown) is JSON."""
    root = Path(drydock_api.__file__).parent
    for module in ("tasks/context.py", "tasks/destroy.py", "tasks/lifecycle.py",
                   "tasks/teardown.py", "tasks/wipe.py", "nodes/design.py"):
        assert not WORD.search((root / module).read_text()), module
