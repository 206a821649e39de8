"""The design each task was admitted with, kept by design href: the API resolves a task's
design reference once, when the task is created, and workers read the documents here, so a
worker never fetches a design (and a Shipyard that cannot be reached stops no task)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from common.documents import Document
from drydock_api.db.models import DesignRow


def digest_of(docs: list[Document]) -> str:
    return hashlib.sha256(json.dumps(docs, sort_keys=True, default=str).encode()).hexdigest()


class DesignStore:
    """One row per href: a reference whose documents changed (a file or URL, never a Shipyard
    revision) is replaced by the newest admitted; a task runs with that."""

    def __init__(self, sessions: sessionmaker[Session], clock: Callable[[], float]) -> None:
        self._sessions = sessions
        self._clock = clock

    def keep(self, href: str, docs: list[Document], digest: str | None = None) -> str:
        """Store `docs` for `href` unless the same documents are already there; the digest."""
        digest = digest or digest_of(docs)
        for _ in range(2):  # a replica storing the same href at once: the second one updates
            try:
                with self._sessions.begin() as s:
                    row = s.get(DesignRow, href)
                    if row is None:
                        s.add(DesignRow(href=href, digest=digest, documents=docs,
                                        stored=self._clock()))
                    elif row.digest != digest:
                        row.digest, row.documents, row.stored = digest, docs, self._clock()
                return digest
            except IntegrityError:
                continue
        return digest

    def digest(self, href: str) -> str | None:
        with self._sessions() as s:
            return s.execute(select(DesignRow.digest).where(DesignRow.href == href)
                             ).scalar_one_or_none()

    def documents(self, href: str) -> tuple[str, list[Document]] | None:
        with self._sessions() as s:
            row = s.get(DesignRow, href)
            return None if row is None else (row.digest, list(row.documents or []))
