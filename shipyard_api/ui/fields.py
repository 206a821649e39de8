"""Reading the JSON views the pages show (an action, a plan, a step), whose values are of any
JSON shape: a list where a list is expected, else none; a mapping, else an empty one."""

from __future__ import annotations

from collections.abc import Mapping


def entries(value: object) -> list[object]:
    """`value`'s items when it is a list (or tuple), else none (a missing or null list)."""
    return list(value) if isinstance(value, list | tuple) else []


def fields(value: object) -> Mapping[str, object]:
    """`value` when it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def mappings(value: object) -> list[Mapping[str, object]]:
    """The mappings among `value`'s items (see `entries`)."""
    return [v for v in entries(value) if isinstance(v, Mapping)]


def number(value: object) -> int:
    """`value` as a whole number (a number or a numeric string), else 0."""
    return int(value) if isinstance(value, int | float | str) and value else 0


def text(value: object) -> str | None:
    """`value` as text, None when it is empty or missing."""
    return str(value) if value else None
