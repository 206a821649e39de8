"""Promenade's configuration: the shared option groups plus its own."""

from __future__ import annotations

from oslo_config import cfg

from common import config
from promenade_api.kube.drain import (
    AGENT_MAINTENANCE_LABELS,
    AGENT_POD_LABELS,
    DAEMONSET_LIKE_KINDS,
)

SERVICE = "promenade"

KUBERNETES_OPTS: list[cfg.Opt] = [
    cfg.StrOpt("kubeconfig", default="",
               help="Path of the kubeconfig file used to reach the Kubernetes API."),
    cfg.StrOpt("api_url", default="",
               help="Kubernetes API URL (overrides the kubeconfig's server; alone: no auth)."),
    cfg.FloatOpt("request_timeout", default=30.0, min=0.1,
                 help="Timeout (s) of one Kubernetes API request."),
    cfg.StrOpt("lease_namespace", default="kube-system",
               help="Namespace of the Leases that serialise etcd member removals."),
    cfg.FloatOpt("poll_interval", default=1.0, min=0.01,
                 help="Interval (s) of polling when a watch is not available."),
]
DRAIN_OPTS: list[cfg.Opt] = [
    cfg.FloatOpt("eviction_retry_delay", default=5.0, min=0.0,
                 help="Longest delay (s) before retrying an eviction refused with 429. "
                      "Pods a PodDisruptionBudget refused are retried as soon as a watch of "
                      "it sees it allow a disruption (one pod per allowed disruption); a 429 "
                      "naming no budget waits this delay."),
    cfg.IntOpt("default_timeout", default=3600, min=1, help="Drain timeout (s) by default."),
    cfg.IntOpt("default_grace_period", default=1800, min=0,
               help="Grace period (s) given to evicted pods by default."),
    cfg.StrOpt("maintenance_label", default="maintenance.berth.io/required=true",
               help="Label KEY=VALUE set on the node before anything is evicted."),
    cfg.ListOpt("eviction_lock_patterns", default=["eviction-lock.berth.io/*"],
                help="Glob patterns of node annotations that block eviction while present."),
    cfg.ListOpt("agent_lock_patterns", default=["l2-lock.maintenance.yaook.cloud/*"],
                help="Glob patterns of node annotations a per-node agent holds while it runs "
                     "(spec 002): they never block an eviction; decommission waits for them "
                     "to go, after clear-labels and before etcd and the kubelet, at most the "
                     "drain timeout."),
    cfg.ListOpt("agent_pod_labels", default=[f"{k}={v}" for k, v in AGENT_POD_LABELS],
                help="KEY=VALUE labels of per-node agent pods: never evicted, left to their "
                     "operators (which remove them once the node is signalled)."),
    cfg.ListOpt("agent_maintenance_labels",
                default=[f"{k}={v}" for k, v in AGENT_MAINTENANCE_LABELS],
                help="KEY=VALUE labels set with the maintenance label (drain and fence): the "
                     "signal per-node agents obey. Empty: none."),
    cfg.FloatOpt("lock_poll_interval", default=5.0, min=0.01,
                 help="Interval (s) between checks of the node's eviction-lock annotations."),
    cfg.ListOpt("daemonset_like_kinds", default=list(DAEMONSET_LIKE_KINDS),
                help="Owner kinds whose pods are treated like DaemonSet pods (never evicted): "
                     "a kind, or api-group/Kind (spec 002). Empty: only kubectl's rule."),
    cfg.IntOpt("parallelism", default=16, min=1, help="Evictions in flight at once."),
    cfg.StrOpt("hold_annotation", default="berth.io/eviction-hold",
               help="Pods with this annotation are evicted after every other pod."),
]
CLEAR_LABELS_OPTS: list[cfg.Opt] = [
    cfg.ListOpt("keep", default=[],
                help="Label keys (glob patterns) kept besides kubernetes.io ones and the "
                     "maintenance labels (maintenance.berth.io/*, maintenance.yaook.cloud/*), "
                     "which are always kept."),
    cfg.IntOpt("default_timeout", default=1800, min=0,
               help="Time (s) allowed for pods to leave after the labels are removed."),
    cfg.FloatOpt("poll_interval", default=2.0, min=0.01,
                 help="Interval (s) between checks of the node's pods."),
]
ETCD_OPTS: list[cfg.Opt] = [
    cfg.FloatOpt("poll_interval", default=30.0, min=0.01,
                 help="Longest interval (s) between etcd checks during decommission (a "
                      "refused removal, its confirmation, the clusters' stability): the "
                      "first comes 0.5 s after the first look, each next one twice as late."),
    cfg.IntOpt("ready_timeout", default=600, min=0,
               help="Default etcd-ready-timeout (s) of decommission."),
    cfg.IntOpt("remove_timeout", default=1800, min=1,
               help="Default timeout (s) of remove-etcd."),
    cfg.IntOpt("lease_duration", default=60, min=1,
               help="Seconds a per-cluster removal Lease is held before others may take it."),
    cfg.FloatOpt("request_timeout", default=5.0, min=0.1,
                 help="Timeout (s) of one etcd request."),
    cfg.IntOpt("join_timeout", default=600, min=1,
               help="Default timeout (s) of join-etcd: the learner must be added, start, catch "
                    "up and be promoted within it, or it is removed again."),
    cfg.IntOpt("learner_max_lag", default=10, min=0,
               help="Raft entries a learner may still be behind the leader's index when it "
                    "is promoted (etcd itself refuses a learner under 90% of the leader's)."),
    cfg.FloatOpt("join_poll_interval", default=1.0, min=0.01,
                 help="Interval (s) between checks of a learner's progress."),
]
KUBELET_OPTS: list[cfg.Opt] = [
    cfg.IntOpt("shutdown_timeout", default=300, min=1,
               help="Time (s) allowed for the kubelet to stop after the label is set."),
    cfg.FloatOpt("poll_interval", default=2.0, min=0.01,
                 help="Interval (s) between checks of the node's Ready condition."),
    cfg.StrOpt("shutdown_pod_label", default="application=kubelet-shutdown",
               help="KEY=VALUE label of the kubelet-shutdown DaemonSet's pods."),
]

FENCE_OPTS: list[cfg.Opt] = [
    cfg.FloatOpt("taint_deadline", default=3600.0, min=0.0,
                 help="Seconds after which the out-of-service taint a fence applied is "
                      "removed even if the node has not come back Ready (it is removed as "
                      "soon as the node is Ready again). Taints Berth did not apply (no "
                      "berth.io/out-of-service-taint annotation) are never touched."),
    cfg.FloatOpt("sweep_interval", default=60.0, min=0.0,
                 help="Seconds between sweeps of every node for Berth's out-of-service "
                      "taints that are due (0: no sweep; node status reads still remove "
                      "them)."),
]
DECOMMISSION_OPTS: list[cfg.Opt] = [
    cfg.FloatOpt("run_lease", default=30.0, min=1.0,
                 help="Seconds a decommission run stays held by the Promenade process "
                      "running it without a heartbeat (renewed every third of it): after a "
                      "crash or restart, another Promenade process (or a replay of the "
                      "request) takes the run over and resumes it once this has passed."),
    cfg.FloatOpt("resume_interval", default=10.0, min=0.0,
                 help="Seconds between looks, in every Promenade process, for decommission "
                      "runs whose process stopped (their run_lease lapsed): each found is "
                      "taken over and run on at its first unfinished phase, as its request "
                      "asked, and a replay of the request joins it. 0: only a replay takes a "
                      "run over."),
    cfg.IntOpt("max_resumes", default=3, min=0,
               help="How many times a decommission run is taken over with nobody asking "
                    "(see resume_interval) before it is failed with RunNotResumable instead: "
                    "a phase that ends its Promenade process each time is not run forever. "
                    "A replay of the request may still take the run over."),
    cfg.FloatOpt("attempt_timeout", default=0.0, min=0.0,
                 help="Seconds one attempt of a decommission phase (drain, clear-labels, "
                      "remove-etcd, ...) may run; one running longer while its Promenade "
                      "process lives and renews the run is stuck: the decommission fails "
                      "with StepStuck, counted in berth_promenade_steps_stuck_total, and the "
                      "phase is not run again automatically. Choose it above the phase's own "
                      "timeout (a drain waits up to drain-node-timeout). 0: no limit."),
]
OPTS: list[tuple[str, list[cfg.Opt]]] = [
    ("kubernetes", KUBERNETES_OPTS),
    ("drain", DRAIN_OPTS),
    ("clear_labels", CLEAR_LABELS_OPTS),
    ("etcd", ETCD_OPTS),
    ("kubelet", KUBELET_OPTS),
    ("fence", FENCE_OPTS),
    ("decommission", DECOMMISSION_OPTS),
]


def load(config_file: str | None = None) -> cfg.ConfigOpts:
    """Read Promenade's config file (`PROMENADE_CONFIG_FILE` or etc/promenade/promenade.conf)."""
    return config.load_conf(SERVICE, OPTS, config_file)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """For oslo-config-generator (namespace `promenade`)."""
    return [*config.GROUPS, *OPTS]
