"""Promenade in the manifests: its RBAC grants exactly the calls its KubeClient makes, its
kubeconfig uses the ServiceAccount token, and the kubelet-shutdown DaemonSet stops kubelets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import yaml

from promenade_api.kube.client import load_api_client
from tests.unit.deploy import kube_calls
from tests.unit.deploy.kustomize import build
from tests.unit.deploy.objects import (
    DEPLOY,
    NAMESPACE,
    ROOT,
    Obj,
    container,
    env_of,
    find,
    mounted_files,
    option,
    read_conf,
    workloads,
)


def test_promenade_kubeconfig_uses_the_service_account_token(tmp_path: Path) -> None:
    objects = build(DEPLOY / "overlays" / "embedded")
    deployment = workloads(objects)["promenade-api"]
    files = mounted_files(objects, deployment)
    conf = read_conf(files[option(container(deployment)["command"], "--config-file")])
    text = files[conf["kubernetes"]["kubeconfig"]]
    account = "/var/run/secrets/kubernetes.io/serviceaccount"
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("")
    (tmp_path / "kubeconfig").write_text(text.replace(account, str(tmp_path)))
    api = load_api_client(kubeconfig=str(tmp_path / "kubeconfig"))
    assert api is not None
    assert api.configuration.host == "https://kubernetes.default.svc"
    bearer = api.configuration.auth_settings()["BearerToken"]
    assert (bearer["key"], bearer["value"]) == ("authorization", "Bearer sa-token")
    assert api.configuration.ssl_ca_cert == str(tmp_path / "ca.crt")



# -- kubelet shutdown and RBAC ---------------------------------------------------------------
def test_kubelet_shutdown_daemonset_stops_the_kubelet_of_labelled_nodes(overlay) -> None:
    daemonset = workloads(overlay[1], "DaemonSet")["kubelet-shutdown"]
    pod = daemonset["spec"]["template"]
    assert pod["spec"]["nodeSelector"] == {"promenade-decomission": "enabled"}
    assert pod["spec"]["hostPID"] is True
    cont = container(daemonset)
    assert cont["securityContext"]["privileged"] is True
    script = " ".join(cont["command"])
    assert "nsenter --target 1 --mount --uts --ipc --net --pid" in script
    assert "systemctl stop kubelet" in script
    deployment = workloads(overlay[1])["promenade-api"]
    files = mounted_files(overlay[1], deployment)
    conf = read_conf(files[option(container(deployment)["command"], "--config-file")])
    key, _, value = conf["kubelet"]["shutdown_pod_label"].partition("=")
    assert pod["metadata"]["labels"][key] == value  # what Promenade watches for


def test_kubelet_shutdown_pods_do_what_the_promenade_sample_daemonset_does() -> None:
    sample = yaml.safe_load((ROOT / "etc/promenade/kubelet-shutdown-daemonset.yaml").read_text())
    ours = yaml.safe_load((DEPLOY / "base/kubelet-shutdown-daemonset.yaml").read_text())
    for field in ("nodeSelector", "hostPID", "tolerations", "priorityClassName"):
        assert ours["spec"]["template"]["spec"][field] == sample["spec"]["template"]["spec"][field]
    for field in ("image", "command", "securityContext"):
        assert container(ours)[field] == container(sample)[field]


def test_the_image_user_is_the_uid_the_pods_run_as() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--uid 10001" in dockerfile and "\nUSER 10001:10001\n" in dockerfile


def granted(objects: list[Obj], account: str) -> Iterator[tuple[kube_calls.Grant, str | None]]:
    """(group, resource, verb) the account is bound to, with the namespace (None: cluster)."""
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE} not in \
                binding["subjects"]:
            continue
        role = find(objects, binding["roleRef"]["kind"], binding["roleRef"]["name"])
        namespace = binding["metadata"].get("namespace")
        for rule in role["rules"]:
            for verb in rule["verbs"]:
                for url in rule.get("nonResourceURLs") or []:
                    yield ("", f"nonResourceURL:{url}", verb), None
                for group in rule.get("apiGroups") or []:
                    for resource in rule["resources"]:
                        yield (group, resource, verb), namespace


def test_promenade_rbac_grants_exactly_what_its_kube_client_calls(overlay) -> None:
    objects = overlay[1]
    # Every KubePort method is exercised: a new method fails here until it is added to
    # kube_calls.port_calls and its verbs to promenade-rbac.yaml.
    assert kube_calls.port_methods() == set(kube_calls.port_calls())
    used = {kube_calls.grant_of(m, u) for m, u in kube_calls.recorded_requests()}
    needed = {grant for grant, _ in used}
    grants = dict(granted(objects, "promenade"))
    assert set(grants) == needed
    assert not any("*" in part for grant in grants for part in grant)
    # Leases are the only namespaced calls Promenade makes itself (lease_namespace); they are
    # granted in Berth's namespace only, and the pod points lease_namespace there.
    namespaced = {grant for grant, ns in grants.items() if ns is not None}
    assert namespaced == {g for g in needed if g[1] == "leases"}
    assert set(grants.values()) == {None, NAMESPACE}
    deployment = workloads(objects)["promenade-api"]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "promenade"
    lease_ns = env_of(container(deployment))["OS_KUBERNETES__LEASE_NAMESPACE"]
    assert lease_ns["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
