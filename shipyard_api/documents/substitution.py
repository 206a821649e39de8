"""Deckhand substitution: copy a value from a source document into a destination's data."""

from __future__ import annotations

import re

from common.jsontypes import JSON, JSONObject, as_int
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
        src = sub.get("src") if isinstance(sub, dict) else None
        dest = sub.get("dest") if isinstance(sub, dict) else None
        if not isinstance(src, dict) or not isinstance(dest, (dict, list)):
            continue  # malformed: reported as InvalidDocumentFormat
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


def source_value(source: Doc, src: JSONObject) -> JSON:
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
        found = re.search(str(pattern), value)
        return found.group(as_int(src.get("match_group", 0))) if found else value
    except (re.error, IndexError) as exc:
        raise _Failed("InvalidDocumentFormat", f"src.pattern {pattern!r}: {exc}") from exc


def inject(data: JSON, value: JSON, dest: JSONObject) -> JSON:
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


def _replaced(current: JSON, pattern: str, value: str, recurse: JSON, path: str) -> JSON:
    if isinstance(recurse, dict) and isinstance(current, (dict, list)):
        return _recursive(current, pattern, value, 0, as_int(recurse.get("depth", -1)))
    if not isinstance(current, str):
        raise _Failed("MissingDocumentPattern", f"the destination's data is missing the "
                      f"pattern {pattern} at path {path}")
    return re.sub(pattern, lambda _: value, current)


def _recursive(node: dict[str, JSON] | list[JSON], pattern: str, value: str, depth: int,
               max_depth: int) -> JSON:
    """Every string below `node` that matches `pattern`, `max_depth` levels down (-1: all)."""
    if depth == max_depth:
        return node
    if isinstance(node, dict):
        return {key: _swap(child, pattern, value, depth, max_depth) for key, child in node.items()}
    return [_swap(child, pattern, value, depth, max_depth) for child in node]


def _swap(child: JSON, pattern: str, value: str, depth: int, max_depth: int) -> JSON:
    if isinstance(child, str) and re.search(pattern, child):
        return re.sub(pattern, lambda _: value, child)
    if isinstance(child, (dict, list)):
        return _recursive(child, pattern, value, depth + 1, max_depth)
    return child
