"""Run a Berth service as a real gunicorn process, started by the `berth` launcher's code."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from berth_launcher.berthconfig import write_ini
from berth_launcher.services import UpError, start_service, start_worker, wait_healthy
from tests.support.procs import Proc, free_port

BIN = Path(sys.executable).parent


def write_tokens(path: Path) -> dict[str, str]:
    """A token file with an admin, a reader, a role-less token and a service's token (as
    `berth up` writes it: a service passes on the operator it acts for); returns the tokens."""
    tokens = {"admin": secrets.token_hex(8), "reader": secrets.token_hex(8),
              "nobody": secrets.token_hex(8), "service": secrets.token_hex(8)}
    path.write_text(yaml.safe_dump({
        tokens["admin"]: {"user": "admin", "roles": ["admin"]},
        tokens["reader"]: {"user": "reader", "roles": ["reader"]},
        tokens["nobody"]: {"user": "nobody", "roles": []},
        tokens["service"]: {"user": "berth-service", "roles": ["admin", "service"]},
    }))
    return tokens


def write_conf(path: Path, sections: Mapping[str, Mapping[str, object]]) -> None:
    """An ini file of `sections`; file:// design references are allowed under its directory
    (where the tests write their designs) unless `[design] file_root` says otherwise."""
    sections = dict(sections)
    if "file_root" not in sections.get("design", {}):
        sections["design"] = {**sections.get("design", {}), "file_root": path.parent}
    write_ini(path, {name: dict(options) for name, options in sections.items()})


class ServiceProcess:
    """One service under gunicorn on a free port; `url` is its base URL."""

    def __init__(self, service: str, workdir: Path,
                 sections: Mapping[str, Mapping[str, object]], *, workers: int = 1,
                 port: int | None = None, args: tuple[str, ...] = ()) -> None:
        self.service = service
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.conf_path = workdir / f"{service}.conf"
        self.workdir, self.workers, self.args = workdir, workers, args
        write_conf(self.conf_path, sections)
        self.proc = self.start()

    def start(self) -> Proc:
        """Start (or start again, on the same port and configuration) and wait until it answers."""
        log = self.workdir / f"{self.service}.log"
        popen = start_service(self.service, self.port, self.conf_path, log,
                              workers=self.workers, args=self.args, cwd=self.workdir)
        self.proc = Proc.adopt(popen, log)
        try:
            # A guard against hangs only: on a loaded machine a cold start takes a while.
            wait_healthy(f"{self.service}-api", self.url, popen, log, timeout=180,
                         path="/versions")
        except UpError:
            self.proc.stop()
            raise RuntimeError(f"{self.service}-api did not start:\n{self.proc.output()}") \
                from None
        return self.proc

    def stop(self) -> None:
        self.proc.stop()


def worker_process(service: str, conf: Path, log: Path, cwd: Path) -> Proc:
    """`shipyard-worker` or `drydock-worker` on `conf`, started as `berth up` starts it."""
    return Proc.adopt(start_worker(service, conf, log, cwd), log)
