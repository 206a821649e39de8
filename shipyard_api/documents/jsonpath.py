"""Deckhand's paths into a document's data (`.`, `.a.b`, `$.a[0].b`): read, write, delete."""

from __future__ import annotations

import copy
import re

from common.jsontypes import JSON

Step = str | int
_TOKEN = re.compile(r"""\.(?P<key>[^.\[\]'"]+)|\[(?P<index>\d+)\]"""
                    r"""|\[(?P<q>['"])(?P<quoted>.*?)(?P=q)\]|\.(?P<q2>['"])(?P<quoted2>.*?)(?P=q2)""")


class PathError(ValueError):
    """A path Berth cannot follow, or a write that meets data of the wrong shape."""


def normalize(path: str) -> str:
    """`.` → `$`, `.a` → `$.a` (Deckhand's spelling); anything else must start with `$`."""
    path = path.strip()
    if path == ".":
        return "$"
    if path.startswith("."):
        return "$" + path
    return path


def parse(path: str) -> list[Step]:
    """The keys and list indices a path names; `$` is the whole data."""
    norm = normalize(path)
    if not (norm == "$" or norm.startswith(("$.", "$["))):
        raise PathError(f"path {path!r} does not begin with '.' or '$'")
    steps: list[Step] = []
    pos = 1
    while pos < len(norm):
        match = _TOKEN.match(norm, pos)
        if match is None:
            raise PathError(f"path {path!r} is not supported at {norm[pos:]!r} "
                            "(keys, quoted keys and [index] only)")
        if match.group("index") is not None:
            steps.append(int(match.group("index")))
        else:
            key = match.group("key") or match.group("quoted") or match.group("quoted2") or ""
            steps.append(key)
        pos = match.end()
    return steps


def get(data: JSON, path: str) -> JSON:
    """The value at `path`, or None when it is absent (Deckhand treats null as absent too)."""
    node = data
    for step in parse(path):
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return None
            node = node[step]
        else:
            if not isinstance(node, dict) or step not in node:
                return None
            node = node[step]
    return node


def exists(data: JSON, path: str) -> bool:
    node = data
    for step in parse(path):
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return False
        elif not isinstance(node, dict) or step not in node:
            return False
        node = _child(node, step)
    return True


def put(data: JSON, path: str, value: JSON) -> JSON:
    """`data` (a copy) with `value` at `path`; missing keys are created as `{}` and missing
    list entries as `{}` padding, as Deckhand expands a destination path."""
    steps = parse(path)
    if not steps:
        return copy.deepcopy(value)
    root = copy.deepcopy(data)
    node = root
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        nxt: JSON = [] if not last and isinstance(steps[i + 1], int) else {}
        if isinstance(step, int):
            if not isinstance(node, list):
                raise PathError(f"cannot create {path}: {_shown(steps[:i])} is not a list")
            while len(node) <= step:
                node.append({})
            if last:
                node[step] = copy.deepcopy(value)
            else:
                node = node[step]
            continue
        if not isinstance(node, dict):
            raise PathError(f"cannot create {path}: {_shown(steps[:i])} is not a mapping")
        if step not in node:
            node[step] = nxt
        if last:
            node[step] = copy.deepcopy(value)
        else:
            node = node[step]
    return root


def delete(data: JSON, path: str) -> JSON:
    """`data` (a copy) without the entry at `path` (which exists: see `get`); `$` leaves `{}`."""
    steps = parse(path)
    if not steps:
        return {}
    root = copy.deepcopy(data)
    node = root
    for step in steps[:-1]:
        node = _child(node, step)
    last = steps[-1]
    if isinstance(node, dict):
        node.pop(str(last))
    elif isinstance(node, list):
        node.pop(int(last))
    return root


def _child(node: JSON, step: Step) -> JSON:
    """The entry `step` of a mapping or list (KeyError or IndexError when there is none)."""
    if isinstance(node, dict) and isinstance(step, str):
        return node[step]
    if isinstance(node, list) and isinstance(step, int):
        return node[step]
    raise KeyError(step)


def _shown(steps: list[Step]) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)
