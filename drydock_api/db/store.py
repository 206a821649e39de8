"""Task persistence: creation with admission checks, queries, leases and state transitions."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, and_, bindparam, event, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from ulid import ULID

from common.errors import Conflict, NotFound
from common.lease import Lease
from common.pgwake import notify_in
from common.prepared import PreparedRead
from common.status import simple_message
from drydock_api.db import audit, read_session_factory, session_factory
from drydock_api.db.models import LockRow, NodeRecord, TaskRow
from drydock_api.db.states import ACTIVE, TaskResult, TaskStatus, check_transition

Clock = Callable[[], float]
LEASE = Lease(TaskRow.lease_owner, TaskRow.lease_expires)
CHANGES_CHANNEL = "berth_drydock_changes"  # PostgreSQL: a task tree changed (payload: root)
TASKS_CHANNEL = "berth_drydock_tasks"  # PostgreSQL: a task was created


def new_task_id() -> str:
    """Time-ordered ids in UUID form (ULIDs), so creation order and id order agree."""
    return str(ULID().to_uuid())


WRITE_LOCK_WAIT = 60.0  # as SQLite's busy_timeout: then BEGIN IMMEDIATE waits on its own
_FILE_LOCKS_GUARD = threading.Lock()


class Turns:
    """A lock handed to its waiters in the order they asked (none barges in). Each waiter
    blocks on a plain lock of its own, which the holder releases to hand the turn over."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._queue: deque[threading.Lock] = deque()
        self._held = False

    def acquire(self, timeout: float) -> bool:
        with self._mutex:
            if not self._held:
                self._held = True
                return True
            turn = threading.Lock()
            turn.acquire()
            self._queue.append(turn)
        if turn.acquire(timeout=timeout):
            return True
        with self._mutex:
            try:
                self._queue.remove(turn)
            except ValueError:  # handed over as the wait ended
                return True
            return False

    def waiting(self) -> int:
        with self._mutex:
            return len(self._queue)

    def release(self) -> None:
        with self._mutex:
            if self._queue:
                self._queue.popleft().release()  # still held: now by the next in line
            else:
                self._held = False


_FILE_LOCKS: dict[str, Turns] = {}


def write_turns(engine: Engine) -> Turns | None:
    """The lock the process's writers of this SQLite file take turns on (None: not SQLite)."""
    if engine.url.get_backend_name() != "sqlite":
        return None
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(str(engine.url.database), Turns())


def serialize_sqlite_writes(engine: Engine) -> None:
    """On SQLite, a process's write transactions on one database file take turns on a lock
    of the process before BEGIN IMMEDIATE, in the order they asked, and hand it over at
    COMMIT or ROLLBACK. SQLite itself makes a writer that finds the file locked sleep and
    look again (up to 100 ms apart, in no order): with hundreds of node steps writing at once
    the file sat unlocked between those looks, and a writer could lose every race until its
    busy timeout ("database is locked"). Other processes on the file still meet SQLite's own
    lock. Idempotent."""
    dialect: Any = engine.dialect
    if engine.url.get_backend_name() != "sqlite" or getattr(dialect, "_berth_writes", None):
        return
    lock = write_turns(engine)
    assert lock is not None
    holders: set[int] = set()  # the DBAPI connections that hold the lock now

    def raw(conn: Any) -> int:
        return id(getattr(conn, "dbapi_connection", conn))

    def begin(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement != "BEGIN IMMEDIATE":  # make_engine's write transactions
            return
        key = raw(conn.connection)
        if key not in holders and lock.acquire(timeout=WRITE_LOCK_WAIT):
            holders.add(key)

    def ended(original: Callable[[Any], None]) -> Callable[[Any], None]:
        def end(conn: Any) -> None:
            try:
                original(conn)
            finally:
                key = raw(conn)
                if key in holders:
                    holders.discard(key)
                    lock.release()
        return end

    def dropped(dbapi_conn: Any, *_: Any) -> None:  # a connection closed or invalidated
        key = raw(dbapi_conn)
        if key in holders:
            holders.discard(key)
            lock.release()

    event.listen(engine, "before_cursor_execute", begin)
    for name in ("checkin", "invalidate", "close"):
        event.listen(engine.pool, name, dropped)
    dialect.do_commit = ended(dialect.do_commit)
    dialect.do_rollback = ended(dialect.do_rollback)  # also a connection's reset on return
    dialect._berth_writes = True


class NodesBusy(Conflict):
    reason, title = "NodesBusy", "Nodes are in a running task"


def touch_tree(s: Session, root_id: str) -> None:
    """Count one more change in the tree of `root_id` (on its top-level task's `changes`),
    in the caller's transaction: every write to a task of the tree calls this."""
    s.execute(update(TaskRow).where(TaskRow.id == root_id)
              .values(changes=TaskRow.changes + 1))
    notify_in(s, CHANGES_CHANNEL, root_id)  # PostgreSQL: long-polls of other processes


_TASKS: Any = TaskRow.__table__
_TOUCH_ROOT = update(_TASKS).where(_TASKS.c.id == bindparam("root")).values(
    changes=_TASKS.c.changes + 1).returning(_TASKS.c.status, _TASKS.c.terminate_requested)


def touch_root(s: Session, conn: Connection, root_id: str) -> bool:
    """`touch_tree` as one Core statement on the transaction's connection (no session
    object of the top-level task is refreshed from it), answering whether that task is asked
    to stop (terminate requested, or terminating) as it stands in this transaction. `conn`:
    the session's connection."""
    row = conn.execute(_TOUCH_ROOT, {"root": root_id}).first()
    notify_in(s, CHANGES_CHANNEL, root_id)  # PostgreSQL: long-polls of other processes
    return row is not None and (bool(row[1]) or row[0] == TaskStatus.TERMINATING.value)


class TaskStore:
    """Top-level tasks: create, read, lease, transition. Every write is one transaction."""

    def __init__(self, engine: Engine, *, clock: Clock = time.time,
                 new_id: Callable[[], str] = new_task_id) -> None:
        self.engine = engine
        serialize_sqlite_writes(engine)
        self.sessions = session_factory(engine)
        self.reads = read_session_factory(engine)
        self.clock = clock
        self.new_id = new_id
        self._records_key = PreparedRead(engine, select(func.count(),
                                                        func.max(NodeRecord.updated)))

    # --- creation --------------------------------------------------------------------------
    def by_key(self, idempotency_key: str) -> TaskRow | None:
        """The task created with this idempotency key, if any."""
        with self.reads() as s:
            return s.scalars(select(TaskRow).where(
                TaskRow.idempotency_key == idempotency_key)).first()

    def create_task(self, *, action: str, design_ref: Any, node_filter: Any,
                    options: dict[str, Any], node_names: list[str], created_by: str | None,
                    marker: str | None, idempotency_key: str | None,
                    exclusive: bool, design_digest: str | None = None) -> tuple[TaskRow, bool]:
        """Insert a queued task; same idempotency key → the existing task (created False).
        With `exclusive`, nodes already in an active task → 409 NodesBusy."""
        try:
            with self.sessions.begin() as s:
                if idempotency_key:
                    found = s.scalars(select(TaskRow).where(
                        TaskRow.idempotency_key == idempotency_key)).first()
                    if found is not None:
                        return found, False
                s.execute(update(LockRow).where(LockRow.name == "admission")
                          .values(counter=LockRow.counter + 1))
                if exclusive and node_names:
                    self._refuse_overlap(s, node_names)
                now = self.clock()
                task_id = self.new_id()
                row = TaskRow(
                    id=task_id, parent_id=None, root_id=task_id, action=action,
                    status=TaskStatus.QUEUED.value, result=TaskResult.INCOMPLETE.value,
                    design_ref=design_ref, design_digest=design_digest,
                    node_filter=node_filter, options=options,
                    node_names=node_names, idempotency_key=idempotency_key,
                    created_by=created_by, context_marker=marker, created=now, updated=now,
                    terminate_requested=False, successes=[], failures=[])
                s.add(row)
                self._touch_nodes(s, node_names, task_id, now)
                audit.task_changed(s, task_id, None, row.status, now, action=action,
                                   nodes=list(node_names) or None)
                return row, True
        except IntegrityError:
            if not idempotency_key:
                raise
            with self.sessions.begin() as s:
                found = s.scalars(select(TaskRow).where(
                    TaskRow.idempotency_key == idempotency_key)).first()
                if found is None:
                    raise
                return found, False

    def _refuse_overlap(self, s: Session, node_names: Sequence[str]) -> None:
        wanted = set(node_names)
        rows = s.execute(select(TaskRow.id, TaskRow.node_names).where(
            TaskRow.parent_id.is_(None),
            TaskRow.status.in_([st.value for st in ACTIVE]))).all()
        clashes = [(tid, sorted(wanted & set(names or []))) for tid, names in rows
                   if wanted & set(names or [])]
        if clashes:
            raise NodesBusy(
                "Nodes are already in an active task: " + "; ".join(
                    f"{', '.join(n)} in task {t}" for t, n in clashes),
                messages=[simple_message(f"Node {n} is in active task {t}", node=n, task_id=t)
                          for t, names in clashes for n in names])

    def _touch_nodes(self, s: Session, names: Sequence[str], task_id: str, now: float) -> None:
        if not names:
            return
        existing = set(s.scalars(select(NodeRecord.name).where(NodeRecord.name.in_(names))))
        if existing:
            s.execute(update(NodeRecord).where(NodeRecord.name.in_(existing))
                      .values(last_task_id=task_id, updated=now))
        s.add_all([NodeRecord(name=n, retired=False, last_task_id=task_id, updated=now)
                   for n in names if n not in existing])

    # --- queries ---------------------------------------------------------------------------
    def get(self, task_id: str) -> TaskRow:
        with self.reads() as s:
            row = s.get(TaskRow, task_id)
        if row is None:
            raise NotFound(f"Task {task_id} does not exist", reason="TaskNotFound")
        return row

    def list_tasks(self, *, statuses: Sequence[str] = (), actions: Sequence[str] = (),
                   since: float | None = None, limit: int = 100,
                   marker: str | None = None) -> list[TaskRow]:
        """Top-level tasks, newest first; `marker` = the last id of the previous page."""
        query = select(TaskRow).where(TaskRow.parent_id.is_(None))
        if statuses:
            query = query.where(TaskRow.status.in_(statuses))
        if actions:
            query = query.where(TaskRow.action.in_(actions))
        if since is not None:
            query = query.where(TaskRow.created >= since)
        if marker:
            query = query.where(TaskRow.id < marker)
        with self.reads() as s:
            return list(s.scalars(query.order_by(TaskRow.id.desc()).limit(limit)))

    def children(self, task_ids: Sequence[str]) -> list[TaskRow]:
        if not task_ids:
            return []
        with self.reads() as s:
            return list(s.scalars(select(TaskRow).where(TaskRow.parent_id.in_(task_ids))
                                  .order_by(TaskRow.id)))

    def node_record(self, name: str) -> NodeRecord | None:
        with self.reads() as s:
            return s.get(NodeRecord, name)

    def node_records(self) -> dict[str, NodeRecord]:
        with self.reads() as s:
            return {r.name: r for r in s.scalars(select(NodeRecord))}

    def node_records_key(self) -> tuple[int, float]:
        """(records, latest `updated`): changes whenever a field node views show does (every
        write of one sets `updated`)."""
        row = self._records_key.one()  # asked on every long node list (see PreparedRead)
        assert row is not None  # an aggregate without GROUP BY has one row
        return int(row[0]), float(row[1] or 0.0)

    # --- leases ----------------------------------------------------------------------------
    def claim(self, owner: str, lease_seconds: float, limit: int) -> list[TaskRow]:
        """Take up to `limit` queued tasks, or active ones whose lease expired."""
        return self.claim_units(owner, self.clock(), lease_seconds, limit)

    def renew(self, task_id: str, owner: str, lease_seconds: float) -> bool:
        """Extend our lease; False when another worker holds the task now."""
        return self.renew_unit(task_id, owner, self.clock(), lease_seconds)

    # the lease store of common.runner (the workers' claims and heartbeats)
    def claim_units(self, owner: str, now: float, lease_seconds: float,
                    limit: int) -> list[TaskRow]:
        claimable = and_(TaskRow.parent_id.is_(None),
                         TaskRow.status.in_([st.value for st in ACTIVE]), LEASE.free(now))
        with self.reads() as s:
            ids = list(s.scalars(select(TaskRow.id).where(claimable)
                                 .order_by(TaskRow.id).limit(limit)))
        claimed = []
        for task_id in ids:
            with self.sessions.begin() as s:
                if LEASE.take(s, [TaskRow.id == task_id, claimable], owner, now,
                              lease_seconds):
                    claimed.append(task_id)
        return [self.get(t) for t in claimed]

    def renew_unit(self, unit_id: str, owner: str, now: float, lease_seconds: float) -> bool:
        with self.sessions.begin() as s:
            return LEASE.renew(s, [TaskRow.id == unit_id], owner, now, lease_seconds)

    def drop_unit(self, unit_id: str, owner: str) -> None:
        with self.sessions.begin() as s:
            LEASE.drop(s, [TaskRow.id == unit_id], owner)

    # --- transitions -----------------------------------------------------------------------
    def transition(self, task_id: str, target: TaskStatus, **values: Any) -> TaskRow:
        """Apply one status change through the table (illegal → 409) with extra columns."""
        with self.sessions.begin() as s:
            row = s.get(TaskRow, task_id, with_for_update=True)
            if row is None:
                raise NotFound(f"Task {task_id} does not exist", reason="TaskNotFound")
            old = row.status
            check_transition(old, target.value)
            row.status = target.value
            row.updated = self.clock()
            for key, value in values.items():
                setattr(row, key, value)
            touch_tree(s, row.root_id)
            if old != target.value:  # the audit's head lock last, after the rows' own
                audit.task_changed(s, task_id, old, target.value, row.updated,
                                   result=values.get("result"))
            return row

    def request_terminate(self, task_id: str, user: str | None) -> TaskRow:
        """Unclaimed → terminated at once; claimed or running → terminating (the worker that
        holds it stops before the next node step and ends it terminated)."""
        with self.sessions.begin() as s:
            row = s.get(TaskRow, task_id, with_for_update=True)
            if row is None or row.parent_id is not None:
                raise NotFound(f"Task {task_id} does not exist", reason="TaskNotFound")
            now = self.clock()
            held = row.lease_expires is not None and row.lease_expires >= now
            if row.status in (TaskStatus.REQUESTED, TaskStatus.QUEUED) and not held:
                target = TaskStatus.TERMINATED
                row.completed = now
            else:
                target = TaskStatus.TERMINATING
            old = row.status
            if target.value != old:
                check_transition(old, target.value)
            row.status, row.terminate_requested = target.value, True
            row.terminated_by, row.updated = user, now
            touch_tree(s, row.root_id)
            if target.value != old:
                audit.task_changed(s, task_id, old, target.value, now,
                                   terminate_requested=True)
            return row

    def control(self, task_id: str) -> tuple[str, bool, str | None]:
        """(status, terminate_requested, lease_owner) of a task: cheap, for stop checks."""
        with self.reads() as s:
            row = s.execute(select(TaskRow.status, TaskRow.terminate_requested,
                                   TaskRow.lease_owner).where(TaskRow.id == task_id)).one()
        return str(row[0]), bool(row[1]), row[2]

    def latest_design_ref(self) -> Any:
        """The design reference of the newest top-level task that had one (or None)."""
        with self.reads() as s:
            for ref in s.scalars(select(TaskRow.design_ref).where(
                    TaskRow.parent_id.is_(None)).order_by(TaskRow.id.desc()).limit(20)):
                if ref:
                    return ref
        return None
