"""The `shipyard-api` console script: Shipyard under gunicorn."""

from __future__ import annotations

from common.server import run


def main() -> None:
    from shipyard_api.app import get_app

    run("shipyard", get_app, default_port=9000)
