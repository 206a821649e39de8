"""What Shipyard's and Drydock's workflow engines share: states as enums with transition
tables, and the one helper that applies such a table, raising the one transition error."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import TypeVar

from common.errors import Conflict

E = TypeVar("E", bound=StrEnum)


class IllegalTransition(Conflict):
    """A state change its transition table does not allow (409)."""

    reason, title = "InvalidStateTransition", "Conflict"


def transition(table: Mapping[E, frozenset[E]], current: E, target: E, what: str, *,
               reason: str | None = None, title: str | None = None) -> E:
    """`target` when `table` allows `current` -> `target`; else IllegalTransition saying
    "<what> cannot go from <current> to <target>" (`reason` and `title` as given)."""
    if target not in table[current]:
        raise IllegalTransition(f"{what} cannot go from {current.value} to {target.value}",
                                reason=reason, title=title)
    return target
