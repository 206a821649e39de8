"""Berth's out-of-service taints on the real control plane: removed once the fenced node is
Ready again, or at their deadline; a taint applied by hand is left alone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promenade_api.kube.client import KubeClient, load_api_client
from promenade_api.kube.fence import OUT_OF_SERVICE, Fencer
from promenade_api.kube.taints import TAINT_ANNOTATION
from tests.support.kube import Admin, wait_for

from .conftest import Promenade, promenade_process

pytestmark = pytest.mark.slow


@pytest.fixture
def sweeping(promenade: Promenade, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Promenade]:
    """A second promenade-api that sweeps every half second, for one test only: a sweep left
    running would clean what a later test leaves for a node status read to clean."""
    work: Path = tmp_path_factory.mktemp("promenade-sweep")
    yield from promenade_process(promenade.who, work, fence={"sweep_interval": 0.5})


def kube_of(promenade: Promenade) -> KubeClient:
    return KubeClient(load_api_client(str(promenade.kubeconfig)), request_timeout=10,
                      poll_interval=0.1)


def out_of_service(admin: Admin, node: str) -> bool:
    return any(t["key"] == OUT_OF_SERVICE["key"]
               for t in admin.node(node).get("spec", {}).get("taints") or [])


def fence(promenade: Promenade, node: str, deadline: float) -> None:
    """What Promenade's fence does to a powered-off node (no pods here to wait for)."""
    Fencer(kube_of(promenade), clock=time.monotonic, sleep=time.sleep, poll_interval=0.1,
           wall=time.time, taint_deadline=deadline).run(node, 30)


def down(admin: Admin, *nodes: str) -> None:
    for node in nodes:
        admin.ready_node(node)
        admin.kubelet(node, False)
    for node in nodes:
        wait_for(f"{node} not Ready", lambda n=node: admin.ready(n) != "True")


def status(promenade: Promenade, node: str) -> dict[str, Any]:
    import requests
    reply = requests.get(f"{promenade.proc.url}/api/v1.0/nodes/{node}", timeout=30,
                         headers={"X-Auth-Token": promenade.token})
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()
    return result


def test_berths_taints_go_when_the_node_is_ready_or_at_their_deadline(
        admin: Admin, promenade: Promenade, sweeping: Promenade) -> None:
    down(admin, "pk-oos-ready", "pk-oos-deadline")
    fence(promenade, "pk-oos-ready", deadline=3600)
    fence(promenade, "pk-oos-deadline", deadline=4)
    annotation = admin.node("pk-oos-ready")["metadata"]["annotations"][TAINT_ANNOTATION]
    assert '"by": "promenade fence"' in annotation and '"deadline"' in annotation
    time.sleep(1.5)  # sweeps pass: neither node is Ready, no deadline has passed
    assert out_of_service(admin, "pk-oos-ready") and out_of_service(admin, "pk-oos-deadline")
    assert any(t["key"] == OUT_OF_SERVICE["key"]
               for t in status(promenade, "pk-oos-ready")["taints"])

    admin.kubelet("pk-oos-ready", True)  # the node is back
    wait_for("pk-oos-ready Ready", lambda: admin.ready("pk-oos-ready") == "True")
    wait_for("the taint gone from pk-oos-ready",
             lambda: not out_of_service(admin, "pk-oos-ready"), timeout=30)
    assert TAINT_ANNOTATION not in admin.node("pk-oos-ready")["metadata"].get(
        "annotations", {})

    wait_for("the taint of pk-oos-deadline gone at its deadline",
             lambda: not out_of_service(admin, "pk-oos-deadline"), timeout=30)
    assert admin.ready("pk-oos-deadline") != "True"  # gone by the deadline, not by health


def test_a_ready_node_read_through_promenade_loses_a_leftover_berth_taint(
        admin: Admin, promenade: Promenade) -> None:
    """No sweep runs (the package's promenade-api has none): the node status read is what
    cleans it."""
    admin.ready_node("pk-oos-left")
    fence(promenade, "pk-oos-left", deadline=3600)  # left behind on a healthy node
    assert out_of_service(admin, "pk-oos-left")
    view = status(promenade, "pk-oos-left")
    assert not any(t["key"] == OUT_OF_SERVICE["key"] for t in view["taints"])
    assert not out_of_service(admin, "pk-oos-left")


def test_an_out_of_service_taint_applied_by_hand_is_left_alone(
        admin: Admin, promenade: Promenade, sweeping: Promenade) -> None:
    admin.ready_node("pk-oos-hand")
    reply = admin.call("PATCH", "/api/v1/nodes/pk-oos-hand",
                       {"spec": {"taints": [dict(OUT_OF_SERVICE)]}},
                       content_type="application/merge-patch+json")
    assert reply.status_code == 200, reply.text
    status(promenade, "pk-oos-hand")
    time.sleep(2)  # several sweeps of a Ready node
    assert out_of_service(admin, "pk-oos-hand")
