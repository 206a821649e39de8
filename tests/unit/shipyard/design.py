"""Small valid designs for Shipyard's unit tests."""

from __future__ import annotations

from typing import Any


def document(schema: str, name: str, data: Any) -> dict[str, Any]:
    return {"schema": schema,
            "metadata": {"schema": "metadata/Document/v1", "name": name,
                         "layeringDefinition": {"abstract": False, "layer": "site"},
                         "storagePolicy": "cleartext"},
            "data": data}


def node(name: str, address: str) -> dict[str, Any]:
    return document("drydock/BaremetalNode/v1", name, {
        "host_profile": "default",
        "addressing": [{"network": "oob", "address": address}],
        "oob": {"type": "redfish", "network": "oob", "account": "admin", "credential": "pw"},
        "metadata": {"tags": [], "rack": "rack1", "owner_data": {"role": "compute"},
                     "boot_mac": "52:54:00:00:00:01"},
    })


def design(nodes: tuple[str, ...] = ("node01", "node02", "node03"),
           etcd: tuple[str, ...] = ("node01", "node02"),
           config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Nodes, one etcd cluster over `etcd`, and a DeploymentConfiguration with tiny intervals."""
    pp = {"deploy_interval": 1, "deploy_timeout": 60, "destroy_interval": 1,
          "destroy_timeout": 60, "prepare_node_interval": 1, "prepare_node_timeout": 60,
          "relabel_nodes_interval": 1, "relabel_nodes_timeout": 60}
    data = {"physical_provisioner": pp,
            "kubernetes": {"node_status_interval": 1, "node_status_timeout": 60},
            "kubernetes_provisioner": {"drain_timeout": 30, "drain_grace_period": 10,
                                       "clear_labels_timeout": 10, "remove_etcd_timeout": 10,
                                       "etcd_ready_timeout": 10}}
    for section, values in (config or {}).items():
        data.setdefault(section, {}).update(values)
    members = [{"name": n, "node": n} for n in etcd]
    return [
        *(node(n, f"10.0.0.{i + 1}") for i, n in enumerate(nodes)),
        document("promenade/EtcdClusters/v1", "etcd-clusters", {"clusters": [
            {"name": "kubernetes", "client_endpoints": ["http://127.0.0.1:2379"],
             "members": members, "thresholds": {"minimum_healthy_members": 1}}]}),
        document("shipyard/DeploymentConfiguration/v1", "deployment-configuration", data),
    ]
