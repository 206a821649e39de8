"""`berth status`: whether the site `berth up` runs is ready (for scripts: exit code 0 or not)."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import click
import requests

from common.poll import NotYet, poll

ENV_FILE = "env"
PID_FILE = "berth-up.pid"
SERVICE_KEYS = ("SHIPYARD_URL", "SHIPYARD_URL_2", "PROMENADE_URL", "DRYDOCK_URL",
                "DRYDOCK_URL_2")
HEALTH = "/api/v1.0/health"
TIMEOUT = 3.0


class NotReady(Exception):
    """One line saying why the site is not ready."""


def read_env(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key] = value
    return values


def process_name(key: str) -> str:
    """SHIPYARD_URL -> shipyard, SHIPYARD_URL_2 -> shipyard-2."""
    return key.lower().replace("_url_2", "-2").replace("_url", "")


def launcher_alive(berth_dir: Path) -> None:
    pid_file = berth_dir / PID_FILE
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return  # an Up run in-process (tests, benchmarks) writes no PID file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise NotReady(f"berth up (pid {pid}, {pid_file}) is not running") from None
    except PermissionError:
        pass


def answers(name: str, url: str, headers: dict[str, str] | None = None) -> requests.Response:
    try:
        return requests.get(url, headers=headers, timeout=TIMEOUT)
    except requests.RequestException as exc:
        reason = type(exc).__name__
        if isinstance(exc, requests.ConnectionError):
            reason = "connection refused"
        raise NotReady(f"{name} does not answer at {url} ({reason})") from None


def healthy(name: str, url: str) -> None:
    reply = answers(name, url)
    if reply.status_code not in (200, 204):
        raise NotReady(f"{name} answers {reply.status_code} at {url}")


def committed_revision(env: dict[str, str]) -> str:
    """The design revision DESIGN_REF names, as Shipyard shows it with BERTH_TOKEN; its tags."""
    ref = env.get("DESIGN_REF", "")
    if "/revisions/" not in ref:
        raise NotReady(f"DESIGN_REF names no Shipyard revision: {ref or 'missing'}")
    revision = ref.split("/revisions/", 1)[1].split("/", 1)[0]
    url = f"{env['SHIPYARD_URL']}/api/v1.0/revisions/{revision}/tags"
    reply = answers("shipyard", url, {"X-Auth-Token": env.get("BERTH_TOKEN", "")})
    if reply.status_code != 200:
        raise NotReady(f"design revision {revision} is not visible in Shipyard "
                       f"({reply.status_code} at {url})")
    names = [str(t.get("tag")) for t in reply.json() if isinstance(t, dict)]
    tags = f" and tagged {', '.join(names)}" if names else ""
    return f"design revision {revision} committed{tags}"


def check(berth_dir: Path) -> str:
    """The ready line, or NotReady with the first reason the site is not ready."""
    env_file = berth_dir / ENV_FILE
    if not env_file.exists():
        raise NotReady(f"no {env_file}: berth up is not running here, or not ready yet")
    launcher_alive(berth_dir)
    env = read_env(env_file)
    if "SITESIM_URL" in env:
        healthy("the sitesim admin API", f"{env['SITESIM_URL']}/health")
    if env.get("DESIGN_REF", "").startswith("file://"):
        return f"ready: the site only (no services); sitesim {env.get('SITESIM_URL')}"
    services = {key: env[key] for key in SERVICE_KEYS if key in env}
    if "SHIPYARD_URL" not in services:
        raise NotReady(f"{env_file} has no SHIPYARD_URL")
    for key, url in services.items():
        healthy(process_name(key), f"{url}{HEALTH}")
    design = committed_revision(env)
    urls = ", ".join(f"{process_name(key)} {url}" for key, url in services.items())
    return f"ready: {urls}; {design}"


@click.command()
@click.option("--dir", "berth_dir", default=".berth", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--wait", is_flag=True, help="Block until ready (or --timeout).")
@click.option("--timeout", default=300.0, show_default=True,
              help="With --wait: give up after this many seconds.")
@click.option("--interval", default=0.5, show_default=True, hidden=True)
def status(berth_dir: str, wait: bool, timeout: float, interval: float) -> None:
    """Exit 0 when `berth up` is ready (env file written, every service healthy, the site
    design committed in Shipyard); otherwise exit 1 with one line saying why."""
    directory = Path(berth_dir)
    def ready() -> str | NotYet[NotReady]:
        try:
            return check(directory)
        except NotReady as exc:
            return NotYet(exc)

    def not_ready(exc: NotReady) -> str:
        click.echo(f"not ready: {exc}", err=True)
        raise SystemExit(1)

    click.echo(poll(ready, deadline=time.monotonic() + timeout if wait else -math.inf,
                    interval=interval, expire=not_ready))
