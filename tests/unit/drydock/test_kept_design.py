"""A task's design is resolved once, when the API admits the task, and kept in Drydock's
database by digest, encrypted: workers read exactly that design there and never fetch it from
Shipyard again."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import delete, select

from common.context import RequestContext
from common.crypto import load_or_create_key
from common.errors import InternalError
from drydock_api.db.designs import DesignStore
from drydock_api.db.models import DesignRow
from drydock_api.runtime import Runtime, build_runtime
from tests.unit.drydock import designs
from tests.unit.drydock.conftest import Site, SiteFactory, make_conf
from tests.unit.drydock.test_orchestrator import names

PATH = "/api/v1.0/revisions/7/rendered-documents"


class Shipyard:
    """Serves one revision's rendered documents, counting the reads, until stopped."""

    def __init__(self, docs: list[dict[str, Any]]) -> None:
        body = yaml.safe_dump_all(docs).encode()
        self.reads = 0
        shipyard = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                shipyard.reads += 1
                self.send_response(200 if self.path == PATH else 404)
                self.send_header("Content-Type", "application/x-yaml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def shipyard() -> Iterator[Shipyard]:
    served = Shipyard(designs.simple_site(["n1", "n2"]))
    yield served
    served.stop()


def test_a_worker_runs_a_task_while_shipyard_is_unreachable(
        make_site: SiteFactory, shipyard: Shipyard, tmp_path: Path) -> None:
    site = make_site(["n1", "n2"], peers={"shipyard_url": shipyard.url})
    ref = f"deckhand+{shipyard.url}{PATH}"
    body, created = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": ref, "node_filter": names("n1"),
         "options": {}}, RequestContext(user="admin"), None)
    assert created and shipyard.reads == 1  # resolved once, by the API
    shipyard.stop()  # from now on the design URL cannot be reached
    # a worker process of its own (no cache shared with the API) on the same database
    worker_rt = build_runtime(make_conf(tmp_path, peers={"shipyard_url": shipyard.url}),
                              maas=site.maas, oob=site.oob)
    try:
        worker = worker_rt.new_worker("w2")
        assert worker.poll_once() == 1
        worker.join(30)
        task = worker_rt.service.get(body["task_id"])
    finally:
        worker_rt.stop()
        worker_rt.pool.shutdown(wait=False, cancel_futures=True)
        worker_rt.store.engine.dispose()
    assert task["status"] == "complete" and task["result"]["status"] == "success", task
    assert site.oob.power[site.address("n1")] == "off" and "id-n1" not in site.maas.machines
    assert shipyard.reads == 1


def test_the_same_revision_is_kept_once_and_read_by_every_task(
        make_site: SiteFactory, shipyard: Shipyard) -> None:
    site = make_site(["n1", "n2"], peers={"shipyard_url": shipyard.url})
    ref = f"{shipyard.url}{PATH}"
    for node in ("n1", "n2"):
        site.runtime.service.create(
            {"action": "destroy_nodes", "design_ref": ref, "node_filter": names(node),
             "options": {}}, RequestContext(user="admin"), None)
    kept = site.runtime.loader.kept_documents(ref)
    assert [d["metadata"]["name"] for d in kept if d["schema"] == "drydock/BaremetalNode/v1"] \
        == ["n1", "n2"]
    assert shipyard.reads == 1
    assert len(stored_rows(site.runtime)) == 1


def stored_rows(runtime: Runtime) -> list[DesignRow]:
    with runtime.store.sessions() as s:
        return list(s.scalars(select(DesignRow)))


def destroy(site: Site, node: str, href: str | None = None) -> str:
    body, created = site.runtime.service.create(
        {"action": "destroy_nodes", "design_ref": href or site.href,
         "node_filter": names(node), "options": {}}, RequestContext(user="admin"), None)
    assert created
    return body["task_id"]


def run_queued(runtime: Runtime) -> None:
    worker = runtime.new_worker("w")
    worker.poll_once()
    worker.join(30)


def test_the_kept_design_holds_no_secret_in_clear(make_site: SiteFactory) -> None:
    site = make_site(["n1"])
    task_id = destroy(site, "n1")
    [row] = stored_rows(site.runtime)
    assert "s3cret-pw" in (Path(site.href.removeprefix("file://"))).read_text()
    assert "s3cret-pw" not in row.documents and "10.1.0.10" not in row.documents
    assert row.digest == site.runtime.store.get(task_id).design_digest
    run_queued(site.runtime)  # the worker decrypts it and runs the task
    assert site.runtime.service.get(task_id)["result"]["status"] == "success"
    assert site.oob.power[site.address("n1")] == "off"


def test_a_process_with_another_key_refuses_to_start_and_a_task_it_reads_fails(
        make_site: SiteFactory, tmp_path: Path) -> None:
    site = make_site(["n1"])
    task_id = destroy(site, "n1")
    conf = make_conf(tmp_path, database={"design_key_file": str(tmp_path / "other.key")})
    with pytest.raises(InternalError) as refused:
        build_runtime(conf, maas=site.maas, oob=site.oob)
    assert "([database] design_key_file)" in refused.value.message
    assert "written with another key" in refused.value.message
    # a key changed under a running process: the task fails naming the option, nothing done
    other = DesignStore(site.runtime.store.sessions, time.time,
                        load_or_create_key(tmp_path / "other.key"))
    digest = site.runtime.store.get(task_id).design_digest
    assert digest is not None
    with pytest.raises(InternalError, match=r"\(\[database\] design_key_file\)"):
        other.documents(digest)
    assert site.oob.power.get(site.address("n1")) != "off"


def test_a_task_runs_the_design_it_was_admitted_with_after_the_file_changed(
        make_site: SiteFactory) -> None:
    site = make_site(["n1", "n2"], design={"cache_ttl": 0})
    first = destroy(site, "n1")
    moved = designs.simple_site(["n1", "n2"])
    moved[3]["data"]["addressing"][0]["address"] = "10.1.0.99"  # n1's BMC moved
    designs.write(Path(site.href.removeprefix("file://")), moved)
    second = destroy(site, "n2")
    digests = {site.runtime.store.get(t).design_digest for t in (first, second)}
    assert len(digests) == 2 and len(stored_rows(site.runtime)) == 2
    run_queued(site.runtime)
    for task_id in (first, second):
        assert site.runtime.service.get(task_id)["result"]["status"] == "success"
    assert site.oob.power["10.1.0.10"] == "off"  # the address n1 had at admission
    assert "10.1.0.99" not in site.oob.power


def test_a_task_admitted_without_a_digest_reads_its_design_by_href(
        make_site: SiteFactory) -> None:
    site = make_site(["n1"])
    row, _ = site.runtime.store.create_task(
        action="destroy_nodes", design_ref=site.href, node_filter=names("n1"), options={},
        node_names=["n1"], created_by="admin", marker=None, idempotency_key=None,
        exclusive=True)
    assert row.design_digest is None and stored_rows(site.runtime) == []
    run_queued(site.runtime)  # fetched once and kept, as before digests
    assert site.runtime.service.get(row.id)["result"]["status"] == "success"
    assert [r.href for r in stored_rows(site.runtime)] == [site.href]


def test_a_task_whose_kept_design_is_gone_fails_instead_of_fetching_another(
        make_site: SiteFactory) -> None:
    site = make_site(["n1"])
    task_id = destroy(site, "n1")
    with site.runtime.store.sessions.begin() as s:
        s.execute(delete(DesignRow))
    run_queued(site.runtime)
    result = site.runtime.service.get(task_id)["result"]
    assert result["status"] == "failure" and "is no longer kept" in result["message"]
    assert stored_rows(site.runtime) == []  # the file was not read again
