"""Fetching an asset's location: http(s) as given; promenade+http(s) through Drydock's
Promenade peer (the location's host names the service, as a cluster-internal name does in
Airship), with Drydock's service token."""

from __future__ import annotations

from urllib.parse import urlsplit

import requests

from common.errors import BerthError
from common.httpclient import DROPPED_GET, ServiceClient, retrying_session
from drydock_api.bootactions.render import AssetError

SCHEMES = ("http", "https", "promenade+http", "promenade+https")


class LocationFetcher:
    def __init__(self, promenade: ServiceClient | None, *, timeout: float = 30.0,
                 session: requests.Session | None = None) -> None:
        self._promenade = promenade
        self._timeout = timeout
        self._session = session or retrying_session(DROPPED_GET)

    def __call__(self, location: str) -> bytes:
        parts = urlsplit(location)
        if parts.scheme not in SCHEMES:
            raise AssetError(f"Unsupported asset location scheme {parts.scheme!r} in "
                             f"{location} (supported: {', '.join(SCHEMES)})")
        if parts.scheme.startswith("promenade+"):
            return self._from_promenade(parts.path, parts.query, location)
        try:
            resp = self._session.get(location, timeout=self._timeout)
        except requests.RequestException as exc:
            raise AssetError(f"Asset location {location} unreachable: {exc}") from exc
        if resp.status_code >= 400:
            raise AssetError(f"Asset location {location} answered {resp.status_code}: "
                             f"{resp.text[:300]}")
        return resp.content

    def _from_promenade(self, path: str, query: str, location: str) -> bytes:
        if self._promenade is None:
            raise AssetError(f"No Promenade peer configured for {location}")
        target = f"{path}?{query}" if query else path
        try:
            resp = self._promenade.raw("GET", target, headers={"Accept": "*/*"})
        except BerthError as exc:
            raise AssetError(f"Promenade unreachable for {location}: {exc.message}") from exc
        if resp.status_code >= 400:
            error = self._promenade.error(resp)
            problems = "; ".join(str(m.get("message")) for m in error.messages)
            raise AssetError(f"Promenade answered {resp.status_code} for {location}: "
                             f"{problems or error.message}")
        return resp.content
