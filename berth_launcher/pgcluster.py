"""A throwaway PostgreSQL cluster (Debian's server binaries) for `berth up --postgres`."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

PG_BIN = Path(os.environ.get("BERTH_PG_BIN", "/usr/lib/postgresql/15/bin"))


class PgClusterError(Exception):
    """The PostgreSQL cluster could not be created, started or stopped."""


class PgCluster:
    """A cluster in `root` (data in root/data, socket and log in root) on 127.0.0.1:port.

    initdb and postgres refuse to run as root: as root, both run as the `postgres` user, which
    is given the directory."""

    def __init__(self, root: Path, port: int, bin_dir: Path = PG_BIN) -> None:
        self.root = root
        self.port = port
        self.bin_dir = bin_dir
        self.data = root / "data"
        self.log = root / "postgres.log"
        self.running = False

    def base_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}"

    def url(self, database: str) -> str:
        return f"{self.base_url()}/{database}"

    def _run(self, argv: list[str]) -> None:
        if os.geteuid() == 0:
            argv = ["su", "postgres", "-s", "/bin/sh", "-c",
                    " ".join(shlex.quote(a) for a in argv)]
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            raise PgClusterError(f"{argv[-1] if os.geteuid() == 0 else ' '.join(argv)} "
                                 f"failed ({done.returncode}): "
                                 f"{done.stdout.decode(errors='replace')[-2000:]}")

    def start(self) -> PgCluster:
        """initdb a fresh cluster and start it; an old one under root is stopped if it still
        runs, and removed."""
        if not (self.bin_dir / "initdb").exists():
            raise PgClusterError(f"{self.bin_dir}/initdb not found: install Debian's "
                                 "postgresql package")
        if (self.data / "postmaster.pid").exists():  # left by a killed `berth up`
            self.running = True
            try:
                self.stop()
            except PgClusterError:
                if self.postmaster_alive():
                    raise  # a server that runs and will not stop; otherwise one killed
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            try:
                self._run(["test", "-w", str(self.root)])
            except PgClusterError:
                raise PgClusterError(f"the postgres user cannot reach {self.root}: its parent "
                                     "directories must be searchable by others") from None
        self._run([str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres",
                   "-A", "trust", "--no-sync"])
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-w", "-l",
                   str(self.log), "-o",
                   f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
                   "-c max_connections=300", "start"])
        self.running = True
        return self

    def create_database(self, name: str) -> str:
        """Create database `name`; its SQLAlchemy URL."""
        import sqlalchemy

        admin = sqlalchemy.create_engine(self.url("postgres"), isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        return self.url(name)

    def postmaster_alive(self) -> bool:
        """Whether the server postmaster.pid names still runs."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
            os.kill(pid, 0)
        except PermissionError:
            return True  # another user's (postgres, when berth up runs as root)
        except (OSError, ValueError):
            return False
        return True

    def stop(self) -> None:
        """Stop the server (fast shutdown); the data directory stays for inspection."""
        if self.running:
            self.running = False
            if not (self.data / "postmaster.pid").exists():  # already stopped (signalled)
                return
            self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                       "stop"])

