"""Learner-first joins and leader-first removals on a real 3-member etcd cluster.

A sampler thread reads the member list and each voter's health during every operation, so
"quorum held at every instant" is checked on what etcd itself reported, not on our calls."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from promenade_api.errors import JoinEtcdRefused, LearnerNotCaughtUp
from promenade_api.etcd.client import Etcd3Port
from promenade_api.etcd.joining import EtcdJoiner
from promenade_api.etcd.model import ClusterSpec, Member
from promenade_api.etcd.port import EtcdError
from promenade_api.etcd.quorum import quorum
from promenade_api.etcd.removal import EtcdRemover
from sitesim.etcd.cluster import EtcdCluster

from .conftest import wait_for

pytestmark = pytest.mark.slow
NEW = "node04"


class ThreadLock:
    """The per-cluster lease, in-process (the Kubernetes Lease is tested elsewhere)."""

    name = "test-lock"

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self, timeout: float) -> bool:
        return self._lock.acquire(timeout=timeout)

    def renew(self) -> None:
        pass

    def release(self) -> None:
        self._lock.release()


@dataclass
class Sample:
    at: float
    voters: dict[int, bool]  # member id -> healthy
    learners: set[int]
    leader: int | None


@dataclass
class Sampler:
    """Samples membership and voter health until stopped."""

    port: Etcd3Port
    spec: ClusterSpec
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                members = self.port.members(self.spec)
            except EtcdError:
                continue
            voters = {m.id: self.port.health(self.spec, m).healthy
                      for m in members if not m.is_learner}
            leaders = set()
            for m in members:
                if not m.is_learner:
                    with contextlib.suppress(EtcdError):
                        leaders.add(self.port.progress(self.spec, m).leader_id)
            self.samples.append(Sample(time.monotonic(), voters,
                                       {m.id for m in members if m.is_learner},
                                       next(iter(leaders)) if len(leaders) == 1 else None))
            time.sleep(0.02)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)

    def assert_quorum_held(self) -> None:
        assert self.samples, "no sample was taken"
        for s in self.samples:
            healthy = sum(s.voters.values())
            assert healthy >= quorum(len(s.voters)), s


@dataclass
class Site:
    cluster: EtcdCluster
    spec: ClusterSpec
    port: Etcd3Port

    def joiner(self, poll: float = 0.2) -> EtcdJoiner:
        lock = ThreadLock()
        return EtcdJoiner(self.port, lambda _: lock, clock=time.monotonic, sleep=time.sleep,
                          poll_interval=poll, max_lag=10)

    def members(self) -> list[Member]:
        return self.port.members(self.spec)

    def learner(self) -> Member | None:
        return next((m for m in self.members() if m.is_learner), None)

    def write(self, count: int) -> None:
        with requests.Session() as http:
            for i in range(count):
                value = base64.b64encode(str(i).encode()).decode()
                http.post(f"{self.cluster.members['node01'].client_url}/v3/kv/put",
                          json={"key": "a2V5", "value": value}, timeout=5).raise_for_status()

    def pid(self, name: str) -> int:
        proc = self.cluster.members[name].process
        assert proc is not None
        return proc.pid

    def start_new_when_added(self, pause: bool = False) -> threading.Thread:
        """As the node's own etcd would: start once the member list holds it; `pause`
        stops the process (SIGSTOP) the moment it is spawned, before it can replay any of
        the log, so it stays behind while writes go on (however fast the machine)."""
        def run() -> None:
            wait_for(lambda: self.cluster.start_added_member(NEW), timeout=30)
            if pause:
                os.kill(self.pid(NEW), signal.SIGSTOP)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


@pytest.fixture
def site(etcd_cluster: EtcdCluster) -> Iterator[Site]:
    slot = etcd_cluster.add_member_slot(NEW)
    spec = ClusterSpec(etcd_cluster.name, tuple(etcd_cluster.client_endpoints[:3]),
                       members={**{m: m for m in list(etcd_cluster.members)[:3]}, NEW: NEW},
                       peer_urls={NEW: slot.peer_url}, min_healthy=2)
    s = Site(etcd_cluster, spec, Etcd3Port(timeout=1.0))
    yield s
    proc = slot.process
    if proc is not None and proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)


def test_a_lagging_member_is_promoted_only_after_it_catches_up(site: Site) -> None:
    site.write(300)  # a cluster with history to replay
    result: list[Any] = []
    starter = site.start_new_when_added(pause=True)
    with Sampler(Etcd3Port(timeout=1.0), site.spec) as sampler:
        joiner = threading.Thread(target=lambda: result.append(
            site.joiner(poll=1.0).join_node(NEW, [site.spec], timeout=60)), daemon=True)
        joiner.start()
        starter.join(40)
        site.write(300)  # while it is stopped, the leader moves on
        time.sleep(2.5)
        learner = site.learner()
        assert learner is not None  # still a learner while behind
        resumed = time.monotonic()
        os.kill(site.pid(NEW), signal.SIGCONT)
        joiner.join(60)
        count = len(sampler.samples)
        wait_for(lambda: len(sampler.samples) > count + 2, timeout=30)
    assert result, "the join did not finish"
    assert "promoted to a voting member" in result[0][0]["message"]
    new = next(m for m in site.members() if m.name == NEW)
    assert not new.is_learner and len(site.members()) == 4
    sampler.assert_quorum_held()
    as_learner = [s for s in sampler.samples if new.id in s.learners]
    as_voter = [s for s in sampler.samples if new.id in s.voters]
    assert as_learner and as_voter
    assert min(s.at for s in as_voter) > resumed  # never a voter while it lagged
    assert max(s.at for s in as_learner) < min(s.at for s in as_voter)


def test_a_learner_that_never_catches_up_is_not_promoted(site: Site) -> None:
    before = sorted(m.id for m in site.members())
    site.start_new_when_added(pause=True)
    started = time.monotonic()
    with Sampler(Etcd3Port(timeout=1.0), site.spec) as sampler, \
            pytest.raises(LearnerNotCaughtUp) as caught:
        site.joiner().join_node(NEW, [site.spec], timeout=6)
    assert time.monotonic() - started < 60  # bounded by the join's timeout, not waiting on
    assert "did not catch up in time: its etcd has not started" in caught.value.message
    assert "the learner was removed again; the cluster is as it was" in caught.value.message
    assert caught.value.code == 409 and caught.value.reason == "LearnerNotCaughtUp"
    wait_for(lambda: sorted(m.id for m in site.members()) == before, timeout=10)
    sampler.assert_quorum_held()
    assert not any(s.learners & set(s.voters) for s in sampler.samples)
    assert all(len(s.voters) == 3 for s in sampler.samples)  # never promoted


def test_joining_twice_leaves_one_member(site: Site) -> None:
    site.start_new_when_added()
    first = site.joiner().join_node(NEW, [site.spec], timeout=60)
    assert "promoted" in first[0]["message"]
    second = site.joiner().join_node(NEW, [site.spec], timeout=60)
    assert "already a voting member; nothing was changed" in second[0]["message"]
    names = sorted(m.name for m in site.members())
    assert names == ["node01", "node02", "node03", NEW]
    assert not any(m.is_learner for m in site.members())


def test_a_join_without_enough_healthy_voters_is_refused(site: Site) -> None:
    spec = ClusterSpec(site.spec.name, site.spec.endpoints, site.spec.members,
                       site.spec.peer_urls, min_healthy=3)
    site.cluster.stop_member("node03")
    before = sorted(m.id for m in site.members())
    with pytest.raises(JoinEtcdRefused) as caught:
        site.joiner().join_node(NEW, [spec], timeout=10)
    text = str(caught.value.to_status())
    assert "minimum_healthy_members of 3" in text and "nothing was changed" in text
    assert sorted(m.id for m in site.members()) == before


def test_removing_the_leader_moves_leadership_before_the_member_leaves(site: Site) -> None:
    observer = Etcd3Port(timeout=1.0)
    leader_at_removal: list[int | None] = []

    class Watching(Etcd3Port):
        def remove_member(self, cluster: ClusterSpec, member: Member) -> None:
            others = [m for m in observer.members(cluster) if m.id != member.id]
            leader_at_removal.append(observer.progress(cluster, others[0]).leader_id)
            super().remove_member(cluster, member)

    members = site.members()
    leader_id = observer.progress(site.spec, members[0]).leader_id
    leader = next(m for m in members if m.id == leader_id)
    lock = ThreadLock()
    remover = EtcdRemover(Watching(timeout=2.0), lambda _: lock, clock=time.monotonic,
                          sleep=time.sleep, poll_interval=0.2)
    with Sampler(Etcd3Port(timeout=1.0), site.spec) as sampler:
        remover.remove_node(leader.name, [site.spec], timeout=60)
        wait_for(lambda: any(leader.id not in s.voters for s in sampler.samples[-3:]),
                 timeout=30)
    assert leader_at_removal and all(x not in (None, leader.id) for x in leader_at_removal)
    assert leader.id not in {m.id for m in site.members()}
    sampler.assert_quorum_held()
    gone = [i for i, s in enumerate(sampler.samples) if leader.id not in s.voters]
    assert gone
    assert all(s.leader != leader.id for s in sampler.samples[gone[0]:])


def test_a_member_restarted_on_its_url_answers_the_next_call(site: Site) -> None:
    """A (re)started learner is seen at once, not after the old channel's reconnect backoff."""
    port = Etcd3Port(timeout=1.0)
    node03 = next(m for m in site.members() if m.name == "node03")
    assert port.progress(site.spec, node03).raft_index > 0
    site.cluster.stop_member("node03")
    for _ in range(3):
        with pytest.raises(EtcdError):
            port.progress(site.spec, node03)
    site.cluster.restart_member("node03")
    assert port.progress(site.spec, node03).raft_index > 0
