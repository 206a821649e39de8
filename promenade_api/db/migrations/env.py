"""Alembic environment for Promenade's database."""

from alembic import context
from sqlalchemy import engine_from_config, pool

config = context.config


def run() -> None:
    connectable = engine_from_config(
        config.get_section(config.config_ini_section) or {}, prefix="sqlalchemy.",
        poolclass=pool.NullPool)
    with connectable.connect() as connection:
        context.configure(connection=connection, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run()
