"""common.bodyschema: a body checked against a component schema of a service's OpenAPI
document, every problem worded once; OpenAPI 3.0's `nullable` read as null allowed."""

from __future__ import annotations

import pytest

from common.bodyschema import require_schema, schema_problems
from common.errors import ValidationFailed

HREF = "http://127.0.0.1:1/design.yaml"


def test_nullable_admits_null_and_still_checks_the_value() -> None:
    assert schema_problems("drydock", "TaskRequest", {"action": "verify_site",
                                                      "design_ref": HREF,
                                                      "node_filter": None}) == []
    assert schema_problems("drydock", "TaskRequest", {
        "action": "verify_site", "design_ref": HREF,
        "node_filter": {"filter_set": "n1"}}) == ["node_filter.filter_set must be a list"]


def test_an_alternative_is_checked_by_the_branch_the_value_fits() -> None:
    assert schema_problems("drydock", "TaskRequest", {
        "action": "verify_site", "design_ref": {"href": "ftp://x"}}) == [
        "design_ref.href must match ^\\s*(file|https?|deckhand\\+https?)://"]
    assert schema_problems("drydock", "TaskRequest", {"action": "verify_site",
                                                      "design_ref": 5}) == [
        "design_ref must be a bare href (file, http, https, deckhand+http or deckhand+https "
        "scheme) or {rel, href, type}"]


def test_one_400_lists_every_problem_and_the_callers_own() -> None:
    with pytest.raises(ValidationFailed) as caught:
        require_schema("shipyard", "ActionRequest", {"parameters": [], "x": 1},
                       "Invalid action request", extra=["a rule of the caller"])
    assert caught.value.code == 400 and caught.value.reason == "ValidationFailure"
    assert [m["message"] for m in caught.value.messages] == [
        "name is required", "unknown field 'x'", "parameters must be an object or null",
        "a rule of the caller"]
