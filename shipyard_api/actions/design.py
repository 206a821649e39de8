"""What actions read from a design: nodes, etcd membership, DeploymentConfiguration timeouts."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from common.documents import Document, data_defaults, doc_ref, select

DEPLOYMENT_CONFIGURATION = "shipyard/DeploymentConfiguration/v1"
ETCD_CLUSTERS = "promenade/EtcdClusters/v1"
BAREMETAL_NODE = "drydock/BaremetalNode/v1"

# Airship's defaults for the timeouts and poll intervals (seconds), from the document's schema.
DEFAULTS: dict[str, dict[str, Any]] = data_defaults(DEPLOYMENT_CONFIGURATION)


def node_names(docs: Iterable[Document]) -> list[str]:
    return [doc_ref(d)["name"] for d in select(docs, BAREMETAL_NODE)]


def deployment_configuration(docs: list[Document]) -> dict[str, dict[str, Any]]:
    """DeploymentConfiguration data over Airship's defaults (section by section)."""
    merged = copy.deepcopy(DEFAULTS)
    found = select(docs, DEPLOYMENT_CONFIGURATION, "deployment-configuration") or select(
        docs, DEPLOYMENT_CONFIGURATION)
    data = found[0].get("data") if found else None
    for section, values in (data or {}).items():
        if isinstance(values, dict):
            merged.setdefault(section, {}).update(values)
        else:
            merged[section] = values
    return merged


def etcd_membership(docs: list[Document]) -> dict[str, list[str]]:
    """Node name -> names of the etcd clusters that have a member on it."""
    out: dict[str, set[str]] = {}
    for doc in select(docs, ETCD_CLUSTERS):
        for cluster in (doc.get("data") or {}).get("clusters") or []:
            for member in cluster.get("members") or []:
                node = member.get("node") or member.get("name")
                if node:
                    out.setdefault(str(node), set()).add(str(cluster.get("name", "etcd")))
    return {node: sorted(names) for node, names in out.items()}


def decommission_timeouts(config: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Promenade's decommission query parameters from `kubernetes_provisioner`."""
    kp = config["kubernetes_provisioner"]
    return {
        "drain-node-timeout": int(kp["drain_timeout"]),
        "drain-node-grace-period": int(kp["drain_grace_period"]),
        "clear-labels-timeout": int(kp["clear_labels_timeout"]),
        "remove-etcd-timeout": int(kp["remove_etcd_timeout"]),
        "etcd-ready-timeout": int(kp["etcd_ready_timeout"]),
    }
