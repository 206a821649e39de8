"""Named versions of the site design (buffer, committed, site actions) and revision tags."""

from __future__ import annotations

from enum import StrEnum

from common.errors import BadRequest

COMMITTED_TAG = "committed"
SITE_ACTION_SUCCESS = "site-action-success"
SITE_ACTION_FAILURE = "site-action-failure"
SITE_ACTION_TAGS = (SITE_ACTION_SUCCESS, SITE_ACTION_FAILURE)


class Version(StrEnum):
    """A version name of the API (`?version=`), also accepted with hyphens."""

    BUFFER = "buffer"
    COMMITTED = "committed"
    LAST_SITE_ACTION = "last_site_action"
    SUCCESSFUL_SITE_ACTION = "successful_site_action"


SITE_ACTION_VERSIONS = frozenset({Version.LAST_SITE_ACTION, Version.SUCCESSFUL_SITE_ACTION})

VERSION_TAGS: dict[Version, tuple[str, ...]] = {
    Version.COMMITTED: (COMMITTED_TAG,),
    Version.LAST_SITE_ACTION: SITE_ACTION_TAGS,
    Version.SUCCESSFUL_SITE_ACTION: (SITE_ACTION_SUCCESS,),
}


def parse_version(value: str | Version, *, param: str = "version") -> Version:
    """`successful-site-action` and `successful_site_action` alike; anything else → 400."""
    if isinstance(value, Version):
        return value
    key = value.strip().lower().replace("-", "_")
    try:
        return Version(key)
    except ValueError:
        names = ", ".join(v.value for v in Version)
        raise BadRequest(f"Unknown {param} {value!r}; use one of {names}",
                         reason="InvalidVersion") from None
