"""The Deckhand-style design documents describing a running simulated site."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from common.documents import data_defaults
from sitesim.siteconfig import NodeSpec, SiteSpec

PLATFORM = {"image": "jammy", "kernel": "ga-22.04"}



@dataclass(frozen=True)
class SiteEndpoints:
    """Where the running site's BMCs and etcd clusters listen."""

    redfish_port: int = 8000
    ipmi_ports: Mapping[str, int] = field(default_factory=dict)
    system_ids: Mapping[str, str] = field(default_factory=dict)
    etcd_endpoints: Mapping[str, list[str]] = field(default_factory=dict)
    etcd_peer_urls: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def document(schema: str, name: str, data: Any, *, encrypted: bool = False) -> dict[str, Any]:
    return {
        "schema": schema,
        "metadata": {"schema": "metadata/Document/v1", "name": name,
                     "layeringDefinition": {"abstract": False, "layer": "site"},
                     "storagePolicy": "encrypted" if encrypted else "cleartext"},
        "data": data,
    }


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# shipyard/DeploymentConfiguration/v1: Shipyard's own (Airship's) defaults, with the strategy
# document named and no join wait (the site YAML may override any of them).
DEPLOYMENT_CONFIGURATION_DEFAULTS: dict[str, Any] = deep_merge(
        data_defaults("shipyard/DeploymentConfiguration/v1"), {
    "physical_provisioner": {"deployment_strategy": "deployment-strategy", "join_wait": 0},
    "armada": {"manifest": "full-site"},
})


def storage_of(node: NodeSpec) -> dict[str, Any]:
    return {"physical_devices": {d.name: {"partitions": [copy.deepcopy(p) for p in d.partitions]}
                                 for d in node.disks},
            "volume_groups": {}}


def profile_name(node: NodeSpec) -> str:
    return f"{node.profile}-profile"


def baremetal_node(node: NodeSpec, ends: SiteEndpoints) -> dict[str, Any]:
    oob: dict[str, Any] = {"type": node.bmc.type, "network": "oob", "account": node.bmc.user,
                           "credential": {"passphrase": f"{node.name}-oob-password"}}
    if node.bmc.type == "redfish":
        oob.update(port=ends.redfish_port, system_id=ends.system_ids.get(node.name, node.name))
    else:
        oob["port"] = ends.ipmi_ports.get(node.name, 623)
    return document("drydock/BaremetalNode/v1", node.name, {
        "host_profile": profile_name(node),
        "addressing": [{"network": "oob", "address": "127.0.0.1"},
                       {"network": "pxe", "address": node.address}],
        "oob": oob,
        "metadata": {"tags": list(node.tags), "rack": node.rack,
                     "owner_data": dict(node.labels), "boot_mac": node.mac},
        "storage": storage_of(node),
    })


def default_strategy(spec: SiteSpec) -> dict[str, Any]:
    """One group per tag: the first tag's group is critical, the others depend on it."""
    tags: list[str] = []
    for node in spec.nodes:
        for tag in node.tags:
            if tag not in tags:
                tags.append(tag)
    groups = []
    for index, tag in enumerate(tags or ["all"]):
        groups.append({
            "name": f"{tag}-nodes", "critical": index == 0,
            "depends_on": [] if index == 0 else [f"{tags[0]}-nodes"],
            "selectors": [{"node_names": [], "node_labels": [],
                           "node_tags": [tag] if tags else [], "rack_names": []}],
            "success_criteria": {"percent_successful_nodes": 100 if index == 0 else 50},
        })
    return {"groups": groups}


PROMJOIN_UNIT = """\
[Unit]
Description=Join {{ node.hostname }} to Kubernetes with Promenade's join script
After=network-online.target

[Service]
Type=oneshot
EnvironmentFile=/etc/drydock/bootaction/promjoin.env
ExecStart=/opt/promjoin.sh
ExecStartPost=/bin/sh -c 'curl -sf -X POST -H "X-Bootaction-Key: $BOOTACTION_KEY" \\
  -H "Content-Type: application/json" \\
  -d "{\\"status\\": \\"success\\", \\"details\\": []}" "$BOOTACTION_REPORT_URL"'

[Install]
WantedBy=multi-user.target
"""
PROMJOIN_ENV = """\
BOOTACTION_ID={{ action.action_id }}
BOOTACTION_KEY={{ action.action_key }}
BOOTACTION_REPORT_URL={{ action.report_url }}{{ action.action_id }}
"""
# Drydock fetches the node's script from Promenade (the host part names the service).
PROMJOIN_LOCATION = (
    "promenade+http://promenade-api/api/v1.0/join-scripts?"
    "design_ref={{ action.design_ref | urlencode }}&hostname={{ node.hostname }}"
    "&ip={{ node.network.default.ip }}"
    "{% for k, v in node.labels.items() %}&labels.dynamic={{ (k ~ '=' ~ v) | urlencode }}"
    "{% endfor %}")


def promjoin_boot_action() -> dict[str, Any]:
    """Airship's promjoin boot action: a unit that runs Promenade's join script for the node
    on its first boot and reports the result to Drydock."""
    return document("drydock/BootAction/v1", "promjoin", {
        "signaling": True,
        "assets": [
            {"path": "/lib/systemd/system/promjoin.service", "type": "unit",
             "permissions": "444", "data": PROMJOIN_UNIT, "data_pipeline": ["template"]},
            {"path": "/etc/drydock/bootaction/promjoin.env", "type": "file",
             "permissions": "400", "data": PROMJOIN_ENV, "data_pipeline": ["template"]},
            {"path": "/opt/promjoin.sh", "type": "file", "permissions": "555",
             "location": PROMJOIN_LOCATION, "location_pipeline": ["template"],
             "data_pipeline": ["utf8_decode"]},
        ]})


def design_documents(spec: SiteSpec, ends: SiteEndpoints) -> list[dict[str, Any]]:
    region: dict[str, Any] = {"tag_definitions": [], "repositories": {},
                              "authorized_keys": [], "site": spec.name}
    if spec.failure_domains:
        region["failure_domains"] = [dict(d) for d in spec.failure_domains]
    docs = [document("drydock/Region/v1", spec.region, region)]
    profiles: dict[str, NodeSpec] = {}
    for node in spec.nodes:
        profiles.setdefault(profile_name(node), node)
    for name, node in profiles.items():
        docs.append(document("drydock/HostProfile/v1", name, {
            "oob": {"type": node.bmc.type, "network": "oob", "account": node.bmc.user},
            "storage": storage_of(node), "platform": dict(PLATFORM),
            "metadata": {"owner_data": {}}}))
    docs += [baremetal_node(node, ends) for node in spec.nodes]
    docs.append(promjoin_boot_action())
    docs += [document("deckhand/Passphrase/v1", f"{n.name}-oob-password", n.bmc.password,
                      encrypted=True) for n in spec.nodes]
    docs.append(document("promenade/EtcdClusters/v1", "etcd-clusters", {"clusters": [
        {"name": c.name, "client_endpoints": list(ends.etcd_endpoints.get(c.name, [])),
         "members": [{"name": m, "node": m,
                      **({"peer_url": ends.etcd_peer_urls[c.name][m]}
                         if m in ends.etcd_peer_urls.get(c.name, {}) else {})}
                     for m in c.members],
         "thresholds": {"minimum_healthy_members": c.minimum_healthy_members}}
        for c in spec.etcd]}))
    docs.append(document("shipyard/DeploymentConfiguration/v1", "deployment-configuration",
                         deep_merge(DEPLOYMENT_CONFIGURATION_DEFAULTS, spec.deployment)))
    docs.append(document("shipyard/DeploymentStrategy/v1", "deployment-strategy",
                         copy.deepcopy(dict(spec.strategy)) if spec.strategy
                         else default_strategy(spec)))
    return docs


def dump_documents(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)
