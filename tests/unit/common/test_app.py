"""The app factory: status bodies for every failure, context marker, auth and policy."""

import json
import os
import uuid

import falcon
import falcon.testing
import pytest
from oslo_config import cfg

from common import config
from common.app import create_service_app, service_spec
from common.auth import Identity, TokenAuthenticator
from common.body import read_json_object
from common.context import new_id
from common.errors import Conflict
from common.policy import ADMIN, READER, Policy, authorize, rule

RULES = [rule("test:read", READER, "read", "/api/v1.0/things", "GET"),
         rule("test:write", ADMIN, "write", "/api/v1.0/things", "POST")]


class Things:
    def __init__(self):
        self.items = []

    @authorize("test:read")
    def on_get(self, req, resp):
        resp.media = {"items": self.items}

    @authorize("test:write")
    def on_post(self, req, resp):
        body = read_json_object(req)
        if body.get("name") == "dup":
            raise Conflict("already there")
        if body.get("name") == "boom":
            raise RuntimeError("secret internals")
        self.items.append(body)
        resp.status = falcon.HTTP_201
        resp.media = body


def make_client(strategy="token", max_body=1024):
    conf = cfg.ConfigOpts()
    config.register_common(conf)
    conf([], default_config_files=[])
    conf.set_override("strategy", strategy, group="auth")
    conf.set_override("max_body_bytes", max_body, group="api")
    things = Things()
    spec = service_spec(conf, "shipyard", [("/api/v1.0/things", things)], RULES)
    spec.authenticator = TokenAuthenticator({
        "admin-token": Identity("alice", ("admin",)),
        "reader-token": Identity("bob", ("reader",)),
    }) if strategy == "token" else spec.authenticator
    spec.policy = Policy(conf, RULES)
    return falcon.testing.TestClient(create_service_app(spec)), things


ADMIN_H = {"X-Auth-Token": "admin-token"}


def assert_status(result, code, reason=None):
    assert result.status_code == code
    assert result.headers["content-type"].startswith("application/json")
    body = result.json
    assert body["kind"] == "Status" and body["code"] == code
    assert body["details"]["errorCount"] == len(
        [m for m in body["details"]["messageList"] if m["error"]])
    if reason:
        assert body["reason"] == reason
    return body


def test_unknown_route_is_a_404_status_body():
    client, _ = make_client()
    assert_status(client.simulate_get("/nope", headers=ADMIN_H), 404, "NotFound")


def test_wrong_method_is_a_405_status_body_with_allow():
    client, _ = make_client()
    result = client.simulate_delete("/api/v1.0/things", headers=ADMIN_H)
    assert_status(result, 405, "MethodNotAllowed")
    assert "GET" in result.headers.get("allow", "")


def test_malformed_json_is_400_and_changes_nothing():
    client, things = make_client()
    result = client.simulate_post("/api/v1.0/things", body="{nope",
                                  headers={**ADMIN_H, "Content-Type": "application/json"})
    assert_status(result, 400, "BadRequest")
    assert things.items == []


def test_wrong_content_type_is_415():
    client, things = make_client()
    result = client.simulate_post("/api/v1.0/things", body="name: x",
                                  headers={**ADMIN_H, "Content-Type": "text/plain"})
    assert_status(result, 415, "UnsupportedMediaType")
    assert things.items == []


def test_body_over_the_limit_is_413():
    client, things = make_client(max_body=64)
    result = client.simulate_post("/api/v1.0/things", json={"name": "x" * 200}, headers=ADMIN_H)
    assert_status(result, 413, "PayloadTooLarge")
    assert things.items == []


def test_domain_error_is_rendered_with_its_code():
    client, _ = make_client()
    body = assert_status(client.simulate_post("/api/v1.0/things", json={"name": "dup"},
                                              headers=ADMIN_H), 409, "Conflict")
    assert body["retry"] is False


def test_unexpected_exception_is_500_retry_without_traceback():
    client, _ = make_client()
    result = client.simulate_post("/api/v1.0/things", json={"name": "boom"}, headers=ADMIN_H)
    body = assert_status(result, 500, "InternalError")
    assert body["retry"] is True
    assert "secret internals" not in result.text and "Traceback" not in result.text


def test_context_marker_generated_when_absent():
    client, _ = make_client()
    result = client.simulate_get("/versions")
    marker = result.headers["x-context-marker"]
    assert uuid.UUID(marker)
    assert uuid.UUID(result.headers["x-request-id"])


def test_generated_ids_are_version_4_uuids_unique_and_new_in_a_forked_worker():
    ids = [new_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 4 and uuid.UUID(i).variant == uuid.RFC_4122
               for i in ids[:100])
    read, write = os.pipe()
    before = new_id()  # the parent's next id: a child must not repeat the parent's sequence
    pid = os.fork()
    if pid == 0:  # a gunicorn worker forked from the master
        os.write(write, new_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert uuid.UUID(child).version == 4 and child not in (before, new_id())


def test_context_marker_kept_when_valid_and_replaced_when_invalid():
    client, _ = make_client()
    good = str(uuid.uuid4())
    assert client.simulate_get("/versions", headers={"X-Context-Marker": good}).headers[
        "x-context-marker"] == good
    replaced = client.simulate_get("/versions", headers={"X-Context-Marker": "junk"}).headers[
        "x-context-marker"]
    assert replaced != "junk" and uuid.UUID(replaced)


@pytest.mark.parametrize("headers", [{}, {"X-Auth-Token": "wrong"}])
def test_token_auth_rejects_missing_or_wrong_token(headers):
    client, _ = make_client()
    assert_status(client.simulate_get("/api/v1.0/things", headers=headers), 401,
                  "Unauthenticated")


def test_policy_denies_reader_a_write_and_allows_reads():
    client, things = make_client()
    reader = {"X-Auth-Token": "reader-token"}
    assert_status(client.simulate_post("/api/v1.0/things", json={"name": "a"}, headers=reader),
                  403, "Forbidden")
    assert things.items == []
    assert client.simulate_get("/api/v1.0/things", headers=reader).status_code == 200
    assert client.simulate_post("/api/v1.0/things", json={"name": "a"},
                                headers=ADMIN_H).status_code == 201


def test_noauth_only_when_configured():
    client, _ = make_client(strategy="noauth")
    assert client.simulate_post("/api/v1.0/things", json={"name": "a"}).status_code == 201
    default_client, _ = make_client()
    assert default_client.simulate_get("/api/v1.0/things").status_code == 401


def test_versions_and_health_are_open():
    client, _ = make_client()
    assert client.simulate_get("/versions").json == {
        "v1.0": {"path": "/api/v1.0", "status": "stable"}}
    assert client.simulate_get("/api/v1.0/health").status_code == 204
    assert json.loads(client.simulate_get("/api/v1.0/openapi.json").text)["openapi"]


def test_metrics_count_requests_by_route_and_code():
    client, _ = make_client()
    client.simulate_get("/api/v1.0/things", headers=ADMIN_H)
    client.simulate_get("/api/v1.0/things")
    text = client.simulate_get("/metrics").text
    assert ('berth_http_requests_total{code="200",method="GET",route="/api/v1.0/things",'
            'service="shipyard"} 1.0') in text
    assert 'code="401",method="GET",route="/api/v1.0/things"' in text
