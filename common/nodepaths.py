"""What a service answers for a path under its node routes that none of them matched: a
name that held '/' once decoded (`a%2F..%2F..`) is refused as a node name, not sent on."""

from __future__ import annotations

import re

import falcon

from common.errors import InvalidNodeName, NotFound
from common.nodenames import is_node_name
from common.policy import check
from common.status import validation_message


class NodePathSink:
    """A falcon sink added after the routes, for paths matching `pattern` (its `rest` group:
    what follows the collection). 400 InvalidNodeName when a part of the rest cannot be in a
    node name ('', '.', '..', ...), else 404; only for a caller `rule` allows (401/403)."""

    def __init__(self, rule: str, pattern: re.Pattern[str]) -> None:
        self._rule = rule
        self.pattern = pattern

    def __call__(self, req: falcon.Request, resp: falcon.Response, **kwargs: str) -> None:
        check(req, self._rule)
        found = self.pattern.match(req.path)
        rest = (found.group("rest") if found else None) or ""
        if all(is_node_name(part) for part in rest.split("/")):
            raise NotFound(f"No route for {req.method} {req.path}")
        message = f"{rest!a} is not a node name (no route for {req.method} {req.path!a})"
        raise InvalidNodeName(message, messages=[validation_message(message, name="NodeName")])


def node_paths(*collections: str) -> re.Pattern[str]:
    """The paths under these collections (e.g. "/api/v1.0/nodes"), the rest in group `rest`."""
    alternatives = "|".join(re.escape(c) for c in collections)
    return re.compile(rf"^(?:{alternatives})(?:/(?P<rest>.*))?$", re.DOTALL)
