"""Promenade's decommission answer carries the drain's report (what was evicted, what was
skipped and why) in its details, and a failed decommission says at the top what failed and
why, not only "Decommission failed"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from promenade_api.decommission import DecommissionParams, decommission
from promenade_api.etcd.design import load_clusters
from promenade_api.kube.model import EvictResult
from tests.unit.promenade.conftest import etcd_doc, kubernetes_cluster
from tests.unit.promenade.test_api import P, status
from tests.unit.promenade.test_failed_nodes import control_plane_deletes_untolerating_pods, dead


def ref_of(design: Any) -> dict[str, str]:
    return {"rel": "design", "href": design(etcd_doc([kubernetes_cluster(2)])),
            "type": "application/x-yaml"}


def test_a_decommission_answer_carries_the_drain_report(api: Any, design: Any, etcd: Any,
                                                         kube: Any, clock: Any) -> None:
    client, h = api
    kube.add_pod("web", "node01")
    kube.add_pod("ds-pod", "node01", namespace="kube-system", owner=("DaemonSet", "ds"))
    clock.at(2, lambda: kube.nodes.__setitem__("node01", replace(kube.nodes["node01"],
                                                                 ready="Unknown")))
    body = status(client.simulate_post(f"{P}/nodes/node01/decommission", json=ref_of(design),
                                       headers=h, query_string="etcd-ready-timeout=30"),
                  200, "Success")
    drain = [m for m in body["details"]["messageList"] if m.get("step") == "drain"]
    [summary] = [m for m in drain if "report" in m]
    assert summary["report"]["evicted"] == ["default/web"]
    assert summary["report"]["skipped"][0]["pod"] == "kube-system/ds-pod"
    assert summary["report"]["skipped"][0]["reason"]
    assert "evicted 1 pod(s)" in summary["message"] and "kube-system/ds-pod" in \
        summary["message"]
    texts = [m["message"] for m in drain]
    assert "Evicted default/web" in texts
    assert any(t.startswith("Skipped kube-system/ds-pod: ") for t in texts)
    assert body["details"]["errorCount"] == 0


def test_a_failed_decommission_says_what_failed_and_why_at_the_top(
        api: Any, design: Any, etcd: Any, kube: Any) -> None:
    client, h = api
    kube.add_pod("db-0", "node01")
    kube.evict_script["db-0"] = [EvictResult("retry", "disruption budget")] * 100
    body = status(client.simulate_post(
        f"{P}/nodes/node01/decommission", json=ref_of(design), headers=h,
        query_string="drain-node-timeout=20&drain-node-grace-period=5"),
        500, "DisassociateStepFailure")
    assert body["message"].startswith("Decommission of node01 failed at step drain: ")
    assert "db-0" in body["message"]


def test_a_fenced_decommission_reports_what_the_taint_removed(svc: Any, kube: Any,
                                                              etcd: Any) -> None:
    kube.add_pod("web", "node02")
    kube.add_pod("agent", "node02", owner=("DaemonSet", "ds"),
                 tolerations=({"operator": "Exists"},))
    dead(kube, "node02")
    etcd.down.add("node02")
    control_plane_deletes_untolerating_pods(kube)
    messages = decommission(svc, "node02", load_clusters([etcd_doc([kubernetes_cluster(2)])]),
                            DecommissionParams(fenced=True))
    [report] = [m for m in messages if m.get("step") == "fence" and "report" in m]
    assert report["report"]["removed"] == ["default/web"]
    assert report["report"]["tolerating"] == ["default/agent"]
    assert "1 pod(s) removed" in report["message"]
