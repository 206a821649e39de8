"""Hostile input through the common app factory: unsafe values refused with every problem
listed, deep nesting a 400, YAML alias bombs refused, metric series bounded, the acting user
taken from the token, Idempotency-Key honoured."""

import json

import falcon
import falcon.testing
import pytest
from oslo_config import cfg

from common import config
from common.app import create_service_app, service_spec
from common.auth import Identity, TokenAuthenticator
from common.body import loads_checked
from common.context import acting_user
from common.documents import parse_documents
from common.errors import BadRequest, ValidationFailed
from common.inputcheck import InputLimits, find_problems
from common.policy import ADMIN, READER, Policy, authorize, rule
from tests.support.hostile import ALIAS_BOMB

RULES = [rule("test:read", READER, "read", "/api/v1.0/things", "GET"),
         rule("test:write", ADMIN, "write", "/api/v1.0/things", "POST")]


class Things:
    """Stores what it is given and says who acted; counts the POSTs it really ran."""

    def __init__(self):
        self.items = []
        self.posts = 0

    @authorize("test:read")
    def on_get(self, req, resp):
        resp.media = {"items": self.items}

    @authorize("test:write")
    def on_post(self, req, resp):
        from common.body import read_json_object

        self.posts += 1
        body = read_json_object(req)
        if body.get("fail"):
            raise BadRequest("refused")
        self.items.append(body)
        resp.status = falcon.HTTP_201
        resp.set_header("Location", f"/api/v1.0/things/{self.posts}")
        ctx = req.context.berth
        resp.media = {"n": self.posts, "user": ctx.end_user, "real": ctx.user}


@pytest.fixture
def api():
    conf = cfg.ConfigOpts()
    config.register_common(conf)
    conf([], default_config_files=[])
    things = Things()
    spec = service_spec(conf, "shipyard", [("/api/v1.0/things", things)], RULES)
    spec.authenticator = TokenAuthenticator({
        "admin-token": Identity("alice", ("admin",)),
        "other-admin": Identity("carol", ("admin",)),
        "service-token": Identity("berth-service", ("admin", "service")),
    })
    spec.policy = Policy(conf, RULES)
    return falcon.testing.TestClient(create_service_app(spec)), things


ADMIN = {"X-Auth-Token": "admin-token"}


def post(client, body, headers=ADMIN, raw=None):
    return client.simulate_post("/api/v1.0/things", body=raw or json.dumps(body),
                                headers={**headers, "Content-Type": "application/json"})


# -- unsafe values --------------------------------------------------------------------------

def test_every_unsafe_value_is_listed_and_nothing_is_stored(api):
    client, things = api
    raw = '{"name": "\\ud800", "note": "a\\u0000b", "k": ["ok", "x\\udfff"]}'
    resp = post(client, None, raw=raw)
    assert resp.status_code == 400 and resp.json["reason"] == "UnsafeInput"
    texts = [m["message"] for m in resp.json["details"]["messageList"]]
    assert len(texts) == 3 and resp.json["details"]["errorCount"] == 3
    assert any("/name" in t and "surrogate" in t for t in texts)
    assert any("/note" in t and "NUL" in t for t in texts)
    assert any("/k/1" in t for t in texts)
    assert things.items == [] and client.simulate_get("/api/v1.0/things",
                                                      headers=ADMIN).status_code == 200


@pytest.mark.parametrize("depth", [33, 1000, 200_000])
def test_deeply_nested_json_is_400_not_500(api, depth):
    client, things = api
    resp = post(client, None, raw='{"a": ' + "[" * depth + "]" * depth + "}")
    assert resp.status_code == 400 and resp.json["reason"] == "UnsafeInput"
    assert things.items == []


def test_over_long_strings_keys_and_lists_are_refused(api):
    client, _ = api
    resp = post(client, {"s": "x" * 70000, "k" * 300: 1, "l": list(range(10001))})
    assert resp.status_code == 400
    assert len(resp.json["details"]["messageList"]) == 3


def test_a_nul_in_the_path_or_query_is_refused(api):
    client, _ = api
    assert client.simulate_get("/api/v1.0/things", query_string="q=a%00b",
                               headers=ADMIN).status_code == 400
    assert client.simulate_get("/api/v1.0/things%00", headers=ADMIN).status_code == 400


def test_limits_are_configurable():
    tight = InputLimits(max_depth=2, max_string=4, max_key=2, max_items=3)
    assert len(find_problems({"abc": 1, "b": [[["x"]]], "c": "12345"}, tight)) == 3
    assert find_problems([1, 2, 3, 4], tight) == ["(root): 4 items, over the limit of 3"]
    with pytest.raises(ValidationFailed):
        loads_checked('[1, 2, 3, 4]', tight)


# -- YAML -----------------------------------------------------------------------------------



def test_a_yaml_alias_bomb_is_refused_at_parse():
    with pytest.raises(BadRequest, match="anchors and aliases"):
        parse_documents(ALIAS_BOMB)


def test_yaml_anchors_alone_are_refused_and_surrogates_listed():
    with pytest.raises(BadRequest, match="anchors and aliases"):
        parse_documents("schema: a/B/v1\nmetadata: &m {name: x}\ndata: {}\n")
    with pytest.raises(ValidationFailed) as info:
        parse_documents('schema: a/B/v1\nmetadata: {name: "\\ud800"}\ndata: "\\0"\n')
    assert len(info.value.messages) == 2


# -- metrics --------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::wsgiref.validate.WSGIWarning")
def test_metrics_series_stay_bounded_whatever_methods_and_paths_are_sent(api):
    client, _ = api
    for i in range(200):
        client.simulate_request(f"M{i}X", f"/nowhere/{i}")
        client.simulate_request("GET", f"/api/v1.0/nothing-{i}")
    text = client.simulate_get("/metrics").text
    series = [ln for ln in text.splitlines() if ln.startswith("berth_http_requests_total{")]
    assert len(series) <= 4
    assert all("M1X" not in ln and "nothing-" not in ln for ln in series)


# -- acting user ----------------------------------------------------------------------------

def test_x_end_user_from_a_non_service_caller_is_ignored(api):
    client, _ = api
    resp = post(client, {"name": "a"}, headers={**ADMIN, "X-End-User": "mallory"})
    assert resp.json["user"] == "alice" and resp.json["real"] == "alice"


def test_x_end_user_from_a_service_is_recorded_on_behalf_beside_the_real_user(api):
    client, _ = api
    resp = post(client, {"name": "a"},
                headers={"X-Auth-Token": "service-token", "X-End-User": "alice"})
    assert resp.json["user"] == "berth-service (on behalf of alice)"
    assert resp.json["real"] == "berth-service"


def test_acting_user_rules():
    service = frozenset({"service"})
    assert acting_user("u", ["admin"], "x", service) == ("u", None)
    assert acting_user("s", ["service"], "x", service) == ("s (on behalf of x)", "x")
    assert acting_user("s", ["service"], None, service) == ("s", None)


# -- Idempotency-Key ------------------------------------------------------------------------

def test_same_key_and_body_replays_the_original_response_without_running_again(api):
    client, things = api
    key = {**ADMIN, "Idempotency-Key": "k1"}
    one, two = post(client, {"name": "a"}, key), post(client, {"name": "a"}, key)
    assert one.status_code == two.status_code == 201
    assert one.json == two.json and things.posts == 1
    assert two.headers["Location"] == one.headers["Location"]
    assert two.headers["Idempotent-Replayed"] == "true"


def test_same_key_with_a_different_body_is_422(api):
    client, things = api
    key = {**ADMIN, "Idempotency-Key": "k2"}
    assert post(client, {"name": "a"}, key).status_code == 201
    resp = post(client, {"name": "b"}, key)
    assert resp.status_code == 422 and resp.json["reason"] == "IdempotencyKeyReused"
    assert things.posts == 1


def test_keys_are_per_user_and_failures_are_not_remembered(api):
    client, things = api
    assert post(client, {"name": "a"}, {**ADMIN, "Idempotency-Key": "k3"}).status_code == 201
    other = post(client, {"name": "b"}, {"X-Auth-Token": "other-admin", "Idempotency-Key": "k3"})
    assert other.status_code == 201 and things.posts == 2
    key = {**ADMIN, "Idempotency-Key": "k4"}
    assert post(client, {"fail": True}, key).status_code == 400
    assert post(client, {"fail": True}, key).status_code == 400
    assert things.posts == 4


def test_an_unusable_key_is_400(api):
    client, _ = api
    assert post(client, {"name": "a"},
                {**ADMIN, "Idempotency-Key": "x" * 300}).status_code == 400


def test_documents_without_anchors_load_through_libyaml_and_aliases_are_still_refused() -> None:
    import yaml as _yaml

    from common import documents

    plain = "---\na: 1\nb: [x, y]\n---\nc: {d: 'e & f'}\n"  # '&' inside a string: slow path
    assert documents._fast("---\na: 1\n") and not documents._fast(plain)
    assert documents.load_yaml_all(plain) == [{"a": 1, "b": ["x", "y"]}, {"c": {"d": "e & f"}}]
    with pytest.raises(_yaml.YAMLError):
        documents.load_yaml_all("a: &x [1]\nb: *x\n")
    assert documents.load_yaml_all(documents.dump_yaml_all([{"k": "v"}, {"n": [1]}])) == [
        {"k": "v"}, {"n": [1]}]
