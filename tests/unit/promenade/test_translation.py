"""Third-party failures become our errors at the ports (Kubernetes statuses, gRPC codes)."""

from __future__ import annotations

import grpc
import pytest

from promenade_api.etcd.client import translate as translate_grpc
from promenade_api.etcd.port import EtcdMemberNotFound, EtcdRefused, EtcdUnreachable
from promenade_api.kube.client import ApiFailure, KubeClient, eviction_outcome, translate
from promenade_api.kube.port import KubeApiError, KubeConflict, KubeNotFound, KubeUnavailable


class RpcError(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


@pytest.mark.parametrize("status,body,outcome", [
    (429, {"message": "Cannot evict pod"}, "retry"),
    (404, {"message": 'pods "p" not found', "details": {"kind": "pods", "name": "p"}}, "gone"),
    (404, {"message": "the server could not find the requested resource"}, "unsupported"),
    (500, {"message": "This pod has more than one PodDisruptionBudget"}, "failed"),
])
def test_eviction_answers(status, body, outcome):
    assert eviction_outcome(ApiFailure(status, body["message"], body)).outcome == outcome


@pytest.mark.parametrize("status,cls", [(404, KubeNotFound), (409, KubeConflict),
                                        (500, KubeApiError)])
def test_api_failures(status, cls):
    assert type(translate(ApiFailure(status, "m", {}), "GET /x")) is cls


def test_an_unconfigured_client_is_unavailable():
    with pytest.raises(KubeUnavailable):
        KubeClient(None).ping()


def test_an_unreachable_api_server_is_unavailable():
    from promenade_api.kube.client import load_api_client
    client = KubeClient(load_api_client(api_url="http://127.0.0.1:9"), request_timeout=1)
    with pytest.raises(KubeUnavailable):
        client.get_node("node01")


@pytest.mark.parametrize("code,details,cls", [
    (grpc.StatusCode.UNAVAILABLE, "etcdserver: unhealthy cluster", EtcdRefused),
    (grpc.StatusCode.FAILED_PRECONDITION, "etcdserver: not enough started members",
     EtcdRefused),
    (grpc.StatusCode.NOT_FOUND, "etcdserver: member not found", EtcdMemberNotFound),
    (grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses", EtcdUnreachable),
    (grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", EtcdUnreachable),
])
def test_grpc_codes_tell_refusals_from_network_failures(code, details, cls):
    assert type(translate_grpc(RpcError(code, details), "remove")) is cls


def test_health_check_reports_an_unconfigured_kubernetes_without_failing():
    from promenade_api.runtime import kubernetes_check
    message = kubernetes_check(KubeClient(None))()
    assert message["name"] == "kubernetes" and message["error"] is False
    assert "not configured" in message["message"]


def test_health_check_fails_when_the_api_is_unreachable():
    from promenade_api.kube.client import load_api_client
    from promenade_api.runtime import kubernetes_check
    check = kubernetes_check(KubeClient(load_api_client(api_url="http://127.0.0.1:9"),
                                        request_timeout=1))
    assert check()["error"] is True
