"""JSON as stored and sent: one recursive alias instead of `Any` for values of unknown shape."""

from __future__ import annotations

from typing import TypeAlias, Union

# Union and quoted names: a recursive alias that is also a real object at run time (SQLAlchemy
# reads `Mapped[...]` annotations).
JSON: TypeAlias = Union[dict[str, "JSON"], list["JSON"], str, int, float, bool, None]  # noqa: UP007
JSONObject: TypeAlias = dict[str, JSON]


def as_list(value: JSON) -> list[JSON]:
    """`value` when it is an array, else no items (a value stored by this code is one)."""
    return value if isinstance(value, list) else []


def as_float(value: JSON, default: float) -> float:
    """`value` as a number (a number or a numeric string), else `default`."""
    return float(value) if isinstance(value, int | float | str) else default


def as_object(value: JSON) -> JSONObject:
    """`value` when it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_int(value: JSON) -> int:
    """`value` as int() reads it; TypeError, as int() raises, for null, arrays and objects."""
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"not a number: {value!r}")


def member(value: JSON, *keys: str) -> JSON:
    """The member at `keys` of nested objects (`member(v, "a", "b")` is v["a"]["b"]), None
    where one is missing or not an object."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def as_str(value: JSON) -> str | None:
    """`value` when it is a string, else None."""
    return value if isinstance(value, str) else None
