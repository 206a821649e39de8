"""The pages read an action's or a plan's view whatever shape a value has: lists, mappings
and numbers where expected, nothing (and no error) where a value is missing, null or odd."""

from __future__ import annotations

from shipyard_api.ui.action_page import by_node, live_section
from shipyard_api.ui.fields import entries, fields, mappings, number, text
from shipyard_api.ui.plan_page import plan_page


def test_values_of_any_shape_are_read_or_left_out() -> None:
    assert entries(["a", 1]) == ["a", 1]
    assert entries(("a",)) == ["a"]
    assert entries(None) == [] and entries("abc") == [] and entries({"a": 1}) == []
    assert fields({"a": 1}) == {"a": 1} and fields(None) == {} and fields([1]) == {}
    assert mappings([{"a": 1}, "x", None, {"b": 2}]) == [{"a": 1}, {"b": 2}]
    assert number("3") == 3 and number(2.0) == 2 and number(None) == 0 and number("") == 0
    assert text("x") == "x" and text("") is None and text(None) is None


def test_pages_render_views_with_missing_and_null_parts() -> None:
    steps = [{"id": "b", "index": "2", "node": "n1", "name": "deploy", "notes": None},
             {"id": "a", "index": None, "name": "preflight", "details": None}]
    assert [node for node, _ in by_node(steps)] == ["action", "n1"]
    html = live_section({"state": "running", "steps": steps + ["not a step"]})
    assert "2 steps" in html and "deploy" in html
    page = plan_page({"id": "p1", "nodes": [{"node": "n1", "calls": None, "drain": None}],
                      "groups": None, "blockers": None, "facts": "odd"}, "alice")
    assert "Plan" in page and "n1" in page
