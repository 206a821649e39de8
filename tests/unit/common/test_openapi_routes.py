"""Each service's OpenAPI document describes exactly the routes and methods it serves."""

import importlib

import pytest

from common.app import load_openapi

METHODS = ("get", "post", "put", "patch", "delete")


def served(app):
    out = set()
    for template, resource in app.berth_routes:
        for method in METHODS:
            if hasattr(resource, f"on_{method}"):
                out.add((template, method))
    return out


def documented(service):
    doc = load_openapi(service)
    return {(path, method) for path, ops in doc["paths"].items() for method in ops
            if method in METHODS}


@pytest.mark.parametrize("service", ["shipyard", "promenade", "drydock"])
def test_openapi_document_matches_routes(service, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    conf_path = tmp_path / f"{service}.conf"
    conf_path.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/{service}.db\n")
    config = importlib.import_module(f"{service}_api.config")
    app_module = importlib.import_module(f"{service}_api.app")
    app = app_module.create_app(config.load(str(conf_path)))
    assert served(app) == documented(service)
