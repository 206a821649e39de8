"""The one check of node names: syntax and limits, counted before anything else."""

from __future__ import annotations

from common.nodenames import MAX_NODE_NAME, NodeNames, check_names, split_names


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
