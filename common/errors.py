"""The one error hierarchy of Berth; the app factory renders each as a status body.

    BerthError (500 InternalError, retry)
    ├── BadRequest (400)
    │   ├── ValidationFailed (400, every violation as a ValidationMessage)
    │   └── InvalidName (400: a name that cannot name the object in a URL)
    │       └── InvalidNodeName (400: not a node name as Kubernetes defines it)
    ├── Unauthenticated (401)
    ├── Forbidden (403)
    ├── NotFound (404)
    ├── MethodNotAllowed (405)
    ├── Conflict (409)
    ├── PayloadTooLarge (413)
    ├── UnsupportedMediaType (415)
    ├── UnprocessableEntity (422)
    ├── InternalError (500)
    ├── BadGateway (502, carries the peer's status body)
    └── ServiceUnavailable (503, retry, Retry-After)
        └── DatabaseUnavailable (503: the service's database cannot be reached)

Services subclass these for the reasons their specs name (e.g. Promenade's DrainNodeError).
The top-level `message` of a status body is the error's own message followed by the first
cause it does not already say (a wrapper's "... failed" keeps what failed and why).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, ClassVar, TypedDict, Unpack

from common.status import Message, simple_message, status_body

MAX_HEADLINE = 1000  # characters of a status body's top-level message


class ErrorOptions(TypedDict, total=False):
    """BerthError's keyword options, for the subclasses that pass them on."""

    messages: Iterable[Message]
    title: str | None
    reason: str | None
    retry: bool | None
    details: dict[str, object] | None
    retry_after: int | None


class BerthError(Exception):
    """Base of every error Berth raises on purpose."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"
    title: ClassVar[str] = "Internal error"
    retry: ClassVar[bool] = True
    default_retry_after: ClassVar[int | None] = None  # seconds, sent as Retry-After

    def __init__(
        self,
        message: str | None = None,
        *,
        messages: Iterable[Message] = (),
        title: str | None = None,
        reason: str | None = None,
        retry: bool | None = None,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        self.message = message or self.title
        self.messages: list[Message] = list(messages)
        if not self.messages:
            self.messages = [simple_message(self.message)]
        self.instance_title = title or self.title
        self.instance_reason = reason or self.reason
        self.instance_retry = self.retry if retry is None else retry
        self.details = details or {}
        self.retry_after = self.default_retry_after if retry_after is None else retry_after
        super().__init__(self.message)

    def headline(self) -> str:
        """The status body's top-level message: this error's message, then the first error
        message of its list that it does not already contain (and how many more there are)."""
        causes = [str(m.get("message")) for m in self.messages
                  if m.get("error", True) and m.get("message")
                  and _core(str(m.get("message"))) not in self.message]
        text = self.message
        if causes:
            more = f" (and {len(causes) - 1} more)" if len(causes) > 1 else ""
            text = f"{text.rstrip(' .:')}: {causes[0]}{more}"
        return text if len(text) <= MAX_HEADLINE else text[:MAX_HEADLINE - 1] + "…"

    def to_status(self) -> dict[str, Any]:
        """Render this error as a status body."""
        return status_body(
            self.code,
            self.headline(),
            reason=self.instance_reason,
            messages=self.messages,
            retry=self.instance_retry,
            extra=self.details,
        )


def _core(text: str) -> str:
    """A message without a leading "<step>: " and a trailing " (<Reason>)", the form in which
    a wrapper lists the error it wraps."""
    return CORE.sub("", text)


CORE = re.compile(r"^[\w.-]+: | \([A-Z][A-Za-z]+\)$")


class BadRequest(BerthError):
    code, reason, title, retry = 400, "BadRequest", "Bad request", False


class ValidationFailed(BadRequest):
    reason, title = "ValidationFailure", "Validation failed"


class InvalidName(BadRequest):
    reason, title = "InvalidName", "Invalid object name"


class InvalidNodeName(InvalidName):
    reason, title = "InvalidNodeName", "Invalid node name"


class Unauthenticated(BerthError):
    code, reason, title, retry = 401, "Unauthenticated", "Authentication required", False


class Forbidden(BerthError):
    code, reason, title, retry = 403, "Forbidden", "Forbidden", False


class NotFound(BerthError):
    code, reason, title, retry = 404, "NotFound", "Not found", False


class MethodNotAllowed(BerthError):
    code, reason, title, retry = 405, "MethodNotAllowed", "Method not allowed", False


class Conflict(BerthError):
    code, reason, title, retry = 409, "Conflict", "Conflict", False


class PayloadTooLarge(BerthError):
    code, reason, title, retry = 413, "PayloadTooLarge", "Request body too large", False


class UnsupportedMediaType(BerthError):
    code, reason, title, retry = 415, "UnsupportedMediaType", "Unsupported media type", False


class UnprocessableEntity(BerthError):
    code, reason, title, retry = 422, "UnprocessableEntity", "Unprocessable entity", False


class InternalError(BerthError):
    code, reason, title, retry = 500, "InternalError", "Internal error", True


class BadGateway(BerthError):
    """A peer service or external system failed; `peer_status` keeps its status body."""

    code, reason, title, retry = 502, "BadGateway", "Upstream service failed", True

    def __init__(
        self, message: str | None = None, *, peer_status: dict[str, Any] | None = None,
        **kwargs: Unpack[ErrorOptions],
    ) -> None:
        self.peer_status = peer_status
        if peer_status and "messages" not in kwargs:
            kwargs["messages"] = [simple_message(message or self.title)] + list(
                (peer_status.get("details") or {}).get("messageList") or []
            )
        super().__init__(message, **kwargs)
        if peer_status:
            self.details.setdefault("peer_status", peer_status)


class ServiceUnavailable(BerthError):
    code, reason, title, retry = 503, "ServiceUnavailable", "Service unavailable", True
    default_retry_after = 5


class DatabaseUnavailable(ServiceUnavailable):
    """The service's database refused or lost the connection (an outage, not a bug)."""

    title = "Database unavailable"


class Timeout(BerthError):
    """An external system did not answer in time (a 504-style upstream timeout)."""

    code, reason, title, retry = 504, "GatewayTimeout", "Upstream timed out", True


BY_CODE: dict[int, type[BerthError]] = {
    cls.code: cls
    for cls in (BadRequest, Unauthenticated, Forbidden, NotFound, MethodNotAllowed, Conflict,
                PayloadTooLarge, UnsupportedMediaType, UnprocessableEntity, InternalError,
                BadGateway, ServiceUnavailable, Timeout)
}
