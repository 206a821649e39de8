"""Run a service's WSGI app: gunicorn processes serving with waitress (the `<svc>-api` console
scripts)."""

from __future__ import annotations

import argparse
import configparser
import gc
import os
from collections.abc import Callable, Sequence
from wsgiref.types import WSGIApplication

from gunicorn.app.base import BaseApplication
from gunicorn.config import Config
from gunicorn.glogging import Logger

from common.config import existing_file
from common.connguard import Limits
from common.httphead import HeadLimits
from common.logging import JsonFormatter, MarkerFilter
from common.worker import configure


class JsonGunicornLogger(Logger):  # type: ignore[misc]
    """gunicorn's own lines (master and workers: boot, signals, worker exits) as JSON too."""

    def setup(self, cfg: Config) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(JsonFormatter())
                handler.addFilter(MarkerFilter())


def json_logs(config_file: str | None) -> bool:
    """`[logging] json` of the config file (read before the workers load it; default on)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    if config_file:
        parser.read(config_file)
    value = parser.get("logging", "json", fallback="true").strip().lower()
    return value in ("true", "1", "yes", "on")


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    def __init__(self, loader: Callable[[], WSGIApplication],
                 options: dict[str, object]) -> None:
        self._loader = loader
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            if value is not None and key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> WSGIApplication:
        app = self._loader()
        settle_heap()
        return app


def settle_heap() -> None:
    """Move what the app built at start (modules, config, policy, ORM mappings: ~140,000
    objects in Shipyard) out of the garbage collector's reach. A full collection otherwise
    walks them all and holds every thread for tens of milliseconds (150 ms measured under
    load) a few times a minute at a thousand requests a second: the p99 of every endpoint.
    Objects made later are collected as before."""
    gc.collect()
    gc.freeze()


def run(service: str, loader: Callable[[], WSGIApplication], default_port: int,
        argv: Sequence[str] | None = None) -> None:
    """Parse the command line and serve `loader()` with gunicorn (common/worker.py)."""
    parser = argparse.ArgumentParser(prog=f"{service}-api",
                                     description=f"Run the {service} API under gunicorn.")
    parser.add_argument("--bind", default=f"127.0.0.1:{default_port}")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--timeout", type=int, default=3900,
                        help="Worker timeout (s); Promenade's drain may take an hour.")
    _limit_flags(parser)
    parser.add_argument("--config-file", type=existing_file, default=None)
    parser.add_argument("--pid-file", default=None)
    args = parser.parse_args(argv)
    configure(Limits(header_timeout=args.header_timeout, read_timeout=args.read_timeout,
                     keepalive=args.keepalive, per_address=args.per_address_connections,
                     max_connections=args.worker_connections,
                     queue_timeout=args.queue_timeout,
                     head=HeadLimits(max_body=args.max_body_bytes)))
    if args.config_file:
        os.environ[f"{service.upper()}_CONFIG_FILE"] = os.path.abspath(args.config_file)
    _Gunicorn(loader, {
        "bind": args.bind,
        "workers": args.workers,
        "threads": args.threads,
        "worker_class": "common.worker.WaitressWorker",
        "worker_connections": args.worker_connections,
        "timeout": args.timeout,
        "pidfile": args.pid_file,
        "accesslog": None,
        "proc_name": f"{service}-api",
        # No gunicornc control socket (gunicorn >= 25 opens one by default under $HOME, which
        # a read-only root file system refuses); older gunicorns lack the setting.
        "control_socket_disable": True,
        "logger_class": JsonGunicornLogger if json_logs(args.config_file) else None,
    }).run()


def _limit_flags(parser: argparse.ArgumentParser) -> None:
    """The connection limits of common/connguard.py."""
    parser.add_argument("--header-timeout", type=float, default=10.0,
                        help="Seconds a new connection has to send a whole request head "
                             "(a kept-alive one: from the first byte of its next request); "
                             "then it is closed (408 if bytes came).")
    parser.add_argument("--read-timeout", type=float, default=30.0,
                        help="Seconds a client has to send a whole request (head and body) "
                             "from its first byte before it gets 408.")
    parser.add_argument("--keepalive", type=float, default=75.0,
                        help="Seconds a kept-alive connection may wait for its next request.")
    parser.add_argument("--per-address-connections", type=int, default=64,
                        help="Most open connections from one client address per worker "
                             "process; more are answered 503 with Retry-After.")
    parser.add_argument("--worker-connections", type=int, default=1000,
                        help="Most open client connections per worker process; more are "
                             "answered 503 with Retry-After.")
    parser.add_argument("--queue-timeout", type=float, default=30.0,
                        help="Seconds a whole request may wait for a free thread; then it is "
                             "answered 503 with Retry-After (the service is saturated).")
    parser.add_argument("--max-body-bytes", type=int, default=16 * 1024 * 1024,
                        help="Largest request body the server buffers (413 beyond); the "
                             "services' own `[api] max_body_bytes` answers below it.")
