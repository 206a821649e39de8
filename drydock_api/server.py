"""The `drydock-api` console script: Drydock under gunicorn."""

from __future__ import annotations

from common.server import run


def main() -> None:
    from drydock_api.app import get_app

    run("drydock", get_app, default_port=9002)
