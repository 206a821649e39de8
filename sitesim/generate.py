"""Large site YAMLs for scale runs: `sitesim generate --nodes N --racks R --etcd-members M`."""

from __future__ import annotations

from typing import Any

CONTROL_LABELS = {"kubernetes-etcd": "enabled", "kubernetes-apiserver": "enabled",
                  "ucp-control-plane": "enabled"}
COMPUTE_LABELS = {"openstack-compute-node": "enabled"}


def generate_site(nodes: int, racks: int, etcd_members: int, *, name: str = "scale",
                  ipmi_every: int = 10) -> dict[str, Any]:
    """A site of `nodes` nodes over `racks` racks; the first `etcd_members` are control nodes.

    Every `ipmi_every`-th node has a pyghmi IPMI BMC, the others Redfish.
    """
    if nodes < 1 or racks < 1 or not 0 <= etcd_members <= nodes:
        raise ValueError("need nodes >= 1, racks >= 1 and 0 <= etcd-members <= nodes")
    width = max(2, len(str(nodes)))
    out = []
    for index in range(nodes):
        control = index < max(etcd_members, 1)
        bmc: dict[str, Any] = {"type": "redfish"}
        if ipmi_every and index % ipmi_every == ipmi_every - 1:
            bmc = {"type": "ipmi", "impl": "pyghmi"}
        out.append({
            "name": f"node{index + 1:0{width}d}",
            "rack": f"rack{index % racks + 1:02d}",
            "tags": ["control" if control else "compute"],
            "labels": dict(CONTROL_LABELS if control else COMPUTE_LABELS),
            "bmc": bmc,
        })
    site: dict[str, Any] = {
        "site": name,
        "defaults": {"state": "deployed", "bmc": {"user": "admin", "password": "sitesim-bmc"}},
        "nodes": out,
        "workloads": True,
        "timings": {"commission": 1.0, "deploy": 2.0, "release": 0.5, "erase": 1.0,
                    "power": 0.5, "graceful_shutdown": 1.0, "kube_ready": 1.0,
                    "kube_not_ready": 1.0},
    }
    if etcd_members:
        site["etcd"] = {"clusters": [{
            "name": "kubernetes", "members": [n["name"] for n in out[:etcd_members]],
            "minimum_healthy_members": etcd_members // 2 + 1}]}
    return site
