"""What actions read from a design: nodes, etcd membership, DeploymentConfiguration timeouts."""

from __future__ import annotations

import copy
from collections.abc import Iterable

from common.documents import Document, data_defaults, doc_ref, select
from common.jsontypes import JSON, JSONObject, as_int, as_object

DEPLOYMENT_CONFIGURATION = "shipyard/DeploymentConfiguration/v1"
ETCD_CLUSTERS = "promenade/EtcdClusters/v1"
BAREMETAL_NODE = "drydock/BaremetalNode/v1"

# Airship's defaults for the timeouts and poll intervals (seconds), from the document's schema.
DEFAULTS: JSONObject = data_defaults(DEPLOYMENT_CONFIGURATION)


def node_names(docs: Iterable[Document]) -> list[str]:
    return [doc_ref(d)["name"] for d in select(docs, BAREMETAL_NODE)]


def deployment_configuration(docs: list[Document]) -> JSONObject:
    """DeploymentConfiguration data over Airship's defaults (section by section)."""
    merged = copy.deepcopy(DEFAULTS)
    found = select(docs, DEPLOYMENT_CONFIGURATION, "deployment-configuration") or select(
        docs, DEPLOYMENT_CONFIGURATION)
    data: JSON = found[0].get("data") if found else None
    for section, values in as_object(data).items():
        if isinstance(values, dict):
            merged[section] = {**as_object(merged.get(section)), **values}
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


def decommission_timeouts(config: JSON) -> dict[str, int]:
    """Promenade's decommission query parameters from `kubernetes_provisioner` of a
    deployment configuration."""
    kp = as_object(as_object(config)["kubernetes_provisioner"])
    return {
        "drain-node-timeout": as_int(kp["drain_timeout"]),
        "drain-node-grace-period": as_int(kp["drain_grace_period"]),
        "clear-labels-timeout": as_int(kp["clear_labels_timeout"]),
        "remove-etcd-timeout": as_int(kp["remove_etcd_timeout"]),
        "etcd-ready-timeout": as_int(kp["etcd_ready_timeout"]),
    }
