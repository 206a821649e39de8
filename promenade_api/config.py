"""Promenade's configuration: the shared option groups plus its own."""

from __future__ import annotations

from oslo_config import cfg

from common import config

SERVICE = "promenade"
OPTS: list[tuple[str, list[cfg.Opt]]] = []


def load(config_file: str | None = None) -> cfg.ConfigOpts:
    """Read Promenade's config file (`PROMENADE_CONFIG_FILE` or etc/promenade/promenade.conf)."""
    return config.load_conf(SERVICE, OPTS, config_file)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """For oslo-config-generator (namespace `promenade`)."""
    return [*config.GROUPS, *OPTS]
