"""`shipyard-db upgrade`: apply Shipyard's migrations to its database."""

from __future__ import annotations

from common.dbcli import db_command
from shipyard_api.db import upgrade

main = db_command("shipyard", upgrade)
