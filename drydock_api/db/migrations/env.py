"""Alembic environment for Drydock's database (common.migrate runs it)."""

from common.migrate import run_env

run_env()
