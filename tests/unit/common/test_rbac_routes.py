"""Every protected route of every service: 401 without a token, 403 for a role-less caller,
and neither for an admin."""

import importlib
import re

import falcon.testing
import pytest

from common.auth import Identity, TokenAuthenticator

METHODS = ("get", "post", "put", "patch", "delete")
OPEN = {"/versions", "/api/v1.0/health", "/api/v1.0/openapi.json", "/metrics",
        "/ui", "/ui/login", "/ui/logout",  # the web view's sign-in and sign-out
        "/ui/static/{name}",  # and its style sheet and script
        # Drydock's boot action API: the deploying node's own key authenticates it
        "/api/v1.0/bootactions/nodes/{hostname}/units",
        "/api/v1.0/bootactions/nodes/{hostname}/files", "/api/v1.0/bootactions/{action_id}"}
TOKENS = TokenAuthenticator({"admin": Identity("admin", ("admin",)),
                             "nobody": Identity("nobody", ())})


def build(service, tmp_path):
    conf_path = tmp_path / f"{service}.conf"
    conf_path.write_text(
        f"[database]\nconnection = sqlite:///{tmp_path}/{service}.db\n"
        "[peers]\nshipyard_url = http://127.0.0.1:9\npromenade_url = http://127.0.0.1:9\n"
        "drydock_url = http://127.0.0.1:9\nretries = 0\nconnect_timeout = 0.2\n"
        "read_timeout = 0.5\n")
    config = importlib.import_module(f"{service}_api.config")
    app = importlib.import_module(f"{service}_api.app").create_app(config.load(str(conf_path)))
    app.berth_spec.authenticator = TOKENS
    return app


def protected_routes(app):
    for template, resource in app.berth_routes:
        if template in OPEN:
            continue
        path = re.sub(r"\{[^}]+\}", "x-1", template)
        for method in METHODS:
            if hasattr(resource, f"on_{method}"):
                yield method, path


@pytest.mark.parametrize("service", ["shipyard", "promenade", "drydock"])
def test_every_route_requires_a_token_and_a_role(service, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    client = falcon.testing.TestClient(build(service, tmp_path))
    routes = list(protected_routes(client.app))
    assert routes, f"{service} serves no protected route"
    problems = []
    for method, path in routes:
        anonymous = client.simulate_request(method.upper(), path)
        if anonymous.status_code != 401:
            problems.append(f"{method} {path} without token: {anonymous.status_code}")
        denied = client.simulate_request(method.upper(), path, headers={"X-Auth-Token": "nobody"})
        if denied.status_code != 403:
            problems.append(f"{method} {path} role-less: {denied.status_code}")
        admin = client.simulate_request(method.upper(), path, headers={"X-Auth-Token": "admin"})
        if admin.status_code in (401, 403):
            problems.append(f"{method} {path} admin: {admin.status_code}")
    assert not problems, "\n".join(problems)
