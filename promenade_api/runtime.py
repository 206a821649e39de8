"""Wires Promenade from config: the Kubernetes and etcd ports behind the Promenade facade."""

from __future__ import annotations

import os
from dataclasses import dataclass

from oslo_config import cfg

from common.app import HealthCheck
from common.designref import DesignResolver
from common.health import callable_check
from common.status import health_message
from promenade_api.etcd.client import Etcd3Port
from promenade_api.kube.client import KubeClient, load_api_client
from promenade_api.metrics import PromenadeMetrics
from promenade_api.service import Promenade, settings_from_conf


@dataclass
class Runtime:
    promenade: Promenade
    health_checks: list[HealthCheck]


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


def build_runtime(conf: cfg.ConfigOpts, metrics: PromenadeMetrics) -> Runtime:
    kube = build_kube(conf)
    resolver = DesignResolver.from_conf(conf)
    svc = Promenade(kube, metrics.timed_etcd(Etcd3Port(conf.etcd.request_timeout)), resolver,
                    settings_from_conf(conf), observe=metrics.operation)
    return Runtime(svc, [kubernetes_check(kube)])
