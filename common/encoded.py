"""Sending a body encoded ahead of time (JSON, and gzipped JSON for clients that accept it)."""

from __future__ import annotations

import falcon


def send_json(req: falcon.Request, resp: falcon.Response, data: bytes, packed: bytes | None,
              etag: str | None = None) -> None:
    """`data` (JSON), or `packed` (the same gzipped, when given) to clients that accept gzip;
    with an `etag` (a version of the body), a request naming it in If-None-Match is answered
    304 without the body."""
    resp.vary = ("Accept-Encoding",)
    if etag is not None:
        resp.set_header("ETag", f'W/"{etag}"')  # weak: one version, gzipped or not
        if any(tag == etag or tag == "*" for tag in req.if_none_match or ()):
            resp.status = falcon.HTTP_304
            resp.content_type = None  # no body, no type
            return
    resp.content_type = falcon.MEDIA_JSON
    if packed is not None and "gzip" in (req.get_header("Accept-Encoding") or "").lower():
        resp.set_header("Content-Encoding", "gzip")
        resp.data = packed
    else:
        resp.data = data
