"""Migrated SQLite databases for the unit tests: each service's migrations run once per test
process into a template, and a test's new database file starts as a copy of it. The migrations
themselves are tested on empty databases in tests/unit/common and tests/integration."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from sqlalchemy.engine import make_url

from common import migrate


class MigratedCopies:
    """Stands in for common.migrate.upgrade: a SQLite file that does not exist yet, brought
    to head, is a copy of the template; anything else is migrated as usual."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._real = migrate.upgrade
        self._templates: dict[tuple[str, str], Path] = {}
        self._lock = threading.Lock()

    def upgrade(self, script_location: Path, url: str, name: str,
                revision: str = "head") -> None:
        parsed = make_url(url)
        target = parsed.database
        if (parsed.get_backend_name() != "sqlite" or revision != "head" or not target
                or target == ":memory:" or Path(target).exists()):
            self._real(script_location, url, name, revision)
            return
        shutil.copyfile(self._template(script_location, name), target)

    def _template(self, script_location: Path, name: str) -> Path:
        key = (str(script_location), name)
        with self._lock:
            if key not in self._templates:
                path = self._root / f"{name}-{len(self._templates)}.db"
                self._real(script_location, f"sqlite:///{path}", name)
                self._templates[key] = path
            return self._templates[key]
