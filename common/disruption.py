"""An operator's leave to disrupt named PodDisruptionBudgets after a deadline: its one check.

Shipyard takes it as action parameters (`disrupt-pdbs: [{namespace, name}]`,
`disrupt-after: seconds`), Promenade as query parameters of drain and decommission
(`disrupt-pdbs=namespace/name,...`, `disrupt-after=seconds`); both check it here, so both
refuse the same things with the same words (every problem listed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from common.nodenames import DNS1123_SUBDOMAIN, shown

MAX_DISRUPT_AFTER = 86400  # one day: a leave to disrupt never waits longer than that
MAX_BUDGETS = 50  # budgets named in one leave
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # a namespace's name
PDBS, AFTER = "disrupt-pdbs", "disrupt-after"


@dataclass(frozen=True)
class Leave:
    """Budgets ("namespace/name") whose pods may be deleted once they have blocked a drain
    for `after` seconds."""

    budgets: tuple[str, ...]
    after: int

    def wire(self) -> list[dict[str, str]]:
        """As Shipyard's parameter: [{namespace, name}]."""
        return [dict(zip(("namespace", "name"), key.split("/", 1), strict=True))
                for key in self.budgets]


def _namespace_problem(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return "a namespace is a non-empty string"
    if len(value) > 63 or not DNS1123_LABEL.fullmatch(value):
        return "a namespace is a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63)"
    return None


def _name_problem(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return "a name is a non-empty string"
    if len(value) > 253 or not DNS1123_SUBDOMAIN.fullmatch(value):
        return ("a PodDisruptionBudget's name is a lowercase RFC 1123 subdomain (a-z, 0-9, "
                "'-', '.'; at most 253)")
    return None


def check_budget(namespace: object, name: object, where: str) -> tuple[str | None, list[str]]:
    """"namespace/name", or None and the problems of that entry."""
    problems = [f"{where}: {p}" for p in (_namespace_problem(namespace), _name_problem(name))
                if p]
    return (None, problems) if problems else (f"{namespace}/{name}", [])


def check_after(value: object) -> tuple[int | None, list[str]]:
    """Whole seconds from 0 to MAX_DISRUPT_AFTER (a digit string is accepted)."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        return None, [f"{AFTER} must be a whole number of seconds, not {shown(value)}"]
    if not 0 <= value <= MAX_DISRUPT_AFTER:
        return None, [f"{AFTER} must be between 0 and {MAX_DISRUPT_AFTER} seconds, not {value}"]
    return value, []


def check_leave(budgets: list[tuple[object, object]] | None, after: object,
                given: bool) -> tuple[Leave | None, list[str]]:
    """The leave from its two parts (`budgets` None: not given); both or neither."""
    problems: list[str] = []
    if budgets is None and not given:
        return None, []
    if budgets is None:
        return None, [f"{AFTER} needs {PDBS}: name the PodDisruptionBudgets it is for"]
    if not budgets:
        problems.append(f"{PDBS} must name at least one PodDisruptionBudget")
    if len(budgets) > MAX_BUDGETS:
        problems.append(f"{PDBS} names {len(budgets)} budgets; at most {MAX_BUDGETS}")
    keys: list[str] = []
    for i, (namespace, name) in enumerate(budgets[:MAX_BUDGETS]):
        key, found = check_budget(namespace, name, f"{PDBS}[{i}]")
        problems += found
        if key is not None and key in keys:
            problems.append(f"{PDBS}[{i}]: {key} is named twice")
        elif key is not None:
            keys.append(key)
    seconds: int | None = None
    if not given:
        problems.append(f"{PDBS} needs {AFTER}: the seconds a named budget must have blocked "
                        f"the drain before its pods are deleted (at most {MAX_DISRUPT_AFTER})")
    else:
        seconds, found = check_after(after)
        problems += found
    if problems or seconds is None:
        return None, problems
    return Leave(tuple(keys), seconds), []


def from_wire(value: object) -> tuple[list[tuple[object, object]] | None, list[str]]:
    """Shipyard's parameter: a list of {namespace, name} objects, or (as the CLI's --param
    gives it) the query form: namespace/name, comma-separated."""
    if value is None:
        return None, []
    if isinstance(value, str):
        return from_query(value), []
    if not isinstance(value, list):
        return [], [f"{PDBS} must be a list of {{namespace, name}} objects or "
                    "namespace/name,..."]
    out: list[tuple[object, object]] = []
    problems = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            problems.append(f"{PDBS}[{i}] must be an object {{namespace, name}}, not "
                            f"{shown(item)}")
            continue
        extra = sorted(str(k) for k in item if k not in ("namespace", "name"))
        if extra:
            problems.append(f"{PDBS}[{i}]: unknown field(s) {', '.join(extra)}")
        out.append((item.get("namespace"), item.get("name")))
    return out, problems


def from_query(value: str | None) -> list[tuple[object, object]] | None:
    """Promenade's query parameter: namespace/name, comma-separated."""
    if value is None:
        return None
    out: list[tuple[object, object]] = []
    for item in (i.strip() for i in value.split(",")):
        namespace, sep, name = item.partition("/")
        out.append((namespace, name) if sep else (None, item))
    return out


def to_query(leave: Leave) -> dict[str, str]:
    return {PDBS: ",".join(leave.budgets), AFTER: str(leave.after)}
