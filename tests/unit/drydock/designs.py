"""Design documents for Drydock tests: nodes, host profiles, passphrases, racks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def meta(schema: str, name: str, encrypted: bool = False) -> dict[str, Any]:
    return {"schema": "metadata/Document/v1", "name": name,
            "layeringDefinition": {"abstract": False, "layer": "site"},
            "storagePolicy": "encrypted" if encrypted else "cleartext"}


def doc(schema: str, name: str, data: Any, encrypted: bool = False) -> dict[str, Any]:
    return {"schema": schema, "metadata": meta(schema, name, encrypted), "data": data}


STORAGE = {"physical_devices": {
    "sda": {"partitions": [
        {"name": "boot", "size": "1g", "filesystem": {"mountpoint": "/boot", "fstype": "ext4"}},
        {"name": "root", "size": "50g", "filesystem": {"mountpoint": "/", "fstype": "ext4"}}]},
    "sdb": {"partitions": [
        {"name": "data", "size": ">400g",
         "filesystem": {"mountpoint": "/var/lib/data", "fstype": "xfs"}}]}},
    "volume_groups": {}}


def profile(name: str = "default", **over: Any) -> dict[str, Any]:
    data = {"oob": {"type": "redfish", "network": "oob", "account": "admin",
                    "credential": {"passphrase": "bmc-password"}},
            "storage": STORAGE, "platform": {"image": "jammy", "kernel": "ga-22.04"},
            "metadata": {"tags": ["default"], "owner_data": {}}}
    data.update(over)
    return doc("drydock/HostProfile/v1", name, data)


def node(name: str, *, address: str = "127.0.0.1", oob: dict[str, Any] | None = None,
         rack: str = "rack01", tags: list[str] | None = None,
         labels: dict[str, str] | None = None, profile_name: str = "default",
         **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "host_profile": profile_name,
        "addressing": [{"network": "oob", "address": address},
                       {"network": "pxe", "address": "10.0.0.1"}],
        "metadata": {"tags": tags or ["compute"], "rack": rack, "owner_data": labels or {},
                     "boot_mac": "52:54:00:00:00:01"},
    }
    data["oob"] = oob or {"type": "redfish", "network": "oob", "account": "admin",
                          "credential": {"passphrase": "bmc-password"}}
    data.update(extra)
    return doc("drydock/BaremetalNode/v1", name, data)


def passphrase(name: str = "bmc-password", secret: str = "s3cret-pw") -> dict[str, Any]:
    return doc("deckhand/Passphrase/v1", name, secret, encrypted=True)


def region(racks: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    return doc("drydock/Region/v1", "site-region",
               {"tag_definitions": [], "repositories": {},
                "racks": {r: {"labels": lab} for r, lab in (racks or {}).items()}})


def write(path: Path, docs: list[dict[str, Any]]) -> str:
    """Write the documents as one multi-document YAML file; return its file:// href."""
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return f"file://{path}"


def simple_site(names: list[str], **node_kwargs: Any) -> list[dict[str, Any]]:
    return [profile(), passphrase(), region(),
            *[node(n, address=f"10.1.0.{i + 10}", **node_kwargs) for i, n in enumerate(names)]]
