"""Schemathesis hooks: every error response must be an Airship status body; YAML responses are
document streams."""

from __future__ import annotations

from typing import Any

import schemathesis
import yaml

YAML_MEDIA_TYPES = ("application/x-yaml", "application/yaml", "text/yaml", "text/x-yaml")


@schemathesis.deserializer(*YAML_MEDIA_TYPES)
def yaml_document_stream(ctx: Any, response: Any) -> list[Any]:
    """A YAML body is a stream of documents (`---` separated): validated as the list of them.

    Schemathesis' own YAML deserializer reads a single document and fails on a stream."""
    return list(yaml.safe_load_all(response.content.decode(response.encoding or "utf-8")))


@schemathesis.check
def error_is_status_body(ctx: Any, response: Any, case: Any) -> bool | None:
    if response.status_code < 400:
        return None
    try:
        body = response.json()
    except ValueError as exc:
        raise AssertionError(f"{response.status_code} without a JSON status body") from exc
    if not isinstance(body, dict):
        raise AssertionError(f"{response.status_code} body is not a status body: {body}")
    problems = [key for key in ("kind", "apiVersion", "status", "message", "reason", "details",
                                "code", "retry") if key not in body]
    if problems or body.get("kind") != "Status":
        raise AssertionError(f"{response.status_code} body is not a status body: {body}")
    if body["code"] != response.status_code:
        raise AssertionError(f"status body code {body['code']} != HTTP {response.status_code}")
    details = body["details"]
    errors = sum(1 for m in details.get("messageList", []) if m.get("error"))
    if details.get("errorCount") != errors:
        raise AssertionError(f"errorCount {details.get('errorCount')} != {errors} error messages")
    return None
