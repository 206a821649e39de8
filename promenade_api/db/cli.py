"""`promenade-db upgrade`: apply Promenade's migrations to its database."""

from __future__ import annotations

from common.dbcli import db_command
from promenade_api.db import upgrade

main = db_command("promenade", upgrade)
