"""OAuth1 PLAINTEXT verification of MAAS API keys (`consumer:token:secret`)."""

from __future__ import annotations

from urllib.parse import unquote


def parse_oauth_header(header: str | None) -> dict[str, str]:
    """The parameters of an `Authorization: OAuth k="v", ...` header (empty when absent)."""
    if not header or not header.strip().lower().startswith("oauth "):
        return {}
    params: dict[str, str] = {}
    for part in header.strip()[6:].split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            params[unquote(key.strip())] = unquote(value.strip().strip('"'))
    return params


def verify(header: str | None, api_key: str) -> str | None:
    """None when the header carries a valid PLAINTEXT signature for `api_key`, else why not."""
    consumer, token, secret = api_key.split(":")
    params = parse_oauth_header(header)
    if not params:
        return "Authorization header with OAuth credentials is required."
    if params.get("oauth_signature_method") != "PLAINTEXT":
        return "Only the PLAINTEXT signature method is supported."
    if params.get("oauth_consumer_key") != consumer or params.get("oauth_token") != token:
        return "Invalid access token: " + params.get("oauth_token", "")
    if params.get("oauth_signature") != f"&{secret}":
        return "Invalid consumer / token signature."
    return None
