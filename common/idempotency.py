"""`Idempotency-Key` on every POST: the same key with the same request gets the original
response again (without running it twice); the same key with a different request gets 422.

Keys are scoped by the authenticated user, so one caller cannot read or block another's.
They live in the service's database (common.idempotency_store), so every replica, and the
same process after a restart, gives the same answer: kept `[api] idempotency_ttl` seconds.
While the first request with a key is still running, a repeat gets 409 `RequestInProgress`
with Retry-After; a first request whose process died is run again once its lease
(`[api] idempotency_lease`) runs out. Only successful (2xx) responses are remembered, so a
failed attempt may be retried. Drydock additionally keeps the key on the task row."""

from __future__ import annotations

import hashlib
import logging

import falcon

from common.body import read_raw
from common.errors import BadRequest
from common.idempotency_store import (
    HEADER,
    RequestInProgress,
    Saved,
    SqlIdempotencyStore,
    scope_of,
)

__all__ = ["HEADER", "IdempotencyMiddleware", "RequestInProgress", "SqlIdempotencyStore"]

LOG = logging.getLogger(__name__)
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY = 255
MAX_REMEMBERED_BYTES = 1024 * 1024  # a larger response is not remembered
KEPT_HEADERS = ("Location", "Content-Location", "Retry-After")


def _fingerprint(req: falcon.Request, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (req.method, req.path, req.query_string or "", req.content_type or ""):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(body)
    return digest.hexdigest()


def _saved(resp: falcon.Response) -> Saved | None:
    """The response to replay later; None when it is not kept (not 2xx, or too large)."""
    body = resp.render_body() or b""
    if not 200 <= resp.status_code < 300 or len(body) > MAX_REMEMBERED_BYTES:
        return None
    headers = tuple((h, str(v)) for h in KEPT_HEADERS if (v := resp.get_header(h)) is not None)
    return Saved(str(resp.status), resp.content_type, body, headers)


class IdempotencyMiddleware:
    """Runs after the context middleware (it needs the authenticated user)."""

    def __init__(self, store: SqlIdempotencyStore) -> None:
        self._store = store

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
        scope = scope_of(str(ctx.user), req.method, req.path, key)
        try:
            saved = self._store.begin(scope, _fingerprint(req, body))
        except RequestInProgress as exc:  # raised once routed, unless the resource joins it
            req.context.idempotency_busy = exc
            return
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

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         params: dict[str, object]) -> None:
        """A repeat of a running request gets 409 RequestInProgress, unless its resource
        joins the running request itself (`joins_running_requests`: Promenade's durable
        decommission waits for the same run's answer)."""
        busy = getattr(req.context, "idempotency_busy", None)
        if busy is None or getattr(resource, "joins_running_requests", False):
            return
        resp.set_header("Retry-After", str(busy.retry_after))
        raise busy

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource: object,
                         req_succeeded: bool) -> None:
        scope = getattr(req.context, "idempotency_scope", None)
        if scope is None:
            return
        req.context.idempotency_scope = None
        try:
            self._store.finish(scope, _saved(resp) if req_succeeded else None)
        except Exception:  # the request's own answer stands; its entry's lease runs out
            LOG.warning("Could not keep the answer of an Idempotency-Key request",
                        exc_info=True)
