"""Wires Drydock from config: database, drivers, orchestrator, workers (API and worker process)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from oslo_config import cfg
from sqlalchemy import text

from common.clients.shipyard import ShipyardClient
from common.crypto import load_or_create_key
from common.designref import DesignResolver
from common.errors import BerthError
from common.httpclient import ServiceClient, peer_client
from common.longpoll import ChangeWaiters, notify_on_commit
from common.pgwake import Listener, notify
from common.status import Message, health_message
from drydock_api import db
from drydock_api.bootactions.fetch import LocationFetcher
from drydock_api.bootactions.service import BootActionService
from drydock_api.bootactions.store import BootActionStore
from drydock_api.budgets.service import BudgetService
from drydock_api.budgets.slots import SlotStore
from drydock_api.db.designs import DesignStore
from drydock_api.db.nodes import NodeStore
from drydock_api.db.progress import ProgressStore
from drydock_api.db.store import CHANGES_CHANNEL, TASKS_CHANNEL, TaskStore
from drydock_api.drivers.ipmi.driver import IpmiDriver
from drydock_api.drivers.ironic.wiring import ironic_ports
from drydock_api.drivers.maas.client import MaasClient
from drydock_api.drivers.ports import OobDriver, OobRouter, Provisioner
from drydock_api.drivers.promenade import PromenadeLabeller
from drydock_api.drivers.provisioners import Backend, Backends, PowerPaths
from drydock_api.drivers.redfish.check import against_profile
from drydock_api.drivers.redfish.driver import RedfishDriver
from drydock_api.metrics import DrydockMetrics
from drydock_api.nodes.domains import design_claims
from drydock_api.nodes.inventory import Inventory
from drydock_api.nodes.loader import DesignLoader
from drydock_api.nodes.reboot import RebootReconciler, RebootSettings
from drydock_api.nodes.service import NodeService
from drydock_api.nodes.sitedesign import SiteDesign
from drydock_api.tasks.actions import build_actions
from drydock_api.tasks.budget import TaskBudgets
from drydock_api.tasks.context import Labeller, Ports, StepSettings
from drydock_api.tasks.engine import StepEngine
from drydock_api.tasks.orchestrator import DesignSource, Orchestrator
from drydock_api.tasks.service import TaskService
from drydock_api.tasks.waits import ExpectedWaits
from drydock_api.tasks.worker import Worker, WorkerSettings, default_owner

DEFAULT_DB = "sqlite:///drydock.db"


@dataclass
class Runtime:
    store: TaskStore
    progress: ProgressStore
    nodes: NodeStore
    loader: DesignLoader
    ports: Ports
    orchestrator: Orchestrator
    service: TaskService
    inventory: Inventory
    pool: ThreadPoolExecutor
    worker_settings: WorkerSettings
    node_service: NodeService
    reconciler: RebootReconciler
    waiters: ChangeWaiters
    budgets: BudgetService
    owner: str = ""
    workers: list[Worker] = field(default_factory=list)
    listener: Listener | None = None
    reconciler_thread: threading.Thread | None = None
    bootactions: BootActionService | None = None

    def start_reconciler(self) -> threading.Thread:
        """The reboot-request reconciler, in a thread of this process (once)."""
        if self.reconciler_thread is None:
            self.reconciler_thread = threading.Thread(target=self.reconciler.run,
                                                      name="drydock-reboots", daemon=True)
            self.reconciler_thread.start()
        return self.reconciler_thread

    def new_worker(self, owner: str | None = None) -> Worker:
        return Worker(self.store, self.orchestrator, self.worker_settings,
                      owner or self.owner or None)

    def start_workers(self, count: int) -> list[Worker]:
        for i in range(count):
            worker = self.new_worker(f"{self.owner}-{i}" if self.owner else None)
            threading.Thread(target=worker.run, name=f"drydock-worker-{i}", daemon=True).start()
            self.workers.append(worker)
        return self.workers

    def wake_workers(self) -> None:
        for worker in self.workers:
            worker.wake()

    def task_created(self) -> None:
        """Wake this process's workers, and (PostgreSQL) those of other processes."""
        self.wake_workers()
        notify(self.store.engine, TASKS_CHANNEL)

    def stop(self, timeout: float = 5.0) -> None:
        if self.listener is not None:
            self.listener.stop()
        self.reconciler.stopping.set()
        if self.reconciler_thread is not None:
            self.reconciler_thread.join(timeout)
        for worker in self.workers:
            worker.stop()
        for worker in self.workers:
            worker.join(timeout)

    def health_checks(self) -> list[Callable[[], Message]]:
        """What this process needs to serve requests: its database."""

        def database() -> Message:
            with self.store.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return health_message("database", "database reachable", error=False)

        return [database]

    def dependency_checks(self) -> list[Callable[[], Message]]:
        """External systems, listed by /health/extended only: a provisioner (MAAS, Ironic)
        being down fails tasks' steps (they are retried) but does not make the API unready."""
        backends = self.ports.backends
        return [partial(_check, b) for b in ([backends.get(n) for n in backends.names()]
                                             if backends else [])]


def step_settings(conf: cfg.ConfigOpts) -> StepSettings:
    return StepSettings(
        graceful_timeout=conf.oob.graceful_timeout, power_timeout=conf.oob.power_timeout,
        power_poll=conf.oob.poll_interval, release_timeout=conf.steps.release_timeout,
        maas_poll=conf.steps.maas_poll_interval, retry_delay=conf.steps.step_retry_delay,
        retries=conf.steps.step_retries, outage_window=conf.steps.outage_window,
        enlist_timeout=conf.steps.enlist_timeout,
        commission_timeout=conf.steps.commission_timeout,
        deploy_timeout=conf.steps.deploy_timeout,
        first_poll=conf.steps.first_poll_interval, poll_backoff=conf.steps.poll_backoff,
        bmc_check=conf.oob.bmc_check)


def build_runtime(conf: cfg.ConfigOpts, *, maas: Provisioner | None = None,
                  oob: OobDriver | None = None, labeller: Labeller | None = None,
                  resolver: DesignResolver | None = None,
                  clock: Callable[[], float] = time.time,
                  sleep: Callable[[float], None] = time.sleep,
                  migrate: bool = True, metrics: DrydockMetrics | None = None) -> Runtime:
    url = conf.database.connection or DEFAULT_DB
    if migrate:
        db.upgrade(url)
    store = TaskStore(db.make_engine(url), clock=clock)
    waiters = ChangeWaiters(max_waiters=conf.api.long_poll_waiters,
                            recheck=conf.api.long_poll_recheck)
    notify_on_commit(store.engine, waiters)
    progress = ProgressStore(store)
    nodes = NodeStore(store.sessions, clock)
    kept = DesignStore(store.sessions, clock, load_or_create_key(conf.database.design_key_file),
                       retention=conf.database.design_retention)
    kept.check_key()
    loader = DesignLoader(resolver or DesignResolver.from_conf(conf), kept=kept)
    direct = oob or OobRouter({"redfish": _timed(metrics, "redfish",
                                                 RedfishDriver(timeout=conf.oob.request_timeout)),
                               "ipmi": _timed(metrics, "ipmi",
                                             IpmiDriver(timeout=conf.oob.request_timeout))})
    backends, oob = provisioners(conf, maas, direct, sleep, metrics)
    if metrics is not None:
        metrics.watch(store)
    bootactions = BootActionService(
        BootActionStore(store.engine, clock=clock), loader.documents,
        LocationFetcher(peer_client(conf, "promenade"), timeout=conf.peers.read_timeout),
        conf.bootactions.report_url or f"{conf.peers.drydock_url.rstrip('/')}/api/v1.0/"
                                        "bootactions/")
    default = backends.default()  # a design's Region picks one (Ports.for_provisioner)
    ports = Ports.of(default.port, oob,
                     labeller=labeller or PromenadeLabeller(peer_client(conf, "promenade")),
                     retire=nodes.retire, retirement=default.retirement, records=nodes,
                     bootactions=bootactions,
                     bmc_check=partial(against_profile, timeout=conf.oob.request_timeout),
                     provisioner=default.label, backends=backends)
    pool = ThreadPoolExecutor(max_workers=conf.worker.node_pool_size,
                              thread_name_prefix="drydock-node")
    actions = build_actions()
    designs = DesignSource(loader.task_documents, loader.task_design)  # never fetched
    engine = StepEngine(ExpectedWaits() if conf.steps.expected_waits else None)
    orchestrator = Orchestrator(store, progress, actions, designs, ports, step_settings(conf),
                                pool, engine, clock,
                                None if sleep is time.sleep else sleep,
                                attempt_timeout=conf.steps.attempt_timeout or None,
                                on_stuck=metrics.count_stuck if metrics else None)
    service = TaskService(store, progress, actions, loader.admit)
    site_design = SiteDesign(
        ShipyardClient(ServiceClient(conf.peers.shipyard_url, name="Shipyard",
                                     token=conf.auth.service_token or None,
                                     connect_timeout=min(conf.peers.connect_timeout, 5.0),
                                     read_timeout=min(conf.peers.read_timeout, 10.0),
                                     retries=0))
        if conf.site_design.source == "shipyard" else None,
        conf.peers.shipyard_url, store.latest_design_ref, ttl=conf.site_design.ttl)
    inventory = Inventory(default.port, oob, store.node_records, site_design, loader.design,
                          live_limit=conf.inventory.live_limit,
                          listing_max_age=conf.inventory.listing_max_age,
                          records_key=store.node_records_key, backends=backends)
    settings = WorkerSettings(max_tasks=conf.worker.max_tasks,
                              lease_seconds=conf.worker.lease_seconds,
                              poll_interval=conf.worker.poll_interval)
    slots = SlotStore(store.engine, clock=clock)
    claims_of = design_claims(loader.documents, loader.design)
    reconciler = RebootReconciler(
        nodes, oob, loader.design, site_design,
        RebootSettings(interval=conf.reboot.interval, lease_seconds=conf.reboot.lease_seconds,
                       soft_timeout=conf.reboot.soft_timeout,
                       power_on_retry=conf.reboot.power_on_retry),
        f"{conf.worker.owner or default_owner()}-reboots", clock)
    runtime = Runtime(store=store, progress=progress, nodes=nodes, loader=loader, ports=ports,
                      orchestrator=orchestrator, service=service, inventory=inventory,
                      pool=pool, worker_settings=settings,
                      node_service=NodeService(inventory, nodes, backends),
                      reconciler=reconciler,
                      waiters=waiters, owner=conf.worker.owner,
                      budgets=BudgetService(slots, claims_of), bootactions=bootactions)
    task_budgets = TaskBudgets(slots, claims_of, conf.worker.lease_seconds * 2)
    ports.budgets = service.budgets = task_budgets
    reconciler.slots, reconciler.claims_of = slots, claims_of
    service.on_created = runtime.task_created
    service.provisioners = backends
    runtime.listener = Listener(store.engine, {TASKS_CHANNEL: runtime.wake_workers,
                                               CHANGES_CHANNEL: waiters.notify}).start()
    return runtime


def provisioners(conf: cfg.ConfigOpts, maas: Provisioner | None, direct: OobDriver,
                 sleep: Callable[[float], None], metrics: DrydockMetrics | None
                 ) -> tuple[Backends, OobDriver]:
    """The provisioners Drydock has connection settings for ([maas] url, or a `maas` given;
    [ironic] url), and the power paths by provisioner: a MAAS design's nodes straight at
    their BMCs, an Ironic design's through Ironic (disk erase still at the BMC)."""
    found: dict[str, Backend] = {}
    paths: dict[str, OobDriver] = {"maas": direct}
    if maas is None and conf.maas.url:
        maas = MaasClient(conf.maas.url, conf.maas.api_key, timeout=conf.maas.timeout,
                          retries=conf.maas.retries, backoff=conf.maas.backoff, sleep=sleep)
    if maas is not None:
        found["maas"] = Backend("maas", _timed_port(metrics, "maas", maas))
    if conf.ironic.url:
        ironic, paths["ironic"] = ironic_ports(conf, direct)
        found["ironic"] = Backend("ironic", _timed_port(metrics, "ironic", ironic),
                                  retirement=ironic)
    if not found:
        raise cfg.Error("Drydock has no provisioner: set [maas] url or [ironic] url")
    return Backends(found), PowerPaths(paths)


def _timed_port(metrics: DrydockMetrics | None, driver: str, port: Provisioner) -> Provisioner:
    return metrics.timed_maas(port, driver) if metrics is not None else port


def _check(backend: Backend) -> Message:
    try:
        return health_message(backend.name, backend.port.check(), error=False)
    except BerthError as exc:
        return health_message(backend.name, f"{backend.label} unavailable: {exc.message}",
                              error=True)


def _timed(metrics: DrydockMetrics | None, driver: str, target: OobDriver) -> OobDriver:
    return metrics.timed_oob(driver, target) if metrics is not None else target


def ignore(*_: object) -> None:
    return None
