"""Reading request bodies safely: content type, size limit, JSON/YAML parsing, schemas."""

from __future__ import annotations

import json
from typing import Any

import falcon

from common.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/x-yaml", "application/yaml", "text/yaml", "text/x-yaml")


def read_raw(req: falcon.Request, limit: int) -> bytes:
    """The whole body, refusing more than `limit` bytes (413)."""
    length = req.content_length
    if length is not None and length > limit:
        raise PayloadTooLarge(f"Body of {length} bytes exceeds the limit of {limit} bytes")
    data = req.bounded_stream.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"Body exceeds the limit of {limit} bytes")
    return data


def _media_type(req: falcon.Request) -> str:
    return (req.content_type or "").split(";")[0].strip().lower()


def read_json(req: falcon.Request, *, required: bool = True, limit: int | None = None) -> Any:
    """Parse a JSON body; empty bodies give None unless `required` (then 400)."""
    max_bytes = limit or req.context.max_body_bytes
    data = read_raw(req, max_bytes)
    if not data.strip():
        if required:
            raise BadRequest("A JSON request body is required")
        return None
    if _media_type(req) not in JSON_TYPES:
        raise UnsupportedMediaType(
            f"Content-Type must be application/json, not {req.content_type or 'missing'}"
        )
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"Malformed JSON body: {exc}") from exc


def read_json_object(req: falcon.Request, *, required: bool = True) -> dict[str, Any]:
    body = read_json(req, required=required)
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadRequest("The JSON body must be an object")
    return body


def read_text(req: falcon.Request, allowed: tuple[str, ...] = YAML_TYPES) -> str:
    """A text body (e.g. YAML documents) of an allowed media type."""
    data = read_raw(req, req.context.max_body_bytes)
    if _media_type(req) not in allowed:
        raise UnsupportedMediaType(
            f"Content-Type must be one of {', '.join(allowed)}, not {req.content_type or 'missing'}"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"Body is not UTF-8: {exc}") from exc
