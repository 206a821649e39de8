"""`Idempotency-Key` on every POST: the same key with the same request gets the original
response again (without running it twice); the same key with a different request gets 422.

Keys are scoped by the authenticated user, so one caller cannot read or block another's.
While the first request with a key is still running, a second one waits for its answer (at
most `[api] idempotency_wait` seconds, then 409, retry later).
Only successful (2xx) responses are remembered, so a failed attempt may be retried; they are
kept in a bounded, time-limited cache of the process (`[api] idempotency_cache_size`,
`idempotency_ttl`). Drydock additionally keeps the key on the task row, so a retry reaching
another replica finds the same task."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import falcon

from common.body import read_raw
from common.errors import BadRequest, Conflict, UnprocessableEntity

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY = 255
MAX_REMEMBERED_BYTES = 1024 * 1024  # a larger response is not remembered
MAX_TOTAL_BYTES = 64 * 1024 * 1024  # oldest keys are forgotten first past this, per process
KEPT_HEADERS = ("Location", "Content-Location", "Retry-After")


@dataclass
class Saved:
    fingerprint: str
    expires: float
    status: Any = None  # None while the first request runs
    content_type: str | None = None
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    done: threading.Event = field(default_factory=threading.Event)


class IdempotencyCache:
    """Keys (scoped by user, method and path) → the request fingerprint and its response."""

    def __init__(self, size: int = 10000, ttl: float = 86400.0, wait: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._size, self._ttl, self._wait, self._clock = size, ttl, wait, clock
        self._entries: OrderedDict[tuple[str, ...], Saved] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def _evict(self) -> None:
        """Forget the oldest answered keys while over the count or byte budget (lock held);
        keys whose request still runs are kept (there are at most as many as threads)."""
        for scope in list(self._entries):
            if len(self._entries) <= self._size and self._bytes <= MAX_TOTAL_BYTES:
                return
            entry = self._entries[scope]
            if entry.status is not None:
                del self._entries[scope]
                self._bytes -= len(entry.body)

    def begin(self, scope: tuple[str, ...], fingerprint: str) -> Saved | None:
        """The saved response to replay, or None when this request should run (now marked
        as running). 422 for a different request under the key. A duplicate of a request
        still running waits for it (a client retrying after its read timeout gets the
        answer), at most `wait` seconds, then gets 409 (retry later)."""
        deadline = self._clock() + self._wait
        while True:
            entry = self._claim(scope, fingerprint)
            if entry is None:
                return None
            if entry.fingerprint != fingerprint:
                raise UnprocessableEntity(
                    f"{HEADER} was already used with a different request; use a new key",
                    reason="IdempotencyKeyReused")
            if entry.status is not None:
                return entry
            remaining = deadline - self._clock()
            if remaining <= 0 or not entry.done.wait(remaining):
                raise Conflict(f"A request with this {HEADER} is still running; retry later",
                               reason="IdempotencyKeyInProgress", retry=True)

    def _claim(self, scope: tuple[str, ...], fingerprint: str) -> Saved | None:
        """The entry of `scope`, or None after recording this request as running."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(scope)
            if entry is not None and entry.expires < now:
                del self._entries[scope]
                self._bytes -= len(entry.body)
                entry = None
            if entry is None:
                self._entries[scope] = Saved(fingerprint, now + self._ttl)
                self._evict()
            return entry

    def finish(self, scope: tuple[str, ...], resp: falcon.Response) -> None:
        with self._lock:
            entry = self._entries.get(scope)
            if entry is None:
                return
            entry.done.set()
            body = resp.render_body() or b""
            if not 200 <= resp.status_code < 300 or len(body) > MAX_REMEMBERED_BYTES:
                del self._entries[scope]
                return
            entry.status, entry.content_type, entry.body = resp.status, resp.content_type, body
            entry.headers = tuple((h, v) for h in KEPT_HEADERS
                                  if (v := resp.get_header(h)) is not None)
            self._bytes += len(body)
            self._evict()

    def forget(self, scope: tuple[str, ...]) -> None:
        with self._lock:
            entry = self._entries.get(scope)
            if entry is not None and entry.status is None:
                del self._entries[scope]
                entry.done.set()


def _fingerprint(req: falcon.Request, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (req.method, req.path, req.query_string or "", req.content_type or ""):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(body)
    return digest.hexdigest()


class IdempotencyMiddleware:
    """Runs after the context middleware (it needs the authenticated user)."""

    def __init__(self, cache: IdempotencyCache) -> None:
        self._cache = cache

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        key = req.get_header(HEADER)
        ctx = getattr(req.context, "berth", None)
        if req.method != "POST" or key is None or ctx is None or not ctx.authenticated:
            return
        if not 0 < len(key) <= MAX_KEY or not key.isprintable():
            raise BadRequest(f"{HEADER} must be 1 to {MAX_KEY} printable characters",
                             reason="InvalidIdempotencyKey")
        body = read_raw(req, req.context.max_body_bytes)
        req.context.raw_body = body
        scope = (str(ctx.user), req.method, req.path, key)
        saved = self._cache.begin(scope, _fingerprint(req, body))
        if saved is None:
            req.context.idempotency_scope = scope
            return
        resp.status = saved.status
        resp.content_type = saved.content_type
        resp.data = saved.body
        for name, value in saved.headers:
            resp.set_header(name, value)
        resp.set_header(REPLAYED_HEADER, "true")
        resp.complete = True

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        scope = getattr(req.context, "idempotency_scope", None)
        if scope is None:
            return
        if req_succeeded:
            self._cache.finish(scope, resp)
        else:
            self._cache.forget(scope)

