"""Kubernetes API errors, rendered as `Status` objects (kind Status, apiVersion v1)."""

from __future__ import annotations

from typing import Any, ClassVar

from common.errors import (
    BadRequest,
    BerthError,
    Conflict,
    InternalError,
    MethodNotAllowed,
    NotFound,
    UnsupportedMediaType,
)


class KubeError(BerthError):
    """Mixin-style base: every Kubernetes API failure knows its Status body."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        name: str | None = None,
        causes: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.causes = causes or []

    def kube_status(self) -> dict[str, Any]:
        """The Kubernetes `Status` body for this error."""
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.kind is not None:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = self.causes
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            body["details"] = details
        return body


class KubeBadRequest(KubeError, BadRequest):
    code, reason = 400, "BadRequest"


class KubeNotFound(KubeError, NotFound):
    code, reason = 404, "NotFound"


class KubeMethodNotAllowed(KubeError, MethodNotAllowed):
    code, reason = 405, "MethodNotAllowed"


class KubeConflict(KubeError, Conflict):
    code, reason = 409, "Conflict"


class KubeAlreadyExists(KubeError, Conflict):
    code, reason = 409, "AlreadyExists"


class KubeGone(KubeError):
    code, reason, retry = 410, "Expired", False


class KubeUnsupportedMediaType(KubeError, UnsupportedMediaType):
    code, reason = 415, "UnsupportedMediaType"


class KubeInvalid(KubeError, BadRequest):
    code, reason = 422, "Invalid"


class KubeTooManyRequests(KubeError):
    code, reason, retry = 429, "TooManyRequests", True


class KubeInternal(KubeError, InternalError):
    code, reason = 500, "InternalError"


def not_found(resource: str, name: str, group: str = "") -> KubeNotFound:
    """The NotFound error exactly as kube-apiserver words it."""
    qualified = f"{resource}.{group}" if group else resource
    return KubeNotFound(f'{qualified} "{name}" not found', kind=resource, name=name)


def success_status(code: int = 201) -> dict[str, Any]:
    """A `Status` body reporting success (what eviction answers)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "code": code}
