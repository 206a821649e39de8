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

    def headers(self) -> dict[str, str]:
        """Headers that forward this context to a peer service."""
        out = {MARKER_HEADER: self.marker}
        if self.end_user or self.user:
            out[END_USER_HEADER] = self.end_user or self.user or ""
        return out
