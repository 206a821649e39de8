"""Parsing action parameters; every problem is collected and reported together (400)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from common.errors import InvalidNodeName, ValidationFailed
from common.nodenames import NameCheck, check_names, split_names
from common.status import Message, validation_message

REVISIONS = ("committed", "successful-site-action", "last-site-action")
DEFAULT_MAX_TARGETS = 1000


def check_targets(parameters: object,
                  limit: int = DEFAULT_MAX_TARGETS) -> Mapping[str, object] | None:
    """Shipyard's edge (POST /actions, POST /plans): the target_nodes parameter is checked
    once (common.nodenames: syntax and limits); 400 at once, before anything is planned, when
    it names more than `limit` nodes (ValidationFailure), or holds anything that is not a
    node name as Kubernetes defines it (InvalidNodeName, one message per refused item).
    Returns the parameters with target_nodes replaced by the check, which `Params.nodes`
    takes as it is (its other problems are reported there, with every other parameter's).
    None when there are no parameters (the request's schema allows only an object or null)."""
    if not isinstance(parameters, Mapping):
        return None
    key = next((k for k in parameters if isinstance(k, str) and canonical(k) == "target-nodes"),
               None)
    value = parameters.get(key) if key is not None else None
    items = None if value is None or value in ("", []) else split_names(value)
    if items is None:
        return parameters
    found = check_names(items, limit)
    if found.over_limit:
        raise ValidationFailed("Invalid action parameters", messages=[validation_message(
            f"target_nodes names {found.given} nodes; at most {limit} are accepted "
            "([workflow] max_target_nodes)", name="ActionParameters")])
    if not found.ok:
        raise InvalidNodeName("target_nodes holds names that are not valid node names",
                              messages=found.messages("target_nodes", "ActionParameters"))
    return {**parameters, key: found}


def canonical(name: str) -> str:
    return name.strip().lower().replace("_", "-")


class Params:
    """Reads known parameters from a request, remembering every problem found."""

    def __init__(self, raw: Mapping[str, object], known: Iterable[str]) -> None:
        self.problems: list[Message] = []
        self.known = {canonical(k): k for k in known}
        self.values: dict[str, object] = {}
        for key, value in raw.items():
            if not isinstance(key, str) or canonical(key) not in self.known:
                self.problem(f"Unknown parameter {key!r}; accepted: "
                             f"{', '.join(sorted(self.known.values()))}")
                continue
            self.values[self.known[canonical(key)]] = value

    def problem(self, message: str) -> None:
        self.problems.append(validation_message(message, name="ActionParameters"))

    def nodes(self, key: str, *, required: bool) -> list[str] | None:
        """The node names of `key`, as checked at the edge (`check_targets`); a caller that
        did not come through the edge has them checked here, by the same check."""
        value = self.values.get(key)
        if value is None or value == "" or value == []:
            if required:
                self.problem(f"Parameter {key} is required (a list or a comma-separated string)")
            return None
        if not isinstance(value, NameCheck):
            items = split_names(value)
            if items is None:
                self.problem(f"Parameter {key} must be a list or a comma-separated string")
                return None
            value = check_names(items)
        self.problems += value.messages(key, "ActionParameters")
        return list(value.names)

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
