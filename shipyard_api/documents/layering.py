"""Deckhand layering: the LayeringPolicy, parent selection, replacement and layering actions."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from dataclasses import dataclass, field

import jsonschema

from common.documents import Document
from common.jsontypes import JSON, JSONObject, as_list, as_object
from common.status import Message, validation_message
from shipyard_api.documents import jsonpath

LAYERING_POLICY = "deckhand/LayeringPolicy"
METHODS = ("merge", "replace", "delete")
_DATA_PREFIX = re.compile(r"^\$?\.data(?=$|[.\[])")

_DEST: JSONObject = {"type": "object", "required": ["path"], "additionalProperties": False,
         "properties": {"path": {"type": "string"}, "pattern": {"type": "string"},
                        "recurse": {"type": "object", "required": ["depth"],
                                    "properties": {"depth": {"type": "integer",
                                                             "minimum": -1}}}}}
# Deckhand's metadata/Document/v1 rules for the parts rendering reads
# (deckhand/engine/schemas/metadata_document.yaml).
METADATA_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "labels": {"type": "object"},
        "replacement": {"type": "boolean"},
        "layeringDefinition": {
            "type": "object", "required": ["layer"], "additionalProperties": False,
            "dependentRequired": {"parentSelector": ["actions"],
                                  "actions": ["parentSelector"]},
            "properties": {
                "layer": {"type": "string"}, "abstract": {"type": "boolean"},
                "parentSelector": {"type": "object", "minProperties": 1},
                "actions": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["method", "path"],
                    "additionalProperties": False,
                    "properties": {"method": {"enum": list(METHODS)},
                                   "path": {"type": "string"}}}}}},
        "substitutions": {"type": "array", "items": {
            "type": "object", "required": ["src", "dest"], "additionalProperties": False,
            "properties": {
                "dest": {"anyOf": [_DEST, {"type": "array", "minItems": 1, "items": _DEST}]},
                "src": {"type": "object", "required": ["schema", "name", "path"],
                        "additionalProperties": False,
                        "properties": {"schema": {"type": "string",
                                                  "pattern": r"^[A-Za-z]+/[A-Za-z]+/v\d+$"},
                                       "name": {"type": "string"}, "path": {"type": "string"},
                                       "pattern": {"type": "string"},
                                       "match_group": {"type": "integer"},
                                       "deepcopy": {"type": "boolean"}}}}}},
    },
}


@dataclass(eq=False)
class Doc:
    """One document while a revision renders: its evolving data and what rendering reads."""

    index: int
    source: Document
    data: JSON
    tainted: bool = False  # holds data taken from an encrypted document
    problems: list[Message] = field(default_factory=list)

    @property
    def meta(self) -> JSONObject:
        return as_object(self.source.get("metadata"))

    @property
    def schema(self) -> str:
        return str(self.source.get("schema") or "")

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or "")

    @property
    def definition(self) -> JSONObject:
        return as_object(self.meta.get("layeringDefinition"))

    @property
    def layer(self) -> str:
        return str(self.definition.get("layer") or "")

    @property
    def abstract(self) -> bool:
        return self.definition.get("abstract") is True

    @property
    def selector(self) -> JSONObject:
        return as_object(self.definition.get("parentSelector"))

    @property
    def labels(self) -> JSONObject:
        return as_object(self.meta.get("labels"))

    @property
    def actions(self) -> list[JSON]:
        return as_list(self.definition.get("actions"))

    @property
    def substitutions(self) -> list[JSON]:
        return as_list(self.meta.get("substitutions"))

    @property
    def replacement(self) -> bool:
        return self.meta.get("replacement") is True

    @property
    def encrypted(self) -> bool:
        return self.meta.get("storagePolicy") == "encrypted"

    @property
    def control(self) -> bool:
        return str(self.meta.get("schema") or "").startswith("metadata/Control")

    @property
    def ref(self) -> dict[str, str]:
        return {"schema": self.schema, "name": self.name, "layer": self.layer}

    def shown(self) -> str:
        return f"[{self.schema}, {self.layer or '-'}] {self.name}"


def problem(check: str, text: str, *docs: Doc, error: bool = True) -> Message:
    """A ValidationMessage named after the Deckhand error that reports the same fault."""
    return validation_message(text, name=check, documents=[d.ref for d in docs], error=error,
                              level="Error" if error else "Info")


_METADATA = jsonschema.Draft202012Validator(METADATA_SCHEMA)


def _plain(meta: JSONObject) -> bool:
    """Metadata with nothing for the schema to refuse: a layer, maybe `abstract`, no layering
    or substitution (most of a design; the JSON Schema is the slow path for the rest)."""
    ld = meta.get("layeringDefinition")
    return ("substitutions" not in meta and "replacement" not in meta
            and isinstance(meta.get("labels", {}), dict) and isinstance(ld, dict)
            and isinstance(ld.get("layer"), str) and set(ld) <= {"layer", "abstract"}
            and isinstance(ld.get("abstract", False), bool))


def format_problems(doc: Doc) -> list[Message]:
    """Deckhand's InvalidDocumentFormat for malformed layering or substitution metadata."""
    if not str(doc.meta.get("schema") or "").startswith("metadata/Document") \
            or _plain(doc.meta):
        return []
    validator = _METADATA
    return [problem("InvalidDocumentFormat", f"{doc.shown()}: metadata/"
                    + "/".join(str(p) for p in err.absolute_path) + f": {err.message}", doc)
            for err in sorted(validator.iter_errors(doc.meta), key=lambda e: list(e.path))]


def layer_order(docs: list[Doc]) -> tuple[list[str] | None, list[Message]]:
    """The first LayeringPolicy's layerOrder (None when there is none) and its faults."""
    policies = [d for d in docs if d.schema.startswith(LAYERING_POLICY)]
    if not policies:
        users = [d for d in docs if d.selector or d.replacement]
        return None, ([problem("LayeringPolicyNotFound", "Required LayeringPolicy was not "
                               "found for layering: " + ", ".join(d.shown() for d in users),
                               *users)] if users else [])
    found: list[Message] = []
    if len(policies) > 1:
        found.append(problem("LayeringPolicy", "More than one LayeringPolicy: using the first, "
                             + policies[0].shown(), *policies, error=False))
    order = policies[0].data.get("layerOrder") if isinstance(policies[0].data, dict) else None
    names = [x for x in order if isinstance(x, str)] if isinstance(order, list) else []
    if not isinstance(order, list) or len(names) != len(order):
        found.append(problem("InvalidDocumentFormat", f"{policies[0].shown()}: data.layerOrder "
                             "must be a list of layer names", policies[0]))
        return [], found
    return names, found


def select_parents(docs: list[Doc], order: list[str]) -> tuple[dict[int, Doc], list[Message]]:
    """Each child's parent, chosen as Deckhand does: the documents whose labels hold all of
    the child's parentSelector, of the same schema, in the nearest layer above the child's."""
    found: list[Message] = []
    by_layer: dict[str, list[Doc]] = {}
    for d in docs:
        if d.layer and d.layer not in order:
            found.append(problem("InvalidDocumentLayer", f"Invalid layer {d.layer!r} for "
                                 f"document {d.shown()}: not in layerOrder: "
                                 f"{', '.join(order)}", d))
        elif d.layer:
            by_layer.setdefault(d.layer, []).append(d)
    layers = [layer for layer in order if by_layer.get(layer)]
    rank = {layer: i for i, layer in enumerate(layers)}
    children = [d for d in docs if d.selector and d.layer in rank]
    by_label: dict[tuple[str, str], list[Doc]] = {}
    for child in children:
        for pair in child.selector.items():
            by_label.setdefault(_label(pair), []).append(child)
    parents: dict[int, Doc] = {}
    counts: Counter[int] = Counter()
    for layer in layers:
        for candidate in by_layer[layer]:
            near = {c.index: c for pair in candidate.labels.items()
                    for c in by_label.get(_label(pair), [])}
            for child in (near[i] for i in sorted(near)):
                if child is candidate or not all(
                        candidate.labels.get(k) == v for k, v in child.selector.items()):
                    continue
                reason = _invalid_parent(candidate, child, rank)
                if reason:
                    found.append(problem("InvalidDocumentParent", f"The document parent "
                                         f"{candidate.shown()} is invalid for document "
                                         f"{child.shown()}: {reason}", child, candidate))
                    continue
                counts[child.index] += 1
                current = parents.get(child.index)
                if current is None:
                    parents[child.index] = candidate
                elif rank[candidate.layer] > rank[current.layer]:
                    parents[child.index] = candidate
                    counts[child.index] -= 1
    for child in children:
        if counts[child.index] > 1:
            parents.pop(child.index, None)
            found.append(problem("IndeterminateDocumentParent", "Too many parent documents "
                                 f"found for document {child.shown()}. Found: "
                                 f"{counts[child.index]}. Expected: 1", child))
        elif child.index not in parents and counts[child.index] == 0:
            found.append(problem("ParentNotFound", f"No parent matches the parentSelector of "
                                 f"{child.shown()}; it is rendered from its own data only",
                                 child, error=False))
    return parents, found


def _label(pair: tuple[str, JSON]) -> tuple[str, str]:
    return str(pair[0]), json.dumps(pair[1], sort_keys=True, default=str)


def _invalid_parent(parent: Doc, child: Doc, rank: dict[str, int]) -> str | None:
    if parent.schema != child.schema:
        return "child has a parentSelector which references the parent, but their schemas " \
               "do not match"
    if rank[parent.layer] >= rank[child.layer]:
        return f"the child layer {child.layer} must be lower than the parent layer " \
               f"{parent.layer} for layerOrder {', '.join(rank)}"
    return None


def replacements(docs: list[Doc], parents: dict[int, Doc]) -> tuple[dict[int, Doc], list[Message]]:
    """Which parent each replacement document replaces (parent index → replacement)."""
    found: list[Message] = []
    replaced: dict[int, Doc] = {}
    seen: set[tuple[str, str]] = set()
    for d in docs:
        parent = parents.get(d.index)
        same = parent is not None and (parent.schema, parent.name) == (d.schema, d.name)
        if d.replacement:
            if parent is None:
                found.append(_bad_replacement(d, "a document with `replacement: true` needs "
                                                 "a parent"))
            elif not same:
                found.append(_bad_replacement(d, "a replacement and its parent need the same "
                                                 "schema and metadata.name"))
            else:
                replaced[parent.index] = d
            continue
        if same:
            found.append(_bad_replacement(d, "a document that is not a replacement cannot "
                                             "have the schema and metadata.name of its parent"))
        if not d.control and (d.schema, d.name) in seen:
            found.append(_bad_replacement(d, "more than one document with this schema and "
                                             "name, and none has `replacement: true`"))
        seen.add((d.schema, d.name))
    for index, by in replaced.items():
        if docs[index].replacement:
            found.append(_bad_replacement(docs[index], "a replacement document cannot itself "
                                                       f"be replaced (by {by.shown()})"))
    return replaced, found


def _bad_replacement(doc: Doc, reason: str) -> Message:
    return problem("InvalidDocumentReplacement",
                   f"Replacement document {doc.shown()} is invalid: {reason}", doc)


def layer(child: Doc, parent: Doc) -> JSON:
    """The child's data: its parent's rendered data with the child's actions applied in order
    (every failing action is listed in `child.problems` and skipped)."""
    data: JSON = copy.deepcopy(parent.data) if parent.data is not None else {}
    own = child.data if child.data is not None else {}
    for action in child.actions:
        try:
            data = apply_action(action, own, data)
        except _ActionFailed as exc:
            child.problems.append(problem(exc.check, f"{child.shown()} layering on "
                                          f"{parent.shown()}: action {action}: {exc}",
                                          child, parent))
    return data


class _ActionFailed(Exception):
    def __init__(self, check: str, text: str) -> None:
        super().__init__(text)
        self.check = check


def apply_action(action: JSON, own: JSON, data: JSON) -> JSON:
    """One layering action (merge, replace, delete at a path) on the parent-derived `data`."""
    action = as_object(action)
    method = action.get("method")
    if method not in METHODS:
        raise _ActionFailed("UnsupportedActionMethod", f"method must be one of {METHODS}")
    path = action_path(str(action.get("path", "")))
    try:
        if method == "delete":
            if path in (".", "$"):
                return {}
            if jsonpath.get(data, path) is None:
                raise _ActionFailed("MissingDocumentKey", f"{path} is missing in the parent")
            return jsonpath.delete(data, path)
        mine = jsonpath.get(own, path)
        if mine is None:
            raise _ActionFailed("MissingDocumentKey", f"{path} is missing in the child")
        theirs = jsonpath.get(data, path)
        if method == "merge" and isinstance(theirs, dict) and isinstance(mine, dict):
            mine = deep_merge(copy.deepcopy(theirs), mine)
        return jsonpath.put(data, path, mine)
    except jsonpath.PathError as exc:
        raise _ActionFailed("InvalidPath", str(exc)) from exc


def action_path(path: str) -> str:
    """Deckhand's action path: a leading `.data` is dropped, a bare `a.b` means `.a.b`."""
    path = _DATA_PREFIX.sub("", path.strip())
    if path in ("", "$"):
        return "."
    return path if path.startswith((".", "$.", "$[")) else "." + path


def deep_merge(into: JSONObject, other: JSONObject) -> JSONObject:
    """`other` merged into `into`: nested mappings recursively, anything else from `other`."""
    for key, value in other.items():
        mine = into.get(key)
        if isinstance(mine, dict) and isinstance(value, dict):
            deep_merge(mine, value)
        else:
            into[key] = copy.deepcopy(value)
    return into
