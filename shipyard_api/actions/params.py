"""Parsing action parameters; every problem is collected and reported together (400)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from common.errors import ValidationFailed
from common.status import Message, validation_message

REVISIONS = ("committed", "successful-site-action", "last-site-action")
DEFAULT_MAX_TARGETS = 1000
MAX_NODE_NAME = 253  # a Kubernetes node name is a DNS subdomain


def check_target_nodes(parameters: Any, limit: int = DEFAULT_MAX_TARGETS) -> None:
    """400 before anything is planned when target_nodes names more than `limit` nodes or a
    name longer than a node name can be (counted cheaply, whatever the parameter's form)."""
    if not isinstance(parameters, Mapping):
        return
    value = next((v for k, v in parameters.items()
                  if isinstance(k, str) and canonical(k) == "target-nodes"), None)
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        return
    problems = []
    if len(items) > limit:
        problems.append(f"target_nodes names {len(items)} nodes; at most {limit} are accepted "
                        "([workflow] max_target_nodes)")
    long = [i for i in items if isinstance(i, str) and len(i.strip()) > MAX_NODE_NAME]
    if long:
        problems.append(f"{len(long)} target_nodes name(s) are longer than {MAX_NODE_NAME} "
                        "characters")
    if problems:
        raise ValidationFailed("Invalid action parameters", messages=[
            validation_message(p, name="ActionParameters") for p in problems])


def canonical(name: str) -> str:
    return name.strip().lower().replace("_", "-")


class Params:
    """Reads known parameters from a request, remembering every problem found."""

    def __init__(self, raw: Mapping[str, Any], known: Iterable[str]) -> None:
        self.problems: list[Message] = []
        self.known = {canonical(k): k for k in known}
        self.values: dict[str, Any] = {}
        for key, value in raw.items():
            if not isinstance(key, str) or canonical(key) not in self.known:
                self.problem(f"Unknown parameter {key!r}; accepted: "
                             f"{', '.join(sorted(self.known.values()))}")
                continue
            self.values[self.known[canonical(key)]] = value

    def problem(self, message: str) -> None:
        self.problems.append(validation_message(message, name="ActionParameters"))

    def nodes(self, key: str, *, required: bool) -> list[str] | None:
        value = self.values.get(key)
        if value is None or value == "" or value == []:
            if required:
                self.problem(f"Parameter {key} is required (a list or a comma-separated string)")
            return None
        if isinstance(value, str):
            items: list[Any] = value.split(",")
        elif isinstance(value, list):
            items = value
        else:
            self.problem(f"Parameter {key} must be a list or a comma-separated string")
            return None
        names = [str(i).strip() for i in items if isinstance(i, str) and i.strip()]
        if len(names) != len(items):
            self.problem(f"Parameter {key} holds empty or non-string node names")
        return list(dict.fromkeys(names))

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.values.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        self.problem(f"Parameter {key} must be true or false, not {value!r}")
        return default

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.values.get(key, default)
        if not isinstance(value, str) or canonical(value) not in choices:
            self.problem(f"Parameter {key} must be one of {', '.join(choices)}, not {value!r}")
            return default
        return canonical(value)

    def raise_if_invalid(self) -> None:
        if self.problems:
            raise ValidationFailed("Invalid action parameters", messages=self.problems)


def version_of(target_revision: str) -> str:
    """The document store's version name for a target-revision value."""
    return target_revision.replace("-", "_")
