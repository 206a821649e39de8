"""Object URLs from names: one quoted segment that survives a client's dot-segment removal."""

from __future__ import annotations

import pytest
from urllib3.util import parse_url

from common.errors import InvalidName, InvalidNodeName
from common.urlpath import node_path, object_path, remove_dot_segments

PATHS = ["/api/v1/nodes/..", "/api/v1/nodes/.", "/a/b/../c", "/a/./b/", "/a/b", "/..", "/a/..",
         "/a/../../b", "/a/b/./", "/a/%2E%2E/b"]


@pytest.mark.parametrize("path", PATHS)
def test_dot_segments_are_removed_as_urllib3_removes_them(path: str) -> None:
    assert remove_dot_segments(path) == parse_url(path).path


@pytest.mark.parametrize("name", [".", "..", ""])
def test_a_name_that_would_address_the_collection_or_root_is_refused(name: str) -> None:
    with pytest.raises(InvalidNodeName):
        node_path("/api/v1/nodes", name)
    with pytest.raises(InvalidName):
        object_path("/api/v1/namespaces", name, "/pods")


@pytest.mark.parametrize(("name", "sent"), [
    ("node01", "/api/v1/nodes/node01"), ("a/../..", "/api/v1/nodes/a%2F..%2F.."),
    ("%2e%2e", "/api/v1/nodes/%252e%252e"), ("..%2f", "/api/v1/nodes/..%252f"),
    ("a b", "/api/v1/nodes/a%20b"), ("...", "/api/v1/nodes/...")])
def test_any_other_name_is_quoted_whole_into_one_segment(name: str, sent: str) -> None:
    path = node_path("/api/v1/nodes", name)
    assert path == sent and parse_url(path).path == sent
    assert node_path("/api/v1.0/nodes", name, "/drain").endswith("/drain")
