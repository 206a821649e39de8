"""Large site YAMLs for scale runs: `sitesim generate --nodes N --racks R --etcd-members M`."""

from __future__ import annotations

from typing import Any

CONTROL_LABELS = {"kubernetes-etcd": "enabled", "kubernetes-apiserver": "enabled",
                  "ucp-control-plane": "enabled"}
COMPUTE_LABELS = {"openstack-compute-node": "enabled"}
# From this many nodes a generated site keeps Kubernetes' own node heartbeat timings: at 1,000
# nodes the site's short ones (an 8 s lease, 16 s grace) have kwok renew hundreds of leases a
# second, and on 2 cores nodes flapped NotReady while the site came up.
LARGE_SITE = 200
KUBE_DEFAULT_TIMINGS = {"node_lease_duration_s": 40, "node_monitor_period_s": 5,
                        "node_monitor_grace_period_s": 50}


def generate_site(nodes: int, racks: int, etcd_members: int, *, name: str = "scale",
                  ipmi_every: int = 10) -> dict[str, Any]:
    """A site of `nodes` nodes over `racks` racks; the first `etcd_members` are control nodes.

    Every `ipmi_every`-th node has a pyghmi IPMI BMC, the others Redfish. From LARGE_SITE
    nodes on, the Nodes' lease and the node-lifecycle controller's periods are Kubernetes'
    defaults (a dead node turns Unknown after 50 s instead of 16 s).
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
    if nodes >= LARGE_SITE:
        site["timings"]["kube"] = dict(KUBE_DEFAULT_TIMINGS)
    if etcd_members:
        site["etcd"] = {"clusters": [{
            "name": "kubernetes", "members": [n["name"] for n in out[:etcd_members]],
            "minimum_healthy_members": etcd_members // 2 + 1}]}
    return site
