"""Builders for the Airship status response body that every service returns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Message = dict[str, Any]


def simple_message(message: str, *, error: bool = True, **extra: object) -> Message:
    """A `SimpleMessage`; `extra` keys (e.g. `node`) are kept for tracing."""
    return {"message": message, "error": error, "kind": "SimpleMessage", **extra}


def validation_message(
    message: str,
    *,
    name: str,
    error: bool = True,
    level: str = "Error",
    documents: Sequence[Mapping[str, str]] = (),
    diagnostic: str | None = None,
) -> Message:
    """A `ValidationMessage` naming the check (`name`) and the documents it concerns."""
    return {
        "message": message,
        "error": error,
        "kind": "ValidationMessage",
        "name": name,
        "level": level,
        "documents": [dict(d) for d in documents],
        "diagnostic": diagnostic,
    }


def health_message(name: str, message: str, *, error: bool) -> Message:
    """A `HealthMessage` for one dependency of a service."""
    return {"message": message, "error": error, "kind": "HealthMessage", "name": name}


def status_body(
    code: int,
    message: str,
    *,
    reason: str | None = None,
    messages: Iterable[Message] = (),
    retry: bool = False,
    status: str | None = None,
    extra: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The status body; `status` defaults to Success below 400 and Failure otherwise."""
    message_list = [dict(m) for m in messages]
    details: dict[str, object] = {
        "errorCount": sum(1 for m in message_list if m.get("error")),
        "messageList": message_list,
    }
    if extra:
        details.update(extra)
    return {
        "kind": "Status",
        "apiVersion": "v1.0",
        "metadata": {},
        "status": status or ("Success" if code < 400 else "Failure"),
        "message": message,
        "reason": reason or ("Success" if code < 400 else "Failure"),
        "details": details,
        "code": int(code),
        "retry": retry,
    }


def is_status_body(body: object) -> bool:
    """True when `body` looks like a status response."""
    return isinstance(body, dict) and body.get("kind") == "Status" and "code" in body
