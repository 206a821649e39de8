"""The web view names what blocks: each blocker's reason and the object behind it, read from
the sentences Promenade, Drydock and Shipyard write."""

from __future__ import annotations

from promenade_api.kube.progress import lock_reason, refusal_reason
from shipyard_api.ui.blockers import classify, findings, grouped


def test_budgets_locks_and_etcd_clusters_are_named() -> None:
    pdb = classify("PodDisruptionBudget demo/web allows 0 disruptions now (needs 2 healthy, "
                   "has 2); it covers demo/web-1", "node06")
    assert (pdb.reason, pdb.obj) == ("pdb", "PodDisruptionBudget demo/web")
    drain = classify(refusal_reason("The disruption budget web needs 2 healthy pods and has 2"))
    assert (drain.reason, drain.obj) == ("pdb", "PodDisruptionBudget web")
    lock = classify(lock_reason("eviction-lock.berth.io/db", "backup-job"), "node05")
    assert (lock.reason, lock.obj) == ("lock",
                                       "lock eviction-lock.berth.io/db (held by backup-job)")
    held = classify("Eviction lock(s) eviction-lock.berth.io/a held on node05: nothing is "
                    "evicted until they are released", "node05")
    assert (held.reason, held.obj) == ("lock", "lock eviction-lock.berth.io/a")
    etcd = classify("etcd cluster kubernetes: removing node02 is refused: 1 of 3 healthy")
    assert (etcd.reason, etcd.obj) == ("quorum", "etcd cluster kubernetes")


def test_bmc_task_wipe_and_unknown_sentences() -> None:
    bmc = classify("node03: its BMC 127.0.0.1:6230 did not report a power state (timeout)",
                   "node03")
    assert (bmc.reason, bmc.obj) == ("bmc", "BMC 127.0.0.1:6230")
    path = classify("node03: connection refused; redeploy_server needs it to power off and "
                    "wipe the node (Kubernetes: Ready); nothing was changed", "node03",
                    bmc="ipmi 127.0.0.1:6231")
    assert (path.reason, path.obj) == ("bmc", "BMC ipmi 127.0.0.1:6231")
    assert classify("node04 is held by running task 01JTASK").obj == "task 01JTASK"
    wipe = classify("Node node06: preserve_local_storage must erase the OS disk sda alone",
                    "node06")
    assert (wipe.reason, wipe.obj) == ("wipe", "disks of node06")
    other = classify("something new", "node01")
    assert (other.reason, other.obj) == ("other", "node node01")


def test_findings_are_grouped_in_a_fixed_order() -> None:
    items = findings([{"node": "n1", "source": "promenade", "message": "etcd cluster e: no"},
                      "odd", {"node": "n2", "source": "promenade",
                              "message": "PodDisruptionBudget a/b allows 0 disruptions"},
                      {"node": "n1", "source": "promenade",
                       "message": "PodDisruptionBudget a/c allows 0 disruptions"}])
    assert [(k, [f.obj for f in v]) for k, v in grouped(items)] == [
        ("pdb", ["PodDisruptionBudget a/b", "PodDisruptionBudget a/c"]),
        ("quorum", ["etcd cluster e"]), ("other", [""])]
