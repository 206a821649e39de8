"""Files `berth up` writes under .berth/: tokens, per-service oslo.config ini files, env."""

from __future__ import annotations

import configparser
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

SERVICES = {"shipyard": 9000, "promenade": 9001, "drydock": 9002}
# `berth up --postgres`: the second API process of each database-backed service, and the
# throwaway PostgreSQL cluster.
SECOND_API_PORTS = {"shipyard": 9010, "drydock": 9012}
POSTGRES_PORT = 5433
# Services with a database of their own (Promenade's holds its Idempotency-Key entries), and
# those that also run worker processes beside their API in the PostgreSQL layout.
DB_SERVICES = ("shipyard", "drydock", "promenade")
WORKER_SERVICES = ("shipyard", "drydock")
Sections = dict[str, dict[str, Any]]


def write_tokens(path: Path) -> tuple[str, str]:
    """A fresh admin token (operator) and service token (service to service)."""
    admin, service = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    path.write_text(yaml.safe_dump({
        admin: {"user": "admin", "roles": ["admin"]},
        service: {"user": "berth-service", "roles": ["admin", "service"]},
    }, sort_keys=False))
    path.chmod(0o600)
    return admin, service


def service_sections(service: str, berth_dir: Path, service_token: str,
                     site: Mapping[str, Any], ports: Mapping[str, int] = SERVICES,
                     overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Sections:
    """The ini sections of one service: common ones, what the service needs of the site, then
    `overrides` (section -> options).

    `SITE_SECTIONS` below is the place to add options as services grow."""
    sections: Sections = {
        "auth": {"strategy": "token", "token_file": str(berth_dir / "tokens.yaml"),
                 "service_token": service_token},
        "database": {"connection": f"sqlite:///{berth_dir / f'{service}.db'}"},
        "peers": {f"{name}_url": f"http://127.0.0.1:{port}" for name, port in ports.items()},
        "logging": {"json": "false"},
        # the embedded site's design file lives here; nothing else on disk may be named
        "design": {"file_root": str(berth_dir.resolve())},
    }
    for section, options in SITE_SECTIONS.get(service, {}).items():
        sections.setdefault(section, {}).update(
            {key: value(site) if callable(value) else value for key, value in options.items()})
    for section, extra in (overrides or {}).items():
        sections.setdefault(section, {}).update(extra)
    return sections


def postgres_overrides(databases: Mapping[str, str]) -> dict[str, Sections]:
    """Per service: its PostgreSQL database, and no engine/worker threads in API processes
    (actions and tasks run in the shipyard-worker and drydock-worker processes)."""
    return {
        "shipyard": {"database": {"connection": databases["shipyard"]},
                     "workflow": {"api_workers": 0}},
        "drydock": {"database": {"connection": databases["drydock"]},
                    "worker": {"threads": 0}},
        "promenade": {"database": {"connection": databases["promenade"]}},
    }


SITE_SECTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "promenade": {
        # Promenade reaches Kubernetes as its ServiceAccount, with the role Berth ships.
        "kubernetes": {"kubeconfig": lambda s: s["promenade_kubeconfig"],
                       "lease_namespace": lambda s: s["lease_namespace"], "poll_interval": 0.5},
        "clear_labels": {"poll_interval": 0.5},
        "etcd": {"poll_interval": 1.0},
        "kubelet": {"poll_interval": 0.5},
    },
    "drydock": {
        "maas": {"url": lambda s: s["maas"], "api_key": lambda s: s["maas_api_key"]},
        # MAAS and the BMCs are polled with Drydock's defaults: soon after each request,
        # backing off to the intervals ([steps] first_poll_interval, poll_backoff).
        "oob": {"graceful_timeout": 10, "request_timeout": 5},
        "database": {"design_key_file": lambda s: s["berth_dir"] + "/drydock-designs.key"},
        # An Ironic site (provisioner: ironic): Drydock provisions and powers through Ironic.
        "ironic": {"url": lambda s: s.get("ironic", ""),
                   "kernel_url": lambda s: s.get("ironic_kernel", ""),
                   "ramdisk_url": lambda s: s.get("ironic_ramdisk", ""), "poll_interval": 0.5},
    },
    "shipyard": {
        "documents": {"secret_key_file": lambda s: s["berth_dir"] + "/shipyard-documents.key",
                      "public_url": lambda s: s["shipyard_url"]},
    },
}


def write_ini(path: Path, sections: Sections) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    for section, options in sections.items():
        parser[section] = {key: str(value) for key, value in options.items()}
    with path.open("w") as handle:
        parser.write(handle)


def env_lines(values: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


def write_env(path: Path, env: Mapping[str, str]) -> None:
    """The env file in one step (a temporary file renamed over it): a reader sees it whole
    or not at all. Only its owner may read it (it holds the admin token)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(env_lines(env))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
