"""The document write lock: one database row held by a lease, claimed by conditional UPDATE."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from common.errors import Conflict
from common.lease import Lease
from shipyard_api.documents.models import LOCK_NAME, LockRow

LEASE = Lease(LockRow.lease_owner, LockRow.lease_expires)
class DocumentsLocked(Conflict):
    reason, title, retry = "DocumentsLocked", "Documents are being written", True


class WriteLock:
    """Serialises writers across threads, processes and replicas sharing one database."""

    def __init__(self, session_factory: sessionmaker[Session], *,
                 clock: Callable[[], datetime], lease_seconds: float) -> None:
        self._sessions = session_factory
        self._clock = clock
        self._lease = lease_seconds

    def _now(self) -> float:
        return self._clock().timestamp()

    def _ensure_row(self) -> None:
        with self._sessions() as session, session.begin():
            if session.get(LockRow, LOCK_NAME) is not None:
                return
        try:
            with self._sessions() as session, session.begin():
                session.add(LockRow(name=LOCK_NAME))
        except IntegrityError:
            pass  # another writer created it first

    def acquire(self) -> str:
        """Claim the lock; 409 DocumentsLocked while another writer's lease is live."""
        self._ensure_row()
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        now = self._now()
        with self._sessions() as session, session.begin():
            if not LEASE.take(session, [LockRow.name == LOCK_NAME, LEASE.free(now)], owner,
                              now, self._lease):
                raise DocumentsLocked("Another write to the documents holds the lock; retry "
                                      "when it has finished")
        return owner

    def holds(self, owner: str) -> bool:
        """True while `owner` still holds an unexpired lease."""
        with self._sessions() as session:
            row = session.get(LockRow, LOCK_NAME)
            return bool(row and row.lease_owner == owner
                        and (row.lease_expires or 0) >= self._now())

    def release(self, owner: str) -> None:
        with self._sessions() as session, session.begin():
            LEASE.drop(session, [LockRow.name == LOCK_NAME], owner)

    @contextmanager
    def held(self) -> Iterator[str]:
        owner = self.acquire()
        try:
            yield owner
        finally:
            self.release(owner)
