"""Whether a SQLite database has had a commit since a moment, told from memory: cached reads
stay valid without a statement while nothing was committed, by any process."""

from __future__ import annotations

import mmap
import os
import sqlite3
import threading
import time

from sqlalchemy import Engine, event

# SQLite's unix VFS keeps the WAL index in the database's "-shm" file, mapped by every
# connection of every process (https://www.sqlite.org/walformat.html). It begins with two
# copies of a 48-byte header that a writer rewrites, second copy first, at every commit (the
# commit is visible to readers from then on): its change counter, last frame, salts and
# checksums differ after any commit. Readers trust the header only when both copies match.
HEADER_BYTES = 48
MAPPED_BYTES = 2 * HEADER_BYTES
WAL_INDEX_VERSION = 3007000  # the header's first field, little or big endian as the host
IS_INIT_OFFSET = 12
RETRY_SECONDS = 10.0


class CommitWatch:
    """`token()`: bytes that change with every commit to the database, by any connection of
    any process, read without a syscall or a statement; None when that cannot be told (not
    a SQLite database in WAL mode, or a header being rewritten), and then the caller reads
    the database. One connection of its own stays open, so that SQLite never deletes and
    re-creates the mapped file while this process watches it."""

    def __init__(self, engine: Engine) -> None:
        self._path = sqlite_file(engine)
        self._lock = threading.Lock()
        self._mapped: tuple[int, mmap.mmap, sqlite3.Connection] | None = None
        self._retry_at = 0.0  # a file not (yet) in WAL mode is looked at again from then
        if self._path is not None:  # let go with the engine's connections (mapped anew later)
            event.listen(engine, "engine_disposed", self._release)

    def token(self) -> bytes | None:
        mapped = self._mapped
        if mapped is None or mapped[0] != os.getpid():  # not yet, or a forked process
            mapped = self._open()
            if mapped is None:
                return None
        try:
            header = mapped[1][:MAPPED_BYTES]
        except ValueError:  # closed by a dispose of the engine meanwhile
            return None
        first = header[:HEADER_BYTES]
        if first != header[HEADER_BYTES:] or not first[IS_INIT_OFFSET]:
            return None
        return first

    def _open(self) -> tuple[int, mmap.mmap, sqlite3.Connection] | None:
        with self._lock:
            if self._path is None or time.monotonic() < self._retry_at:
                return None
            if self._mapped is not None and self._mapped[0] == os.getpid():
                return self._mapped
            self._mapped = _map(self._path)
            if self._mapped is None:
                self._retry_at = time.monotonic() + RETRY_SECONDS
            return self._mapped

    def _release(self, _engine: Engine | None = None) -> None:
        with self._lock:
            mapped, self._mapped = self._mapped, None
        if mapped is not None and mapped[0] == os.getpid():
            mapped[1].close()
            mapped[2].close()


def sqlite_file(engine: Engine) -> str | None:
    """The absolute path of the engine's SQLite file; None for other databases and for
    in-memory or URI-named SQLite databases."""
    url = engine.url
    name = url.database
    if url.get_backend_name() != "sqlite" or not name or name == ":memory:" \
            or name.startswith("file:") or url.query.get("uri"):
        return None
    return os.path.abspath(name)


def _map(path: str) -> tuple[int, mmap.mmap, sqlite3.Connection] | None:
    keeper = sqlite3.connect(path, timeout=30, check_same_thread=False)
    try:
        mode = keeper.execute("PRAGMA journal_mode").fetchall()
        # Read to the end (no snapshot kept open, which would hold checkpoints back); the
        # read maps the WAL index, creating the -shm file if no one had yet.
        keeper.execute("SELECT count(*) FROM sqlite_master").fetchall()
        if not mode or str(mode[0][0]).lower() != "wal":
            keeper.close()
            return None
        with open(f"{path}-shm", "rb") as f:
            if os.fstat(f.fileno()).st_size < MAPPED_BYTES:
                keeper.close()
                return None
            view = mmap.mmap(f.fileno(), MAPPED_BYTES, access=mmap.ACCESS_READ)
    except (OSError, sqlite3.Error):
        keeper.close()
        return None
    if int.from_bytes(view[:4], "little") != WAL_INDEX_VERSION \
            and int.from_bytes(view[:4], "big") != WAL_INDEX_VERSION:
        view.close()
        keeper.close()
        return None
    return os.getpid(), view, keeper
