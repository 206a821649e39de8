"""A real Kubernetes control plane on loopback for the simulated site: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, and kwok acting as the kubelet of labelled nodes."""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from sitesim.etcd.cluster import EtcdCluster
from sitesim.kube.binaries import KubeBinaries, kube_binaries
from sitesim.kube.pki import ControlPlanePki, make_pki
from sitesim.ports import free_port
from sitesim.processes import stop_event_on_signals, terminate

# kwok runs the kubelet of a Node carrying this label. A label, because kwok stops running a
# node only when a label selector stops matching (the apiserver filters the watch; with an
# annotation selector kwok filters itself and ignores the change); in a kubernetes.io
# namespace, because Promenade's clear-labels keeps those as the kubelet's own.
KWOK_LABEL = "sitesim.kubernetes.io/kubelet"
KWOK_VALUE = "running"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
SITE_STAGES = Path(__file__).resolve().parent / "stages"


def kwok_node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node as its kubelet registers it, run by kwok (its label, kwok:// providerID)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  KWOK_LABEL: KWOK_VALUE, **(labels or {})}},
            "spec": {"providerID": f"kwok://{name}"}}


class ControlPlaneError(Exception):
    """A component of the control plane did not start or become ready."""


@dataclass(frozen=True)
class KubeTimings:
    """Node heartbeat and monitoring, scaled down from the defaults (lease 40 s, grace 50 s)
    as kwokctl's heartbeat factor does, so a silent node turns Unknown within seconds. This
    needs etcd >= 3.5.13 (the one built beside the binaries): against Debian's etcd 3.4 the
    apiserver refuses watch-list streams, kwok's lease cache goes stale, and nodes flap."""

    node_lease_duration_s: int = 8
    node_monitor_period_s: int = 2
    node_monitor_grace_period_s: int = 16
    pod_ready_delay_ms: int = 0  # a pod turns Running/Ready this long (up to 2x) after binding
    ready_timeout_s: float = 120.0


@dataclass
class _Component:
    name: str
    args: list[str]
    health_url: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)


class ControlPlane:
    """Starts the components in `state_dir` on free loopback ports; `stop()` ends exactly the
    processes it started, by PID, newest first."""

    def __init__(self, state_dir: Path, binaries: KubeBinaries,
                 timings: KubeTimings = KubeTimings(),
                 node_selector: str = f"{KWOK_LABEL}={KWOK_VALUE}",
                 extra_apiserver_args: Sequence[str] = (), port: int = 0) -> None:
        self.state_dir = state_dir.resolve()
        self.binaries = binaries
        self.timings = timings
        self.node_selector = node_selector
        self.extra_apiserver_args = tuple(extra_apiserver_args)  # e.g. an audit log's flags
        self.port = port or free_port()
        self.pki = ControlPlanePki(self.state_dir / "pki")
        self.kubeconfig = self.state_dir / "admin.kubeconfig"
        self._etcd: EtcdCluster | None = None
        self._components: list[_Component] = []

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pids(self) -> list[int]:
        own = [c.process.pid for c in self._components if c.process is not None]
        return (self._etcd.pids() if self._etcd is not None else []) + own

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """etcd, then kube-apiserver until /readyz, then the controllers and kwok."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            make_pki(self.pki.directory)
            self._write_kubeconfig()
            self._etcd = EtcdCluster("kube", ["kube"], self.state_dir,
                                     binary=str(self.binaries.etcd))
            self._etcd.start()
            self._launch(self._apiserver(self._etcd.client_endpoints[0]))
            self._wait_healthy(self._components[-1], "/readyz")
            for component in (self._controller_manager(), self._scheduler(), self._kwok()):
                self._launch(component)
            for component in self._components[1:]:
                self._wait_healthy(component, "/healthz")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for component in reversed(self._components):
            if component.process is not None:
                terminate(component.process)
                component.process = None
        self._components.clear()
        if self._etcd is not None:
            self._etcd.stop()
            self._etcd = None

    def ssl_context(self) -> ssl.SSLContext:
        """Trusts the site's CA and presents the admin client certificate."""
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return context

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """Run the built kubectl as the admin; its stdout, or ControlPlaneError with stderr."""
        done = subprocess.run([str(self.binaries.kubectl), f"--kubeconfig={self.kubeconfig}",
                               *args], input=stdin, capture_output=True, text=True,
                              timeout=120, check=False)
        if done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def service_account_token(self, namespace: str, name: str, seconds: int = 3600) -> str:
        """A token of the ServiceAccount from the TokenRequest API (what a pod is given)."""
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "spec": {"expirationSeconds": seconds}}).encode()
        request = urllib.request.Request(self.server + path, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30, context=self.ssl_context()) as reply:
            return str(json.loads(reply.read())["status"]["token"])

    def token_kubeconfig(self, path: Path, token: str) -> Path:
        """A kubeconfig at `path` that reaches the apiserver with `token`, trusting its CA
        (embedded: the file stands alone, e.g. mounted in a container)."""
        ca_data = base64.b64encode(self.pki.ca_cert.read_bytes()).decode()
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "sitesim",
            "clusters": [{"name": "sitesim", "cluster": {
                "server": self.server, "certificate-authority-data": ca_data}}],
            "users": [{"name": "token", "user": {"token": token}}],
            "contexts": [{"name": "sitesim", "context": {"cluster": "sitesim", "user": "token"}}],
        }
        path.write_text(json.dumps(config, indent=2) + "\n")
        path.chmod(0o600)
        return path

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "sitesim",
            "clusters": [{"name": "sitesim", "cluster": {
                "server": self.server, "certificate-authority": str(self.pki.ca_cert)}}],
            "users": [{"name": "admin", "user": {
                "client-certificate": str(self.pki.admin_cert),
                "client-key": str(self.pki.admin_key)}}],
            "contexts": [{"name": "sitesim", "context": {"cluster": "sitesim", "user": "admin"}}],
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2) + "\n")
        self.kubeconfig.chmod(0o600)

    def _apiserver(self, etcd_url: str) -> _Component:
        pki = self.pki
        return _Component("kube-apiserver", [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}", f"--cert-dir={self.state_dir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-account-issuer={SA_ISSUER}",
            f"--proxy-client-cert-file={pki.admin_cert}",
            f"--proxy-client-key-file={pki.admin_key}",
            "--authorization-mode=Node,RBAC",
            "--service-cluster-ip-range=10.96.0.0/16",
            # The kubernetes Service's endpoint would be 127.0.0.1, which Endpoints refuse.
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true", "--profiling=false",
            *self.extra_apiserver_args,
        ], self.server)

    def _component_serving(self, name: str) -> tuple[list[str], str]:
        port = free_port()
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={self.state_dir / (name + '-certs')}",
            "--leader-elect=false",
        ], f"https://127.0.0.1:{port}"

    def _controller_manager(self) -> _Component:
        serving, url = self._component_serving("kube-controller-manager")
        t = self.timings
        return _Component("kube-controller-manager", [
            str(self.binaries.kube_controller_manager), *serving,
            "--controllers=*",
            f"--node-monitor-period={t.node_monitor_period_s}s",
            f"--node-monitor-grace-period={t.node_monitor_grace_period_s}s",
            f"--root-ca-file={self.pki.ca_cert}",
            f"--service-account-private-key-file={self.pki.sa_key}",
            f"--cluster-signing-cert-file={self.pki.ca_cert}",
            f"--cluster-signing-key-file={self.pki.ca_key}",
            "--kube-api-qps=100", "--kube-api-burst=200",
        ], url)

    def _scheduler(self) -> _Component:
        serving, url = self._component_serving("kube-scheduler")
        return _Component("kube-scheduler", [str(self.binaries.kube_scheduler), *serving,
                                             "--kube-api-qps=100", "--kube-api-burst=200"], url)

    def _kwok(self) -> _Component:
        """kwok with its default Stages, those of the same file name in sitesim/kube/stages
        replacing them."""
        stages = {s.name: s for s in self.binaries.stages_dir.glob("*.yaml")}
        if not stages:
            raise ControlPlaneError(f"no kwok stages in {self.binaries.stages_dir}")
        stages.update({s.name: s for s in SITE_STAGES.glob("*.yaml")})
        config = self.state_dir / "kwok.yaml"
        config.write_text("---\n".join(self._stage_text(stages[name]) for name in sorted(stages)))
        port = free_port()
        return _Component("kwok", [
            str(self.binaries.kwok), f"--kubeconfig={self.kubeconfig}", f"--config={config}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-label-selector={self.node_selector}",
            f"--node-lease-duration-seconds={self.timings.node_lease_duration_s}",
            f"--server-address=127.0.0.1:{port}", "--cidr=10.244.0.1/16",
        ], f"http://127.0.0.1:{port}")

    def _stage_text(self, path: Path) -> str:
        stage = yaml.safe_load(path.read_text())
        delay = self.timings.pod_ready_delay_ms
        if stage["metadata"]["name"] == "pod-ready" and delay > 0:
            stage["spec"]["delay"] = {"durationMilliseconds": delay,
                                      "jitterDurationMilliseconds": 2 * delay}
        return str(yaml.safe_dump(stage, sort_keys=False))

    def _launch(self, component: _Component) -> None:
        log_path = self.state_dir / f"{component.name}.log"
        with open(log_path, "ab") as log:
            try:
                component.process = subprocess.Popen(component.args, stdout=log, stderr=log,
                                                     stdin=subprocess.DEVNULL)
            except OSError as exc:
                raise ControlPlaneError(f"cannot start {component.name}: {exc}") from exc
        self._components.append(component)

    def _wait_healthy(self, component: _Component, path: str) -> None:
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        context = self.ssl_context() if component.name == "kube-apiserver" else insecure
        deadline = time.monotonic() + self.timings.ready_timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            if component.process is None or component.process.poll() is not None:
                raise ControlPlaneError(f"{component.name} exited; see "
                                        f"{self.state_dir / (component.name + '.log')}")
            if component.health_url is None:
                return
            try:
                with urllib.request.urlopen(component.health_url + path, timeout=2,
                                            context=context) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise ControlPlaneError(f"{component.name} not healthy within "
                                f"{self.timings.ready_timeout_s:.0f}s: {last}")


def main(argv: list[str] | None = None) -> int:
    """`python -m sitesim.kube.controlplane up --dir X`: build if needed, start, wait for
    Ctrl-C or SIGTERM, stop."""
    parser = argparse.ArgumentParser(prog="python -m sitesim.kube.controlplane")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the control plane and keep it up until interrupted")
    up.add_argument("--dir", type=Path, required=True, help="state directory (wiped first)")
    args = parser.parse_args(argv)
    binaries = kube_binaries(build=True)
    shutil.rmtree(args.dir, ignore_errors=True)
    stop = stop_event_on_signals()
    with ControlPlane(args.dir, binaries) as plane:
        print(f"control plane up at {plane.server}; pids {plane.pids}", flush=True)
        print(f"export KUBECONFIG={plane.kubeconfig}; kubectl is {binaries.kubectl}", flush=True)
        print(f"nodes labelled {plane.node_selector} are run by kwok", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
