"""Shared oslo.config options (auth, database, logging, peers, limits) and config loading."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from oslo_config import cfg

API_OPTS: list[cfg.Opt] = [
    cfg.IntOpt("max_body_bytes", default=10 * 1024 * 1024, min=1,
               help="Largest request body accepted; larger bodies get 413."),
    cfg.IntOpt("max_json_depth", default=32, min=2,
               help="Deepest nesting of a JSON body (objects and lists); deeper gets 400."),
    cfg.IntOpt("max_string_length", default=65536, min=16,
               help="Longest string value in a JSON body; longer gets 400."),
    cfg.IntOpt("max_key_length", default=256, min=16,
               help="Longest object key (name) in a JSON body; longer gets 400."),
    cfg.IntOpt("max_list_items", default=10000, min=1,
               help="Most items of one list (or keys of one object) in a JSON body."),
    cfg.FloatOpt("idempotency_ttl", default=86400.0, min=1,
                 help="Seconds an Idempotency-Key and its response are remembered (in the "
                      "service's database, shared by its replicas)."),
    cfg.FloatOpt("idempotency_lease", default=30.0, min=1,
                 help="Seconds a request still running under an Idempotency-Key holds it "
                      "without renewal (its process renews it every third of this). A repeat "
                      "meanwhile gets 409 RequestInProgress; once the lease of a process that "
                      "died runs out, a repeat runs the request again."),
    cfg.FloatOpt("long_poll_max_wait", default=20.0, min=0.0,
                 help="Most seconds a long-poll (`?wait=`) holds its request before answering "
                      "that nothing changed; keep it well below the clients' read timeouts."),
    cfg.IntOpt("long_poll_waiters", default=4, min=0,
               help="Most long-polls waiting at once per process (each holds a worker "
                    "thread); a long-poll over the cap is answered at once."),
    cfg.FloatOpt("long_poll_recheck", default=0.5, min=0.01,
                 help="Seconds between a waiting long-poll's looks at the database, for "
                      "changes written by other processes (this process's own writes wake it "
                      "at once)."),
]
AUTH_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("strategy", default="token", choices=["token", "keystone", "noauth"],
               help="token: static tokens from token_file; keystone: keystonemiddleware; "
                    "noauth: no authentication (only when set explicitly)."),
    cfg.StrOpt("token_file", default="etc/tokens.yaml",
               help="YAML mapping token -> {user, roles} for the token strategy."),
    cfg.StrOpt("service_token", default="", secret=True,
               help="Token this service sends to its peers."),
    cfg.ListOpt("service_roles", default=["service"],
                help="Roles of peer services: only their X-End-User header is recorded, as "
                     "'<user> (on behalf of <end user>)'; everyone else acts as themselves."),
]
DATABASE_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("connection", default="", secret=True,
               help="SQLAlchemy URL (sqlite:///path or postgresql+psycopg://...)."),
]
LOGGING_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("level", default="INFO", help="Root log level."),
    cfg.BoolOpt("json", default=True, help="Write log lines as JSON."),
]
PEER_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("shipyard_url", default="http://127.0.0.1:9000", help="Shipyard base URL."),
    cfg.StrOpt("promenade_url", default="http://127.0.0.1:9001", help="Promenade base URL."),
    cfg.StrOpt("drydock_url", default="http://127.0.0.1:9002", help="Drydock base URL."),
    cfg.FloatOpt("connect_timeout", default=5.0, min=0.1, help="Connect timeout (s)."),
    cfg.FloatOpt("read_timeout", default=60.0, min=0.1, help="Read timeout (s)."),
    cfg.IntOpt("retries", default=3, min=0, help="Retries of idempotent calls."),
    cfg.FloatOpt("backoff", default=0.5, min=0.0, help="First retry delay (s), doubled."),
]
DESIGN_OPTS: list[cfg.Opt] = [
    cfg.IntOpt("max_document_bytes", default=20 * 1024 * 1024, min=1,
               help="Largest design document set accepted."),
    cfg.IntOpt("cache_size", default=32, min=0, help="Resolved design references cached."),
    cfg.FloatOpt("cache_ttl", default=30.0, min=0,
                 help="Seconds a resolved reference is kept; then one request reads it again "
                      "(others asking for it wait for that read) and it is parsed again only "
                      "if its bytes changed."),
    cfg.ListOpt("allowed_urls", default=[],
                help="URL prefixes (scheme://host:port/path/) design references may name, "
                     "besides Shipyard's own revisions ([peers] shipyard_url + "
                     "/api/v1.0/revisions/). Tokens are only ever sent to Shipyard."),
    cfg.StrOpt("file_root", default="",
               help="Directory under which file:// design references may be read (symlinks "
                    "resolved); empty: file references are refused."),
    cfg.FloatOpt("fetch_timeout", default=30.0, min=0.1,
                 help="Most seconds one design reference fetch may take in all."),
]

GROUPS: list[tuple[str, list[cfg.Opt]]] = [
    ("api", API_OPTS),
    ("auth", AUTH_OPTS),
    ("database", DATABASE_OPTS),
    ("logging", LOGGING_OPTS),
    ("peers", PEER_OPTS),
    ("design", DESIGN_OPTS),
]


def existing_file(value: str) -> str:
    """argparse `type` of the commands' --config-file: the file must exist (a service never
    runs on silent defaults because the file it was told to read is missing)."""
    if not Path(value).is_file():
        raise argparse.ArgumentTypeError(f"{value}: no such file")
    return os.path.abspath(value)


def register_common(conf: cfg.ConfigOpts) -> None:
    """Register the shared option groups on `conf`."""
    for group, opts in GROUPS:
        conf.register_opts(opts, group=group)


def load_conf(
    service: str,
    groups: Sequence[tuple[str, list[cfg.Opt]]] = (),
    config_file: str | None = None,
) -> cfg.ConfigOpts:
    """A fresh ConfigOpts for `service`, read from its env var or `etc/<svc>/<svc>.conf`."""
    conf = cfg.ConfigOpts()
    register_common(conf)
    for group, opts in groups:
        conf.register_opts(opts, group=group)
    path = config_file or os.environ.get(f"{service.upper()}_CONFIG_FILE") or str(
        Path("etc") / service / f"{service}.conf"
    )
    files = [path] if Path(path).exists() else []
    conf([], project=service, default_config_files=files, default_config_dirs=[])
    return conf
