"""Helpers of the deployment tests: Berth's paths and lookups in rendered objects."""

from __future__ import annotations

import base64
import configparser
from pathlib import Path
from typing import Any

from drydock_api import config as drydock_config
from promenade_api import config as promenade_config
from shipyard_api import config as shipyard_config

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("embedded", "postgres")
NAMESPACE = "berth"
API_PORTS = {"shipyard-api": 9000, "promenade-api": 9001, "drydock-api": 9002}
WORKERS = ("shipyard-worker", "drydock-worker")
CONFIG_OF = {"shipyard": shipyard_config, "promenade": promenade_config,
             "drydock": drydock_config}
Obj = dict[str, Any]


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    """The object of that kind named `name` (or generated from `name` with a hash suffix)."""
    hits = [o for o in objects if o["kind"] == kind and (
        o["metadata"]["name"] == name or o["metadata"]["name"].rsplit("-", 1)[0] == name)]
    assert len(hits) == 1, f"{kind}/{name}: {len(hits)} objects"
    return hits[0]


def workloads(objects: list[Obj], kind: str = "Deployment") -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def container(deployment: Obj) -> Obj:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def env_of(cont: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in cont.get("env") or []}


def option(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def mounted_files(objects: list[Obj], workload: Obj) -> dict[str, str]:
    """Path -> content of every file the pod's ConfigMap and Secret volumes put there."""
    pod = workload["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    files: dict[str, str] = {}
    for mount in container(workload).get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            source, data = volume["configMap"], find(objects, "ConfigMap",
                                                     volume["configMap"]["name"])["data"]
        elif "secret" in volume:
            source = volume["secret"]
            raw = find(objects, "Secret", source["secretName"])["data"]
            data = {k: base64.b64decode(v).decode() for k, v in raw.items()}
        else:
            continue
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            files[f"{mount['mountPath']}/{item['path']}"] = data[item["key"]]
    return files


def service_of(cont: Obj) -> str:
    return cont["command"][0].split("-")[0]


def read_conf(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser
