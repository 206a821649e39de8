"""remove-etcd: refusals change nothing, leadership moves first, removals are serialised."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from common.designref import DesignResolver, RefPolicy
from promenade_api.errors import EtcdNotAccessible, RemoveEtcdError
from promenade_api.etcd.design import load_clusters
from promenade_api.kube.lease import LeaseLock
from promenade_api.kube.model import Lease
from promenade_api.service import Promenade

from .conftest import FAST, etcd_doc, kubernetes_cluster


def clusters(threshold=2):
    return load_clusters([etcd_doc([kubernetes_cluster(threshold)])])


def test_removing_one_member_of_three(svc, etcd):
    messages = svc.remove_etcd("node01", clusters(), 60)
    assert etcd.removed == ["node01"] and "Removed member node01" in messages[0]["message"]


def test_the_leader_hands_over_leadership_before_it_is_removed(svc, etcd):
    svc.remove_etcd("node02", clusters(), 60)
    assert etcd.moves == [("node02", "node01")] and etcd.removed == ["node02"]


def test_a_second_removal_below_the_threshold_is_refused_and_changes_nothing(svc, etcd):
    svc.remove_etcd("node01", clusters(), 60)
    with pytest.raises(RemoveEtcdError) as err:
        svc.remove_etcd("node02", clusters(), 60)
    assert "minimum_healthy_members of 2" in err.value.messages[0]["message"]
    assert etcd.removed == ["node01"] and etcd.moves == []


def test_removing_a_healthy_member_while_one_is_down_is_refused(svc, etcd):
    etcd.down.add("node03")
    with pytest.raises(RemoveEtcdError):
        svc.remove_etcd("node01", clusters(threshold=0), 60)
    assert etcd.removed == []


def test_a_node_without_members_gets_a_message(svc, etcd):
    messages = svc.remove_etcd("node04", clusters(), 60)
    assert messages[0]["message"] == "node04 has no etcd members" and etcd.removed == []


def test_an_unknown_node_is_not_found(svc):
    from common.errors import NotFound
    with pytest.raises(NotFound):
        svc.remove_etcd("ghost", clusters(), 60)


def test_an_inaccessible_cluster_refuses_removal(svc, etcd):
    etcd.unreachable_clusters.add("kubernetes")
    with pytest.raises(RemoveEtcdError):
        svc.remove_etcd("node01", clusters(), 60)


def test_etcd_refusing_the_removal_is_a_remove_etcd_error(svc, etcd):
    etcd.refuse_removal = True
    with pytest.raises(RemoveEtcdError) as err:
        svc.remove_etcd("node01", clusters(), 60)
    assert "unhealthy cluster" in err.value.messages[0]["message"]


def test_removal_waits_for_the_cluster_lease_held_by_someone_else(svc, kube, clock, etcd):
    kube.create_lease("kube-system", Lease("berth-etcd-kubernetes", "other", clock(), 60))
    with pytest.raises(RemoveEtcdError) as err:
        svc.remove_etcd("node01", clusters(), 10)
    assert "lease" in err.value.message and etcd.removed == []


def test_an_expired_lease_is_taken_over(svc, kube, clock, etcd):
    kube.create_lease("kube-system", Lease("berth-etcd-kubernetes", "dead", clock() - 120, 60))
    svc.remove_etcd("node01", clusters(), 10)
    assert etcd.removed == ["node01"]
    assert kube.leases[("kube-system", "berth-etcd-kubernetes")].holder is None


def test_two_concurrent_removals_remove_exactly_one_member(svc, etcd):
    results: list[str] = []

    def run(node):
        try:
            svc.remove_etcd(node, clusters(), 60)
            results.append("ok")
        except RemoveEtcdError:
            results.append("refused")

    threads = [threading.Thread(target=run, args=(n,)) for n in ("node01", "node03")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["ok", "refused"] and len(etcd.removed) == 1


def test_lease_lock_excludes_a_second_holder(kube, clock):
    a = LeaseLock(kube, "ns", "l", duration=60, wall=clock, sleep=clock.sleep, holder="a")
    b = LeaseLock(kube, "ns", "l", duration=60, wall=clock, sleep=clock.sleep, holder="b")
    assert a.try_acquire() and not b.try_acquire()
    a.release()
    assert b.try_acquire()


def test_health_messages_per_member(svc, etcd):
    etcd.down.add("node03")
    etcd.unhealthy.add("node02")
    messages = svc.etcd_health(clusters())
    assert [(m["name"], m["message"], m["error"]) for m in messages] == [
        ("kubernetes/node01", "Healthy", False), ("kubernetes/node02", "Unhealthy", False),
        ("kubernetes/node03", "Unable to access Etcd", True)]


def test_health_of_an_unreachable_site_is_etcd_not_accessible(svc, etcd):
    etcd.unreachable_clusters.add("kubernetes")
    with pytest.raises(EtcdNotAccessible) as err:
        svc.etcd_health(clusters())
    assert len(err.value.messages) == 3


def test_wait_stable_polls_until_healthy_enough(svc, etcd, clock):
    etcd.down.add("node03")
    clock.at(5, lambda: etcd.down.discard("node03"))
    svc.remover().wait_stable("node01", clusters(), 60)
    assert clock.slept


def test_wait_stable_times_out(svc, etcd):
    etcd.down.add("node03")
    with pytest.raises(RemoveEtcdError):
        svc.remover().wait_stable("node01", clusters(), 5)


def test_a_transient_etcd_refusal_is_retried_until_it_passes(svc, etcd, clock):
    etcd.refuse_removal = True
    clock.at(3, lambda: setattr(etcd, "refuse_removal", False))
    svc.remove_etcd("node01", clusters(), 60)
    assert etcd.removed == ["node01"]


@pytest.fixture
def slow(kube, etcd, clock, tmp_path):
    """A Promenade whose etcd interval is the 30 s default."""
    resolver = DesignResolver(RefPolicy(file_root=str(tmp_path)), cache_size=0)
    return Promenade(kube, etcd, resolver, replace(FAST, etcd_poll=30.0), clock=clock,
                     wall=clock, sleep=clock.sleep)


def test_a_refusal_of_seconds_is_retried_within_seconds_not_an_interval(slow, etcd, clock):
    """etcd refuses for 3 s; the next tries come 0.5, 1, 2 s apart (not the 30 s interval)."""
    etcd.refuse_removal = True
    start = clock.now
    clock.at(3, lambda: setattr(etcd, "refuse_removal", False))
    slow.remove_etcd("node01", clusters(), 600)
    assert etcd.removed == ["node01"]
    assert clock.now - start <= 4.0 and clock.slept[:3] == [0.5, 1.0, 2.0]


def test_stability_is_seen_soon_after_it_returns_and_waits_stay_under_the_interval(
        slow, etcd, clock):
    etcd.down.add("node03")
    start = clock.now
    clock.at(5, lambda: etcd.down.discard("node03"))
    slow.remover().wait_stable("node01", clusters(), 600)
    assert clock.now - start <= 8.0
    etcd.down.add("node03")
    clock.at(200, lambda: etcd.down.discard("node03"))
    slow.remover().wait_stable("node01", clusters(), 600)
    assert max(clock.slept) == 30.0  # the interval bounds each wait
