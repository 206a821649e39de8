"""Berth's Kubernetes manifests: each overlay renders the same with kubectl and the Python
renderer, every object is a valid Kubernetes object, and the pods run Berth's console scripts
with configuration that points at what they mount."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from tests.unit.deploy.kustomize import build
from tests.unit.deploy.objects import (
    API_PORTS,
    CONFIG_OF,
    DEPLOY,
    NAMESPACE,
    OVERLAYS,
    WORKERS,
    Obj,
    container,
    env_of,
    find,
    mounted_files,
    option,
    read_conf,
    service_of,
    workloads,
)


# -- rendering and schema --------------------------------------------------------------------
@pytest.mark.parametrize("name", OVERLAYS)
def test_python_renderer_matches_kubectl_kustomize(name: str) -> None:
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl is not installed: only the Python renderer is checked")
    # No cluster is involved: an unreadable kubeconfig keeps kubectl from contacting one.
    env = {**os.environ, "KUBECONFIG": str(DEPLOY / "no-such-kubeconfig")}
    run = subprocess.run([kubectl, "kustomize", str(DEPLOY / "overlays" / name)],
                         capture_output=True, text=True, timeout=120, env=env)
    if run.returncode != 0 and "unknown command" in run.stderr:
        pytest.skip(f"this kubectl cannot build kustomizations: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr

    def key(o: Obj) -> tuple[str, str, str]:
        return o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]

    expected = {key(o): o for o in yaml.safe_load_all(run.stdout) if o}
    assert {key(o): o for o in build(DEPLOY / "overlays" / name)} == expected


def test_every_object_loads_into_the_typed_kubernetes_models(overlay) -> None:
    api = k8s.ApiClient()
    for obj in overlay[1]:
        group_version = obj["apiVersion"].rsplit("/", 1)[-1]
        assert group_version == "v1", f"{obj['kind']}: {obj['apiVersion']}"
        model = api._ApiClient__deserialize(obj, f"V1{obj['kind']}")  # raises when invalid
        # The models drop fields they do not know: a misspelt field shows up as a difference.
        assert api.sanitize_for_serialization(model) == obj, obj["metadata"]["name"]


def test_every_namespaced_object_lives_in_berths_namespace(overlay) -> None:
    namespaces = [o for o in overlay[1] if o["kind"] == "Namespace"]
    assert [n["metadata"]["name"] for n in namespaces] == [NAMESPACE]
    assert namespaces[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == \
        "privileged"  # the kubelet-shutdown pods are privileged
    for obj in overlay[1]:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"].get("namespace") == NAMESPACE, obj["metadata"]["name"]


def test_the_rendered_objects_are_the_documented_set(overlay) -> None:
    name, objects = overlay
    deployments = set(workloads(objects))
    expected = set(API_PORTS) | (set(WORKERS) if name == "postgres" else set())
    assert deployments == expected
    assert set(workloads(objects, "DaemonSet")) == {"kubelet-shutdown"}
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "Service"} == set(API_PORTS)
    claims = {o["metadata"]["name"] for o in objects if o["kind"] == "PersistentVolumeClaim"}
    assert claims == ({"shipyard-data", "drydock-data"} if name == "embedded" else set())


# -- commands, probes, services --------------------------------------------------------------
def console_scripts() -> set[str]:
    """The installed services' console scripts (the simulator's and the launcher's are not in
    the image)."""
    return {ep.name for ep in metadata.distribution("berth").entry_points
            if ep.group == "console_scripts"
            and ep.value.split(".")[0] not in ("sitesim", "berth_launcher")}


IMAGE = "localhost/berth:latest"  # what `make image` builds, fully qualified


def test_every_deployment_runs_a_console_script_of_the_berth_image(overlay) -> None:
    scripts = console_scripts()
    for name, deployment in workloads(overlay[1]).items():
        cont = container(deployment)
        assert cont["image"] == IMAGE
        assert cont["command"][0] in scripts, cont["command"]
        assert cont["command"][0] == name  # the Deployment is named after what it runs


def test_every_flag_of_a_command_is_one_its_console_script_accepts() -> None:
    commands = {tuple(container(d)["command"]) for name in OVERLAYS
                for d in workloads(build(DEPLOY / "overlays" / name)).values()}
    for command in sorted(commands):
        script = Path(sys.executable).parent / command[0]
        usage = subprocess.run([str(script), "--help"], capture_output=True, text=True,
                               timeout=120, check=True).stdout
        for flag in (arg for arg in command[1:] if arg.startswith("--")):
            assert f"[{flag} " in usage, f"{command[0]} does not accept {flag}"


def test_api_probes_and_services_target_the_bound_port(overlay) -> None:
    objects = overlay[1]
    for name, port in API_PORTS.items():
        cont = container(workloads(objects)[name])
        assert option(cont["command"], "--bind") == f"0.0.0.0:{port}"
        ports = {p["name"]: p["containerPort"] for p in cont["ports"]}
        assert ports == {"http": port}
        ready, live = cont["readinessProbe"]["httpGet"], cont["livenessProbe"]["httpGet"]
        assert ready["path"] == "/api/v1.0/health"
        assert live["path"] == "/versions"  # no dependency checks: never restarts on outages
        assert ports[ready["port"]] == port and ports[live["port"]] == port
        service = find(objects, "Service", name)
        pod_labels = workloads(objects)[name]["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        [svc_port] = service["spec"]["ports"]
        assert svc_port["port"] == port and ports[svc_port["targetPort"]] == port
    for worker in (w for w in WORKERS if w in workloads(objects)):
        cont = container(workloads(objects)[worker])
        assert "ports" not in cont and "readinessProbe" not in cont


def test_pods_run_as_uid_10001_without_privileges_and_with_limits(overlay) -> None:
    for name, deployment in workloads(overlay[1]).items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 10001
        cont = container(deployment)
        assert cont["securityContext"]["allowPrivilegeEscalation"] is False
        assert cont["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert set(cont["resources"]["requests"]) == set(cont["resources"]["limits"]) == \
            {"cpu", "memory"}, name
        assert pod.get("automountServiceAccountToken") is (name == "promenade-api")


# -- layouts ---------------------------------------------------------------------------------
def test_postgres_overlay_runs_two_of_each_api_and_worker_on_the_database_secret() -> None:
    objects = build(DEPLOY / "overlays" / "postgres")
    deployments = workloads(objects)
    assert {n: d["spec"]["replicas"] for n, d in deployments.items()} == \
        dict.fromkeys([*API_PORTS, *WORKERS], 2)
    database = find(objects, "Secret", "berth-database")["data"]
    for name, key in (("shipyard-api", "shipyard-url"), ("shipyard-worker", "shipyard-url"),
                      ("drydock-api", "drydock-url"), ("drydock-worker", "drydock-url"),
                      ("promenade-api", "promenade-url")):
        ref = env_of(container(deployments[name]))["OS_DATABASE__CONNECTION"]
        assert ref["valueFrom"]["secretKeyRef"] == {"name": "berth-database", "key": key}
        assert base64.b64decode(database[key]).decode().startswith("postgresql+psycopg://")
    assert env_of(container(deployments["shipyard-api"]))["OS_WORKFLOW__API_WORKERS"][
        "value"] == "0"
    assert env_of(container(deployments["drydock-api"]))["OS_WORKER__THREADS"]["value"] == "0"
    budgets = {o["metadata"]["name"] for o in objects if o["kind"] == "PodDisruptionBudget"}
    assert budgets == set(API_PORTS)


def test_embedded_overlay_keeps_sqlite_on_a_claim_and_works_inside_the_apis() -> None:
    objects = build(DEPLOY / "overlays" / "embedded")
    deployments = workloads(objects)
    assert {n: d["spec"]["replicas"] for n, d in deployments.items()} == \
        dict.fromkeys(API_PORTS, 1)
    for name, threads in (("shipyard-api", "OS_WORKFLOW__API_WORKERS"),
                          ("drydock-api", "OS_WORKER__THREADS")):
        deployment = deployments[name]
        cont, pod = container(deployment), deployment["spec"]["template"]["spec"]
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
        env = env_of(cont)
        assert env[threads]["value"] == "1"
        url = env["OS_DATABASE__CONNECTION"]["value"]
        assert url.startswith("sqlite:////")
        claim = name.split("-")[0] + "-data"
        [volume] = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
        assert volume["persistentVolumeClaim"]["claimName"] == claim
        find(objects, "PersistentVolumeClaim", claim)
        [mount] = [m for m in cont["volumeMounts"] if m["name"] == volume["name"]]
        assert url.removeprefix("sqlite:///").startswith(mount["mountPath"] + "/")


# -- configuration and secrets ---------------------------------------------------------------
def registered(service: str) -> set[tuple[str, str]]:
    return {(group, opt.dest) for group, opts in CONFIG_OF[service].list_opts()
            for opt in opts}


def test_config_files_and_env_set_only_options_the_services_register(overlay) -> None:
    objects = overlay[1]
    for name, deployment in workloads(objects).items():
        cont = container(deployment)
        service = service_of(cont)
        files = mounted_files(objects, deployment)
        conf = read_conf(files[option(cont["command"], "--config-file")])
        known = registered(service)
        for section in conf.sections():
            for key in conf[section]:
                assert (section, key) in known, f"{name}: [{section}] {key}"
        for var in env_of(cont):
            group, _, opt = var.removeprefix("OS_").lower().partition("__")
            assert (group, opt) in known, f"{name}: {var}"


def test_config_points_at_files_the_pods_mount(overlay) -> None:
    objects = overlay[1]
    for name, deployment in workloads(objects).items():
        cont = container(deployment)
        files = mounted_files(objects, deployment)
        conf = read_conf(files[option(cont["command"], "--config-file")])
        assert conf["peers"]["drydock_url"] == "http://drydock-api:9002"
        assert conf["peers"]["promenade_url"] == "http://promenade-api:9001"
        assert conf["peers"]["shipyard_url"] == "http://shipyard-api:9000"
        if name.endswith("-api"):
            tokens = yaml.safe_load(files[conf["auth"]["token_file"]])
            service_token = env_of(cont)["OS_AUTH__SERVICE_TOKEN"]["valueFrom"]["secretKeyRef"]
            secret = find(objects, "Secret", service_token["name"])["data"]
            value = base64.b64decode(secret[service_token["key"]]).decode()
            assert "admin" in tokens[value]["roles"]  # peers accept the service token
        if service_of(cont) == "shipyard":
            assert conf["documents"]["secret_key_file"] in files
        if service_of(cont) == "drydock":  # API and worker pods share the designs' key
            assert conf["database"]["design_key_file"] in files
        if name == "promenade-api":
            assert conf["kubernetes"]["kubeconfig"] in files


def test_every_reference_resolves_to_a_rendered_object_and_key(overlay) -> None:
    objects = overlay[1]
    for deployment in [*workloads(objects).values(), *workloads(objects, "DaemonSet").values()]:
        pod = deployment["spec"]["template"]["spec"]
        for volume in pod.get("volumes") or []:
            if "persistentVolumeClaim" in volume:
                find(objects, "PersistentVolumeClaim",
                     volume["persistentVolumeClaim"]["claimName"])
        mounted_files(objects, deployment)  # raises on a missing object or key
        for env in (container(deployment).get("env") or []):
            ref = (env.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                assert ref["key"] in find(objects, "Secret", ref["name"])["data"]
        if pod.get("serviceAccountName"):
            find(objects, "ServiceAccount", pod["serviceAccountName"])


def test_secrets_hold_only_marked_placeholders(overlay) -> None:
    for obj in overlay[1]:
        if obj["kind"] == "Secret":
            for key, value in obj["data"].items():
                assert "REPLACE-ME" in base64.b64decode(value).decode(), \
                    f"{obj['metadata']['name']}/{key} is not a placeholder"
