"""GET /audit and GET /audit/verify, the same on Shipyard and Drydock (rules `<service>:...`)."""

from __future__ import annotations

from datetime import datetime

import falcon
from sqlalchemy import Engine

from common import audit, policy
from common.api import API_PREFIX as P
from common.errors import BadRequest, Conflict
from common.jsontypes import JSONObject
from common.status import simple_message, status_body


class AuditChainBroken(Conflict):
    reason, title = "AuditChainBroken", "The audit log does not verify"


class AuditLog:
    """The audit tables of one service's database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def verify(self) -> audit.Verification:
        with self.engine.connect() as conn:
            return audit.verify(conn)

    def entries(self, stream: str | None, since: float | None,
                limit: int) -> list[JSONObject]:
        with self.engine.connect() as conn:
            return audit.entries(conn, stream=stream, since=since, limit=limit)


def verification_body(result: audit.Verification) -> tuple[int, dict[str, object]]:
    """200 with each chain's entry count and head hash; 409 naming the first broken link
    (the code and the body)."""
    if result.broken is not None:
        err = AuditChainBroken(result.broken.message(), messages=[simple_message(
            result.broken.message(), error=True, **result.broken.view())],
            details={"broken": result.broken.view()})
        return err.code, err.to_status()
    total = sum(c["entries"] for c in result.chains.values())
    return 200, status_body(200, f"Every audit chain holds ({len(result.chains)} chains, "
                            f"{total} entries)", reason="Verified",
                            extra={"chains": result.chains})


def parse_since(value: str | None) -> float | None:
    """`since`: epoch seconds or an ISO 8601 time (naive means UTC)."""
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadRequest(f"since must be epoch seconds or an ISO 8601 time, not {value!r}",
                         reason="InvalidParameter") from exc
    if when.tzinfo is None:
        from datetime import UTC
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


class AuditResource:
    def __init__(self, log: AuditLog, rule: str) -> None:
        self._log, self._rule = log, rule

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        policy.check(req, self._rule)
        problems = []
        limit = 100
        raw_limit = req.get_param("limit")
        if raw_limit is not None:
            if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= audit.MAX_LIMIT:
                problems.append(f"limit must be an integer from 1 to {audit.MAX_LIMIT}")
            else:
                limit = int(raw_limit)
        try:
            since = parse_since(req.get_param("since"))
        except BadRequest as exc:
            problems.append(exc.message)
            since = None
        if problems:
            raise BadRequest("; ".join(problems), reason="InvalidParameter",
                             messages=[simple_message(p, error=True) for p in problems])
        resp.media = {"entries": self._log.entries(req.get_param("stream") or None, since,
                                                   limit)}


class AuditVerifyResource:
    def __init__(self, log: AuditLog, rule: str) -> None:
        self._log, self._rule = log, rule

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        policy.check(req, self._rule)
        code, body = verification_body(self._log.verify())
        resp.status = falcon.code_to_http_status(code)
        resp.media = body


def audit_routes(engine: Engine, service: str) -> list[tuple[str, object]]:
    log = AuditLog(engine)
    return [(f"{P}/audit", AuditResource(log, f"{service}:read_audit")),
            (f"{P}/audit/verify", AuditVerifyResource(log, f"{service}:verify_audit"))]

