"""The image `make image` builds runs the whole product: Shipyard, Promenade and Drydock APIs
and the shipyard-worker and drydock-worker, each a container under the manifests' security
settings (read-only root, uid 10001, every capability dropped), against a simulated site on
the host, and carries redeploy_server to completion.

The build is cached: the debootstrap base is made once (kept in podman's store), and podman
reuses the layers of unchanged steps.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from sitesim.site import Site
from tests.fixtures.services import service_sections, wait_for
from tests.fixtures.site import start_test_site, stop_site
from tests.image.containers import UID, Container, build_image, podman_problem
from tests.support.procs import free_port
from tests.support.services import write_conf, write_tokens

pytestmark = pytest.mark.slow
SERVICES = ("promenade", "drydock", "shipyard")


@pytest.fixture(scope="module")
def image() -> str:
    problem = podman_problem()
    if problem:
        pytest.skip(problem)
    output = build_image()
    print(output.strip().splitlines()[-1])  # "built localhost/berth:latest: N MB"
    return "localhost/berth:latest"


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    started = start_test_site()
    try:
        yield started
    finally:
        stop_site(started)


def write_configs(site: Site, work: Path, token: str, ports: dict[str, int]) -> None:
    """The services' configs in `work` (mounted at the same path in every container)."""
    kubeconfig = work / "kubeconfig"  # Promenade's ServiceAccount; the CA is embedded
    shutil.copy(site.promenade_kubeconfig, kubeconfig)
    os.chown(kubeconfig, UID, UID)
    sections = service_sections(site, work, token, ports)
    sections["promenade"]["kubernetes"]["kubeconfig"] = kubeconfig
    sections["drydock"]["worker"]["threads"] = 0  # tasks run in the drydock-worker container
    for service in SERVICES:
        write_conf(work / f"{service}.conf", sections[service])


@pytest.fixture(scope="module")
def deployed(image: str, site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        dict[str, Any]]:
    work = tmp_path_factory.mktemp("image")
    tokens = write_tokens(work / "tokens.yaml")
    ports = {name: free_port() for name in SERVICES}
    write_configs(site, work, tokens["admin"], ports)
    os.chown(work, UID, UID)  # the services' SQLite files and Fernet keys are written here
    tag = f"berth-test-{os.getpid()}"
    containers: list[Container] = []
    try:
        for service in SERVICES:
            conf = str(work / f"{service}.conf")
            api = Container(f"{tag}-{service}-api", [
                f"{service}-api", "--bind", f"127.0.0.1:{ports[service]}",
                "--config-file", conf], [work], image)
            containers.append(api)
            api.wait_answering(f"http://127.0.0.1:{ports[service]}/versions")
        for service in ("shipyard", "drydock"):
            containers.append(Container(f"{tag}-{service}-worker", [
                f"{service}-worker", "--config-file", str(work / f"{service}.conf")],
                [work], image))
        yield {"work": work, "tokens": tokens, "ports": ports, "containers": containers}
    finally:
        for container in reversed(containers):
            container.stop()


def api(deployed: dict[str, Any], method: str, path: str, **kw: Any) -> requests.Response:
    url = f"http://127.0.0.1:{deployed['ports']['shipyard']}/api/v1.0{path}"
    return requests.request(method, url, headers={
        "X-Auth-Token": deployed["tokens"]["admin"], **kw.pop("headers", {})}, timeout=60, **kw)


def test_every_container_runs_as_the_manifests_require(deployed: dict[str, Any]) -> None:
    for container in deployed["containers"]:
        assert container.running(), container.logs()[-2000:]
        status = container.exec("cat", "/proc/1/status").stdout
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        assert fields["Uid"].split() == [str(UID)] * 4
        caps = {name: value.strip() for name, value in fields.items() if name.startswith("Cap")}
        assert set(caps.values()) == {"0" * 16}, caps  # no capability at all
        assert container.exec("touch", "/opt/berth/x").returncode != 0  # read-only root
        assert container.inspect("{{.HostConfig.ReadonlyRootfs}}") == "true"
        logs = container.logs()  # no gunicorn control socket (it cannot be made read-only)
        assert "control socket" not in logs.lower() and "Control server" not in logs, logs[-2000:]


def test_redeploy_server_runs_to_completion_through_the_containers(
        deployed: dict[str, Any], site: Site) -> None:
    staged = api(deployed, "POST", "/configdocs/site", params={"buffermode": "replace"},
                 data=site.design_yaml(), headers={"Content-Type": "application/x-yaml"})
    assert staged.status_code == 201, staged.text
    assert api(deployed, "POST", "/commitconfigdocs").status_code == 200
    revision = max(int(r["id"]) for r in api(deployed, "GET", "/revisions").json()["results"])
    tagged = api(deployed, "POST", f"/revisions/{revision}/tags/site-action-success",
                 json={"dag_id": "image-test"})
    assert tagged.status_code == 201, tagged.text
    sim = site.urls["sitesim"]
    before = requests.get(f"{sim}/nodes/node04", timeout=10).json()
    created = api(deployed, "POST", "/actions", json={
        "name": "redeploy_server", "parameters": {"target_nodes": "node04"}})
    assert created.status_code == 201, created.text
    action_id = created.json()["id"]

    def finished() -> dict[str, Any] | None:
        view: dict[str, Any] = api(deployed, "GET", f"/actions/{action_id}").json()
        return view if view["state"] in ("complete", "failed", "stopped") else None

    view = wait_for(finished, 300, f"action {action_id}")
    logs = "\n".join(c.logs()[-1500:] for c in deployed["containers"])
    assert view["state"] == "complete", f"{view.get('message')}\n{logs}"
    assert {s["state"] for s in view["steps"]} == {"success"}
    seen = requests.get(f"{sim}/nodes/node04", timeout=10).json()
    assert seen["power"] == "on" and seen["maas_status"] == "Deployed"
    assert seen["kubernetes"]["ready"] and not seen["kubernetes"]["unschedulable"]
    assert seen["disks"]["sda"]["marker"] != before["disks"]["sda"]["marker"]
    # Drydock's API and worker containers kept the task designs with the one key they share
    assert (deployed["work"] / "drydock-designs.key").exists()
