"""The per-request context: context marker, request id, end user, caller identity."""

from __future__ import annotations

import contextvars
import random
import uuid
from dataclasses import dataclass, field

MARKER_HEADER = "X-Context-Marker"
END_USER_HEADER = "X-End-User"
REQUEST_ID_HEADER = "X-Request-Id"

current_marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="-")


def new_id() -> str:
    """A random version-4 UUID for a context marker or a request id. These tell requests
    apart in logs and headers and guard nothing, so they come from the process's seeded
    generator (reseeded in each forked worker) instead of `uuid.uuid4()`, whose system call
    for 16 random bytes lets go of the interpreter's lock on every request."""
    return str(uuid.UUID(int=random.getrandbits(128), version=4))


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

    marker: str = field(default_factory=new_id)
    request_id: str = field(default_factory=new_id)
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
