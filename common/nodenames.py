"""The one check of node names at a service's edge: their syntax and limits, as Kubernetes
checks a Node's name (an RFC 1123 DNS subdomain). Inner layers take the checked, typed result
(`NodeNames`) and never check the names again."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from common.errors import InvalidNodeName
from common.status import Message, validation_message

MAX_NODE_NAME = 253  # a Kubernetes node name is a DNS subdomain (IsDNS1123Subdomain)
MAX_LABEL = 63  # a DNS label (RFC 1123); a node name is a host name
# k8s.io/apimachinery/pkg/util/validation: dns1123SubdomainFmt
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
SYNTAX = ("a node name is a lowercase RFC 1123 DNS subdomain: letters a-z, digits, '-' and "
          "'.', starting and ending with a letter or digit, at most 63 characters between "
          "dots")
SHOWN = 80  # characters of a refused name quoted back (escaped) in a message


class NodeNames(tuple[str, ...]):
    """Node names that passed `check_names`: strings, stripped, valid node names (DNS
    subdomains of at most MAX_NODE_NAME characters), each once, in the order given."""

    __slots__ = ()


def name_problem(name: str) -> str | None:
    """Why `name` is not a valid node name, or None when it is one."""
    if not name:
        return "a node name cannot be empty"
    if len(name) > MAX_NODE_NAME:
        return f"longer than {MAX_NODE_NAME} characters ({len(name)})"
    if not DNS1123_SUBDOMAIN.fullmatch(name):
        return SYNTAX
    if any(len(label) > MAX_LABEL for label in name.split(".")):
        return f"a part between dots is longer than {MAX_LABEL} characters"
    return None


def is_node_name(name: object) -> bool:
    return isinstance(name, str) and name_problem(name) is None


def shown(name: object) -> str:
    """A refused name as a message quotes it: escaped (no control or bidi character reaches a
    terminal or a page), and shortened."""
    if not isinstance(name, str):
        return f"a {type(name).__name__}"
    text = ascii(name[:SHOWN])
    return text if len(name) <= SHOWN else f"{text}... ({len(name)} characters)"


@dataclass(frozen=True)
class NameCheck:
    """What `check_names` found; each edge words the problems in its own API's terms."""

    names: NodeNames
    given: int  # how many items were given
    bad_items: int = 0  # not strings, or empty
    too_long: int = 0  # longer than MAX_NODE_NAME
    over_limit: bool = False  # more items than the edge accepts
    invalid: tuple[tuple[str, str], ...] = ()  # (name, why) of each non-empty bad name

    @property
    def ok(self) -> bool:
        return not (self.bad_items or self.too_long or self.over_limit or self.invalid)

    def messages(self, where: str, check: str = "NodeName") -> list[Message]:
        """One ValidationMessage per refused item: each bad name, and the empty or non-string
        items."""
        out = [validation_message(f"{where}: {shown(name)} is not a valid node name: {why}",
                                  name=check) for name, why in self.invalid]
        if self.bad_items:
            out.append(validation_message(f"{where}: {self.bad_items} item(s) are empty or not "
                                          "strings", name=check))
        return out


def split_names(value: object) -> list[object] | None:
    """The items of a list or of a comma-separated string of names; None for other types."""
    if isinstance(value, str):
        return list(value.split(","))
    if isinstance(value, list):
        return value
    return None


def check_names(items: Sequence[object], limit: int | None = None) -> NameCheck:
    """Check each item once (counted before any other work, so a huge list costs little)."""
    if limit is not None and len(items) > limit:
        return NameCheck(NodeNames(), len(items), over_limit=True,
                         too_long=sum(1 for i in items if isinstance(i, str)
                                      and len(i.strip()) > MAX_NODE_NAME))
    names = [i.strip() for i in items if isinstance(i, str) and i.strip()]
    invalid = [(n, why) for n in names if (why := name_problem(n)) is not None]
    refused = {n for n, _ in invalid}
    return NameCheck(NodeNames(dict.fromkeys(n for n in names if n not in refused)),
                     len(items), bad_items=len(items) - len(names),
                     too_long=sum(1 for n in names if len(n) > MAX_NODE_NAME),
                     invalid=tuple(dict.fromkeys(invalid)))


def require_names(items: Iterable[object], where: str) -> NodeNames:
    """The names of `items`, or InvalidNodeName (400) listing every refused item."""
    found = check_names(list(items))
    if not found.ok:
        raise InvalidNodeName(f"{where} holds names that are not valid node names",
                              messages=found.messages(where))
    return found.names


def require_name(name: object, where: str = "node name") -> str:
    """A node name taken as it is (a path parameter: not stripped), or InvalidNodeName (400)."""
    why = name_problem(name) if isinstance(name, str) else "not a string"
    if why is not None:
        raise InvalidNodeName(f"{shown(name)} is not a valid node name: {why}",
                              messages=[validation_message(
                                  f"{where}: {shown(name)} is not a valid node name: {why}",
                                  name="NodeName")])
    return str(name)
