"""EtcdPort over python3-etcd3 (module `etcd3`); gRPC failures are translated here.

python-etcd3 maps gRPC UNAVAILABLE to a connection error, but etcd also answers UNAVAILABLE
("unhealthy cluster") when it refuses a removal; the raw gRPC status tells them apart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlparse

import etcd3
import grpc
from etcd3 import Etcd3Client, etcdrpc

from promenade_api.etcd import wire
from promenade_api.etcd.model import ClusterSpec, Member, MemberHealth, Progress, TlsFiles
from promenade_api.etcd.port import EtcdError, EtcdMemberNotFound, EtcdRefused, EtcdUnreachable

T = TypeVar("T")
REFUSALS = ("unhealthy cluster", "not enough started members", "re-configuration failed",
            "leader changed", "too many learner", "in sync with leader")


def translate(exc: grpc.RpcError, what: str) -> EtcdError:
    """Our error for a gRPC failure: a refusal, a missing member, or a network failure."""
    code = exc.code() if hasattr(exc, "code") else None
    details = str(exc.details() if hasattr(exc, "details") else exc) or str(code)
    text = f"etcd {what}: {details}"
    if code == grpc.StatusCode.NOT_FOUND or "member not found" in details:
        return EtcdMemberNotFound(text)
    if code == grpc.StatusCode.FAILED_PRECONDITION or any(r in details for r in REFUSALS):
        return EtcdRefused(text)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                grpc.StatusCode.CANCELLED):
        return EtcdUnreachable(text)
    return EtcdError(text)


class Etcd3Port:
    """One cached client per endpoint URL; every call bounded by `timeout` seconds."""

    def __init__(self, timeout: float = 5.0) -> None:
        self._timeout = timeout
        self._clients: dict[tuple[str, TlsFiles], Etcd3Client] = {}
        self._lock = threading.Lock()

    def _client(self, url: str, tls: TlsFiles) -> Etcd3Client:
        with self._lock:
            client = self._clients.get((url, tls))
            if client is None:
                parsed = urlparse(url if "://" in url else f"http://{url}")
                secure = parsed.scheme == "https"
                client = etcd3.client(
                    host=parsed.hostname or "127.0.0.1", port=parsed.port or 2379,
                    ca_cert=tls.ca if secure else None, cert_key=tls.key if secure else None,
                    cert_cert=tls.cert if secure else None, timeout=self._timeout)
                self._clients[(url, tls)] = client
            return client

    def _rpc(self, url: str, tls: TlsFiles, what: str, call: Callable[[Etcd3Client], T]) -> T:
        try:
            return call(self._client(url, tls))
        except grpc.RpcError as exc:
            raise self._failed(url, tls, translate(exc, f"{what} via {url}")) from exc
        except etcd3.exceptions.Etcd3Exception as exc:
            inner = exc.__context__
            if isinstance(inner, grpc.RpcError):
                raise self._failed(url, tls, translate(inner, f"{what} via {url}")) from exc
            raise self._failed(url, tls, EtcdUnreachable(f"etcd {what} via {url}: {exc}")) \
                from exc
        except ValueError as exc:  # bad TLS material or endpoint
            raise EtcdError(f"etcd {what} via {url}: {exc}") from exc

    def _failed(self, url: str, tls: TlsFiles, error: EtcdError) -> EtcdError:
        """Forget the client of an endpoint that did not answer: its gRPC channel would wait
        out its reconnect backoff (many seconds) after a member (re)starts on that URL. It is
        not closed: another thread may still be using it."""
        if isinstance(error, EtcdUnreachable):
            with self._lock:
                self._clients.pop((url, tls), None)
        return error

    def _first(self, urls: tuple[str, ...], tls: TlsFiles, what: str,
               call: Callable[[Etcd3Client], T]) -> T:
        errors = []
        for url in urls:
            try:
                return self._rpc(url, tls, what, call)
            except EtcdUnreachable as exc:
                errors.append(exc.message)
        raise EtcdUnreachable(f"No etcd endpoint answered {what}: " + "; ".join(errors))

    def members(self, cluster: ClusterSpec) -> list[Member]:
        def call(c: Etcd3Client) -> list[Member]:
            resp = c.clusterstub.MemberList(etcdrpc.MemberListRequest(), self._timeout)
            return [_member(m) for m in resp.members]

        return self._first(cluster.endpoints, cluster.tls, "member list", call)

    def health(self, cluster: ClusterSpec, member: Member) -> MemberHealth:
        if not member.client_urls:
            return MemberHealth(member, reachable=False, healthy=False,
                                error="member has not started (no client URLs)")
        try:
            status = self._first(member.client_urls, cluster.tls, "status",
                                 lambda c: c.maintenancestub.Status(etcdrpc.StatusRequest(),
                                                                    self._timeout))
        except EtcdError as exc:
            return MemberHealth(member, reachable=False, healthy=False, error=exc.message)
        leader = int(status.leader) or None
        try:
            self._first(member.client_urls, cluster.tls, "linearizable read",
                        lambda c: c.kvstub.Range(etcdrpc.RangeRequest(key=b"health"),
                                                 self._timeout))
        except EtcdError as exc:
            return MemberHealth(member, reachable=True, healthy=False, leader_id=leader,
                                error=exc.message)
        return MemberHealth(member, reachable=True, healthy=leader is not None,
                            leader_id=leader, error="" if leader else "no leader")

    def move_leader(self, cluster: ClusterSpec, leader: Member, target: Member) -> None:
        self._first(leader.client_urls or cluster.endpoints, cluster.tls, "move leader",
                    lambda c: c.maintenancestub.MoveLeader(
                        etcdrpc.MoveLeaderRequest(targetID=target.id), self._timeout))

    def progress(self, cluster: ClusterSpec, member: Member) -> Progress:
        if not member.client_urls:
            raise EtcdUnreachable(f"etcd member {member.id:x} has not started")
        status = self._first(member.client_urls, cluster.tls, "status",
                             lambda c: c.maintenancestub.Status(etcdrpc.StatusRequest(),
                                                                self._timeout))
        applied, learner = wire.status_extras(status)
        return Progress(raft_index=int(status.raftIndex), applied_index=applied,
                        leader_id=int(status.leader) or None, is_learner=learner)

    def add_learner(self, cluster: ClusterSpec, peer_url: str) -> Member:
        def call(c: Etcd3Client) -> Member:
            add = c.channel.unary_unary(wire.MEMBER_ADD, request_serializer=wire.raw,
                                        response_deserializer=etcdrpc.MemberAddResponse.FromString)
            return _member(add(wire.learner_add_request(peer_url), self._timeout).member)

        return self._first(cluster.endpoints, cluster.tls, f"add learner {peer_url}", call)

    def promote(self, cluster: ClusterSpec, member: Member) -> None:
        def call(c: Etcd3Client) -> None:
            promote = c.channel.unary_unary(wire.MEMBER_PROMOTE, request_serializer=wire.raw,
                                            response_deserializer=wire.raw)
            promote(wire.promote_request(member.id), self._timeout)

        urls = tuple(u for u in cluster.endpoints if u not in member.client_urls) \
            or cluster.endpoints
        self._first(urls, cluster.tls, f"promote member {member.name or member.id}", call)

    def remove_member(self, cluster: ClusterSpec, member: Member) -> None:
        urls = tuple(u for u in cluster.endpoints if u not in member.client_urls) \
            or cluster.endpoints
        self._first(urls, cluster.tls, f"remove member {member.name}",
                    lambda c: c.clusterstub.MemberRemove(
                        etcdrpc.MemberRemoveRequest(ID=member.id), self._timeout))


def _member(m: etcdrpc.Member) -> Member:
    return Member(id=m.ID, name=m.name, peer_urls=tuple(m.peerURLs),
                  client_urls=tuple(m.clientURLs), is_learner=wire.is_learner(m))
