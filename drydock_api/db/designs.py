"""The design each task was admitted with, kept by digest: the API resolves a task's design
reference once, when the task is created, records the digest on the task, and workers read
exactly those documents here (a file or URL that changed since gives a new row, never a
changed one). The documents hold BMC credentials: they are stored encrypted (Fernet), and the
digest is keyed so it reveals nothing about them either."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from common.crypto import FernetCipher
from common.documents import Document
from common.errors import InternalError
from drydock_api.db.models import DesignRow, TaskRow
from drydock_api.db.states import FINAL

KEY_OPTION = "[database] design_key_file"


class DesignStore:
    """Rows are content-addressed and never change. A design no unfinished task references and
    no task was admitted with for `retention` seconds is deleted when another one is kept."""

    def __init__(self, sessions: sessionmaker[Session], clock: Callable[[], float],
                 key: bytes, retention: float = 86400.0) -> None:
        self._sessions = sessions
        self._clock = clock
        self._cipher = FernetCipher(key, KEY_OPTION)
        self._mac_key = hmac.new(key, b"berth design digest", hashlib.sha256).digest()
        self._retention = retention

    def digest_of(self, docs: list[Document]) -> str:
        text = json.dumps(docs, sort_keys=True, default=str).encode()
        return hmac.new(self._mac_key, text, hashlib.sha256).hexdigest()

    def keep(self, href: str, docs: list[Document], digest: str | None = None) -> str:
        """Store `docs` unless the same documents are there already (then mark them used
        now); the digest a task records."""
        digest = digest or self.digest_of(docs)
        for _ in range(2):  # a replica storing the same documents at once: then touch them
            try:
                with self._sessions.begin() as s:
                    now = self._clock()
                    touched = s.execute(update(DesignRow).where(DesignRow.digest == digest)
                                        .values(used=now))
                    if touched.rowcount:  # type: ignore[attr-defined]
                        return digest
                    token = self._cipher.encrypt(json.dumps(docs, default=str))
                    s.add(DesignRow(digest=digest, href=href, documents=token, used=now))
                self.sweep()
                return digest
            except IntegrityError:
                continue
        return digest

    def documents(self, digest: str) -> list[Document] | None:
        """The documents of `digest` (None: not kept); a key other than the one they were
        stored with raises an InternalError naming the key option."""
        with self._sessions() as s:
            token = s.execute(select(DesignRow.documents).where(DesignRow.digest == digest)
                              ).scalar_one_or_none()
        if token is None:
            return None
        docs: list[Document] = json.loads(self._cipher.decrypt(token))
        return docs

    def check_key(self) -> None:
        """At start: the key must open the designs already kept (every Drydock process on the
        database must share one key); else an InternalError saying what to do."""
        with self._sessions() as s:
            token = s.execute(select(DesignRow.documents)
                              .order_by(func.length(DesignRow.documents)).limit(1)
                              ).scalar_one_or_none()
        if token is None:
            return
        try:
            self._cipher.decrypt(token)
        except InternalError as exc:
            raise InternalError(f"{exc.message}: the designs kept in the database were written "
                                "with another key. Give every Drydock process the same key "
                                "file, or, if the key was replaced on purpose, delete the rows "
                                "of table designs once no task is running", retry=False) from exc

    def latest(self, href: str) -> str | None:
        """The digest last kept for `href`: the design of a task that recorded none (admitted
        before tasks did)."""
        with self._sessions() as s:
            return s.execute(select(DesignRow.digest).where(DesignRow.href == href)
                             .order_by(DesignRow.used.desc()).limit(1)).scalar_one_or_none()

    def sweep(self) -> int:
        """Delete the designs no longer needed; how many."""
        final = [status.value for status in FINAL]
        needed = select(TaskRow.design_digest).where(TaskRow.design_digest.is_not(None),
                                                     TaskRow.status.not_in(final))
        with self._sessions.begin() as s:
            gone = s.execute(delete(DesignRow).where(
                DesignRow.used < self._clock() - self._retention,
                DesignRow.digest.not_in(needed)))
            return int(gone.rowcount)  # type: ignore[attr-defined]
