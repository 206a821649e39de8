"""The one check of node names: syntax and limits, counted before anything else."""

from __future__ import annotations

import pytest

from common.errors import InvalidNodeName
from common.nodenames import (
    MAX_NODE_NAME,
    NodeNames,
    check_names,
    is_node_name,
    name_problem,
    require_name,
    require_names,
    split_names,
)


def test_names_are_stripped_deduplicated_and_typed() -> None:
    found = check_names([" node01", "node02", "node01 "])
    assert found.ok and found.names == ("node01", "node02")
    assert isinstance(found.names, NodeNames)


def test_empty_non_string_and_over_long_items_are_counted() -> None:
    found = check_names(["node01", "", 7, "n" * (MAX_NODE_NAME + 1)])
    assert (found.bad_items, found.too_long, found.ok) == (2, 1, False)
    assert found.names == ("node01",)


def test_a_list_over_the_limit_is_refused_without_reading_its_names() -> None:
    found = check_names([f"node{i}" for i in range(11)], limit=10)
    assert found.over_limit and found.given == 11 and found.names == ()


def test_a_comma_separated_string_or_a_list_gives_items() -> None:
    assert split_names("a,b") == ["a", "b"]
    assert split_names(["a"]) == ["a"]
    assert split_names({"a": 1}) is None


VALID = ["node01", "n", "0", "rack1-node-07", "a.b.c", "node01.site.example", "x" * 63,
         ".".join(["a" * 63] * 3) + "." + "b" * 61]
INVALID = [".", "..", "%2e%2e", "%2E", "a/../..", "..%2f", "-x", "x-", "X", "Node01", "node_01",
           "n" * 254, "a..b", ".a", "a.", "a b", "\n", "\u202enode01", "node\u200e01",
           "node\u200f01", "\u2066node01\u2069", "n\u202a1", "../../etc/passwd", "x" * 64,
           "nöde", "node01\x00"]


def test_node_names_are_dns_subdomains_as_kubernetes_checks_them() -> None:
    found = check_names(VALID)
    assert found.ok and found.names == tuple(VALID)
    assert all(is_node_name(n) for n in VALID)
    for name in INVALID:
        assert not is_node_name(name), ascii(name)
        assert name_problem(name) is not None


def test_every_refused_name_gets_its_own_escaped_message() -> None:
    found = check_names(["node01", "..", "\u202enode02", "X", "", 3])
    assert not found.ok and found.names == ("node01",)
    assert [n for n, _ in found.invalid] == ["..", "\u202enode02", "X"]
    messages = [m["message"] for m in found.messages("target_nodes")]
    assert len(messages) == 4
    assert messages[1].startswith("target_nodes: '\\u202enode02' is not a valid node name")
    assert not any("\u202e" in m for m in messages)
    assert "2 item(s) are empty or not strings" in messages[3]


def test_require_name_and_require_names_raise_invalid_node_name() -> None:
    assert require_name("node01") == "node01"
    for name in (".", "..", "", " node01", None):
        with pytest.raises(InvalidNodeName) as err:
            require_name(name, "node_id")
        assert err.value.to_status()["reason"] == "InvalidNodeName"
        assert err.value.code == 400
    assert require_names(["a", " b "], "leaving") == ("a", "b")
    with pytest.raises(InvalidNodeName) as err:
        require_names(["a", "..", "X"], "leaving")
    assert len(err.value.messages) == 2
