"""Wires Promenade from config: the Kubernetes and etcd ports behind the Promenade facade, and
its database (migrated at start; it keeps the Idempotency-Key entries)."""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from oslo_config import cfg
from sqlalchemy import text

from common.app import HealthCheck
from common.designref import DesignResolver
from common.failurelog import FailureLog
from common.health import callable_check
from common.idempotency_store import SqlIdempotencyStore
from common.status import health_message
from promenade_api import db
from promenade_api.db.runs import RunStore
from promenade_api.decommission_run import DurableDecommission
from promenade_api.etcd.client import Etcd3Port
from promenade_api.kube.client import KubeClient, load_api_client
from promenade_api.metrics import PromenadeMetrics
from promenade_api.service import Promenade, settings_from_conf

LOG = logging.getLogger(__name__)


@dataclass
class Runtime:
    promenade: Promenade
    health_checks: list[HealthCheck]
    idempotency: SqlIdempotencyStore | None = None
    taint_sweep: threading.Event | None = None  # set it to stop the sweep
    runs: RunStore | None = None  # decommission runs
    resumer: threading.Event | None = None  # set it to stop looking for runs to resume


def build_kube(conf: cfg.ConfigOpts) -> KubeClient:
    """The KubePort for `[kubernetes]` (kubeconfig, else $KUBECONFIG; api_url overrides)."""
    k = conf.kubernetes
    kubeconfig = k.kubeconfig or os.environ.get("KUBECONFIG", "")
    return KubeClient(load_api_client(kubeconfig, k.api_url), k.request_timeout,
                      k.poll_interval)


def kubernetes_check(kube: KubeClient) -> HealthCheck:
    """Kubernetes API reachable; an unconfigured API is reported, not counted as a failure."""
    if not kube.configured:
        return lambda: health_message(
            "kubernetes", "Kubernetes API not configured ([kubernetes] kubeconfig, api_url or "
            "$KUBECONFIG); node operations will fail", error=False)
    return callable_check("kubernetes", lambda: f"Kubernetes API {kube.ping()} reachable")


def build_store(conf: cfg.ConfigOpts) -> tuple[SqlIdempotencyStore, HealthCheck, RunStore]:
    """Migrate `[database] connection` (promenade.db in the working directory when unset) to
    head, and the Idempotency-Key store on it with its health check, and the decommission
    runs on it."""
    url = conf.database.connection or db.DEFAULT_DB
    db.upgrade(url)
    engine = db.make_engine(url)

    def database() -> str:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return "database reachable"

    return (SqlIdempotencyStore.from_conf(engine, conf), callable_check("database", database),
            RunStore(engine, lease=conf.decommission.run_lease))


def build_runtime(conf: cfg.ConfigOpts, metrics: PromenadeMetrics) -> Runtime:
    store, database, runs = build_store(conf)
    kube = build_kube(conf)
    resolver = DesignResolver.from_conf(conf)
    svc = Promenade(kube, metrics.timed_etcd(Etcd3Port(conf.etcd.request_timeout)), resolver,
                    settings_from_conf(conf), observe=metrics.operation,
                    on_stuck=metrics.count_stuck)
    sweep = start_taint_sweep(svc) if kube.configured else None
    resumer = start_resumer(DurableDecommission(svc, runs,
                                                max_takeovers=conf.decommission.max_resumes),
                            conf.decommission.resume_interval)
    return Runtime(svc, [database, kubernetes_check(kube)], store, sweep, runs, resumer)


def start_resumer(runs: DurableDecommission, interval: float) -> threading.Event | None:
    """Every `interval` seconds, resume the decommission runs whose process stopped, in a
    daemon thread; the Event stops it. None when `interval` is 0."""
    if interval <= 0:
        return None
    stopping = threading.Event()

    def loop() -> None:
        failures = FailureLog(LOG, "Looking for decommission runs to resume")
        while not stopping.wait(interval):  # the database away: the next look tries again
            failures.run(runs.resume_lapsed)

    threading.Thread(target=loop, name="decommission-resumer", daemon=True).start()
    return stopping


def start_taint_sweep(svc: Promenade) -> threading.Event | None:
    """The periodic sweep of Berth's out-of-service taints (kube.taints), in a daemon
    thread; the Event stops it. None when `[fence] sweep_interval` is 0."""
    interval = svc.settings.taint_sweep_interval
    if interval <= 0:
        return None
    stopping = threading.Event()
    threading.Thread(target=svc.taint_sweeper().run, args=(interval, stopping),
                     name="taint-sweep", daemon=True).start()
    return stopping
