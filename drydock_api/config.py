"""Drydock's configuration: the shared option groups plus its own."""

from __future__ import annotations

from oslo_config import cfg

from common import config

SERVICE = "drydock"
OPTS: list[tuple[str, list[cfg.Opt]]] = []


def load(config_file: str | None = None) -> cfg.ConfigOpts:
    """Read Drydock's config file (`DRYDOCK_CONFIG_FILE` or etc/drydock/drydock.conf)."""
    return config.load_conf(SERVICE, OPTS, config_file)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """For oslo-config-generator (namespace `drydock`)."""
    return [*config.GROUPS, *OPTS]
