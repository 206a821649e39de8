"""Wake other processes on one PostgreSQL database: NOTIFY on a channel, LISTEN in a thread.

An API process creates an action or a task that a worker process should start now, or a
worker process changes a task that an API process's long-poll waits for. PostgreSQL delivers
a NOTIFY to every listening session once the notifying transaction commits. SQLite has no such
channel: with SQLite, processes that share the file see each other's work at their poll
interval (and long-polls at their re-check), which is the embedded, single-process case.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

LOG = logging.getLogger(__name__)
RECONNECT_DELAY = 5.0  # after the listening connection failed (s)
STOP_CHECK = 30.0  # how often a quiet listener looks whether it should stop (s)


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def notify_in(session: Session, channel: str, payload: str = "") -> None:
    """NOTIFY `channel` when the session's transaction commits (PostgreSQL only)."""
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":
        session.execute(text("SELECT pg_notify(:c, :p)"), {"c": channel, "p": payload})


def notify(engine: Engine, channel: str, payload: str = "") -> None:
    """NOTIFY `channel` now, in a transaction of its own (PostgreSQL only)."""
    if is_postgres(engine):
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": channel, "p": payload})


class Listener:
    """A daemon thread LISTENing on `channels` of `engine`'s database; `on_notify(channel)`
    runs for each notification. Does nothing for other databases."""

    def __init__(self, engine: Engine, channels: dict[str, Callable[[], None]]) -> None:
        self._url = engine.url.set(drivername="postgresql").render_as_string(
            hide_password=False)
        self._enabled = is_postgres(engine)
        self._channels = channels
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Listener:
        if self._enabled and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="pg-listener", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except psycopg.Error as exc:
                LOG.warning("LISTEN on %s failed (%s); again in %.0f s",
                            ", ".join(self._channels), exc, RECONNECT_DELAY)
                self._stop.wait(RECONNECT_DELAY)

    def _listen(self) -> None:
        with psycopg.connect(self._url, autocommit=True) as conn:
            for channel in self._channels:
                conn.execute(f'LISTEN "{channel}"')
            for callback in self._channels.values():
                callback()  # anything sent before we listened is looked at once
            while not self._stop.is_set():
                for note in conn.notifies(timeout=STOP_CHECK):
                    woken = self._channels.get(note.channel)
                    if woken is not None:
                        woken()
