"""join-etcd on the fake etcd: learner first, promoted once in sync, refusals change nothing."""

from __future__ import annotations

from promenade_api.etcd.model import Member, MemberHealth
from promenade_api.etcd.port import EtcdUnreachable
from promenade_api.etcd.quorum import voters_safe

from .conftest import etcd_doc, kubernetes_cluster

P = "/api/v1.0"
PEER = "http://10.0.0.3:2380"


def design_with_peer(design, threshold=2, peer=PEER):
    cluster = kubernetes_cluster(threshold)
    if peer:
        cluster["members"][2]["peer_url"] = peer
    return design(etcd_doc([cluster]))


def node03_removed(etcd):
    etcd.clusters["kubernetes"] = [m for m in etcd.clusters["kubernetes"] if m.name != "node03"]
    etcd.peer_names[PEER] = "node03"  # the node's etcd starts under this name once added


def join(api, href, timeout=60):
    client, headers = api
    return client.simulate_post(f"{P}/nodes/node03/join-etcd", json=href, headers=headers,
                                params={"timeout": str(timeout)})


def test_a_removed_member_comes_back_as_learner_then_voter(api, design, etcd, kube):
    kube.add_node("node03")
    node03_removed(etcd)
    result = join(api, design_with_peer(design))
    assert result.status_code == 200, result.json
    assert "joined as a learner and was promoted" in result.json["details"]["messageList"][0][
        "message"]
    assert etcd.promotions == ["node03"]
    node03 = next(m for m in etcd.clusters["kubernetes"] if m.name == "node03")
    assert not node03.is_learner and node03.peer_urls == (PEER,)


def test_the_same_request_twice_adds_one_member(api, design, etcd, kube):
    kube.add_node("node03")
    node03_removed(etcd)
    href = design_with_peer(design)
    assert join(api, href).status_code == 200
    again = join(api, href)
    assert again.status_code == 200
    assert "already a voting member" in again.json["details"]["messageList"][0]["message"]
    assert sorted(m.name for m in etcd.clusters["kubernetes"]) == ["node01", "node02", "node03"]
    assert etcd.promotions == ["node03"]


def test_a_join_that_would_break_the_threshold_is_refused(api, design, etcd, kube):
    kube.add_node("node03")
    node03_removed(etcd)
    etcd.down.add("node01")
    result = join(api, design_with_peer(design, threshold=2))
    assert result.status_code == 409 and result.json["reason"] == "JoinEtcdRefused"
    assert "nothing was changed" in result.json["message"]
    assert "below the quorum of 2" in str(result.json)
    assert [m.name for m in etcd.clusters["kubernetes"]] == ["node01", "node02"]


def test_a_learner_that_does_not_catch_up_is_removed_again(api, design, etcd, kube, clock):
    kube.add_node("node03")
    node03_removed(etcd)
    etcd.applied["node03"] = 3  # far behind the leader's 100
    started = clock()
    result = join(api, design_with_peer(design), timeout=30)
    assert result.status_code == 409 and result.json["reason"] == "LearnerNotCaughtUp"
    assert "applied raft index 3, leader's 100" in result.json["message"]
    assert "the cluster is as it was" in result.json["message"]
    assert 30 <= clock() - started < 40
    assert [m.name for m in etcd.clusters["kubernetes"]] == ["node01", "node02"]
    assert etcd.promotions == []


def test_a_member_without_peer_url_is_a_bad_request(api, design, etcd, kube):
    kube.add_node("node03")
    node03_removed(etcd)
    result = join(api, design_with_peer(design, peer=None))
    assert result.status_code == 400 and result.json["reason"] == "EtcdPeerUrlMissing"
    assert len(etcd.clusters["kubernetes"]) == 2


def test_the_leader_hands_over_to_the_voter_most_in_sync(svc, etcd):
    from promenade_api.etcd.design import load_clusters
    etcd.applied["node01"] = 50
    svc.remove_etcd("node02", load_clusters([etcd_doc([kubernetes_cluster(2)])]), 60)
    assert etcd.moves == [("node02", "node03")] and etcd.removed == ["node02"]


def voters(*states: str, learner: bool = False) -> list[MemberHealth]:
    out = [MemberHealth(Member(i, f"n{i}"), reachable=True, healthy=s == "ok")
           for i, s in enumerate(states, start=1)]
    if learner:
        out.append(MemberHealth(Member(9, "l", is_learner=True), reachable=True, healthy=False))
    return out


def test_learners_do_not_count_as_voters():
    assert voters_safe(voters("ok", "ok", "down", learner=True), 0) == ()
    assert voters_safe(voters("ok", "down", "down"), 0)[0].startswith("only 1 of 3")


def test_a_promotion_must_keep_quorum_after_it_too():
    assert voters_safe(voters("ok", "ok"), 0, promoting=True) == ()
    # 2 voters, 1 healthy: quorum is already lost; a 3rd voter would need 2 healthy too
    assert len(voters_safe(voters("ok", "down"), 0, promoting=True)) == 1
    assert "after the promotion" in voters_safe(voters("ok", "down", "down", "down"), 0,
                                                promoting=True)[1]


def test_a_member_list_that_still_shows_the_promoted_learner_changes_nothing(
        api, design, etcd, kube):
    """A member list served by a member that has not applied the promotion yet: the member's
    own status says it votes, so the second join changes nothing (it is never removed)."""
    kube.add_node("node03")
    node03_removed(etcd)
    href = design_with_peer(design)
    assert join(api, href).status_code == 200
    etcd.stale_learners.add("node03")
    again = join(api, href)
    assert again.status_code == 200, again.json
    assert "already a voting member" in again.json["details"]["messageList"][0]["message"]
    assert etcd.promotions == ["node03"] and etcd.removed == []
    node03 = next(m for m in etcd.clusters["kubernetes"] if m.name == "node03")
    assert not node03.is_learner


def test_a_promotion_the_leader_has_already_applied_is_not_undone(api, design, etcd, kube):
    """The list and the member's own status unreadable as a voter (it does not answer): etcd's
    leader refuses the promotion as not a learner, which means it votes: never removed."""
    kube.add_node("node03")
    node03_removed(etcd)
    href = design_with_peer(design)
    assert join(api, href).status_code == 200
    etcd.stale_learners.add("node03")
    etcd.applied["node03"] = etcd.log_index  # in sync
    original, asked = etcd.progress, []

    def silent_node03(cluster, member):
        if member.name == "node03" and not asked:  # unreadable once: at the first check
            asked.append(member)
            raise EtcdUnreachable("etcd member node03 did not answer")
        return original(cluster, member)

    etcd.progress = silent_node03
    again = join(api, href)
    assert again.status_code == 200, again.json
    assert etcd.removed == [] and etcd.promotions == ["node03"]
    node03 = next(m for m in etcd.clusters["kubernetes"] if m.name == "node03")
    assert not node03.is_learner
