"""API load: Shipyard's action list, Drydock's 200-node task tree and a bare Falcon app.

Starts each server by itself under the same gunicorn settings (`common.server.run`: gthread,
`--workers` processes of `--threads` threads): Shipyard with `--actions` finished actions
stored through its ActionStore (ten steps each), Drydock with one task of `--nodes` nodes
(five step subtasks and two messages per node) stored through its TaskStore, and a bare
Falcon app answering a small JSON body. Then `--clients` threads, each with its own
requests.Session, call one target as fast as they can for `--duration` seconds; targets are
run one after the other so they do not share the two cores. Prints requests per second,
p50/p99 latency and errors side by side, and whether the targets are met (zero errors, p99
under 100 ms, list endpoints at least half the bare app's throughput).

    .venv/bin/python bench/api_load.py [--duration 60] [--clients 100] [--workers 1]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.procs import Proc, free_port, http_ok, wait_until  # noqa: E402
from tests.support.services import write_conf, write_tokens  # noqa: E402

BIN = Path(sys.executable).parent
P = "/api/v1.0"


# -- data ------------------------------------------------------------------------------------
def fill_shipyard(url: str, count: int) -> None:
    """`count` finished actions of ten steps each, through the store (as the API creates)."""
    from shipyard_api.db import make_engine, session_factory, upgrade
    from shipyard_api.workflow.definitions import PlannedStep
    from shipyard_api.workflow.models import ActionRow
    from shipyard_api.workflow.store import ActionStore

    upgrade(url)
    store = ActionStore(session_factory(make_engine(url)))
    now = time.time() - count
    for i in range(count):
        nodes = [f"node{n:02d}" for n in range(1, 5)]
        steps = [PlannedStep("preflight", "preflight", None, ())] + [
            PlannedStep(f"{name}.{node}", name, node, ("preflight",))
            for name in ("drain", "destroy") for node in nodes] + [
            PlannedStep("finish", "finish", None, ())]
        row = ActionRow(id=f"{i:026d}", name="redeploy_server",
                        parameters={"target_nodes": nodes}, state="complete",
                        marker=str(uuid.uuid4()), user="admin", created_at=now + i,
                        updated_at=now + i + 0.5, started_at=now + i, ended_at=now + i + 0.5,
                        next_run_at=now + i, revision_id=1, site_wide=False,
                        target_nodes=nodes, reason="Success", message="All steps succeeded",
                        validations=[])
        store.create(row, steps, lambda active: None)


def fill_drydock(url: str, nodes: int) -> str:
    """One deploy_nodes task over `nodes` nodes, with five finished steps per node."""
    from drydock_api import db
    from drydock_api.db.progress import ProgressStore
    from drydock_api.db.store import TaskStore
    from drydock_api.tasks.states import TaskResult, TaskStatus

    db.upgrade(url)
    store = TaskStore(db.make_engine(url))
    progress = ProgressStore(store)
    names = [f"node{n:03d}" for n in range(nodes)]
    root, _ = store.create_task(
        action="deploy_nodes", design_ref="http://shipyard/design", node_filter=None,
        options={}, node_names=names, created_by="admin", marker=str(uuid.uuid4()),
        idempotency_key=None, exclusive=False)
    for name, node_task in progress.ensure_node_tasks(root, names).items():
        for step in ("prepare", "allocate", "deploy", "join", "label"):
            sub = progress.start_step(node_task, step)
            progress.finish(sub, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE,
                            data={"step": step},
                            messages=[{"message": f"{step} done on {name}", "error": False}])
        progress.finish(node_task, result=TaskResult.SUCCESS, status=TaskStatus.COMPLETE,
                        messages=[{"message": f"{name} deployed", "error": False}])
    return root.id


# -- servers ---------------------------------------------------------------------------------
def serve_bare(argv: list[str]) -> None:
    """The bare Falcon app under the services' gunicorn settings."""
    import falcon

    from common.server import run

    class Hello:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            resp.media = {"status": "ok"}

    def load() -> Any:
        app = falcon.App()
        app.add_route("/hello", Hello())
        app.add_route("/versions", Hello())
        return app

    run("bare", load, 9999, argv)


def start(cmd: list[str], url: str, log: Path) -> Proc:
    proc = Proc(cmd, log=log, cwd=str(log.parent))
    try:
        wait_until(lambda: http_ok(f"{url}/versions"), timeout=60, what=cmd[0])
    except TimeoutError:
        proc.stop()
        raise RuntimeError(f"{cmd[0]} did not start:\n{proc.output()}") from None
    return proc


def service_cmd(service: str, port: int, conf: Path, args: argparse.Namespace) -> list[str]:
    return [str(BIN / f"{service}-api"), "--bind", f"127.0.0.1:{port}", "--workers",
            str(args.workers), "--threads", str(args.threads), "--config-file", str(conf)]


# -- load ------------------------------------------------------------------------------------
@dataclass
class Result:
    name: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed: float = 0.0
    bytes: int = 0

    def row(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        n = len(lat)
        return {"target": self.name, "requests": n + self.errors,
                "rps": (n + self.errors) / self.elapsed if self.elapsed else 0.0,
                "p50_ms": 1000 * statistics.median(lat) if lat else float("nan"),
                "p99_ms": 1000 * lat[min(n - 1, int(n * 0.99))] if lat else float("nan"),
                "errors": self.errors, "body_kb": self.bytes / max(n, 1) / 1024}


def hammer(name: str, url: str, headers: dict[str, str], clients: int,
           duration: float) -> Result:
    """`clients` threads with a Session each, back to back for `duration` seconds."""
    result, lock = Result(name), threading.Lock()
    stop_at = time.monotonic() + duration
    go = threading.Barrier(clients + 1)

    def client() -> None:
        session = requests.Session()
        session.headers.update(headers)
        lat: list[float] = []
        errors = size = 0
        go.wait()
        while time.monotonic() < stop_at:
            started = time.monotonic()
            try:
                resp = session.get(url, timeout=30)
                ok = resp.status_code == 200
                size += int(resp.headers.get("Content-Length") or len(resp.content))
            except requests.RequestException:
                ok = False
            if ok:
                lat.append(time.monotonic() - started)
            else:
                errors += 1
        with lock:
            result.latencies += lat
            result.errors += errors
            result.bytes += size

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    go.wait()
    began = time.monotonic()
    for t in threads:
        t.join()
    result.elapsed = time.monotonic() - began
    return result


def report(results: list[Result], list_targets: set[str], bare: str) -> bool:
    rows = [r.row() for r in results]
    print(f"{'target':<34}{'requests':>9}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
          f"{'errors':>8}{'wire KB':>9}")
    for r in rows:
        print(f"{r['target']:<34}{r['requests']:>9}{r['rps']:>9.1f}{r['p50_ms']:>9.1f}"
              f"{r['p99_ms']:>9.1f}{r['errors']:>8}{r['body_kb']:>9.1f}")
    bare_rps = next(r["rps"] for r in rows if r["target"] == bare)
    met = True
    for r in rows:
        problems = []
        if r["errors"]:
            problems.append(f"{r['errors']} errors")
        if not r["p99_ms"] < 100:
            problems.append(f"p99 {r['p99_ms']:.0f} ms >= 100 ms")
        if r["target"] in list_targets and r["rps"] < bare_rps / 2:
            problems.append(f"{r['rps']:.0f} req/s < half the bare app's {bare_rps:.0f}")
        print(f"  {r['target']}: {'targets met' if not problems else '; '.join(problems)}")
        met = met and not problems
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--actions", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--accept-encoding", default="gzip, deflate",
                        help="What the clients accept (requests' default; 'identity' for "
                             "uncompressed bodies).")
    parser.add_argument("--keep", action="store_true", help="Keep the work directory.")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="berth-api-load-"))
    procs: list[Proc] = []
    try:
        return 0 if run_all(args, work, procs) else 1
    finally:
        for proc in procs:
            proc.stop()
        if args.keep:
            print(f"work directory: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run_all(args: argparse.Namespace, work: Path, procs: list[Proc]) -> bool:
    tokens = write_tokens(work / "tokens.yaml")
    auth = {"token_file": work / "tokens.yaml"}
    print(f"storing {args.actions} actions and a {args.nodes}-node task ...", flush=True)
    fill_shipyard(f"sqlite:///{work}/shipyard.db", args.actions)
    task_id = fill_drydock(f"sqlite:///{work}/drydock.db", args.nodes)
    write_conf(work / "shipyard.conf", {"auth": auth, "workflow": {"api_workers": 0},
                                        "database": {"connection": f"sqlite:///{work}/shipyard.db"},
                                        "logging": {"level": "WARNING"}})
    write_conf(work / "drydock.conf", {"auth": auth, "worker": {"threads": 0},
                                       "reboot": {"enabled": "false"},
                                       "database": {"connection": f"sqlite:///{work}/drydock.db"},
                                       "logging": {"level": "WARNING"}})
    reader = {"X-Auth-Token": tokens["reader"], "Accept-Encoding": args.accept_encoding}
    bare_name = "bare falcon GET /hello"
    targets: list[tuple[str, Callable[[int], list[str]], str, dict[str, str]]] = [
        (f"shipyard GET /actions ({args.actions})",
         lambda port: service_cmd("shipyard", port, work / "shipyard.conf", args),
         f"{P}/actions", reader),
        (f"drydock GET /tasks/{{id}}?layers=-1 ({args.nodes})",
         lambda port: service_cmd("drydock", port, work / "drydock.conf", args),
         f"{P}/tasks/{task_id}?layers=-1", reader),
        (bare_name, lambda port: [sys.executable, str(Path(__file__).resolve()), "serve-bare",
                                  "--bind", f"127.0.0.1:{port}", "--workers",
                                  str(args.workers), "--threads", str(args.threads)],
         "/hello", {"Accept-Encoding": args.accept_encoding}),
    ]
    results = []
    for name, cmd, path, headers in targets:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start(cmd(port), url, work / f"{name.split()[0]}.log")
        procs.append(proc)
        check = requests.get(url + path, headers=headers, timeout=30)
        check.raise_for_status()
        print(f"{name}: {len(check.content) / 1024:.0f} KB body; {args.clients} clients for "
              f"{args.duration:g} s ...", flush=True)
        results.append(hammer(name, url + path, headers, args.clients, args.duration))
        proc.stop()
    print()
    return report(results, {targets[0][0], targets[1][0]}, bare_name)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve-bare":
        serve_bare(sys.argv[2:])
    else:
        sys.exit(main())
