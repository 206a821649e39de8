"""Drydock's configuration: the shared option groups plus MAAS, worker and BMC settings."""

from __future__ import annotations

from oslo_config import cfg

from common import config
from drydock_api.drivers.ironic.config import IRONIC_OPTS

SERVICE = "drydock"

MAAS_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("url", default="http://127.0.0.1:5240/MAAS",
               help="MAAS base URL (the API is under <url>/api/2.0/). Serves the designs "
                    "whose drydock/Region/v1 provisioner is maas (the default); empty: "
                    "this Drydock has no MAAS."),
    cfg.StrOpt("api_key", default="", secret=True,
               help="MAAS API key 'consumer:token:secret' (OAuth1 PLAINTEXT)."),
    cfg.FloatOpt("timeout", default=30.0, min=0.01, help="MAAS request timeout (s)."),
    cfg.IntOpt("retries", default=3, min=0,
               help="Retries of a MAAS call that failed to connect or got 502/503/504."),
    cfg.FloatOpt("backoff", default=0.5, min=0.0, help="First MAAS retry delay (s), doubled."),
]
WORKER_OPTS: list[cfg.Opt] = [
    cfg.IntOpt("threads", default=1, min=0,
               help="Task workers running inside the API process (0: only separate "
                    "drydock-worker processes run tasks)."),
    cfg.IntOpt("max_tasks", default=8, min=1,
               help="Top-level tasks one worker runs at the same time."),
    cfg.IntOpt("node_pool_size", default=1024, min=1,
               help="Node step attempts one worker runs at the same time (threads, started "
                    "as needed). A node waiting between polls of its BMC or MAAS, or between "
                    "retries, holds no thread; one attempt (a MAAS or BMC call) holds one, "
                    "for as long as the BMC takes to answer (seconds on some BMCs). Where every "
                    "BMC answers at once, a pool of 64 spends about a fifth less CPU on a "
                    "large task."),
    cfg.FloatOpt("lease_seconds", default=30.0, min=0.1,
                 help="Lease on a claimed task; renewed while working, taken over by another "
                      "worker once expired."),
    cfg.FloatOpt("poll_interval", default=1.0, min=0.01,
                 help="How often an idle worker looks for queued tasks (s)."),
    cfg.StrOpt("owner", default="", help="Lease owner name (default host:pid:random)."),
]
OOB_OPTS: list[cfg.Opt] = [
    cfg.FloatOpt("graceful_timeout", default=60.0, min=0.0,
                 help="Seconds a task's soft-then-hard power-off waits for a graceful "
                      "shutdown before forcing power off, when neither the task "
                      "(grace_period) nor the design (drydock/Region/v1 power.grace_period) "
                      "gives one."),
    cfg.FloatOpt("power_timeout", default=300.0, min=0.01,
                 help="Seconds a power-off step may take beyond its grace period before "
                      "the node fails."),
    cfg.FloatOpt("poll_interval", default=2.0, min=0.001,
                 help="Longest wait between power-state and erase polls (s); see [steps] "
                      "first_poll_interval."),
    cfg.FloatOpt("request_timeout", default=30.0, min=0.01,
                 help="Timeout of one Redfish BMC request (s), and of one IPMI call "
                      "(ipmitool's runs, its retransmissions and reruns included)."),
    cfg.StrOpt("bmc_check", default="off", choices=["off", "warn", "refuse"],
               help="Before enrolling a node unknown to MAAS (prepare_nodes' enlist step, "
                    "before its BMC is asked to PXE boot it), hold its Redfish BMC to "
                    "Drydock's interoperability profile (as `drydock node check-bmc` does): "
                    "off; warn (a node message names each failed requirement, enrolment "
                    "goes on); refuse (the node fails naming them, its BMC untouched). A "
                    "BMC that cannot be checked counts as failing. IPMI BMCs are not "
                    "checked."),
]
INVENTORY_OPTS: list[cfg.Opt] = [
    cfg.IntOpt("live_limit", default=100, min=0,
               help="GET /nodes looks each node up live (its machine in MAAS, its power "
                    "state at its BMC) when it lists at most this many nodes; a longer list "
                    "reads the last MAAS listing and the power state MAAS (else Drydock) last "
                    "saw. GET /nodes/{name} is always live."),
    cfg.FloatOpt("listing_max_age", default=10.0, min=0.0,
                 help="Seconds a MAAS machine listing serves long node lists before it is "
                      "refreshed (in the background; the older one is served meanwhile)."),
]
STEP_OPTS: list[cfg.Opt] = [
    cfg.FloatOpt("release_timeout", default=1800.0, min=0.01,
                 help="Seconds a MAAS release (including disk erasing) may take."),
    cfg.FloatOpt("maas_poll_interval", default=5.0, min=0.001,
                 help="Longest wait between MAAS status polls (s); see first_poll_interval."),
    cfg.FloatOpt("first_poll_interval", default=0.1, min=0.001,
                 help="MAAS and BMCs announce no changes: right after a step asks for "
                      "something (or sees a new status) it polls after this many seconds, "
                      "then backs off (poll_backoff) up to maas_poll_interval or [oob] "
                      "poll_interval."),
    cfg.FloatOpt("poll_backoff", default=0.1, min=0.0, max=1.0,
                 help="Once past first_poll_interval, each poll waits this fraction of the "
                      "time the step has seen no change (a geometric backoff: a change is "
                      "noticed at most that fraction of its duration late)."),
    cfg.BoolOpt("expected_waits", default=True,
                help="A wait a step saw end lately (the same step and status) is polled "
                     "around when it ended: not before 80% of the shortest of its last 8 "
                     "durations, then every 5% of it up to 125%, then backing off as usual; "
                     "no poll waits longer than the interval. False: every wait is polled "
                     "from its start."),
    cfg.FloatOpt("step_retry_delay", default=1.0, min=0.0,
                 help="First delay before retrying a step after a transient error (s)."),
    cfg.IntOpt("step_retries", default=3, min=0,
               help="Retries of a step after a transient driver error."),
    cfg.FloatOpt("outage_window", default=120.0, min=0.0,
                 help="Seconds a BMC or MAAS may stay unreachable before the step fails; "
                      "one that comes back within it lets the step go on."),
    cfg.FloatOpt("attempt_timeout", default=0.0, min=0.0,
                 help="Seconds one attempt of a node step (one MAAS or BMC exchange) may run; "
                      "one running longer while its worker is alive is stuck: its node fails "
                      "with StepStuck, counted in berth_drydock_steps_stuck_total, and the step "
                      "is not run again automatically. 0: no limit."),
    cfg.FloatOpt("enlist_timeout", default=1800.0, min=0.01,
                 help="Seconds a node unknown to MAAS may take to enlist after its PXE boot."),
    cfg.FloatOpt("commission_timeout", default=3600.0, min=0.01,
                 help="Seconds commissioning may take."),
    cfg.FloatOpt("deploy_timeout", default=3600.0, min=0.01,
                 help="Seconds a MAAS deployment may take."),
]
REBOOT_OPTS: list[cfg.Opt] = [
    cfg.BoolOpt("enabled", default=True,
                help="Run the reboot-request reconciler in this process (API with "
                     "[worker] threads > 0, and drydock-worker)."),
    cfg.FloatOpt("interval", default=2.0, min=0.005,
                 help="Seconds between reconciler passes."),
    cfg.FloatOpt("lease_seconds", default=30.0, min=0.1,
                 help="Lease on a node taken by the replica acting on its reboot."),
    cfg.FloatOpt("soft_timeout", default=60.0, min=0.0,
                 help="Seconds a soft reboot waits for a graceful shutdown before forcing "
                      "power off (soft-only: before failing), when neither the requests "
                      "(grace_period) nor the design (drydock/Region/v1 power.grace_period) "
                      "give one."),
    cfg.FloatOpt("power_on_retry", default=30.0, min=0.01,
                 help="Seconds after which a power on that did not happen is requested again."),
]

# Drydock's own options of the shared [database] group.
DESIGN_STORE_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("design_key_file", default="drydock-designs.key",
               help="File of the Fernet key encrypting the designs kept in the database at "
                    "task admission (they hold BMC credentials); made (mode 0600) when "
                    "missing. Every Drydock process on the database must share it."),
    cfg.FloatOpt("design_retention", default=86400.0, min=60.0,
                 help="Seconds a kept design stays once no unfinished task uses it and no "
                      "task was admitted with it (deleted when another design is kept)."),
]
SITE_DESIGN_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("source", default="shipyard", choices=["shipyard", "tasks"],
               help="The design used when a request names none (reboot requests, node "
                    "views): shipyard = Shipyard's committed revision (asked at [peers] "
                    "shipyard_url), falling back to the latest task's; tasks = the latest "
                    "task's only."),
    cfg.FloatOpt("ttl", default=30.0, min=0.0,
                 help="Seconds an answer of Shipyard about its committed revision is kept."),
]
BOOTACTION_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("report_url", default="",
               help="Where a deployed node reaches Drydock's boot action API (Airship's "
                    "[bootactions] report_url; the template variable action.report_url): "
                    "the node fetches <it>nodes/<hostname>/units and .../files and posts "
                    "<it><action_id>. Empty: [peers] drydock_url + /api/v1.0/bootactions/."),
]
OPTS: list[tuple[str, list[cfg.Opt]]] = [
    ("maas", MAAS_OPTS), ("worker", WORKER_OPTS), ("oob", OOB_OPTS), ("steps", STEP_OPTS),
    ("reboot", REBOOT_OPTS), ("site_design", SITE_DESIGN_OPTS), ("inventory", INVENTORY_OPTS),
    ("database", DESIGN_STORE_OPTS), ("bootactions", BOOTACTION_OPTS),
    ("ironic", IRONIC_OPTS),
]


def load(config_file: str | None = None) -> cfg.ConfigOpts:
    """Read Drydock's config file (`DRYDOCK_CONFIG_FILE` or etc/drydock/drydock.conf)."""
    return config.load_conf(SERVICE, OPTS, config_file)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """For oslo-config-generator (namespace `drydock`)."""
    return [*config.GROUPS, *OPTS]
