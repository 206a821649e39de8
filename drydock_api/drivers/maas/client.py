"""NodeDriver over the MAAS 2.0 REST API: requests + OAuth1 PLAINTEXT, bounded retries."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests
from oauthlib.oauth1 import SIGNATURE_PLAINTEXT
from requests_oauthlib import OAuth1

from drydock_api.drivers.ports import MaasError, Machine

RETRY_CODES = frozenset({502, 503, 504})
SAFE = frozenset({"GET", "DELETE"})


def oauth_from_key(api_key: str) -> OAuth1:
    """OAuth1 PLAINTEXT auth from a MAAS API key `consumer:token:secret`."""
    parts = api_key.split(":")
    if len(parts) != 3 or not all(parts):
        raise MaasError("The MAAS API key must be 'consumer:token:secret'")
    consumer, token, secret = parts
    return OAuth1(consumer, client_secret="", resource_owner_key=token,
                  resource_owner_secret=secret, signature_method=SIGNATURE_PLAINTEXT,
                  signature_type="auth_header")


def to_machine(body: dict[str, Any]) -> Machine:
    return Machine(system_id=str(body["system_id"]), hostname=str(body.get("hostname")),
                   status_name=str(body.get("status_name")),
                   power_state=body.get("power_state"),
                   status_message=body.get("status_message"))


class MaasClient:
    """Talks to MAAS at `url` (e.g. http://maas:5240/MAAS); errors become MaasError."""

    def __init__(self, url: str, api_key: str, *, timeout: float = 30.0, retries: int = 3,
                 backoff: float = 0.5, session: requests.Session | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._api = url.rstrip("/") + "/api/2.0"
        self._auth = oauth_from_key(api_key) if api_key else None
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._session = session or requests.Session()
        self._sleep = sleep

    def _call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
              data: dict[str, Any] | None = None) -> requests.Response:
        url = f"{self._api}{path}"
        attempts = 1 + (self._retries if method in SAFE else 0)
        for attempt in range(attempts):
            if attempt:
                self._sleep(self._backoff * 2 ** (attempt - 1))
            try:
                resp = self._session.request(method, url, params=params, data=data,
                                             auth=self._auth, timeout=self._timeout)
            except requests.RequestException as exc:
                if attempt + 1 < attempts:
                    continue
                raise MaasError(f"MAAS unreachable for {method} {path}: {exc}",
                                transient=True) from exc
            if resp.status_code in RETRY_CODES and attempt + 1 < attempts:
                continue
            return resp
        raise MaasError(f"MAAS gave no answer to {method} {path}", transient=True)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self._call(method, path, **kwargs)
        if resp.status_code >= 400:
            text = resp.text.strip()[:500] or resp.reason
            raise MaasError(f"MAAS refused {method} {path} ({resp.status_code}): {text}",
                            transient=resp.status_code in RETRY_CODES,
                            details={"maas_code": resp.status_code, "maas_message": text})
        try:
            return resp.json() if resp.content else None
        except ValueError as exc:
            raise MaasError(f"MAAS answered {method} {path} with non-JSON") from exc

    def find_machine(self, hostname: str) -> Machine | None:
        found = self._json("GET", "/machines/", params={"hostname": hostname})
        matches = [m for m in found or [] if m.get("hostname") == hostname]
        return to_machine(matches[0]) if matches else None

    def list_machines(self) -> list[Machine]:
        return [to_machine(m) for m in self._json("GET", "/machines/") or []]

    def release(self, system_id: str, erase: str | None) -> Machine:
        data: dict[str, Any] = {}
        if erase:
            data["erase"] = "true"
            data["secure_erase" if erase == "secure" else "quick_erase"] = "true"
        body = self._json("POST", f"/machines/{system_id}/", params={"op": "release"},
                          data=data)
        return to_machine(body)

    def delete_machine(self, system_id: str) -> None:
        resp = self._call("DELETE", f"/machines/{system_id}/")
        if resp.status_code == 404 or resp.status_code < 400:
            return
        raise MaasError(f"MAAS refused to delete {system_id} ({resp.status_code}): "
                        f"{resp.text.strip()[:500]}", transient=resp.status_code in RETRY_CODES)

    def check(self) -> str:
        version = self._json("GET", "/version/")
        self._json("GET", "/machines/", params={"hostname": "-"})
        return f"MAAS {(version or {}).get('version', '?')} reachable, key accepted"
