"""The design documents a site generates, checked against Berth's JSON Schemas."""

from __future__ import annotations

from pathlib import Path

import yaml

from common.documents import validate_documents
from sitesim.design import SiteEndpoints, design_documents, dump_documents
from sitesim.siteconfig import load_site

ROOT = Path(__file__).resolve().parents[3]
ENDS = SiteEndpoints(redfish_port=8123, ipmi_ports={"node03": 6230, "node06": 6231},
                     system_ids={"node01": "uuid-1"},
                     etcd_endpoints={"kubernetes": ["http://127.0.0.1:2379"]})


def by_name(docs):
    return {(d["schema"], d["metadata"]["name"]): d for d in docs}


def test_demo_design_is_valid_and_complete():
    docs = design_documents(load_site(ROOT / "etc/sites/demo.yaml"), ENDS)
    assert validate_documents(docs) == []
    kinds = [d["schema"] for d in docs]
    assert kinds.count("drydock/BaremetalNode/v1") == 6
    assert kinds.count("deckhand/Passphrase/v1") == 6
    for schema in ("drydock/Region/v1", "drydock/HostProfile/v1", "promenade/EtcdClusters/v1",
                   "shipyard/DeploymentConfiguration/v1", "shipyard/DeploymentStrategy/v1"):
        assert schema in kinds
    for doc in docs:
        assert doc["metadata"]["layeringDefinition"] == {"abstract": False, "layer": "site"}


def test_baremetal_node_carries_oob_labels_and_storage():
    docs = by_name(design_documents(load_site(ROOT / "etc/sites/demo.yaml"), ENDS))
    node01 = docs[("drydock/BaremetalNode/v1", "node01")]["data"]
    assert node01["oob"] == {"type": "redfish", "network": "oob", "account": "admin",
                             "credential": {"passphrase": "node01-oob-password"},
                             "port": 8123, "system_id": "uuid-1"}
    assert {"network": "oob", "address": "127.0.0.1"} in node01["addressing"]
    assert node01["metadata"]["owner_data"]["kubernetes-etcd"] == "enabled"
    assert node01["metadata"]["rack"] == "rack01"
    root = [p for p in node01["storage"]["physical_devices"]["sda"]["partitions"]
            if p["filesystem"]["mountpoint"] == "/"]
    assert root
    node03 = docs[("drydock/BaremetalNode/v1", "node03")]["data"]["oob"]
    assert (node03["type"], node03["port"]) == ("ipmi", 6230)
    secret = docs[("deckhand/Passphrase/v1", "node01-oob-password")]
    assert secret["metadata"]["storagePolicy"] == "encrypted"
    assert secret["data"] == "sitesim-bmc"
    etcd = docs[("promenade/EtcdClusters/v1", "etcd-clusters")]["data"]["clusters"][0]
    assert etcd["client_endpoints"] == ["http://127.0.0.1:2379"]
    assert etcd["thresholds"] == {"minimum_healthy_members": 2}


def test_deployment_configuration_merges_site_overrides_into_airship_defaults():
    docs = by_name(design_documents(load_site(ROOT / "etc/sites/demo.yaml"), ENDS))
    conf = docs[("shipyard/DeploymentConfiguration/v1", "deployment-configuration")]["data"]
    assert conf["physical_provisioner"]["deploy_interval"] == 2
    assert conf["physical_provisioner"]["verify_timeout"] == 60
    assert conf["physical_provisioner"]["deployment_strategy"] == "deployment-strategy"
    assert conf["kubernetes_provisioner"]["drain_timeout"] == 120


def test_strategy_example_carries_spec_001_strategy_and_names():
    spec = load_site(ROOT / "etc/sites/strategy-example.yaml")
    docs = design_documents(spec, ENDS)
    assert validate_documents(docs) == []
    strategy = by_name(docs)[("shipyard/DeploymentStrategy/v1", "deployment-strategy")]["data"]
    assert [g["name"] for g in strategy["groups"]] == [
        "control-nodes", "compute-nodes-1", "compute-nodes-2", "monitoring-nodes", "ntp-node"]
    assert {n.state for n in spec.nodes} == {"ready"}
    assert "ntp01" in {n.name for n in spec.nodes}
    racks = {(n.rack, t) for n in spec.nodes for t in n.tags}
    assert {("rack03", "control"), ("rack01", "compute"), ("rack02", "compute")} <= racks
    assert len([n for n in spec.nodes if "control" in n.tags and n.rack == "rack03"]) >= 3


def test_dump_is_multi_document_yaml():
    docs = design_documents(load_site(ROOT / "etc/sites/demo.yaml"), ENDS)
    assert list(yaml.safe_load_all(dump_documents(docs))) == docs


def test_site_failure_domains_go_to_the_region_and_are_checked_by_its_schema():
    from sitesim.siteconfig import parse_site

    raw = yaml.safe_load((ROOT / "etc/sites/demo.yaml").read_text())
    raw["failure_domains"] = [{"name": "rack", "by": "rack", "budget": 1}]
    docs = by_name(design_documents(parse_site(raw), ENDS))
    region = docs[("drydock/Region/v1", "demo-region")]
    assert region["data"]["failure_domains"] == [{"name": "rack", "by": "rack", "budget": 1}]
    raw["failure_domains"] = [{"name": "rack", "by": "room", "budget": 0}]
    problems = validate_documents(design_documents(parse_site(raw), ENDS))
    assert {m["diagnostic"] for m in problems} == {"failure_domains/0/by",
                                                   "failure_domains/0/budget"}
