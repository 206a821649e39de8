"""The status body's shape and the error hierarchy's codes, reasons and retry flags."""

import pytest

from common import errors
from common.status import health_message, simple_message, status_body, validation_message


def test_status_body_has_the_airship_shape_and_counts_only_errors():
    body = status_body(400, "Bad", reason="BadRequest", messages=[
        simple_message("one"), simple_message("fine", error=False),
        validation_message("two", name="Check", documents=[{"schema": "a/B/v1", "name": "x"}]),
    ])
    assert set(body) == {"kind", "apiVersion", "metadata", "status", "message", "reason",
                         "details", "code", "retry"}
    assert body["kind"] == "Status" and body["apiVersion"] == "v1.0"
    assert body["status"] == "Failure" and body["code"] == 400
    assert body["details"]["errorCount"] == 2
    kinds = [m["kind"] for m in body["details"]["messageList"]]
    assert kinds == ["SimpleMessage", "SimpleMessage", "ValidationMessage"]
    vm = body["details"]["messageList"][2]
    assert {"name", "level", "documents", "diagnostic"} <= set(vm)


def test_success_status_and_health_message():
    body = status_body(200, "ok", messages=[health_message("db", "up", error=False)])
    assert body["status"] == "Success" and body["reason"] == "Success"
    assert body["details"]["errorCount"] == 0
    assert body["details"]["messageList"][0] == {
        "message": "up", "error": False, "kind": "HealthMessage", "name": "db"}


@pytest.mark.parametrize("cls,code,reason,retry", [
    (errors.BadRequest, 400, "BadRequest", False),
    (errors.Unauthenticated, 401, "Unauthenticated", False),
    (errors.Forbidden, 403, "Forbidden", False),
    (errors.NotFound, 404, "NotFound", False),
    (errors.MethodNotAllowed, 405, "MethodNotAllowed", False),
    (errors.Conflict, 409, "Conflict", False),
    (errors.PayloadTooLarge, 413, "PayloadTooLarge", False),
    (errors.UnsupportedMediaType, 415, "UnsupportedMediaType", False),
    (errors.InternalError, 500, "InternalError", True),
    (errors.BadGateway, 502, "BadGateway", True),
    (errors.ServiceUnavailable, 503, "ServiceUnavailable", True),
])
def test_every_error_class_renders_its_code_reason_and_retry(cls, code, reason, retry):
    body = cls("it broke").to_status()
    assert (body["code"], body["reason"], body["retry"]) == (code, reason, retry)
    assert body["details"]["messageList"][0]["message"] == "it broke"
    assert body["details"]["errorCount"] == 1


def test_service_subclass_keeps_its_reason_and_bad_gateway_carries_peer_body():
    class DrainNodeError(errors.InternalError):
        reason = "DrainNodeError"

    assert DrainNodeError("x").to_status()["reason"] == "DrainNodeError"
    peer = status_body(500, "drain failed", reason="DrainNodeError",
                       messages=[simple_message("pod a still present")])
    err = errors.BadGateway("Promenade failed", peer_status=peer)
    body = err.to_status()
    assert body["details"]["peer_status"]["reason"] == "DrainNodeError"
    assert [m["message"] for m in body["details"]["messageList"]] == [
        "Promenade failed", "pod a still present"]
