"""One site YAML -> a running simulated site: model, Kubernetes, MAAS, BMCs, etcd, admin API."""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from sitesim.admin import AdminApp
from sitesim.bmc.ipmi import PyghmiBmcs
from sitesim.bmc.ipmisim import IpmiSimBmc
from sitesim.bmc.redfish import RedfishBmc, system_uuid
from sitesim.design import SiteEndpoints, design_documents, dump_documents
from sitesim.etcd.manager import EtcdManager
from sitesim.kube.binaries import kube_binaries
from sitesim.kube.controlplane import ControlPlane, KubeTimings
from sitesim.kube.faults import EvictionFaults
from sitesim.kube.sitekube import HostTimings, SiteKube, audit_args
from sitesim.maas.app import MaasApp
from sitesim.maas.machines import MachineStore
from sitesim.model import SiteModel
from sitesim.ports import free_port
from sitesim.scheduler import Scheduler
from sitesim.servers import ServerThread
from sitesim.siteconfig import NodeSpec, SiteSpec, load_site

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class SitePorts:
    """0 means a free port; `berth up` uses the fixed ports of the brief."""

    admin: int = 0
    kube: int = 0
    maas: int = 0
    redfish: int = 0
    ipmi_base: int = 0
    ironic: int = 0

    @classmethod
    def standard(cls) -> SitePorts:
        return cls(admin=7000, kube=6443, maas=5240, redfish=8000, ipmi_base=6230, ironic=6385)


PLANE_TIMINGS = ("node_lease_duration_s", "node_monitor_period_s", "node_monitor_grace_period_s",
                 "pod_ready_delay_ms")
HOST_TIMINGS = ("kubelet_shutdown_delay", "poll_interval")


def start_kube(model: SiteModel, port: int, workdir: Path) -> SiteKube:
    """A real control plane (built on first use) with a kwok kubelet per deployed server,
    and the demo workloads when the site has them."""
    raw = dict(model.spec.timings.kube)
    audit = workdir / "kube-audit"
    plane = ControlPlane(workdir / "kube", kube_binaries(build=True), port=port,
                         timings=KubeTimings(**{k: int(raw[k]) for k in PLANE_TIMINGS
                                                if k in raw}),
                         extra_apiserver_args=audit_args(audit))
    plane.start()
    kube = SiteKube(plane, model, HostTimings(**{k: float(raw[k]) for k in HOST_TIMINGS
                                                  if k in raw}), audit_log=audit / "audit.log")
    try:
        shutil.copyfile(plane.kubeconfig, workdir / "kubeconfig")
        kube.lease_namespace = kube.promenade_kubeconfig(workdir / "promenade.kubeconfig")
        seed_kube_nodes(model, kube)
        kube.seed_infrastructure()
        if model.spec.workloads:
            deployed = [n for n in model.spec.nodes if n.state == "deployed"]
            kube.seed_workloads([n.name for n in deployed if n.control_plane],
                                [n.name for n in deployed if not n.control_plane])
        evictions = EvictionFaults(kube, model.faults)
        model.on_fault_change(lambda _fault: evictions.apply())
        kube.on_tick(evictions.apply)
        evictions.apply()  # the site file's own faults
        kube.start()
    except BaseException:
        kube.stop()
        raise
    return kube


def seed_kube_nodes(model: SiteModel, cluster: SiteKube) -> None:
    for node in model.spec.nodes:
        if node.state == "deployed":
            cluster.add_node(node.name, dict(node.labels), ready=True,
                             control_plane=node.control_plane)
        if not node.kubelet_shutdown:
            cluster.set_kubelet_shutdown_enabled(node.name, False)


@dataclass
class Site:
    """A running simulated site; `start()` brings up everything, `stop()` stops it all."""

    spec: SiteSpec
    ports: SitePorts = field(default_factory=SitePorts)
    workdir: Path | None = None

    def __post_init__(self) -> None:
        self._stops: list[Callable[[], None]] = []
        self._own_workdir = self.workdir is None
        self.dir = Path(self.workdir or tempfile.mkdtemp(prefix=f"sitesim-{self.spec.name}-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.scheduler = Scheduler()
        self.model = SiteModel(self.spec, self.scheduler)
        self.urls: dict[str, str] = {}
        self.ipmi_ports: dict[str, int] = {}
        self.etcd: EtcdManager | None = None
        self.ipmi_sims: list[IpmiSimBmc] = []
        self.kube: SiteKube | None = None

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> Site:
        return cls(load_site(path), **kwargs)

    def start(self) -> Site:
        try:
            self._start_all()
        except BaseException:
            self.stop()
            raise
        return self

    def _serve(self, name: str, app: Any, port: int) -> ServerThread:
        server = ServerThread(app, port, name=name).start()
        self._stops.append(server.shutdown)
        self.urls[name] = server.url
        return server

    def _start_all(self) -> None:
        self._stops.append(self.scheduler.stop)
        self._serve("sitesim", AdminApp(self.model, self.info), self.ports.admin)
        if self.spec.kubernetes:
            self.kube = start_kube(self.model, self.ports.kube, self.dir)
            self._stops.append(self.kube.stop)
            self.model.kube = self.kube
            self.urls["kube"] = self.kube.url
        self.etcd = EtcdManager(self.model, self.dir)
        self._stops.append(self.etcd.stop)
        self.etcd.start()
        if self.kube is not None:
            self.kube.on_node_labels(self.etcd.on_node_labels)
        self._start_bmcs()
        store = MachineStore(self.model, self._power_parameters)
        for node in self.spec.nodes:
            store.enlist(node)
        self.model.on_power_change(store.on_power)
        maas = self._serve("maas", MaasApp(store, self.model, self.spec.maas_api_key),
                           self.ports.maas)
        self.urls["maas"] = f"{maas.url}/MAAS"
        if self.spec.provisioner == "ironic":
            self._start_ironic()

    def _start_ironic(self) -> None:
        """A real Ironic with every node of the site enrolled against the site's BMCs."""
        from sitesim.ironic.enroll import IronicEnroller
        from sitesim.ironic.hosts import IronicHosts
        from sitesim.ironic.server import IronicServer

        server = IronicServer(self.dir / "ironic", port=self.ports.ironic)
        self._stops.append(server.stop)
        server.start()
        self.urls["ironic"] = server.url
        boot = {name: f"file://{server.images / name}" for name in ("kernel", "ramdisk")}
        self.urls.update({f"ironic_{name}": url for name, url in boot.items()})
        hosts = IronicHosts(self.model, server.workdir / "http",
                            {n.name: n.mac for n in self.spec.nodes})
        self.model.on_power_change(hosts.on_power)  # deployed machines boot Ironic's iPXE
        enroller = IronicEnroller(server.url, boot)
        with ThreadPoolExecutor(max_workers=8, thread_name_prefix="ironic-enroll") as pool:
            for done in [pool.submit(enroller.enroll, node, self.model.node(node.name).bmc)
                         for node in self.spec.nodes]:
                done.result()

    def _start_bmcs(self) -> None:
        from sitesim.bmc.sushy_drivers import install_drivers  # sushy-tools: imported late

        redfish_nodes = [n for n in self.spec.nodes if n.bmc.type == "redfish"]
        redfish = self._serve("redfish",
                              RedfishBmc(self.model, redfish_nodes, install_drivers()),
                              self.ports.redfish)
        ipmi = [n for n in self.spec.nodes if n.bmc.type == "ipmi"]
        for index, node in enumerate(ipmi):
            self.ipmi_ports[node.name] = (self.ports.ipmi_base + index if self.ports.ipmi_base
                                          else free_port(socket.SOCK_DGRAM))
        pyghmi = PyghmiBmcs(self.model, [(n, self.ipmi_ports[n.name]) for n in ipmi
                                         if n.bmc.impl == "pyghmi"],
                            None if self.ports.ipmi_base else partial(free_port,
                                                                      socket.SOCK_DGRAM))
        self.ipmi_ports.update(pyghmi.ports)
        self._stops.append(pyghmi.stop)
        pyghmi.start()
        for node in ipmi:
            if node.bmc.impl == "ipmi_sim":
                sim = IpmiSimBmc(node, self.ipmi_ports[node.name], self.urls["sitesim"], self.dir)
                self._stops.append(sim.stop)
                self.ipmi_sims.append(sim)
                sim.start()
                self.model.bmc_switches[node.name] = sim.switch
        for node in self.spec.nodes:
            info: dict[str, Any] = {"type": node.bmc.type, "address": "127.0.0.1"}
            if node.bmc.type == "redfish":
                info.update(port=redfish.port, system_id=system_uuid(self.spec.name, node.name),
                            url=f"{redfish.url}/redfish/v1/Systems/"
                                f"{system_uuid(self.spec.name, node.name)}")
            else:
                info.update(port=self.ipmi_ports[node.name], impl=node.bmc.impl)
            self.model.set_bmc_info(node.name, info)

    def _power_parameters(self, name: str) -> dict[str, Any]:
        node = self.spec.node(name)
        bmc = self.model.node(name).bmc
        if node.bmc.type == "redfish":
            return {"power_type": "redfish", "power_address": f"127.0.0.1:{bmc['port']}",
                    "power_user": node.bmc.user, "power_pass": node.bmc.password,
                    "node_id": bmc["system_id"]}
        return {"power_type": "ipmi", "power_address": "127.0.0.1", "power_port": bmc["port"],
                "power_user": node.bmc.user, "power_pass": node.bmc.password,
                "power_driver": "LAN_2_0"}

    def stop(self) -> None:
        while self._stops:
            stop = self._stops.pop()
            try:
                stop()
            except Exception:  # keep stopping the rest
                LOG.exception("error while stopping part of the site")
        if self._own_workdir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def pids(self) -> list[int]:
        """Child processes of the site (etcd members, ipmi_sim, the Kubernetes control plane)."""
        sims = [s.process.pid for s in self.ipmi_sims if s.process is not None]
        kube = self.kube.plane.pids if self.kube else []
        return (self.etcd.pids() if self.etcd else []) + sims + kube

    # --- what the rest of Berth needs to know ----------------------------------------------
    def endpoints(self) -> SiteEndpoints:
        redfish_port = int(self.urls["redfish"].rsplit(":", 1)[1]) if "redfish" in self.urls \
            else 8000
        return SiteEndpoints(
            redfish_port=redfish_port, ipmi_ports=dict(self.ipmi_ports),
            system_ids={n.name: system_uuid(self.spec.name, n.name) for n in self.spec.nodes},
            etcd_endpoints={name: c.client_endpoints
                            for name, c in (self.etcd.clusters.items() if self.etcd else [])},
            etcd_peer_urls={name: {m.name: m.peer_url for m in c.members.values()}
                             for name, c in (self.etcd.clusters.items() if self.etcd else [])})

    def design_documents(self) -> list[dict[str, Any]]:
        docs = design_documents(self.spec, self.endpoints())
        for doc in docs:  # the design names the site's provisioner (drydock/Region/v1)
            if doc.get("schema") == "drydock/Region/v1" and self.spec.provisioner != "maas":
                doc["data"]["provisioner"] = self.spec.provisioner
        return docs

    def design_yaml(self) -> str:
        return dump_documents(self.design_documents())

    @property
    def kubeconfig(self) -> Path:
        """The cluster admin's kubeconfig (the operator's kubectl)."""
        return self.dir / "kubeconfig"

    @property
    def promenade_kubeconfig(self) -> Path:
        """Promenade's: the ServiceAccount bound to the role Berth ships, nothing more."""
        return self.dir / "promenade.kubeconfig"

    @property
    def lease_namespace(self) -> str:
        return self.kube.lease_namespace if self.kube is not None else "berth"

    def info(self) -> dict[str, Any]:
        return {"site": self.spec.name, "urls": dict(self.urls),
                "maas_api_key": self.spec.maas_api_key,
                "ipmi_ports": dict(self.ipmi_ports), "kubeconfig": str(self.kubeconfig),
                "etcd": {k: list(v) for k, v in self.endpoints().etcd_endpoints.items()}}

    def node_spec(self, name: str) -> NodeSpec:
        return self.spec.node(name)
