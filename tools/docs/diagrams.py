"""State machines drawn from the code's own transition tables (Mermaid), so the docs cannot drift.

A page asks for one with a marker line `<!-- berth:diagram NAME -->`; `expand` replaces the
marker with the diagram at build time. `step_lists` gives the steps of the actions as their
definitions list them (the architecture page shows them next to the hand-drawn sequence).
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

MARKER = re.compile(r"^<!--\s*berth:(diagram|steps|contracts)\s+([\w.-]+)\s*-->\s*$", re.M)
ROOT = Path(__file__).resolve().parents[2]
E = TypeVar("E", bound=Enum)


@dataclass(frozen=True)
class Machine:
    """One state machine: its states in order (the first is where it starts), its edges
    (source, target, label), and where the table lives."""

    title: str
    source: str
    states: tuple[str, ...]
    edges: tuple[tuple[str, str, str], ...]

    def terminal(self) -> tuple[str, ...]:
        leaving = {s for s, t, _ in self.edges if s != t}
        return tuple(s for s in self.states if s not in leaving)


def _from_table(title: str, source: str, table: Mapping[E, frozenset[E]],
                labels: Mapping[tuple[str, str], str] | None = None) -> Machine:
    states = tuple(str(s.value) for s in table)
    edges = tuple((str(s.value), str(t.value), (labels or {}).get((s.value, t.value), ""))
                  for s, targets in table.items()
                  for t in sorted(targets, key=lambda e: list(table).index(e)))
    return Machine(title, source, states, edges)


def shipyard_action() -> Machine:
    from shipyard_api.workflow import states

    labels: dict[tuple[str, str], str] = {}
    for verb, target in states.CONTROLS.items():
        for source in states.CONTROL_SOURCES[verb]:
            labels[(source.value, target.value)] = verb
    return _from_table("Shipyard action", "shipyard_api/workflow/states.py ACTION_TRANSITIONS "
                       "(edge labels: CONTROLS, the control verbs)",
                       states.ACTION_TRANSITIONS, labels)


def shipyard_step() -> Machine:
    from shipyard_api.workflow import states

    return _from_table("Shipyard step", "shipyard_api/workflow/states.py STEP_TRANSITIONS",
                       states.STEP_TRANSITIONS)


def drydock_task() -> Machine:
    from drydock_api.db import states

    return _from_table("Drydock task", "drydock_api/db/states.py TRANSITIONS",
                       states.TRANSITIONS)


def drydock_reboot() -> Machine:
    from drydock_api.nodes import reboot

    return _from_table("Drydock node reboot phase", "drydock_api/nodes/reboot.py TRANSITIONS",
                       reboot.TRANSITIONS)


def machine_lifecycle() -> Machine:
    """A node's machine in MAAS: each operation's way from where it may start, through its
    transitional status, to success or failure (sitesim/maas/statuses.py OPERATIONS)."""
    from sitesim.maas.statuses import OPERATIONS, Status

    edges: list[tuple[str, str, str]] = []
    for op in OPERATIONS.values():
        entry = op.transitional or op.success
        for start in sorted(op.allowed_from, key=lambda s: s.code):
            if start != entry:
                edges.append((start.label, entry.label, op.name))
        if op.transitional is not None:
            edges.append((op.transitional.label, op.success.label, "done"))
            if op.failure is not None:
                edges.append((op.transitional.label, op.failure.label, "fails"))
    seen = dict.fromkeys(e for e in edges)
    return Machine("Machine in MAAS (the node's provisioning lifecycle)",
                   "sitesim/maas/statuses.py OPERATIONS (MAAS 2.x statuses)",
                   tuple(s.label for s in Status), tuple(seen))


MACHINES: dict[str, Callable[[], Machine]] = {
    "shipyard-action": shipyard_action,
    "shipyard-step": shipyard_step,
    "drydock-task": drydock_task,
    "drydock-reboot": drydock_reboot,
    "machine-lifecycle": machine_lifecycle,
}


def _node_id(state: str) -> str:
    return "s_" + re.sub(r"\W+", "_", state.lower())


def mermaid(machine: Machine) -> str:
    """A Mermaid stateDiagram-v2 of `machine`: [*] → its first state; terminal states → [*]."""
    lines = ["stateDiagram-v2", "    direction LR"]
    lines += [f'    state "{s}" as {_node_id(s)}' for s in machine.states]
    lines.append(f"    [*] --> {_node_id(machine.states[0])}")
    for source, target, label in machine.edges:
        suffix = f" : {label}" if label else ""
        lines.append(f"    {_node_id(source)} --> {_node_id(target)}{suffix}")
    lines += [f"    {_node_id(s)} --> [*]" for s in machine.terminal()]
    return "\n".join(lines)


def render(name: str) -> str:
    """The markdown that replaces a diagram marker: the diagram and its source table."""
    machine = MACHINES[name]()
    ends = machine.terminal()
    terminal = (f"final states: {', '.join(f'`{s}`' for s in ends)}" if ends else
                f"no final state: it cycles, `{machine.states[0]}` is where it starts")
    return (f"```mermaid\n{mermaid(machine)}\n```\n\n"
            f"*Drawn at build time from `{machine.source}`; {terminal}.*\n")


# Options that add steps to a Drydock action (shown as "(with option: value)").
STEP_OPTIONS: dict[str, dict[str, object]] = {"destroy_nodes": {"retire": True}}


def step_lists() -> dict[str, list[str]]:
    """Each action's steps in order: Shipyard's action definitions and Drydock's per-node
    step lists (the options that add steps given where they matter)."""
    from drydock_api.tasks.actions import build_actions
    from shipyard_api.catalog import definitions

    out = {f"shipyard:{name}": [s.name + (" (per node)" if s.per_node else "")
                                for s in definition.steps]
           for name, definition in definitions().items()}
    for name, action in build_actions().items():
        if action.steps is None:
            continue
        plain = [s.name for s in action.steps({})]
        out[f"drydock:{name}"] = plain
        for option, value in STEP_OPTIONS.get(name, {}).items():
            more = [s.name for s in action.steps({option: value})]
            out[f"drydock:{name}"] = [n if n in plain else f"{n} (with {option}: "
                                      f"{str(value).lower()})" for n in more]
    return out


def render_steps(name: str) -> str:
    lists = step_lists()
    wanted = [k for k in lists if k.split(":")[0] == name or k == name]
    if not wanted:
        raise KeyError(name)
    rows = ["| action | steps, in order |", "| --- | --- |"]
    rows += [f"| `{key.split(':', 1)[1]}` | " + " → ".join(f"`{s}`" for s in lists[key]) + " |"
             for key in wanted]
    return "\n".join(rows) + "\n"


def contracts(path: Path | None = None) -> list[dict[str, Any]]:
    """The import contracts of .importlinter: name, type, and the modules each one names."""
    parser = configparser.ConfigParser()
    parser.read(path or ROOT / ".importlinter")
    out = []
    for section in parser.sections():
        if not section.startswith("importlinter:contract:"):
            continue
        body = parser[section]
        keys = [k for k in ("layers", "modules", "source_modules", "forbidden_modules",
                            "ancestors", "ignore_imports") if k in body]
        out.append({"id": section.rsplit(":", 1)[1], "name": body.get("name", ""),
                    "type": body.get("type", ""),
                    **{k: [line.strip() for line in body[k].strip().splitlines()]
                       for k in keys}})
    return out


def _modules(key: str, lines: list[str]) -> str:
    if key == "layers":  # top first; modules on one line are independent of each other
        return " above ".join(" \\| ".join(f"`{m.strip()}`" for m in line.split("|"))
                              for line in lines)
    return ", ".join(f"`{line}`" for line in lines)


def render_contracts(_: str) -> str:
    rows = ["| contract | type | what it checks |", "| --- | --- | --- |"]
    for c in contracts():
        what = "; ".join(f"{k.replace('_', ' ')}: {_modules(k, c[k])}" for k in c
                         if k not in ("id", "name", "type"))
        name = str(c["name"]).replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
        rows.append(f"| {name} | `{c['type']}` | {what} |")
    return "\n".join(rows) + "\n\n*Read at build time from `.importlinter`; `lint-imports` " \
        "(in `make lint`) enforces it.*\n"


def expand(markdown: str) -> str:
    """Replace every marker line with its generated content; an unknown name is an error."""
    def one(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        if kind == "diagram":
            if name not in MACHINES:
                raise KeyError(f"unknown diagram {name!r} (known: {', '.join(MACHINES)})")
            return render(name)
        if kind == "contracts":
            return render_contracts(name)
        return render_steps(name)

    return MARKER.sub(one, markdown)
