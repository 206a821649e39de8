"""Run a Berth service as a real gunicorn process from its console script, for tests."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from tests.support.procs import Proc, free_port, http_ok, wait_until

BIN = Path(sys.executable).parent


def write_tokens(path: Path) -> dict[str, str]:
    """A token file with an admin, a reader and a role-less token; returns the tokens."""
    tokens = {"admin": secrets.token_hex(8), "reader": secrets.token_hex(8),
              "nobody": secrets.token_hex(8)}
    path.write_text(yaml.safe_dump({
        tokens["admin"]: {"user": "admin", "roles": ["admin"]},
        tokens["reader"]: {"user": "reader", "roles": ["reader"]},
        tokens["nobody"]: {"user": "nobody", "roles": []},
    }))
    return tokens


def write_conf(path: Path, sections: Mapping[str, Mapping[str, object]]) -> None:
    """An ini file of `sections`; file:// design references are allowed under its directory
    (where the tests write their designs) unless `[design] file_root` says otherwise."""
    sections = dict(sections)
    if "file_root" not in sections.get("design", {}):
        sections["design"] = {**sections.get("design", {}), "file_root": path.parent}
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {v}" for k, v in options.items()]
        lines.append("")
    path.write_text("\n".join(lines))


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
        self.proc = Proc(
            [str(BIN / f"{self.service}-api"), "--bind", f"127.0.0.1:{self.port}",
             "--workers", str(self.workers), "--config-file", str(self.conf_path), *self.args],
            log=self.workdir / f"{self.service}.log", cwd=str(self.workdir))
        try:
            wait_until(lambda: http_ok(f"{self.url}/versions"), timeout=30,
                       what=f"{self.service}-api on {self.port}")
        except TimeoutError:
            self.proc.stop()
            raise RuntimeError(f"{self.service}-api did not start:\n{self.proc.output()}") \
                from None
        return self.proc

    def stop(self) -> None:
        self.proc.stop()
