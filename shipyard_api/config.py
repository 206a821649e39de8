"""Shipyard's configuration: the shared option groups plus its own."""

from __future__ import annotations

from oslo_config import cfg

from common import config

SERVICE = "shipyard"
OPTS: list[tuple[str, list[cfg.Opt]]] = []


def load(config_file: str | None = None) -> cfg.ConfigOpts:
    """Read Shipyard's config file (`SHIPYARD_CONFIG_FILE` or etc/shipyard/shipyard.conf)."""
    return config.load_conf(SERVICE, OPTS, config_file)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """For oslo-config-generator (namespace `shipyard`)."""
    return [*config.GROUPS, *OPTS]
