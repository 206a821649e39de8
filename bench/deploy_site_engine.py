"""deploy_site's orchestration overhead on Shipyard's real workflow engine (bench helper).

A 1,000-node design (sitesim's design documents) committed to an in-memory document store,
an SQLite action store, and a fake Drydock whose tasks take a fixed simulated time on a fake
clock: the engine never really sleeps, so the wall time is Shipyard's own overhead
(validation, planning, persisting the step memo, polling) and the simulated time is what the
site itself would have taken.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.context import RequestContext
from drydock_api.nodes.design import NodeDef
from drydock_api.nodes.filters import select_nodes
from shipyard_api.actions.fakes import FakeDocuments
from shipyard_api.actions.ports import ActionSettings, Services
from shipyard_api.actions.service import ActionService
from shipyard_api.catalog import definitions
from shipyard_api.clients.fakes import FakeDrydock, FakePromenade
from shipyard_api.db import make_engine, session_factory, upgrade
from shipyard_api.workflow.engine import Engine, EngineSettings
from shipyard_api.workflow.store import ActionStore
from sitesim.design import SiteEndpoints, design_documents
from sitesim.siteconfig import parse_site


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


@dataclass
class TimedDrydock(FakeDrydock):
    """Tasks finish `task_seconds` of simulated time after creation; filters resolved like
    Drydock does."""

    clock: Clock = field(default_factory=Clock)
    task_seconds: float = 60.0
    defs: dict[str, NodeDef] = field(default_factory=dict)
    started: dict[str, float] = field(default_factory=dict)

    def select_nodes(self, design_ref: str, node_filter: dict[str, Any] | None, *,
                     ctx: RequestContext) -> list[str]:
        return select_nodes(node_filter, self.defs)

    def nodes(self, design_ref: str | None, *, ctx: RequestContext,
              retired: bool | None = None) -> list[dict[str, Any]]:
        """The design's nodes as Drydock's listing shows them (the step plans from it)."""
        return [{"hostname": d.name, "rack": d.rack, "tags": list(d.tags),
                 "labels": dict(d.labels), "retired": False}
                for d in self.defs.values() if not retired]

    def create_task(self, action: str, design_ref: str, node_filter: dict[str, Any] | None,
                    options: Mapping[str, Any], *, ctx: RequestContext,
                    key: str) -> dict[str, Any]:
        task = super().create_task(action, design_ref, node_filter, options, ctx=ctx, key=key)
        self.started.setdefault(task["task_id"], self.clock())
        return task

    def get_task(self, task_id: str, *, ctx: RequestContext) -> dict[str, Any]:
        if self.clock() - self.started.get(task_id, 0.0) < self.task_seconds:
            return dict(self.tasks[task_id])
        return super().get_task(task_id, ctx=ctx)


def site_raw(nodes: int, groups: int) -> dict[str, Any]:
    racks = max(1, groups)
    listed = [{"name": f"node{i:04d}", "rack": f"rack{i % racks:03d}",
               "tags": ["control" if i < 3 else "compute"]} for i in range(nodes)]
    strategy = [{"name": f"group{g:02d}", "critical": g == 0,
                 "depends_on": [] if g == 0 else ["group00"],
                 "selectors": [{"rack_names": [f"rack{g:03d}"]}],
                 "success_criteria": {"percent_successful_nodes": 90}} for g in range(groups)]
    return {"site": "bench", "nodes": listed, "workloads": False,
            "etcd": {"clusters": [{"name": "kubernetes",
                                   "members": ["node0000", "node0001", "node0002"]}]},
            "deployment_configuration": {"physical_provisioner": {
                "prepare_node_interval": 10, "deploy_interval": 10,
                "relabel_nodes_interval": 10}},
            "deployment_strategy": {"groups": strategy}}


def run_engine(nodes: int, groups: int, task_seconds: float = 60.0) -> None:
    spec = parse_site(site_raw(nodes, groups))
    docs = design_documents(spec, SiteEndpoints(
        etcd_endpoints={"kubernetes": ["http://127.0.0.1:2379"]}))
    clock = Clock()
    drydock = TimedDrydock(clock=clock, task_seconds=task_seconds, defs={
        n.name: NodeDef(n.name, n.rack, tuple(n.tags), dict(n.labels), None, None, None, None,
                        (), None) for n in spec.nodes})
    documents = FakeDocuments()
    documents.commit(docs)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/shipyard.db"
        upgrade(url)
        db = make_engine(url)
        store = ActionStore(session_factory(db))
        services = Services(FakePromenade(), drydock, documents,
                            ActionSettings(public_url="http://shipyard"))
        defs = definitions()
        api = ActionService(store, defs, documents, clock=clock)
        engine = Engine(store, defs, services, owner="bench", clock=clock, sleep=clock.sleep,
                        settings=EngineSettings(hold_seconds=3600.0))
        start_sim, start = clock(), time.perf_counter()
        action = api.create("deploy_site", {}, RequestContext(marker="bench", user="bench"))
        while api.get(action["id"])["state"] not in ("complete", "failed"):
            if not engine.run_once():
                clock.sleep(1.0)
        wall = time.perf_counter() - start
        view = api.get(action["id"])
        db.dispose()
    simulated = clock() - start_sim
    tasks = len(drydock.tasks)
    if not tasks:  # a deploy that created no task measured nothing
        raise SystemExit(f"deploy_site created no Drydock task ({view['state']}: "
                         f"{view.get('message')})")
    print(f"engine orchestration: {nodes} nodes, {groups} groups, {tasks} Drydock tasks of "
          f"{task_seconds:g} s simulated each: action {view['state']}; simulated site time "
          f"{simulated:.0f} s; Shipyard overhead (wall time, the clock being simulated) "
          f"{wall:.2f} s")
