"""Deckhand substitution: copy a value from a source document into a destination's data."""

from __future__ import annotations

import re
from typing import Any

from shipyard_api.documents import jsonpath
from shipyard_api.documents.layering import Doc, problem

Sources = dict[tuple[str, str], Doc]


class _Failed(Exception):
    def __init__(self, check: str, text: str) -> None:
        super().__init__(text)
        self.check = check


def substitute(doc: Doc, sources: Sources) -> None:
    """Apply `doc`'s metadata.substitutions in order; every failure is listed in its problems
    (Deckhand stops at the first) and leaves that destination unchanged."""
    for sub in doc.substitutions:
        if not isinstance(sub, dict) or not isinstance(sub.get("src"), dict) \
                or not isinstance(sub.get("dest"), (dict, list)):
            continue  # malformed: reported as InvalidDocumentFormat
        src, dest = sub["src"], sub["dest"]
        source = sources.get((str(src.get("schema")), str(src.get("name"))))
        if source is None:
            doc.problems.append(problem(
                "SubstitutionSourceNotFound", f"Required substitution source document "
                f"[{src.get('schema')}] {src.get('name')} was not found, yet is referenced by "
                f"{doc.shown()}", doc))
            continue
        try:
            value = source_value(source, src)
            for one in dest if isinstance(dest, list) else [dest]:
                if isinstance(one, dict):
                    doc.data = inject(doc.data, value, one)
        except _Failed as exc:
            doc.problems.append(problem(exc.check, f"{doc.shown()} substituting from "
                                        f"{source.shown()}: {exc}", doc, source))
            continue
        doc.tainted = doc.tainted or source.encrypted or source.tainted


def source_value(source: Doc, src: dict[str, Any]) -> Any:
    """The value a substitution takes: at `src.path` in a mapping's data, else the data itself
    (a Passphrase's string), cut by `src.pattern` / `match_group` when given."""
    path = str(src.get("path", "."))
    try:
        value = jsonpath.get(source.data, path) if isinstance(source.data, dict) else source.data
    except jsonpath.PathError as exc:
        raise _Failed("InvalidPath", str(exc)) from exc
    if value is None:
        raise _Failed("SubstitutionSourceDataNotFound", f"required substitution source data "
                      f"was not found at path {path}")
    pattern = src.get("pattern")
    if pattern is None:
        return value
    if not isinstance(value, str):
        raise _Failed("InvalidDocumentFormat", "src.pattern needs a string source value")
    try:
        found = re.search(pattern, value)
        return found.group(int(src.get("match_group", 0))) if found else value
    except (re.error, IndexError) as exc:
        raise _Failed("InvalidDocumentFormat", f"src.pattern {pattern!r}: {exc}") from exc


def inject(data: Any, value: Any, dest: dict[str, Any]) -> Any:
    """`data` with `value` written at `dest.path`, or put in place of `dest.pattern` in the
    string there (in every matching string below it with `recurse`)."""
    path, pattern = str(dest.get("path", ".")), dest.get("pattern")
    try:
        if pattern is None:
            new = jsonpath.put(data, path, value)
        else:
            current = jsonpath.get(data, path) if jsonpath.exists(data, path) else None
            new = jsonpath.put(data, path, _replaced(current, str(pattern), str(value),
                                                     dest.get("recurse"), path))
    except jsonpath.PathError as exc:
        raise _Failed("InvalidPath", str(exc)) from exc
    except re.error as exc:
        raise _Failed("InvalidDocumentFormat", f"dest.pattern {pattern!r}: {exc}") from exc
    if isinstance(data, dict) and isinstance(new, dict):
        return {**data, **new}
    if new:
        return new
    raise _Failed("InvalidPath", f"no data was substituted at {path}")


def _replaced(current: Any, pattern: str, value: str, recurse: Any, path: str) -> Any:
    if isinstance(recurse, dict) and isinstance(current, (dict, list)):
        return _recursive(current, pattern, value, 0, int(recurse.get("depth", -1)))
    if not isinstance(current, str):
        raise _Failed("MissingDocumentPattern", f"the destination's data is missing the "
                      f"pattern {pattern} at path {path}")
    return re.sub(pattern, lambda _: value, current)


def _recursive(node: Any, pattern: str, value: str, depth: int, max_depth: int) -> Any:
    """Every string below `node` that matches `pattern`, `max_depth` levels down (-1: all)."""
    if depth == max_depth:
        return node
    items = node.items() if isinstance(node, dict) else enumerate(node)
    out: Any = {} if isinstance(node, dict) else [None] * len(node)
    for key, child in items:
        if isinstance(child, str) and re.search(pattern, child):
            out[key] = re.sub(pattern, lambda _: value, child)
        elif isinstance(child, (dict, list)):
            out[key] = _recursive(child, pattern, value, depth + 1, max_depth)
        else:
            out[key] = child
    return out
