"""The PostgreSQL layout end to end: two Shipyard APIs, two shipyard-workers, two Drydock APIs,
two drydock-workers and Promenade on a demo site of their own. A redeploy_server (Shipyard) and
a destroy/prepare/deploy of two other nodes (straight on Drydock) run while one worker of each
is SIGKILLed holding a lease; the survivors finish both, every node is released and deployed
exactly once, and no row is left leased to a dead process."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import create_engine, inspect, text

from drydock_api import db as drydock_db
from shipyard_api import db as shipyard_db
from sitesim.site import Site
from tests.fixtures.services import service_sections, wait_for
from tests.fixtures.site import FAST_TIMINGS, start_test_site, stop_site
from tests.support.procs import Proc, free_port
from tests.support.services import ServiceProcess, worker_process, write_conf, write_tokens

pytestmark = pytest.mark.slow

# MAAS operations take a little while, so a worker is caught holding a lease mid-way.
TIMINGS = {**FAST_TIMINGS, "release": 0.8, "erase": 0.8, "deploy": 0.8, "commission": 0.3}
DIRECT = ["node04", "node06"]  # destroyed, prepared and deployed straight on Drydock
REDEPLOY = "node05"  # redeployed through Shipyard


@dataclass
class Layout:
    site: Site
    work: Path
    token: str
    urls: dict[str, str]  # shipyard-1, shipyard-2, drydock-1, drydock-2, promenade
    databases: dict[str, str]
    workers: dict[str, Proc] = field(default_factory=dict)
    apis: list[ServiceProcess] = field(default_factory=list)

    def call(self, method: str, api: str, path: str, **kw: Any) -> requests.Response:
        headers = {"X-Auth-Token": self.token, **kw.pop("headers", {})}
        return requests.request(method, f"{self.urls[api]}/api/v1.0{path}", timeout=60,
                                headers=headers, **kw)

    def calls(self, op: str, node: str) -> int:
        resp = requests.get(f"{self.site.urls['sitesim']}/calls", timeout=10,
                            params={"system": "maas", "op": op, "node": node})
        return int(resp.json()["count"])

    def rows(self, service: str, sql: str, **params: Any) -> list[Any]:
        engine = create_engine(self.databases[service])
        try:
            with engine.connect() as conn:
                return list(conn.execute(text(sql), params))
        finally:
            engine.dispose()

    def leased_to(self, service: str, pids: set[int]) -> list[tuple[str, str]]:
        """(table, lease_owner) of every row of `service` leased to one of `pids`."""
        engine = create_engine(self.databases[service])
        found = []
        try:
            tables = [t for t in inspect(engine).get_table_names()
                      if "lease_owner" in {c["name"] for c in inspect(engine).get_columns(t)}]
            with engine.connect() as conn:
                for table in tables:
                    for (owner,) in conn.execute(text(
                            f"SELECT lease_owner FROM {table} WHERE lease_owner IS NOT NULL")):
                        if owner_pid(owner) in pids:
                            found.append((table, owner))
        finally:
            engine.dispose()
        return found


    def leases_in_flight(self, killed: set[int]) -> bool:
        return bool(self.leased_to("shipyard", killed) or self.leased_to("drydock", killed)
                    or self.rows("drydock", "SELECT id FROM tasks WHERE lease_owner IS NOT NULL")
                    or self.rows("shipyard",
                                 "SELECT id FROM actions WHERE lease_owner IS NOT NULL"))


def owner_pid(owner: str) -> int:
    """Lease owners are `host:pid:suffix[:n]`."""
    return int(owner.split(":")[1])


def start_apis(layout: Layout, sections: dict[str, dict[str, Any]],
               ports: dict[str, int]) -> None:
    for api, port in ports.items():
        service = api.split("-")[0]
        workdir = layout.work / api
        workdir.mkdir()
        layout.apis.append(ServiceProcess(service, workdir, sections[service], port=port))


def start_workers(layout: Layout) -> None:
    for service in ("shipyard", "drydock"):
        for n in (1, 2):
            name = f"{service}-worker-{n}"
            layout.workers[name] = worker_process(
                service, layout.work / f"{service}.conf", layout.work / f"{name}.log",
                layout.work)


def layout_sections(site: Site, work: Path, token: str, ports: dict[str, int],
                    databases: dict[str, str]) -> dict[str, dict[str, Any]]:
    # Shipyard talks to the second Drydock API; the test's own tasks go to the first.
    peers = {"shipyard": ports["shipyard-1"], "promenade": ports["promenade"],
             "drydock": ports["drydock-2"]}
    sections = service_sections(site, work, token, peers)
    for service, url in databases.items():
        sections[service].setdefault("database", {})["connection"] = url
    sections["drydock"]["worker"].update(threads=0, lease_seconds=3.0)
    sections["drydock"]["steps"].update(step_retries=2, step_retry_delay=0.2)
    sections["shipyard"]["workflow"].update(api_workers=0, lease_seconds=3)
    sections["shipyard"]["documents"]["public_url"] = f"http://127.0.0.1:{ports['shipyard-1']}"
    return sections


def create_databases(server: str) -> dict[str, str]:
    admin = create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    suffix = uuid.uuid4().hex[:8]
    try:
        with admin.connect() as conn:
            for service in ("shipyard", "drydock"):
                conn.execute(text(f'CREATE DATABASE "{service}_{suffix}"'))
    finally:
        admin.dispose()
    return {s: f"{server}/{s}_{suffix}" for s in ("shipyard", "drydock")}


@pytest.fixture(scope="module")
def layout(postgres_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    # No demo workloads: node04 and node06 are destroyed straight on Drydock (bypassing
    # Promenade) while node05 drains, so the web Deployment's PodDisruptionBudget could never be
    # satisfied and Promenade would rightly refuse the drain; this test is about crashed workers.
    site = start_test_site(overrides={"timings": dict(TIMINGS), "workloads": False})
    work = tmp_path_factory.mktemp("pg-layout")
    token = write_tokens(work / "tokens.yaml")["admin"]
    (work / "design.yaml").write_text(site.design_yaml())
    ports = {name: free_port() for name in ("promenade", "drydock-1", "drydock-2", "shipyard-1",
                                            "shipyard-2")}
    databases = create_databases(postgres_server)
    shipyard_db.upgrade(databases["shipyard"])
    drydock_db.upgrade(databases["drydock"])
    sections = layout_sections(site, work, token, ports, databases)
    env = Layout(site, work, token, {n: f"http://127.0.0.1:{p}" for n, p in ports.items()},
                 databases)
    try:
        for service in ("shipyard", "drydock"):
            write_conf(work / f"{service}.conf", sections[service])
        start_apis(env, sections, ports)
        start_workers(env)
        yield env
    finally:
        for proc in env.workers.values():
            proc.stop()
        for api in reversed(env.apis):
            api.stop()
        stop_site(site)


def commit_and_tag(layout: Layout) -> None:
    staged = layout.call("POST", "shipyard-1", "/configdocs/site",
                         params={"buffermode": "replace"}, data=layout.site.design_yaml(),
                         headers={"Content-Type": "application/x-yaml"})
    assert staged.status_code == 201, staged.text
    assert layout.call("POST", "shipyard-2", "/commitconfigdocs").status_code == 200
    revision = max(r["id"] for r in layout.call("GET", "shipyard-1", "/revisions")
                   .json()["results"])
    tagged = layout.call("POST", "shipyard-2", f"/revisions/{revision}/tags/site-action-success",
                         json={"dag_id": "bootstrap"})
    assert tagged.status_code == 201, tagged.text


def drydock_task(layout: Layout, action: str, nodes: list[str]) -> str:
    resp = layout.call("POST", "drydock-1", "/tasks", json={
        "action": action, "design_ref": f"file://{layout.work}/design.yaml",
        "node_filter": {"filter_set_type": "union", "filter_set": [{"node_names": nodes}]}})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["task_id"])


def wait_task(layout: Layout, task_id: str, api: str = "drydock-2") -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        task: dict[str, Any] = layout.call("GET", api, f"/tasks/{task_id}").json()
        return task if task["status"] in ("complete", "terminated") else None

    task: dict[str, Any] = wait_for(done, 240, f"Drydock task {task_id}")
    errors = [m["message"] for m in task["result"]["details"]["messageList"] if m["error"]]
    assert task["result"]["status"] == "success", errors
    return task


def holder(layout: Layout, service: str, sql: str, prefix: str, **params: Any) -> Proc | None:
    """The live worker process (name starting with `prefix`) holding a lease `sql` selects."""
    pids = {p.pid: p for n, p in layout.workers.items() if n.startswith(prefix) and p.alive()}
    for (owner,) in layout.rows(service, sql, **params):
        if owner and owner_pid(owner) in pids:
            return pids[owner_pid(owner)]
    return None


def test_killed_workers_leave_no_claim_and_every_node_is_redeployed_once(
        layout: Layout) -> None:
    commit_and_tag(layout)
    nodes = [*DIRECT, REDEPLOY]
    before = {n: (layout.calls("release", n), layout.calls("deploy", n)) for n in nodes}
    created = layout.call("POST", "shipyard-2", "/actions", json={
        "name": "redeploy_server", "parameters": {"target_nodes": REDEPLOY}})
    assert created.status_code == 201, created.text
    action_id = created.json()["id"]
    destroy = drydock_task(layout, "destroy_nodes", DIRECT)

    dry = wait_for(lambda: holder(layout, "drydock", "SELECT lease_owner FROM tasks WHERE "
                                  "id = :id AND status = 'running'", "drydock", id=destroy),
                   180, "a drydock-worker to hold the destroy task")
    dry.kill()
    ship = wait_for(lambda: holder(layout, "shipyard", "SELECT lease_owner FROM actions "
                                   "WHERE id = :id", "shipyard", id=action_id),
                    120, "a shipyard-worker to hold the redeploy_server action")
    ship.kill()
    killed = {dry.pid, ship.pid}
    assert layout.call("GET", "drydock-1", f"/tasks/{destroy}").json()["status"] == "running"

    wait_task(layout, destroy)
    wait_task(layout, drydock_task(layout, "prepare_nodes", DIRECT))
    wait_task(layout, drydock_task(layout, "deploy_nodes", DIRECT))
    view = wait_for(lambda: (lambda v: v if v["state"] in ("complete", "failed", "stopped")
                             else None)(layout.call("GET", "shipyard-1",
                                                    f"/actions/{action_id}").json()),
                    300, "the redeploy_server action")
    assert view["state"] == "complete", view["message"]

    assert {n: (layout.calls("release", n), layout.calls("deploy", n)) for n in nodes} == {
        n: (r + 1, d + 1) for n, (r, d) in before.items()}
    for name in nodes:
        seen = requests.get(f"{layout.site.urls['sitesim']}/nodes/{name}", timeout=10).json()
        assert seen["maas_status"] == "Deployed" and seen["kubernetes"]["ready"]
    # A lease of a dead process disappears only if a survivor took the row over; the
    # survivors release their own leases right after their last write.
    wait_for(lambda: not layout.leases_in_flight(killed), 30, "every lease to be released")
    assert layout.leased_to("shipyard", killed) == []
    assert layout.leased_to("drydock", killed) == []
    assert not layout.rows("drydock", "SELECT id FROM tasks WHERE status IN "
                           "('queued', 'running') OR lease_owner IS NOT NULL")
    assert not layout.rows("shipyard", "SELECT id FROM actions WHERE lease_owner IS NOT NULL")
    survivors = [p for p in layout.workers.values() if p.pid not in killed]
    assert len(survivors) == 2 and all(p.alive() for p in survivors)
    assert any(f"Resuming task {destroy}" in p.output() for p in survivors)


def test_the_audit_chains_hold_after_concurrent_apis_workers_and_takeovers(
        layout: Layout) -> None:
    """Two APIs and two workers per service appended to one chain per stream (the head row
    locked): after the work above and the takeovers, every chain verifies from every API."""
    for api in ("shipyard-1", "shipyard-2", "drydock-1", "drydock-2"):
        resp = layout.call("GET", api, "/audit/verify")
        assert resp.status_code == 200, resp.text
    shipyard = layout.call("GET", "shipyard-1", "/audit/verify").json()["details"]["chains"]
    drydock = layout.call("GET", "drydock-2", "/audit/verify").json()["details"]["chains"]
    assert shipyard["shipyard.actions"]["entries"] > 10
    assert drydock["drydock.tasks"]["entries"] > 10 and drydock["drydock.nodes"]["entries"]
    seqs = layout.rows("drydock", "SELECT seq FROM audit_entries WHERE stream = "
                       "'drydock.tasks' ORDER BY seq")
    assert [r[0] for r in seqs] == list(range(1, len(seqs) + 1))
