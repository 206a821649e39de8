"""Reading request bodies safely: content type, size limit, JSON/YAML parsing, schemas."""

from __future__ import annotations

import json

import falcon

from common.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from common.inputcheck import DEFAULT_LIMITS, InputLimits, require_safe
from common.jsontypes import JSON, JSONObject

JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/x-yaml", "application/yaml", "text/yaml", "text/x-yaml")


def _chunked(req: falcon.Request) -> bool:
    encoding = (req.get_header("Transfer-Encoding") or "").lower()
    return "chunked" in encoding or bool(req.env.get("wsgi.input_terminated"))


def read_raw(req: falcon.Request, limit: int) -> bytes:
    """The whole body, refusing more than `limit` bytes (413). A chunked body (no
    Content-Length) is read from the server's de-chunking stream up to its end."""
    cached = getattr(req.context, "raw_body", None)
    if isinstance(cached, bytes):  # already read (by the idempotency middleware)
        return cached
    length = req.content_length
    if length is not None and length > limit:
        raise PayloadTooLarge(f"Body of {length} bytes exceeds the limit of {limit} bytes")
    stream = req.stream if length is None and _chunked(req) else req.bounded_stream
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise PayloadTooLarge(f"Body exceeds the limit of {limit} bytes")
    return data


def _media_type(req: falcon.Request) -> str:
    return (req.content_type or "").split(";")[0].strip().lower()


def read_json(req: falcon.Request, *, required: bool = True, limit: int | None = None) -> JSON:
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
    return loads_checked(data, limits(req))


def limits(req: falcon.Request) -> InputLimits:
    """The input limits of the service answering `req` (set by the app's middleware)."""
    found = getattr(req.context, "input_limits", None)
    return found if isinstance(found, InputLimits) else DEFAULT_LIMITS


def loads_checked(data: bytes | str, input_limits: InputLimits = DEFAULT_LIMITS) -> JSON:
    """Parse JSON and refuse (400) what cannot be kept safely: see common.inputcheck."""
    try:
        value: JSON = json.loads(data)
    except RecursionError as exc:
        raise BadRequest(f"JSON nested deeper than {input_limits.max_depth} levels",
                         reason="UnsafeInput") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"Malformed JSON body: {exc}") from exc
    require_safe(value, input_limits)
    return value


def read_json_object(req: falcon.Request, *, required: bool = True) -> JSONObject:
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
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"Body is not UTF-8: {exc}") from exc
    if "\x00" in text:
        raise BadRequest("The body contains a NUL character", reason="UnsafeInput")
    return text
