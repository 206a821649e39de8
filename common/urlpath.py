"""Object URLs built from names: the name is one quoted path segment, and the path a client
sends (after the dot-segment removal of RFC 3986 5.2.4, which urllib3 and requests apply)
still ends in exactly that segment, so no name can address another object or a collection."""

from __future__ import annotations

from urllib.parse import quote

from common.errors import InvalidName, InvalidNodeName
from common.nodenames import shown


def remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4: the path as a client normalizes it before sending."""
    out: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == ".":
            if last:
                out.append("")
        elif segment == "..":
            if len(out) > 1 or (out and out[0]):
                out.pop()
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/".join(out)


def object_path(collection: str, name: str, tail: str = "", *,
                error: type[InvalidName] = InvalidName) -> str:
    """`collection/<name quoted as one segment>` (+ `tail`, e.g. "/drain"); `error` (400)
    when the name is empty or when the path sent would not end in that one segment."""
    segment = quote(name, safe="") if isinstance(name, str) else ""
    base = f"{collection.rstrip('/')}/{segment}"
    path = base + tail
    normalized = remove_dot_segments(path)
    if not segment or normalized != path or not normalized.startswith(base):
        raise error(f"{shown(name)} cannot name one object under {collection}: the request "
                    f"would address {normalized or '/'!r} instead")
    return path


def node_path(collection: str, name: str, tail: str = "") -> str:
    """`object_path` for a node name: InvalidNodeName when it cannot be one segment."""
    return object_path(collection, name, tail, error=InvalidNodeName)
