"""The per-request context: context marker, request id, end user, caller identity."""

from __future__ import annotations

import contextvars
import uuid
from dataclasses import dataclass, field

MARKER_HEADER = "X-Context-Marker"
END_USER_HEADER = "X-End-User"
REQUEST_ID_HEADER = "X-Request-Id"

current_marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="-")


def valid_uuid(value: str | None) -> bool:
    if not value:
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


@dataclass
class RequestContext:
    """Who is calling and the marker that follows the request through every service."""

    marker: str = field(default_factory=lambda: str(uuid.uuid4()))
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    end_user: str | None = None
    user: str | None = None
    roles: list[str] = field(default_factory=list)
    token: str | None = None
    authenticated: bool = False
    on_behalf_of: str | None = None

    def headers(self) -> dict[str, str]:
        """Headers that forward this context to a peer service."""
        out = {MARKER_HEADER: self.marker}
        who = self.on_behalf_of or self.end_user or self.user
        if who:
            out[END_USER_HEADER] = who
        return out


def acting_user(user: str, roles: list[str], header: str | None,
                service_roles: frozenset[str]) -> tuple[str, str | None]:
    """Who is recorded as acting, and on whose behalf: the authenticated user always; an
    `X-End-User` only when the caller holds a service role (a peer service forwarding its
    operator), as "<user> (on behalf of <end user>)". Anyone else's header is ignored."""
    end_user = (header or "").strip()
    if not end_user or end_user == user or not service_roles.intersection(roles):
        return user, None
    return f"{user} (on behalf of {end_user})", end_user
