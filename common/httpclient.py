"""Service-to-service HTTP: one session per peer, timeouts, bounded retries, context forwarding.

Retries are urllib3's, mounted on the session (exponential backoff with jitter, or the peer's
Retry-After): connection errors and 502/503/504 for idempotent methods, and POST only when the
call carries an Idempotency-Key. A peer's status body becomes one of our errors; a peer that
never answers becomes BadGateway (Timeout when it was reached but did not answer in time).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Collection, Mapping
from types import TracebackType
from typing import Any, Self, TypedDict, Unpack

import requests
import urllib3
from oslo_config import cfg
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import ConnectionPool
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import RequestHistory, Retry

from common.context import RequestContext
from common.errors import BY_CODE, BadGateway, BerthError, Timeout
from common.status import is_status_body, simple_message

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRY_CODES = frozenset({502, 503, 504})
IDEMPOTENCY_HEADER = "Idempotency-Key"
Params = Mapping[str, str | int | float | None]  # a call's query parameters
RETRY_AFTER_MAX = 60  # a peer's Retry-After is honoured up to this many seconds


class RetryOptions(TypedDict, total=False):
    """urllib3 Retry's own options (its constructor's keywords)."""

    total: bool | int | None
    connect: int | None
    read: int | None
    redirect: bool | int | None
    status: int | None
    other: int | None
    allowed_methods: Collection[str] | None
    status_forcelist: Collection[int] | None
    backoff_factor: float
    backoff_max: float
    raise_on_redirect: bool
    raise_on_status: bool
    history: tuple[RequestHistory, ...] | None
    respect_retry_after_header: bool
    remove_headers_on_redirect: Collection[str]
    backoff_jitter: float
    retry_after_max: int


class PeerRetry(Retry):
    """urllib3's Retry with Berth's schedule: backoff * 2^(n-1) * (1 + jitter) before retry n
    (a Retry-After header instead, when the answer has one), and no retry at all of a method
    it does not allow, even when the connection was refused."""

    def __init__(self, *, pause: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = lambda: 0.0,
                 **kwargs: Unpack[RetryOptions]) -> None:
        kwargs.setdefault("retry_after_max", RETRY_AFTER_MAX)
        super().__init__(**kwargs)
        self.pause, self.jitter = pause, jitter

    def new(self, **kw: object) -> Self:
        kw.setdefault("pause", self.pause)
        kw.setdefault("jitter", self.jitter)
        return super().new(**kw)

    def get_backoff_time(self) -> float:
        n = len(self.history)
        return 0.0 if n == 0 else min(self.backoff_max,
                                      self.backoff_factor * 2 ** (n - 1) * (1 + self.jitter()))

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        after = (self.get_retry_after(response)
                 if self.respect_retry_after_header and response is not None else None)
        delay = after if after else self.get_backoff_time()
        if delay > 0:
            self.pause(delay)

    def increment(self, method: str | None = None, url: str | None = None,
                  response: BaseHTTPResponse | None = None, error: Exception | None = None,
                  _pool: ConnectionPool | None = None,
                  _stacktrace: TracebackType | None = None) -> Self:
        if method is not None and not self._is_method_retryable(method):
            return Retry.increment(self.new(total=0), method, url, response, error, _pool,
                                   _stacktrace)
        return super().increment(method, url, response, error, _pool, _stacktrace)


class DroppedRetry(PeerRetry):
    """Sends a request again when its connection closed before any answer (a server may
    close an idle kept-alive connection just as the next request is sent: RFC 9112 9.3.1),
    but never one that timed out waiting for its answer: a silent server costs one timeout,
    not one per attempt."""

    def increment(self, method: str | None = None, url: str | None = None,
                  response: BaseHTTPResponse | None = None, error: Exception | None = None,
                  _pool: ConnectionPool | None = None,
                  _stacktrace: TracebackType | None = None) -> Self:
        if isinstance(error, urllib3.exceptions.ReadTimeoutError):
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)


# Reads of documents by URL (designs, boot action assets): a GET whose kept-alive connection
# dropped unanswered is sent once more, on a new connection; nothing else is retried.
DROPPED_GET = DroppedRetry(total=1, connect=0, read=1, status=0, redirect=False,
                           allowed_methods=frozenset({"GET"}))


def timed_out(exc: requests.RequestException) -> bool:
    """Whether the call failed by a timeout (a read timeout that exhausted the retries reaches
    requests as a ConnectionError carrying urllib3's reason)."""
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(exc, requests.Timeout) or (
        isinstance(reason, urllib3.exceptions.TimeoutError)
        and not isinstance(reason, urllib3.exceptions.NewConnectionError))  # refused: no timeout


# The CLIs' calls: an idempotent call whose connection dropped (a server may close an idle
# keep-alive connection just as the next poll is sent) is sent again; a POST never is.
CLI_RETRY = Retry(total=3, connect=3, read=3, status=0, backoff_factor=0.2,
                  allowed_methods=frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}))


def retrying_session(retry: Retry, *, pool_maxsize: int = 10) -> requests.Session:
    """A session whose HTTP and HTTPS connections retry as `retry` says, keeping up to
    `pool_maxsize` idle connections per host (requests' default is 10: a connection
    returned beyond that is closed, and the next call opens a new one)."""
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry, pool_maxsize=pool_maxsize)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class ServiceClient:
    """Calls one peer service; raise on non-2xx, return the decoded JSON (or None)."""

    def __init__(
        self,
        base_url: str,
        *,
        name: str = "peer",
        token: str | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name
        self._token = token
        self._timeouts = (connect_timeout, read_timeout)
        # every method is retried by the session `_retrying`; a call that may not be repeated
        # (POST without an Idempotency-Key) goes through `_once`. A session given by the
        # caller serves both and retries as the caller set it up.
        self._retrying = session or retrying_session(PeerRetry(
            total=retries, allowed_methods=None, status_forcelist=RETRY_CODES,
            backoff_factor=backoff, raise_on_status=False, redirect=False,
            pause=sleep, jitter=jitter))
        self._once = session or requests.Session()

    def request(
        self,
        method: str,
        path: str,
        *,
        ctx: RequestContext | None = None,
        json_body: object = None,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
    ) -> Any:
        """Send one call (with retries where safe) and return its decoded JSON body."""
        response = self.raw(method, path, ctx=ctx, json_body=json_body, params=params,
                            headers=headers, idempotency_key=idempotency_key,
                            read_timeout=read_timeout)
        if response.status_code >= 400:
            raise self._error(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            return response.text

    def raw(
        self,
        method: str,
        path: str,
        *,
        ctx: RequestContext | None = None,
        json_body: object = None,
        params: Params | None = None,
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
    ) -> requests.Response:
        """Send one call with retries; return the final response, whatever its code."""
        method = method.upper()
        all_headers = {"Accept": "application/json"}
        if ctx is not None:
            all_headers.update(ctx.headers())
        if self._token:
            all_headers["X-Auth-Token"] = self._token
        if idempotency_key:
            all_headers[IDEMPOTENCY_HEADER] = idempotency_key
        all_headers.update(headers or {})
        data = None
        if json_body is not None:
            data = json.dumps(json_body)
            all_headers["Content-Type"] = "application/json"
        retryable = method in IDEMPOTENT or IDEMPOTENCY_HEADER in all_headers
        session = self._retrying if retryable else self._once
        timeouts = (self._timeouts[0], read_timeout or self._timeouts[1])
        try:
            return session.request(method, f"{self.base_url}{path}", data=data, params=params,
                                   headers=all_headers, timeout=timeouts)
        except requests.RequestException as exc:
            if timed_out(exc):
                raise Timeout(f"{self.name} did not answer {method} {path} in time: "
                              f"{exc}") from exc
            raise BadGateway(f"{self.name} unreachable for {method} {path}: {exc}") from exc

    def error(self, response: requests.Response) -> BerthError:
        """The error a non-2xx answer of `raw` stands for (as `request` raises it)."""
        return self._error(response)

    def _error(self, response: requests.Response) -> BerthError:
        try:
            body = response.json()
        except ValueError:
            body = None
        code = response.status_code
        if code >= 500:
            peer = body if is_status_body(body) else None
            message = (peer or {}).get("message") or f"{self.name} answered {code}"
            err = BadGateway(f"{self.name}: {message}", peer_status=peer)
            err.details.setdefault("peer_code", code)
            return err
        cls = BY_CODE.get(code, BerthError)
        if is_status_body(body):
            messages = body.get("details", {}).get("messageList") or [
                simple_message(str(body.get("message")))
            ]
            # the peer's `retry` is kept: e.g. 409 RequestInProgress means "ask again later"
            retry = body.get("retry") if isinstance(body.get("retry"), bool) else None
            return cls(f"{self.name}: {body.get('message')}", messages=messages,
                       reason=body.get("reason"), details={"peer_status": body}, retry=retry)
        return cls(f"{self.name} answered {code}: {response.text[:500]}")


def peer_client(conf: cfg.ConfigOpts, peer: str) -> ServiceClient:
    """A client for `peer` (shipyard|promenade|drydock) configured from `[peers]`."""
    peers = conf.peers
    return ServiceClient(
        getattr(peers, f"{peer}_url"), name=peer.capitalize(),
        token=conf.auth.service_token or None,
        connect_timeout=peers.connect_timeout, read_timeout=peers.read_timeout,
        retries=peers.retries, backoff=peers.backoff,
    )
