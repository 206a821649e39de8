"""`drydock-db upgrade`: apply Drydock's migrations to its database."""

from __future__ import annotations

from common.dbcli import db_command
from drydock_api.db import upgrade

main = db_command("drydock", upgrade)
