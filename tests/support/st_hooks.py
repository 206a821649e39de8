"""Schemathesis hooks: every error response must be an Airship status body; YAML responses are
document streams; well-formed design hrefs point at the test's design."""

from __future__ import annotations

import os
import re
from typing import Any

import schemathesis
import yaml

YAML_MEDIA_TYPES = ("application/x-yaml", "application/yaml", "text/yaml", "text/x-yaml")
SUPPORTED_HREF = re.compile(r"^\s*(file|https?|deckhand\+https?)://")
DESIGN_REF_ENV = "BERTH_ST_DESIGN_REF"


def _design(value: Any) -> Any:
    """A generated href with a supported scheme becomes the test's design (there is no
    network here: any other host is unreachable, a correct 502); other values stay as
    generated, to be refused with 400."""
    real = os.environ.get(DESIGN_REF_ENV)
    if real and isinstance(value, str) and SUPPORTED_HREF.match(value):
        return real
    if real and isinstance(value, dict) and isinstance(value.get("href"), str):
        return {**value, "href": _design(value["href"])}
    return value


@schemathesis.hook
def map_query(ctx: Any, query: Any) -> Any:
    if isinstance(query, dict) and "design_ref" in query:
        return {**query, "design_ref": _design(query["design_ref"])}
    return query


@schemathesis.hook
def map_body(ctx: Any, body: Any) -> Any:
    if isinstance(body, dict) and "design_ref" in body:
        return {**body, "design_ref": _design(body["design_ref"])}
    return _design(body)


@schemathesis.deserializer(*YAML_MEDIA_TYPES)
def yaml_document_stream(ctx: Any, response: Any) -> list[Any]:
    """A YAML body is a stream of documents (`---` separated): validated as the list of them.

    Schemathesis' own YAML deserializer reads a single document and fails on a stream."""
    return list(yaml.safe_load_all(response.content.decode(response.encoding or "utf-8")))


@schemathesis.check
def error_is_status_body(ctx: Any, response: Any, case: Any) -> bool | None:
    if response.status_code < 400:
        return None
    if case.path == "/ui" or case.path.startswith("/ui/"):
        return None  # the web view answers browsers with HTML pages (documented as such)
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
