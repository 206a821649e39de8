"""Readers of stored JSON values (common.jsontypes): what a step's memo or output holds."""

from __future__ import annotations

import pytest

from common.jsontypes import as_float, as_int, as_list, as_object


def test_as_list_keeps_an_array_and_reads_anything_else_as_no_items() -> None:
    assert as_list(["a", "b"]) == ["a", "b"]
    assert as_list(None) == []
    assert as_list({"a": 1}) == []


def test_as_object_keeps_an_object_and_reads_anything_else_as_empty() -> None:
    assert as_object({"a": 1}) == {"a": 1}
    assert as_object([1]) == {}
    assert as_object(None) == {}


def test_as_float_reads_numbers_and_numeric_strings_else_the_default() -> None:
    assert as_float(2, 9.0) == 2.0
    assert as_float("1.5", 9.0) == 1.5
    assert as_float(None, 9.0) == 9.0
    assert as_float([1], 9.0) == 9.0


def test_as_int_reads_as_int_does_and_refuses_what_int_refuses() -> None:
    assert as_int(7) == 7
    assert as_int("12") == 12
    assert as_int(3.0) == 3
    with pytest.raises(TypeError):
        as_int(None)
    with pytest.raises(TypeError):
        as_int({"revision_id": 1})
