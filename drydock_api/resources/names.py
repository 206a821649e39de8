"""Node names at Drydock's edge (common.nodenames): the {name} path parameter and the
node_names of node filters, refused with 400 InvalidNodeName before anything is read or
changed."""

from __future__ import annotations

import falcon

from common.errors import InvalidNodeName
from common.nodenames import check_names, require_name
from common.status import Message


def _name_param(req: falcon.Request, resp: falcon.Response, resource: object,
                params: dict[str, object]) -> None:
    params["name"] = require_name(params.get("name"), "name")


checked_name = falcon.before(_name_param)
"""Below `@authorize`: the {name} path parameter is a node name."""


def check_filter_names(node_filter: object, where: str = "node_filter") -> None:
    """InvalidNodeName listing every string of a filter's node_names that is not a node name
    (the filter's shape is checked elsewhere, with its other problems)."""
    entries = node_filter.get("filter_set") if isinstance(node_filter, dict) else None
    messages: list[Message] = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        names = entry.get("node_names") if isinstance(entry, dict) else None
        if isinstance(names, list):
            found = check_names([n for n in names if isinstance(n, str)])
            messages += found.messages(f"{where}.filter_set[{i}].node_names", "NodeFilter")
    if messages:
        raise InvalidNodeName(f"{where} names nodes that are not valid node names",
                              messages=messages)
