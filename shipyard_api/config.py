"""Shipyard's configuration: the shared option groups plus its own."""

from __future__ import annotations

from oslo_config import cfg

from common import config
from shipyard_api.documents.config import OPTS as DOCUMENT_OPTS

SERVICE = "shipyard"

WORKFLOW_OPTS: list[cfg.Opt] = [
    cfg.IntOpt("api_workers", default=1, min=0,
               help="Engine threads inside each API process; 0 leaves actions to "
                    "shipyard-worker processes."),
    cfg.FloatOpt("lease_seconds", default=30.0, min=1.0,
                 help="Lease a worker holds on an action; renewed while it works. An action "
                      "held by a dead worker is taken over when the lease expires."),
    cfg.FloatOpt("poll_interval", default=1.0, min=0.01,
                 help="How often an idle worker looks for due actions (s)."),
    cfg.FloatOpt("hold_seconds", default=5.0, min=0.0,
                 help="A worker keeps an action while its next step is due within this (s); "
                      "otherwise it hands the action back to the queue."),
    cfg.IntOpt("max_concurrent_nodes", default=4, min=1,
               help="Target nodes of one action processed at the same time (never two etcd "
                    "members of one cluster in decommission at once)."),
    cfg.IntOpt("max_target_nodes", default=1000, min=1,
               help="Most target_nodes one action may name; more are refused (400) when the "
                    "action is created, before anything is planned."),
    cfg.IntOpt("step_retries", default=3, min=0,
               help="Retries of a step that failed with a retryable error."),
    cfg.FloatOpt("step_backoff", default=5.0, min=0.0,
                 help="First retry delay of a failed step (s), doubled each retry."),
    cfg.FloatOpt("max_backoff", default=300.0, min=0.0, help="Largest retry delay (s)."),
    cfg.FloatOpt("peer_outage_window", default=300.0, min=0.0,
                 help="Seconds Promenade or Drydock may stay unreachable before a step that "
                      "calls them fails; within it the step retries with backoff and "
                      "re-attaches to the same Drydock task."),
    cfg.FloatOpt("attempt_timeout", default=0.0, min=0.0,
                 help="Seconds one attempt of a step (one call to Promenade or Drydock) may "
                      "run; one running longer while its worker is alive is stuck: the step "
                      "fails with StepStuck, counted in berth_shipyard_steps_stuck_total, and "
                      "is not run again automatically. 0: no limit."),
    cfg.FloatOpt("plan_ttl", default=900.0, min=1.0,
                 help="Seconds a plan may be acted on (POST /actions with plan_id) after it "
                      "was made; after that, plan again."),
    cfg.FloatOpt("max_poll_interval", default=0.0, min=0.0,
                 help="Upper bound of the polling intervals read from DeploymentConfiguration "
                      "(s); 0 means no bound. Useful for simulated sites."),
    cfg.FloatOpt("long_poll_wait", default=10.0, min=0.0,
                 help="Seconds a step following a Drydock task asks Drydock to hold its "
                      "request until the task changes (Drydock caps it at its [api] "
                      "long_poll_max_wait). A stop or a step timeout is acted on after at most "
                      "this. 0: poll at the DeploymentConfiguration intervals."),
    cfg.FloatOpt("budget_lease_seconds", default=60.0, min=1.0, max=3600.0,
                 help="Lease of the failure-domain slots an action takes in Drydock before "
                      "a node goes out of service: the worker running the action renews it "
                      "every quarter of this; a slot whose holder died frees itself after "
                      "this many seconds."),
]

OPTS: list[tuple[str, list[cfg.Opt]]] = [("workflow", WORKFLOW_OPTS), *DOCUMENT_OPTS]


def load(config_file: str | None = None) -> cfg.ConfigOpts:
    """Read Shipyard's config file (`SHIPYARD_CONFIG_FILE` or etc/shipyard/shipyard.conf)."""
    return config.load_conf(SERVICE, OPTS, config_file)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """For oslo-config-generator (namespace `shipyard`)."""
    return [*config.GROUPS, *OPTS]
