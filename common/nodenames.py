"""The one check of node names at a service's edge: their syntax and limits. Inner layers take
the checked, typed result (`NodeNames`) and never check the names again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_NODE_NAME = 253  # a Kubernetes node name is a DNS subdomain


class NodeNames(tuple[str, ...]):
    """Node names that passed `check_names`: strings, stripped, non-empty, at most
    MAX_NODE_NAME characters, each once, in the order given."""

    __slots__ = ()


@dataclass(frozen=True)
class NameCheck:
    """What `check_names` found; each edge words the problems in its own API's terms."""

    names: NodeNames
    given: int  # how many items were given
    bad_items: int = 0  # not strings, or empty
    too_long: int = 0  # longer than MAX_NODE_NAME
    over_limit: bool = False  # more items than the edge accepts

    @property
    def ok(self) -> bool:
        return not (self.bad_items or self.too_long or self.over_limit)


def split_names(value: Any) -> list[Any] | None:
    """The items of a list or of a comma-separated string of names; None for other types."""
    if isinstance(value, str):
        return value.split(",")
    if isinstance(value, list):
        return value
    return None


def check_names(items: list[Any], limit: int | None = None) -> NameCheck:
    """Check each item once (counted before any other work, so a huge list costs little)."""
    if limit is not None and len(items) > limit:
        return NameCheck(NodeNames(), len(items), over_limit=True,
                         too_long=sum(1 for i in items if isinstance(i, str)
                                      and len(i.strip()) > MAX_NODE_NAME))
    names = [i.strip() for i in items if isinstance(i, str) and i.strip()]
    long = [n for n in names if len(n) > MAX_NODE_NAME]
    return NameCheck(NodeNames(dict.fromkeys(n for n in names if len(n) <= MAX_NODE_NAME)),
                     len(items), bad_items=len(items) - len(names), too_long=len(long))
