"""Resolve design references (deckhand+http(s)://, http(s)://, file://) to documents."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import requests

from common.context import RequestContext
from common.documents import DEFAULT_MAX_BYTES, Document, parse_documents
from common.errors import BadGateway, BadRequest, NotFound, PayloadTooLarge

SCHEMES = ("deckhand+http", "deckhand+https", "http", "https", "file")


def href_of(ref: Any) -> str:
    """The href of a design reference given as `{rel, href, type}` or a bare string."""
    if isinstance(ref, str) and ref.strip():
        return ref.strip()
    if isinstance(ref, dict) and isinstance(ref.get("href"), str) and ref["href"].strip():
        return str(ref["href"]).strip()
    raise BadRequest("A design reference is required: {rel: design, href: ..., type: "
                     "application/x-yaml} or a bare href", reason="MissingDesignRef")


class DesignResolver:
    """Fetches and parses design documents, with a small TTL cache keyed by href."""

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        cache_size: int = 32,
        cache_ttl: float = 30.0,
        timeout: float = 30.0,
        token: str | None = None,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_bytes = max_bytes
        self._cache_size = cache_size
        self._ttl = cache_ttl
        self._timeout = timeout
        self._token = token
        self._session = session or requests.Session()
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, list[Document]]] = OrderedDict()
        self._lock = threading.Lock()

    def resolve(self, ref: Any, ctx: RequestContext | None = None) -> list[Document]:
        href = href_of(ref)
        try:
            scheme = urlparse(href).scheme
        except ValueError as exc:
            raise BadRequest(f"Design reference {href} is not a valid URL: {exc}",
                             reason="InvalidDesignRef") from exc
        if scheme not in SCHEMES:
            raise BadRequest(f"Unsupported design reference scheme {scheme!r} in {href}; "
                             f"use one of {', '.join(SCHEMES)}", reason="InvalidDesignRef")
        cached = self._cached(href)
        if cached is not None:
            return cached
        text = self._read_file(href) if scheme == "file" else self._fetch(href, ctx)
        docs = parse_documents(text, max_bytes=self._max_bytes)
        self._store(href, docs)
        return docs

    def _cached(self, href: str) -> list[Document] | None:
        with self._lock:
            hit = self._cache.get(href)
            if hit is None or self._clock() - hit[0] > self._ttl:
                return None
            self._cache.move_to_end(href)
            return hit[1]

    def _store(self, href: str, docs: list[Document]) -> None:
        if self._cache_size <= 0:
            return
        with self._lock:
            self._cache[href] = (self._clock(), docs)
            self._cache.move_to_end(href)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _read_file(self, href: str) -> bytes:
        path = Path(unquote(urlparse(href).path))
        try:
            size = path.stat().st_size
            if size > self._max_bytes:
                raise PayloadTooLarge(f"Design {href} is {size} bytes, over {self._max_bytes}")
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise NotFound(f"Design reference {href} does not exist") from exc
        except OSError as exc:
            raise BadRequest(f"Design reference {href} cannot be read: {exc}") from exc

    def _fetch(self, href: str, ctx: RequestContext | None) -> bytes:
        url = href.removeprefix("deckhand+")
        headers = {"Accept": "application/x-yaml"}
        if ctx is not None:
            headers.update(ctx.headers())
            if ctx.token:
                headers["X-Auth-Token"] = ctx.token
        if self._token and "X-Auth-Token" not in headers:
            headers["X-Auth-Token"] = self._token
        try:
            with self._session.get(url, headers=headers, timeout=self._timeout,
                                   stream=True) as resp:
                if resp.status_code == 404:
                    raise NotFound(f"Design reference {href} was not found")
                if resp.status_code >= 400:
                    raise BadGateway(f"Fetching {href} failed with HTTP {resp.status_code}")
                data = b""
                for chunk in resp.iter_content(64 * 1024):
                    data += chunk
                    if len(data) > self._max_bytes:
                        raise PayloadTooLarge(f"Design {href} exceeds {self._max_bytes} bytes")
                return data
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                requests.exceptions.InvalidSchema) as exc:
            raise BadRequest(f"Design reference {href} is not a valid URL: {exc}",
                             reason="InvalidDesignRef") from exc
        except requests.RequestException as exc:
            raise BadGateway(f"Design reference {href} is unreachable: {exc}") from exc
