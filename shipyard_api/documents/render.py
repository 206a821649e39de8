"""Rendering a revision: drop abstract documents, apply substitutions, redact secrets."""

from __future__ import annotations

import copy
import re
from typing import Any

from common.documents import doc_ref
from common.status import Message, validation_message

Document = dict[str, Any]
REDACTED = "(redacted)"


def is_encrypted(doc: Document) -> bool:
    return (doc.get("metadata") or {}).get("storagePolicy") == "encrypted"


def redact(doc: Document) -> Document:
    """A copy of `doc` whose data is replaced by a marker when it is a secret."""
    if not is_encrypted(doc):
        return doc
    return {**doc, "data": REDACTED}


def _is_abstract(doc: Document) -> bool:
    layering = (doc.get("metadata") or {}).get("layeringDefinition") or {}
    return bool(isinstance(layering, dict) and layering.get("abstract"))


def _split(path: str) -> list[str]:
    return [p for p in path.strip().lstrip("$").split(".") if p]


def _get(data: Any, path: str) -> Any:
    for part in _split(path):
        if not isinstance(data, dict) or part not in data:
            raise KeyError(path)
        data = data[part]
    return data


def _set(doc: Document, path: str, value: Any, pattern: str | None) -> None:
    parts = _split(path)
    if not parts:
        doc["data"] = _pattern(doc.get("data"), value, pattern)
        return
    if not isinstance(doc.get("data"), dict):
        doc["data"] = {}
    node = doc["data"]
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = _pattern(node.get(parts[-1]), value, pattern)


def _pattern(current: Any, value: Any, pattern: str | None) -> Any:
    if pattern is None:
        return copy.deepcopy(value)
    if not isinstance(current, str):
        raise KeyError(f"pattern {pattern} needs a string destination")
    return re.sub(pattern, str(value), current)


def render(docs: list[Document]) -> tuple[list[Document], list[Message]]:
    """Concrete documents with Deckhand substitutions applied, and any substitution errors.

    A substitution is `{src: {schema, name, path}, dest: {path, pattern?}}` in
    `metadata.substitutions`; a failing one leaves its destination unchanged.
    """
    index = {(d.get("schema"), doc_ref(d)["name"]): d for d in docs}
    out: list[Document] = []
    errors: list[Message] = []
    for doc in docs:
        if _is_abstract(doc):
            continue
        rendered = copy.deepcopy(doc)
        for sub in (doc.get("metadata") or {}).get("substitutions") or []:
            problem = _substitute(rendered, sub, index)
            if problem:
                errors.append(validation_message(
                    f"{doc_ref(doc)['schema']} {doc_ref(doc)['name']}: {problem}",
                    name="Substitution", documents=[doc_ref(doc)]))
        out.append(rendered)
    return out, errors


def _substitute(doc: Document, sub: Any, index: dict[tuple[Any, str], Document]) -> str | None:
    if not isinstance(sub, dict):
        return "a substitution must be a mapping"
    src, dest = sub.get("src") or {}, sub.get("dest") or {}
    source = index.get((src.get("schema"), str(src.get("name"))))
    if source is None:
        return f"substitution source {src.get('schema')} {src.get('name')} does not exist"
    try:
        value = _get(source.get("data"), str(src.get("path", ".")))
        dests = dest if isinstance(dest, list) else [dest]
        for one in dests:
            _set(doc, str(one.get("path", ".")), value, one.get("pattern"))
    except KeyError as exc:
        return f"substitution path {exc} cannot be resolved"
    return None
