"""Rendering a revision as Deckhand does: layering, substitution, replacement, abstract
documents dropped, then secrets redacted for readers without cleartext."""

from __future__ import annotations

import copy

from common.documents import Document
from common.jsontypes import JSON
from common.status import Message
from shipyard_api.documents import layering
from shipyard_api.documents.layering import Doc, problem
from shipyard_api.documents.substitution import Sources, substitute

REDACTED = "(redacted)"


def is_encrypted(doc: Document) -> bool:
    return (doc.get("metadata") or {}).get("storagePolicy") == "encrypted"


def redact(doc: Document) -> Document:
    """A copy of `doc` whose data is replaced by a marker when it is a secret."""
    if not is_encrypted(doc):
        return doc
    return {**doc, "data": REDACTED}


def render(docs: list[Document], *,
           cleartext: bool = True) -> tuple[list[Document], list[Message]]:
    """The concrete, non-replaced documents of `docs` (given in cleartext) in their order,
    rendered, and every problem met (errors and notes). Without cleartext, secrets' data is
    the marker, and a secret's value is the marker wherever rendering copied it."""
    work = [Doc(i, d, copy.deepcopy(d.get("data"))) for i, d in enumerate(docs)]
    messages = [m for d in work for m in layering.format_problems(d)]
    order, found = layering.layer_order(work)
    messages += found
    parents: dict[int, Doc] = {}
    if order is not None:
        parents, found = layering.select_parents(work, order)
        messages += found
    replaced, found = layering.replacements(work, parents)
    messages += found
    sources = _sources(work, replaced)
    sequence, found = _dependency_order(work, parents, replaced, sources)
    messages += found
    for doc in sequence:
        _render_one(doc, parents.get(doc.index), sources)
        messages += doc.problems
    secrets = [] if cleartext else _secrets(work)
    out = [_output(d, cleartext, secrets) for d in work
           if not d.abstract and d.index not in replaced]
    return out, messages


def _sources(work: list[Doc], replaced: dict[int, Doc]) -> Sources:
    """Concrete documents by (schema, name); a replaced document stands for its replacement."""
    sources: Sources = {}
    for d in work:
        if not d.abstract:
            sources[(d.schema, d.name)] = replaced.get(d.index, d)
    return sources


def _render_one(doc: Doc, parent: Doc | None, sources: Sources) -> None:
    if doc.control:
        return
    if parent is not None and doc.selector and doc.actions:
        doc.data = layering.layer(doc, parent)
        doc.tainted = doc.tainted or parent.tainted or parent.encrypted
    if doc.substitutions:
        substitute(doc, sources)
    if doc.replacement and parent is not None:
        parent.data = copy.deepcopy(doc.data)
        parent.tainted = parent.tainted or doc.tainted


def _dependency_order(work: list[Doc], parents: dict[int, Doc], replaced: dict[int, Doc],
                      sources: Sources) -> tuple[list[Doc], list[Message]]:
    """Each document after its parent (or the parent's replacement) and its substitution
    sources; a cycle is reported (SubstitutionDependencyCycle) and broken where found."""
    deps: dict[int, list[Doc]] = {d.index: [] for d in work}
    for d in work:
        parent = parents.get(d.index)
        if parent is not None and d.selector:
            ancestor = replaced.get(parent.index)
            deps[d.index].append(parent if ancestor is None or ancestor is d else ancestor)
        for sub in d.substitutions:
            src = sub.get("src") if isinstance(sub, dict) else None
            if isinstance(src, dict) and (s := sources.get((str(src.get("schema")),
                                                              str(src.get("name"))))):
                deps[d.index].append(s)
    done: set[int] = set()
    active: list[Doc] = []
    out: list[Doc] = []
    found: list[Message] = []

    def visit(doc: Doc) -> None:
        if doc.index in done:
            return
        if doc in active:
            cycle = active[active.index(doc):]
            found.append(problem("SubstitutionDependencyCycle", "Cannot determine the "
                                 "rendering order: a dependency cycle exists between "
                                 + " -> ".join(d.shown() for d in [*cycle, doc]), *cycle))
            return
        active.append(doc)
        for dep in deps[doc.index]:
            visit(dep)
        active.pop()
        if doc.index not in done:
            done.add(doc.index)
            out.append(doc)

    for d in work:
        visit(d)
    return out, found


def _secrets(work: list[Doc]) -> list[str]:
    """The strings held by encrypted documents, longest first."""
    found: set[str] = set()

    def walk(node: JSON) -> None:
        if isinstance(node, str) and node:
            found.add(node)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for d in work:
        if d.encrypted:
            walk(d.data)
    return sorted(found, key=len, reverse=True)


def _output(doc: Doc, cleartext: bool, secrets: list[str]) -> Document:
    out = {**copy.deepcopy({k: v for k, v in doc.source.items() if k != "data"}),
           "data": doc.data}
    if cleartext:
        return out
    if doc.encrypted:
        return {**out, "data": REDACTED}
    if doc.tainted:
        out["data"] = _scrub(doc.data, secrets)
    return out


def _scrub(node: JSON, secrets: list[str]) -> JSON:
    if isinstance(node, str):
        for secret in secrets:
            node = node.replace(secret, REDACTED)
        return node
    if isinstance(node, dict):
        return {k: _scrub(v, secrets) for k, v in node.items()}
    if isinstance(node, list):
        return [_scrub(v, secrets) for v in node]
    return node
