"""redeploy_server while Promenade is killed (SIGKILL) mid-decommission and started again: the
action completes, each destructive effect happens once.

Named to run after test_redeploy_server.py (whose first test needs an untagged revision)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.conftest import create, steps_of
from tests.e2e.test_redeploy_server import COMPUTE, assert_redeployed, effects
from tests.fixtures.services import Berth

pytestmark = pytest.mark.slow


def test_promenade_killed_during_decommission_and_restarted_the_action_completes(
        berth: Berth, successful_revision: int, faults: Any) -> None:
    node = "node04"
    before, counts = berth.sim(f"/nodes/{node}"), effects(berth, node)
    promenade = berth.procs["promenade"]
    faults(node, "kube.kubelet_shutdown")  # the decommission hangs in its last phase
    action = create(berth, "redeploy_server", target_nodes=node)
    berth.wait_drain(action["id"], node)
    time.sleep(1.0)  # into the kubelet shutdown, where it hangs
    killed = promenade.proc.pid
    promenade.proc.kill()  # SIGKILL to the gunicorn process group we started
    time.sleep(1.0)  # Shipyard's call broke; its retries meet a closed port
    promenade.start()  # the same port, configuration and database
    assert promenade.proc.pid != killed
    faults.clear()
    view = berth.wait_action(action["id"], timeout=300)
    assert view["state"] == "complete", view["message"]
    assert_redeployed(berth, node, view, before, counts, COMPUTE)  # each effect once
    step = steps_of(view)[f"decommission.{node}"]
    assert step["state"] == "success" and step["attempts"] >= 2
    assert step["details"]["promenade"]["code"] == 200
