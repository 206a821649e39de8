"""Audit entries of the site design (stream `shipyard.documents`): buffer changes, commits and
tags, written in the transaction of the change (common.audit)."""

from __future__ import annotations

import time

from sqlalchemy.orm import Session

from common import audit
from common.jsontypes import JSONObject
from shipyard_api.documents.versions import COMMITTED_TAG

STREAM = "shipyard.documents"


def staged(s: Session, collection: str, base: int | None, revision: int, status: str,
           documents: int) -> None:
    """A collection was staged in the buffer: revision `base` became `revision`."""
    audit.append(s, STREAM, f"collection/{collection}", "staged", base, revision,
                 at=time.time(), detail={"status": status, "documents": documents})


def tagged(s: Session, revision: int, tag: str, old: JSONObject | None,
           new: JSONObject | None) -> None:
    """A tag was put on a revision (old: its data before, None when new), or taken off
    (new None). The tag `committed` is a commit."""
    change = ("commit" if tag == COMMITTED_TAG else "tag") if new is not None else "untag"
    audit.append(s, STREAM, f"revision/{revision}", change, old, new, at=time.time(),
                 detail={"tag": tag})
