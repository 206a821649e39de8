"""Resolve design references (deckhand+http(s)://, http(s)://, file://) to documents, only
from the places the operator allows, streamed under a byte cap and a time cap.

A reference is refused (400 `DesignRefNotAllowed`, naming the rule) unless it is
- an http(s) URL (optionally `deckhand+`) under one of the allowed prefixes: Shipyard's
  revisions (`[peers] shipyard_url` + `/api/v1.0/revisions/`) and `[design] allowed_urls`;
- a `file://` path that resolves (symlinks followed) to a regular `.yaml`, `.yml` or `.json`
  file under `[design] file_root` (unset: no file references at all) other than the service's
  own files (its configuration, tokens, policy, keys, database: any file its options name).
  Whether a refused file exists is not told: absent, not a design document, not allowed and
  unreadable get one identical answer.
A Shipyard (Deckhand) revision's `/revisions/{id}/rendered-documents` needs an id Shipyard can
hold (1 to 2**31 - 1); a document server's 400 is the reference's fault (400), not a gateway's.
Tokens (the caller's and the service token) are sent only to the configured Shipyard URL;
redirects are never followed."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import SplitResult, unquote, urlsplit

import requests
import urllib3
from cachetools import LRUCache, TLRUCache
from oslo_config import cfg

from common.api import API_PREFIX
from common.context import RequestContext
from common.documents import (
    DEFAULT_MAX_BYTES,
    Document,
    parse_documents,
    parse_json_documents,
)
from common.errors import BadGateway, BadRequest, NotFound, PayloadTooLarge, Timeout
from common.httpclient import DROPPED_GET, retrying_session

SCHEMES = ("deckhand+http", "deckhand+https", "http", "https", "file")
REVISIONS_PATH = f"{API_PREFIX}/revisions/"
MAX_HREF = 2048
MAX_REVISION = 2**31 - 1  # Shipyard's revision ids are 32-bit integer columns
REVISION_DOCS = re.compile(r"/revisions/([^/]*)/rendered-documents/?$")
DESIGN_SUFFIXES = (".yaml", ".yml", ".json")


def href_of(ref: object) -> str:
    """The href of a design reference given as `{rel, href, type}` or a bare string."""
    if isinstance(ref, str) and ref.strip():
        href = ref.strip()
    elif isinstance(ref, dict) and isinstance(ref.get("href"), str) and ref["href"].strip():
        href = str(ref["href"]).strip()
    else:
        raise BadRequest("A design reference is required: {rel: design, href: ..., type: "
                         "application/x-yaml} or a bare href", reason="MissingDesignRef")
    if len(href) > MAX_HREF:
        raise BadRequest(f"A design reference is at most {MAX_HREF} characters",
                         reason="InvalidDesignRef")
    return href


def _origin(parts: SplitResult) -> tuple[str, str, int]:
    scheme = parts.scheme.removeprefix("deckhand+").lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, (parts.hostname or "").lower(), port


def _under(parts: SplitResult, prefix: str) -> bool:
    """Whether the URL `parts` lies under the URL prefix `prefix` (same origin, path below)."""
    want = urlsplit(prefix)
    if _origin(parts) != _origin(want):
        return False
    base = want.path if want.path.endswith("/") else want.path + "/"
    return parts.path == want.path or parts.path.startswith(base)


@dataclass(frozen=True)
class RefPolicy:
    """Where design references may point and where tokens may be sent."""

    allowed_urls: tuple[str, ...] = ()
    file_root: str | None = None
    token_url: str | None = None
    private: frozenset[str] = frozenset()  # real paths never served (the service's own files)

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> RefPolicy:
        shipyard = str(conf.peers.shipyard_url).rstrip("/")
        allowed = (shipyard + REVISIONS_PATH, *(u for u in conf.design.allowed_urls if u))
        return cls(allowed_urls=tuple(allowed), file_root=conf.design.file_root or None,
                   token_url=shipyard + "/", private=private_files(conf))

    @cached_property
    def real_root(self) -> str:
        """`file_root`'s real path, resolved once: the root is the operator's setting, and
        each request's own path is still resolved on every check."""
        return os.path.realpath(self.file_root or "/")

    def rule(self) -> str:
        urls = ", ".join(self.allowed_urls) or "none"
        files = f"files under {self.file_root}" if self.file_root else "no file:// references"
        return (f"design references must be URLs under {urls} ([peers] shipyard_url, "
                f"[design] allowed_urls) or {files} ([design] file_root)")

    def refuse(self, href: str, why: str) -> BadRequest:
        return BadRequest(f"Design reference {href[:200]} is not allowed ({why}): {self.rule()}",
                          reason="DesignRefNotAllowed")

    def check_url(self, href: str, parts: SplitResult) -> str:
        """The URL to fetch for an allowed http(s) reference, else 400."""
        if parts.username is not None or parts.password is not None:
            raise self.refuse(href, "credentials in the URL")
        segments = unquote(parts.path).replace("\\", "/").split("/")
        if any(s in ("..", ".") for s in segments):
            raise self.refuse(href, "dot segments in the path")
        if not any(_under(parts, prefix) for prefix in self.allowed_urls):
            raise self.refuse(href, "URL outside the allowed prefixes")
        revision = REVISION_DOCS.search(parts.path)
        if revision is not None:
            check_revision(href, unquote(revision.group(1)))
        return parts.geturl().removeprefix("deckhand+")

    def check_file(self, href: str, parts: SplitResult) -> str:
        """The real path of an allowed file reference, else 400."""
        if not self.file_root:
            raise self.refuse(href, "file references are disabled")
        if parts.netloc not in ("", "localhost"):
            raise self.refuse(href, "file reference names a host")
        path = unquote(parts.path)
        if not path.startswith("/"):
            raise self.refuse(href, "file reference without an absolute path")
        root, real = self.real_root, os.path.realpath(path)
        if (os.path.commonpath([root, real]) != root or real in self.private
                or not real.lower().endswith(DESIGN_SUFFIXES)
                or not path.lower().endswith(DESIGN_SUFFIXES)):
            raise self.unreadable(href)
        return real

    def unreadable(self, href: str) -> BadRequest:
        """The one answer for a file that is absent, not allowed, not a design document or
        not readable: it tells nothing about which (nor whether the file exists)."""
        root = f"under {self.file_root}" if self.file_root else "nowhere"
        return BadRequest(
            f"Design reference {href[:200]} is not a design document this service may read: "
            f"file:// references name an existing regular .yaml, .yml or .json file {root} "
            "([design] file_root), never one of the service's own files",
            reason="DesignRefNotAllowed")

    def may_send_token(self, url: str) -> bool:
        return self.token_url is not None and _under(urlsplit(url), self.token_url)


def check_revision(href: str, value: str) -> None:
    """400 unless `value` is a revision id Shipyard can hold (ASCII digits, 1..MAX_REVISION)."""
    if not (value.isascii() and value.isdigit() and len(value) <= 10
            and 0 < int(value) <= MAX_REVISION):
        raise BadRequest(f"Design reference {href[:200]} names revision {value[:20]!r}"
                         f"{'...' if len(value) > 20 else ''}: a revision id is an integer "
                         f"from 1 to {MAX_REVISION}", reason="InvalidDesignRef")


def private_files(conf: object) -> frozenset[str]:
    """Real paths of the files a service's options name (configuration files, token file,
    policy file, keys, kubeconfig, an SQLite database and its journal files): never served
    as design documents, wherever they are."""
    if not isinstance(conf, cfg.ConfigOpts):
        return frozenset()  # settings built in code (tests) name no file of the service
    values: list[str] = [str(f) for f in (conf.config_file or [])]
    policy = conf.oslo_policy if "oslo_policy" in conf else None
    values.append(str(getattr(policy, "policy_file", None) or "policy.yaml"))
    for name in list(conf):
        try:
            group = conf[name]
        except Exception:  # an option that cannot be read names no file
            continue
        items = [group] if not isinstance(group, cfg.ConfigOpts.GroupAttr) else [
            _option(group, key) for key in list(group)]
        for item in items:
            values += [v for v in (item if isinstance(item, list) else [item])
                       if isinstance(v, str) and v]
    paths: set[str] = set()
    for value in values:
        if value.startswith("sqlite:"):
            db = urlsplit(value).path[1:]  # sqlite:///relative, sqlite:////absolute
            paths.update(db + suffix for suffix in ("", "-wal", "-shm", "-journal"))
        elif "://" not in value:
            paths.add(value)
    # a relative name is looked up from the working directory or beside a config file
    bases = ["", *(os.path.dirname(str(f)) for f in getattr(conf, "config_file", None) or [])]
    return frozenset(os.path.realpath(os.path.join(base, os.path.expanduser(p)))
                     for p in paths for base in bases)


def _option(group: object, key: str) -> object:
    try:
        return getattr(group, key)
    except Exception:  # an option that cannot be read names no file
        return None


# A Shipyard (Deckhand) revision's rendered documents: immutable once committed.
IMMUTABLE = re.compile(r"/revisions/\d+/rendered-documents/?$")


class DesignResolver:
    """Fetches and parses design documents, with a small TTL cache keyed by href. Once an
    entry expires, one caller reads the reference again while the others of that href wait
    for it, and bytes equal to those last read give back the very documents parsed then (not
    parsed again, so what callers built from them stays valid)."""

    def __init__(
        self,
        policy: RefPolicy,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        cache_size: int = 32,
        cache_ttl: float = 30.0,
        timeout: float = 30.0,
        token: str | None = None,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._token = token
        self._session = session or retrying_session(DROPPED_GET)
        self._ttl = cache_ttl
        self._cache: TLRUCache[str, list[Document]] | None = TLRUCache(
            maxsize=cache_size, ttu=self._expires, timer=clock) if cache_size > 0 else None
        # href -> digest of the bytes last read and their documents (kept past the TTL)
        self._read: LRUCache[str, tuple[bytes, list[Document]]] = LRUCache(max(cache_size, 1))
        self._reading: dict[str, threading.Lock] = {}  # href -> held by its one reader
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, *, session: requests.Session | None = None,
                  clock: Callable[[], float] = time.monotonic) -> DesignResolver:
        """The resolver a service builds from its `[design]`, `[peers]` and `[auth]` options."""
        return cls(RefPolicy.from_conf(conf), max_bytes=conf.design.max_document_bytes,
                   cache_size=conf.design.cache_size, cache_ttl=conf.design.cache_ttl,
                   timeout=conf.design.fetch_timeout, token=conf.auth.service_token or None,
                   session=session, clock=clock)

    def check(self, ref: object) -> str:
        """The href of `ref` when the policy allows it; 400 otherwise (nothing is read)."""
        href = href_of(ref)
        self._target(href)
        return href

    def _target(self, href: str) -> tuple[str, str]:
        try:
            parts = urlsplit(href)
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError as exc:
            raise BadRequest(f"Design reference {href[:200]} is not a valid URL: {exc}",
                             reason="InvalidDesignRef") from exc
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise BadRequest(f"Unsupported design reference scheme {scheme[:20]!r}; "
                             f"use one of {', '.join(SCHEMES)}", reason="InvalidDesignRef")
        if scheme == "file":
            return "file", self.policy.check_file(href, parts)
        return "url", self.policy.check_url(href, parts)

    def resolve(self, ref: object, ctx: RequestContext | None = None) -> list[Document]:
        """The documents of `ref`. The policy is checked on every read of the reference; a
        cached answer was allowed when it was read and is served as read until it expires
        (a file that leads out of the allowed places since is refused at its next read)."""
        href = href_of(ref)
        cached = self._cached(href)
        if cached is not None:
            return cached
        kind, target = self._target(href)
        if self._cache is None:
            return self._load(href, kind, target, ctx)
        with self._lock:
            reading = self._reading.setdefault(href, threading.Lock())
        with reading:  # one reader per href; the others find what it stored
            cached = self._cached(href)
            if cached is not None:
                return cached
            try:
                docs = self._load(href, kind, target, ctx)
                self._store(href, docs)
            finally:
                with self._lock:
                    self._reading.pop(href, None)
        return docs

    def _load(self, href: str, kind: str, target: str,
              ctx: RequestContext | None) -> list[Document]:
        """Read the reference; parse it unless its bytes are those read last time."""
        if kind == "file":
            data, json_body = self._read_file(href, target), False
        else:
            data, content_type = self._fetch(href, target, ctx)
            json_body = content_type.split(";")[0].strip().lower() == "application/json"
        digest = hashlib.sha256(data).digest() + (b"j" if json_body else b"y")
        with self._lock:
            last = self._read.get(href)
        if last is not None and last[0] == digest:
            return last[1]
        docs = (parse_json_documents(data, max_bytes=self._max_bytes) if json_body
                else parse_documents(data, max_bytes=self._max_bytes))
        with self._lock:
            self._read[href] = (digest, docs)
        return docs

    def _expires(self, href: str, _: list[Document], now: float) -> float:
        """A committed revision's rendered documents never change (revisions are immutable),
        so those stay until evicted by size; anything else is kept `cache_ttl` seconds."""
        return math.inf if IMMUTABLE.search(urlsplit(href).path) else now + self._ttl

    def _cached(self, href: str) -> list[Document] | None:
        if self._cache is None:
            return None
        with self._lock:
            return self._cache.get(href)

    def _store(self, href: str, docs: list[Document]) -> None:
        if self._cache is not None:
            with self._lock:
                self._cache[href] = docs

    def _read_file(self, href: str, path: str) -> bytes:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:  # absent, unreadable, or swapped for a link since resolved
            raise self.policy.unreadable(href) from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise self.policy.unreadable(href)
            data = b""
            while len(data) <= self._max_bytes:
                chunk = os.read(fd, self._max_bytes + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        if len(data) > self._max_bytes:
            raise PayloadTooLarge(f"Design {href} exceeds {self._max_bytes} bytes")
        return data

    def _headers(self, url: str, ctx: RequestContext | None) -> dict[str, str]:
        # JSON when the server offers it (Shipyard does): parsed far faster than YAML
        headers = {"Accept": "application/json, application/x-yaml;q=0.9"}
        if ctx is not None:
            headers.update(ctx.headers())
        if self.policy.may_send_token(url):
            token = (ctx.token if ctx is not None else None) or self._token
            if token:
                headers["X-Auth-Token"] = token
        return headers

    def _fetch(self, href: str, url: str, ctx: RequestContext | None) -> tuple[bytes, str]:
        """The body and its content type."""
        deadline = time.monotonic() + self._timeout
        try:
            with self._session.get(url, headers=self._headers(url, ctx), stream=True,
                                   timeout=(min(5.0, self._timeout), self._timeout),
                                   allow_redirects=False) as resp:
                if resp.status_code == 404:
                    raise NotFound(f"Design reference {href} was not found")
                if resp.status_code == 400:
                    raise BadRequest(f"Design reference {href[:200]} was refused by its "
                                     f"server: {_peer_message(resp)}",
                                     reason="InvalidDesignRef")
                if resp.status_code >= 300:
                    raise BadGateway(f"Fetching {href} failed with HTTP {resp.status_code}")
                chunks: list[bytes] = []
                size = 0
                while chunk := resp.raw.read1(64 * 1024, decode_content=True):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > self._max_bytes:
                        raise PayloadTooLarge(f"Design {href} exceeds {self._max_bytes} bytes")
                    if time.monotonic() > deadline:
                        raise Timeout(f"Fetching {href} took over {self._timeout} s")
                return b"".join(chunks), resp.headers.get("Content-Type") or ""
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                requests.exceptions.InvalidSchema) as exc:
            raise BadRequest(f"Design reference {href} is not a valid URL: {exc}",
                             reason="InvalidDesignRef") from exc
        except (requests.exceptions.ReadTimeout, urllib3.exceptions.ReadTimeoutError) as exc:
            # the server went silent for the whole time cap: the same failure as a slow body
            raise Timeout(f"Fetching {href} took over {self._timeout} s") from exc
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            raise BadGateway(f"Design reference {href} is unreachable: {exc}") from exc


def _peer_message(resp: requests.Response) -> str:
    """The top-level message of a document server's status body (bounded), else its code."""
    try:
        body = json.loads(resp.raw.read(64 * 1024, decode_content=True) or b"null")
    except ValueError:
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    return str(message)[:500] if message else f"HTTP {resp.status_code}"
