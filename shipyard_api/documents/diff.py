"""Pure comparisons of document sets: per-collection status and the buffer rules."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from enum import StrEnum

from common.documents import Document
from common.errors import Conflict


class CollectionStatus(StrEnum):
    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"
    UNMODIFIED = "unmodified"


class BufferMode(StrEnum):
    APPEND = "append"
    REPLACE = "replace"
    REJECT_ON_CONTENTS = "rejectoncontents"


def _canonical(doc: Document) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)


def by_collection(docs: Iterable[tuple[str, Document]]) -> dict[str, dict[tuple[str, ...], str]]:
    """collection → {(schema, layer, name): canonical document}; empty collections do not
    appear."""
    out: dict[str, dict[tuple[str, ...], str]] = {}
    for collection, doc in docs:
        meta = doc.get("metadata") or {}
        layer = (meta.get("layeringDefinition") or {}).get("layer") \
            if isinstance(meta.get("layeringDefinition"), dict) else None
        key = (str(doc.get("schema")), str(layer or ""), str(meta.get("name")))
        out.setdefault(collection, {})[key] = _canonical(doc)
    return out


def collection_statuses(
    base: Mapping[str, Mapping[tuple[str, ...], str]],
    new: Mapping[str, Mapping[tuple[str, ...], str]],
) -> dict[str, CollectionStatus]:
    """The status of every collection of either side, going from `base` to `new`."""
    out: dict[str, CollectionStatus] = {}
    for name in sorted(set(base) | set(new)):
        if name not in base:
            out[name] = CollectionStatus.CREATED
        elif name not in new:
            out[name] = CollectionStatus.DELETED
        elif dict(base[name]) == dict(new[name]):
            out[name] = CollectionStatus.UNMODIFIED
        else:
            out[name] = CollectionStatus.MODIFIED
    return out


def check_buffer_mode(mode: BufferMode, collection: str,
                      buffer_changes: Mapping[str, CollectionStatus]) -> None:
    """Airship's buffer rules; `buffer_changes` are the buffer's statuses against committed.

    An empty buffer accepts anything; rejectoncontents refuses a non-empty buffer; append
    refuses a collection the buffer already changed; replace discards the buffer first.
    """
    changed = {c: s for c, s in buffer_changes.items() if s is not CollectionStatus.UNMODIFIED}
    if not changed or mode is BufferMode.REPLACE:
        return
    if mode is BufferMode.REJECT_ON_CONTENTS:
        raise Conflict(
            f"The buffer already holds changes to {', '.join(sorted(changed))}; commit them, "
            "or use buffermode=append or buffermode=replace", reason="BufferNotEmpty")
    if collection in changed:
        raise Conflict(
            f"Collection {collection} is already {changed[collection].value} in the buffer; "
            "append cannot change it again (use buffermode=replace)",
            reason="CollectionInBuffer")
