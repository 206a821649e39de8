"""A served app's start-up objects are frozen out of the garbage collector's full passes."""

from __future__ import annotations

import gc
from typing import Any

from common.server import _Gunicorn


def test_loading_the_app_freezes_what_start_up_built() -> None:
    built: list[Any] = []

    def loader() -> object:
        built.append([{"start-up": i} for i in range(1000)])
        return object()

    before = gc.get_freeze_count()
    try:
        app = _Gunicorn.load(_bare(loader))
        assert app is not None
        assert gc.get_freeze_count() >= before + 1000  # the loader's objects among them
        assert not any(built[0] is o for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()


def _bare(loader: Any) -> Any:
    """A _Gunicorn with only its loader (no gunicorn configuration parsed)."""
    server = _Gunicorn.__new__(_Gunicorn)
    server._loader = loader
    return server
