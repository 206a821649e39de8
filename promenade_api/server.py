"""The `promenade-api` console script: Promenade under gunicorn."""

from __future__ import annotations

from common.server import run


def main() -> None:
    from promenade_api.app import get_app

    run("promenade", get_app, default_port=9001)
