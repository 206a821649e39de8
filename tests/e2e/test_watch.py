"""`shipyard describe action/ID -o json --watch` on the simulated site: one JSON object per
change, among them the drain's pods left held by an eviction lock, until the action ends."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from promenade_api.kube.client import KubeClient, load_api_client
from tests.e2e.conftest import create, web_node
from tests.fixtures.services import Berth
from tests.support.services import BIN

pytestmark = pytest.mark.slow
LOCK = "eviction-lock.berth.io/e2e-watch"


def test_watch_emits_a_json_object_per_change_with_the_drain_progress(
        berth: Berth, successful_revision: int) -> None:
    # a node with a pod to drain now: other modules on this worker's site may have redeployed
    # any node before (a redeployed node comes back without the bare pods it had)
    node = web_node(berth)
    kube = KubeClient(load_api_client(str(berth.site.kubeconfig)), request_timeout=10,
                      poll_interval=0.1)
    kube.patch_node(node, annotations={LOCK: "watch-holder"})
    action = create(berth, "redeploy_server", target_nodes=[node])
    env = {**os.environ, "SHIPYARD_URL": berth.shipyard,
           "SHIPYARD_TOKEN": berth.tokens["reader"]}
    proc = subprocess.Popen(
        [str(BIN / "shipyard"), "describe", f"action/{action['id']}", "-o", "json", "--watch",
         "--poll", "0.3", "--timeout", "300"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    views = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            views.append(json.loads(line))
            step = {s["id"]: s for s in views[-1]["steps"]}[f"decommission.{node}"]
            drain = (step.get("details") or {}).get("drain") or {}
            reasons = [g["reason"] for g in drain.get("groups") or []]
            if f"eviction lock {LOCK} held by watch-holder" in reasons:
                assert step["state"] == "running" and drain["pods_left"] >= 1
                break
            assert time.monotonic() < deadline, f"the lock never showed; last: {step}"
    finally:
        kube.patch_node(node, annotations={LOCK: None})
    out, err = proc.communicate(timeout=300)
    views += [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 0, err
    assert views[-1]["state"] == "complete", views[-1].get("message")
    assert all(a != b for a, b in zip(views, views[1:], strict=False))  # only changes
    # Changes that land between two answers come as one view (a snapshot, not an event log);
    # still, the action is seen before, during and after the held drain.
    assert views[0]["state"] != "complete" and len(views) >= 3
