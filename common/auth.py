"""Authentication strategies: static tokens (default), keystonemiddleware, or explicit noauth."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import yaml
from oslo_config import cfg

from common.errors import ServiceUnavailable, Unauthenticated

LOG = logging.getLogger(__name__)

TOKEN_HEADER = "X-Auth-Token"


@dataclass(frozen=True)
class Identity:
    user: str
    roles: tuple[str, ...]


class Authenticator(Protocol):
    """Turns a request's headers into an Identity, or None when not authenticated."""

    def authenticate(self, headers: Mapping[str, str]) -> Identity | None: ...


class TokenAuthenticator:
    """Tokens from a YAML file: `{token: {user: name, roles: [admin]}}`."""

    def __init__(self, tokens: Mapping[str, Identity]) -> None:
        self._tokens = dict(tokens)

    @classmethod
    def from_file(cls, path: str) -> TokenAuthenticator:
        p = Path(path)
        raw: object = yaml.safe_load(p.read_text()) if p.exists() else {}
        if raw and not isinstance(raw, dict):
            raise ValueError(f"{path}: the token file maps each token to its user and roles")
        tokens: dict[str, Identity] = {}
        for token, entry in (raw if isinstance(raw, dict) else {}).items():
            entry = entry or {}
            tokens[str(token)] = Identity(
                user=str(entry.get("user", "unknown")),
                roles=tuple(str(r) for r in entry.get("roles", [])),
            )
        return cls(tokens)

    def authenticate(self, headers: Mapping[str, str]) -> Identity | None:
        token = headers.get(TOKEN_HEADER.upper()) or headers.get(TOKEN_HEADER)
        if not token:
            return None
        for known, identity in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return identity
        return None


class NoAuthenticator:
    """Everyone is an admin: only when `[auth] strategy = noauth` is set explicitly."""

    def authenticate(self, headers: Mapping[str, str]) -> Identity | None:
        return Identity(user=headers.get("X-END-USER") or "noauth", roles=("admin",))


class KeystoneAuthenticator:
    """Reads the identity headers keystonemiddleware's auth_token sets on valid tokens."""

    def authenticate(self, headers: Mapping[str, str]) -> Identity | None:
        if headers.get("X-IDENTITY-STATUS", "").lower() != "confirmed":
            return None
        roles = tuple(r.strip() for r in headers.get("X-ROLES", "").split(",") if r.strip())
        user = headers.get("X-USER-NAME") or headers.get("X-USER-ID") or "unknown"
        return Identity(user=user, roles=roles)


def make_authenticator(conf: cfg.ConfigOpts) -> Authenticator:
    strategy = conf.auth.strategy
    if strategy == "noauth":
        return NoAuthenticator()
    if strategy == "keystone":
        return KeystoneAuthenticator()
    return TokenAuthenticator.from_file(conf.auth.token_file)


WSGIApp = WSGIApplication


def wrap_keystone(app: WSGIApp, conf: cfg.ConfigOpts) -> WSGIApp:
    """Put keystonemiddleware in front of `app`, configured from `[keystone_authtoken]` of
    `conf`; it decides late (delay_auth_decision) so that our app renders the 401 body."""
    from keystonemiddleware import auth_token

    options: dict[str, object] = {"oslo_config_config": conf, "delay_auth_decision": True}
    middleware = auth_token.AuthProtocol(app, options)

    def wsgi(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        try:
            answer: Iterable[bytes] = middleware(environ, start_response)
            return answer
        except Exception as exc:  # Keystone itself failing must still give a status body
            LOG.exception("Token validation failed")
            body = json.dumps(ServiceUnavailable(
                f"Identity service unavailable: {type(exc).__name__}").to_status()).encode()
            start_response("503 Service Unavailable", [
                ("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]

    return wsgi


def require(identity: Identity | None) -> Identity:
    if identity is None:
        raise Unauthenticated("Missing or invalid X-Auth-Token")
    return identity
