"""API load: Shipyard's action list and one action, Drydock's task tree and node list.

Starts each server with the services' default settings (`common.server.run`: 1
gunicorn process serving with waitress, 8 threads, behind the connection limits of
common/connguard.py, the cap per client address raised to let all `--clients` in;
`--workers`/`--threads` override) and their default configuration: Shipyard with
`--actions` finished actions stored through its ActionStore (ten steps each), Drydock with
one task of `--nodes` nodes (five step subtasks and two messages per node) stored through its
TaskStore and a simulated site of `--site-nodes` nodes (MAAS, BMCs) for its node list; and a
bare Falcon app that answers a small JSON body at /hello and, at /same/NAME, the very bytes
each endpoint sent. Every server stays up; then, in each of `--rounds` rounds, `--clients`
connections call each target as fast as they can for `--duration` seconds, from wrk (Debian
`wrk`, the default when installed) or from Python threads with a requests.Session each
(`--load python`), each service endpoint right before the bare app sending its bytes, one
target at a time (they do not share the two cores). The machine's load moves from one minute
to the next, so the target is judged on the ratio of each such pair. Prints requests per
second, p50/p99 latency and errors (medians over the rounds), the load average, and whether
the targets are met: zero errors and each endpoint's p99 at most `--max-ratio` (1.5) times the
bare app's for the same bytes (the median of the rounds' ratios; the ratio to the bare /hello
is printed too, and whether p99 stays under 100 ms).

    .venv/bin/python bench/api_load.py [--duration 60] [--clients 100] [--rounds 3]
        [--workers N] [--threads N] [--only TEXT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.procs import Proc, free_port, http_ok, wait_until  # noqa: E402
from tests.support.services import write_conf, write_tokens  # noqa: E402

BIN = Path(sys.executable).parent
WRK_SCRIPT = Path(__file__).with_name("wrk_report.lua")
BARE_HELLO = "bare falcon GET /hello"
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
    from drydock_api.db.states import TaskResult, TaskStatus
    from drydock_api.db.store import TaskStore

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
    """The bare Falcon app under the services' gunicorn settings: a small JSON body at /hello,
    and at /same/NAME the bytes saved in $BARE_BODIES/NAME (gzipped ones sent as such)."""
    import falcon

    from common.server import run

    bodies = Path(os.environ.get("BARE_BODIES", "."))

    class Hello:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            resp.media = {"status": "ok"}

    class Same:
        def __init__(self) -> None:
            self.saved = {p.name: p.read_bytes() for p in bodies.glob("*") if p.is_file()}

        def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
            data = self.saved[name]
            resp.content_type = falcon.MEDIA_JSON
            if data[:2] == b"\x1f\x8b":
                resp.set_header("Content-Encoding", "gzip")
            resp.data = data

    def load() -> Any:
        app = falcon.App()
        app.add_route("/hello", Hello())
        app.add_route("/versions", Hello())
        app.add_route("/same/{name}", Same())
        return app

    run("bare", load, 9999, argv)


def server_args(args: argparse.Namespace) -> list[str]:
    """--workers/--threads only when given: otherwise the services' own defaults. Every load
    connection comes from 127.0.0.1, so that address may hold them all (the default cap per
    client address is 64)."""
    out = ["--workers", str(args.workers)] if args.workers is not None else []
    out += ["--threads", str(args.threads)] if args.threads is not None else []
    return out + ["--per-address-connections", str(max(64, args.clients + 16))]


def service_cmd(service: str, conf: Path, args: argparse.Namespace) -> list[str]:
    return [str(BIN / f"{service}-api"), *server_args(args), "--config-file", str(conf)]


def start_site(nodes: int, work: Path) -> Any:
    """A simulated site of `nodes` nodes (MAAS, BMCs) for Drydock's node list."""
    from sitesim.generate import generate_site
    from sitesim.site import Site
    from sitesim.siteconfig import parse_site

    raw = generate_site(nodes, max(1, nodes // 20), 0)
    raw["workloads"] = False
    site = Site(parse_site(raw)).start()
    (work / "design.yaml").write_text(site.design_yaml())
    return site


# -- load ------------------------------------------------------------------------------------
@dataclass
class Figures:
    name: str
    requests: int
    elapsed: float
    p50_ms: float
    p99_ms: float
    errors: int
    body_kb: float

    @property
    def rps(self) -> float:
        return self.requests / self.elapsed if self.elapsed else 0.0


def hammer(name: str, url: str, headers: dict[str, str], clients: int,
           duration: float) -> Figures:
    """`clients` Python threads with a Session each, back to back for `duration` seconds."""
    latencies: list[float] = []
    totals = {"errors": 0, "bytes": 0}
    lock = threading.Lock()
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
            latencies.extend(lat)
            totals["errors"] += errors
            totals["bytes"] += size

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    go.wait()
    began = time.monotonic()
    for t in threads:
        t.join()
    lat, n = sorted(latencies), len(latencies)
    return Figures(name, n + totals["errors"], time.monotonic() - began,
                   1000 * statistics.median(lat) if lat else float("nan"),
                   1000 * lat[min(n - 1, int(n * 0.99))] if lat else float("nan"),
                   totals["errors"], totals["bytes"] / max(n, 1) / 1024)


def wrk(name: str, url: str, headers: dict[str, str], clients: int, duration: float) -> Figures:
    """The same load from wrk (`clients` connections on one thread, one core), which leaves the
    server the CPU that Python client threads would take."""
    cmd = ["wrk", "--threads", "1", "--connections", str(clients), "--duration",
           f"{duration:g}s", "--timeout", "30s", "--script", str(WRK_SCRIPT)]
    for key, value in headers.items():
        cmd += ["--header", f"{key}: {value}"]
    out = subprocess.run([*cmd, url], check=True, capture_output=True, text=True).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    ok = max(figures["requests"] - figures["errors"], 1)
    return Figures(name, figures["requests"], figures["duration_us"] / 1e6,
                   figures["p50_us"] / 1000, figures["p99_us"] / 1000, figures["errors"],
                   figures["bytes"] / ok / 1024)


def median_figures(runs: list[Figures]) -> Figures:
    """One row for the rounds of a target: the median of each figure, errors summed."""
    return Figures(runs[0].name, sum(r.requests for r in runs), sum(r.elapsed for r in runs),
                   statistics.median(r.p50_ms for r in runs),
                   statistics.median(r.p99_ms for r in runs), sum(r.errors for r in runs),
                   statistics.median(r.body_kb for r in runs))


def p99_ratio(service: Figures, bare: Figures) -> float:
    return service.p99_ms / bare.p99_ms if bare.p99_ms else float("inf")


def report(pairs: list[tuple[list[Figures], list[Figures]]], hello: list[Figures],
           max_ratio: float) -> bool:
    """The table (medians over the rounds), then each target: zero errors, p99 under 100 ms,
    and p99 at most `max_ratio` times the bare app's sending the same bytes, measured right
    after it (the median of the per-round ratios; the bare /hello ratio is printed too)."""
    rows = [median_figures(r) for pair in pairs for r in pair] + [median_figures(hello)]
    print(f"{'target':<40}{'requests':>9}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
          f"{'errors':>8}{'wire KB':>9}")
    for r in rows:
        print(f"{r.name[:39]:<40}{r.requests:>9}{r.rps:>9.1f}{r.p50_ms:>9.1f}"
              f"{r.p99_ms:>9.1f}{r.errors:>8}{r.body_kb:>9.1f}")
    met = True
    for service, bare in pairs:
        ratios = [p99_ratio(s, b) for s, b in zip(service, bare, strict=True)]
        ratio = statistics.median(ratios)
        row = median_figures(service)
        problems = [f"{row.errors} errors"] if row.errors else []
        if ratio > max_ratio:
            problems.append(f"p99 {ratio:.2f}x the bare app's > {max_ratio:g}x")
        print(f"  {row.name}: p99 {ratio:.2f}x the bare app sending the same bytes "
              f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"{p99_ratio(row, median_figures(hello)):.2f}x its /hello), "
              f"req/s {row.rps / max(median_figures(bare).rps, 1e-9):.2f}x: "
              f"{'target met' if not problems else '; '.join(problems)}"
              f"{'' if row.p99_ms < 100 else f' (p99 {row.p99_ms:.0f} ms >= 100 ms)'}")
        met = met and not problems
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--actions", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--workers", type=int, default=None,
                        help="gunicorn processes of every server (default: the services' "
                             "default, 1; wrk takes the other core).")
    parser.add_argument("--threads", type=int, default=None,
                        help="Threads per process (default: the services' default, 8).")
    parser.add_argument("--site-nodes", type=int, default=200,
                        help="Nodes of the simulated site behind Drydock's GET /nodes.")
    parser.add_argument("--accept-encoding", default="gzip, deflate",
                        help="What the clients accept (requests' default; 'identity' for "
                             "uncompressed bodies).")
    parser.add_argument("--load", choices=("wrk", "python"),
                        default="wrk" if shutil.which("wrk") else "python",
                        help="Load generator: wrk (the default when installed) or Python "
                             "threads (which share the two cores with the server).")
    parser.add_argument("--only", default="",
                        help="Only the targets whose name contains this text.")
    parser.add_argument("--rounds", type=int, default=1,
                        help="Rounds of every target, each right before the bare app sending "
                             "its bytes; the figures are the medians over the rounds.")
    parser.add_argument("--max-ratio", type=float, default=1.5,
                        help="Target: a service's p99 at most this many times the bare app's "
                             "for the same bytes.")
    parser.add_argument("--listing-max-age", type=float, default=None,
                        help="Drydock's [inventory] listing_max_age (default: the service's, "
                             "10 s): how often a GET /nodes has MAAS listed again; a large "
                             "value keeps the simulated MAAS's listing out of the rounds")
    parser.add_argument("--keep", action="store_true", help="Keep the work directory.")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="berth-api-load-"))
    procs: list[Proc] = []
    site = start_site(args.site_nodes, work)
    try:
        return 0 if run_all(args, work, procs, site) else 1
    finally:
        for proc in procs:
            proc.stop()
        site.stop()
        if args.keep:
            print(f"work directory: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run_all(args: argparse.Namespace, work: Path, procs: list[Proc], site: Any) -> bool:
    tokens = write_tokens(work / "tokens.yaml")
    auth = {"token_file": work / "tokens.yaml"}
    print(f"storing {args.actions} actions and a {args.nodes}-node task ...", flush=True)
    fill_shipyard(f"sqlite:///{work}/shipyard.db", args.actions)
    task_id = fill_drydock(f"sqlite:///{work}/drydock.db", args.nodes)
    write_conf(work / "shipyard.conf", {"auth": auth,
                                        "database": {"connection": f"sqlite:///{work}/shipyard.db"},
                                        "logging": {"level": "WARNING"}})
    write_conf(work / "drydock.conf", {"auth": auth,
                                       "database": {"connection": f"sqlite:///{work}/drydock.db"},
                                       "maas": {"url": site.urls["maas"],
                                                "api_key": site.spec.maas_api_key},
                                       "site_design": {"source": "tasks"},
                                       "logging": {"level": "WARNING"},
                                       **({} if args.listing_max_age is None else {
                                           "inventory": {
                                               "listing_max_age": args.listing_max_age}})})
    reader = {"X-Auth-Token": tokens["reader"], "Accept-Encoding": args.accept_encoding}
    bodies = work / "bodies"
    bodies.mkdir()
    design = f"file://{work}/design.yaml"
    targets = {"shipyard": [
        ("actions", f"shipyard GET /actions ({args.actions})", f"{P}/actions"),
        ("action", "shipyard GET /actions/{id}", f"{P}/actions/{args.actions // 2:026d}")],
        "drydock": [
        ("tree", f"drydock GET /tasks/{{id}}?layers=-1 ({args.nodes})",
         f"{P}/tasks/{task_id}?layers=-1"),
        ("nodes", f"drydock GET /nodes ({args.site_nodes})", f"{P}/nodes?design_ref={design}")]}
    targets = {svc: [t for t in paths if args.only in t[1]] for svc, paths in targets.items()}
    targets = {svc: paths for svc, paths in targets.items() if paths}
    sources = []
    for service, paths in targets.items():
        url = run_server(service_cmd(service, work / f"{service}.conf", args), work, procs)
        for key, name, path in paths:
            bodies.joinpath(key).write_bytes(wire_bytes(url + path, reader))
            sources.append((key, name, url + path))
    bare = [sys.executable, str(Path(__file__).resolve()), "serve-bare", *server_args(args)]
    url = run_server(bare, work, procs, env={"BARE_BODIES": str(bodies)})
    plain = {"Accept-Encoding": args.accept_encoding}
    pairs: list[tuple[list[Figures], list[Figures]]] = [([], []) for _ in sources]
    hello: list[Figures] = []
    for n in range(args.rounds):
        print(f"round {n + 1} of {args.rounds}, load {load_average()}", flush=True)
        hello.append(measure(args, BARE_HELLO, url + "/hello", plain))
        for (key, name, target), (service, same) in zip(sources, pairs, strict=True):
            service.append(measure(args, name, target, reader))
            same.append(measure(args, f"bare falcon, the bytes of {name}", f"{url}/same/{key}",
                                plain))
    print(f"\nload average at the end: {load_average()}")
    return report(pairs, hello, args.max_ratio)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def wire_bytes(url: str, headers: dict[str, str]) -> bytes:
    """The body as sent (still gzipped when the server gzipped it)."""
    with requests.get(url, headers=headers, timeout=30, stream=True) as resp:
        resp.raise_for_status()
        return bytes(resp.raw.read(decode_content=False))


def run_server(cmd: list[str], work: Path, procs: list[Proc],
               env: dict[str, str] | None = None) -> str:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = work / f"{Path(cmd[0]).name}-{port}.log"
    proc = Proc([*cmd, "--bind", f"127.0.0.1:{port}"], env=env, log=log, cwd=str(work))
    procs.append(proc)
    try:
        wait_until(lambda: http_ok(f"{url}/versions"), timeout=60, what=cmd[0])
    except TimeoutError:
        raise RuntimeError(f"{cmd[0]} did not start:\n{proc.output()}") from None
    return url


def measure(args: argparse.Namespace, name: str, url: str, headers: dict[str, str]) -> Figures:
    print(f"{name}: {args.clients} clients for {args.duration:g} s ...", flush=True)
    generate = wrk if args.load == "wrk" else hammer
    return generate(name, url, headers, args.clients, args.duration)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve-bare":
        serve_bare(sys.argv[2:])
    else:
        sys.exit(main())
