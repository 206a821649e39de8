"""The site YAML: parsed into frozen specs, every problem collected before anything starts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

BMC_TYPES = ("redfish", "ipmi")
IPMI_IMPLS = ("pyghmi", "ipmi_sim")
INITIAL_STATES = ("deployed", "ready", "new", "absent")
FAULT_OPERATIONS = (
    "maas.commission", "maas.deploy", "maas.release", "bmc.power", "bmc.erase",
    "kube.kubelet_shutdown", "kube.eviction", "etcd.member_down", "bmc.graceful_shutdown",
    "host.bootaction_key", "host.join_script",
)
FAULT_EFFECTS = ("fail", "hang", "ignore")
# bmc.graceful_shutdown takes only `ignore`: the host's OS ignores ACPI (the BMC accepts the
# request, the node stays on); no other operation takes it
IGNORED_ONLY = "bmc.graceful_shutdown"
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DEFAULT_KEY = "sitesim-consumer:sitesim-token:sitesim-secret"
PROVISIONERS = ("maas", "ironic")


class SiteConfigError(Exception):
    """A site YAML that cannot be started; `problems` lists every one found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid site YAML:\n  - " + "\n  - ".join(problems))


@dataclass(frozen=True)
class DiskSpec:
    name: str
    size_gb: int
    partitions: tuple[dict[str, Any], ...]
    secure_erase: bool = True        # the drive supports ATA/NVMe secure erase

    @property
    def is_os_disk(self) -> bool:
        return any((p.get("filesystem") or {}).get("mountpoint") == "/" for p in self.partitions)


@dataclass(frozen=True)
class BmcSpec:
    type: str
    impl: str
    user: str
    password: str
    ignore_graceful_shutdown: bool = False
    drive_erase: bool = True         # Redfish: the BMC offers Drive.SecureErase


@dataclass(frozen=True)
class NodeSpec:
    name: str
    rack: str
    tags: tuple[str, ...]
    labels: Mapping[str, str]
    control_plane: bool
    profile: str
    bmc: BmcSpec
    disks: tuple[DiskSpec, ...]
    state: str
    mac: str
    address: str
    kubelet_shutdown: bool = True


@dataclass(frozen=True)
class EtcdClusterSpec:
    name: str
    members: tuple[str, ...]
    minimum_healthy_members: int
    label: tuple[str, str] = ("kubernetes-etcd", "enabled")


@dataclass(frozen=True)
class FaultSpec:
    node: str
    operation: str
    effect: str


@dataclass(frozen=True)
class Timings:
    """Simulated durations in seconds."""

    commission: float = 1.0
    deploy: float = 2.0
    release: float = 0.5
    erase: float = 1.0
    power: float = 0.5
    graceful_shutdown: float = 1.0
    kube_ready: float = 1.0
    kube_not_ready: float = 1.0
    # A node's etcd that is not in the member list waits this long to be added (as a learner,
    # by Promenade's join-etcd) before it adds itself as a voter, as older anchors did.
    etcd_self_join: float = 20.0
    kube: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SiteSpec:
    name: str
    region: str
    nodes: tuple[NodeSpec, ...]
    etcd: tuple[EtcdClusterSpec, ...]
    faults: tuple[FaultSpec, ...]
    timings: Timings
    maas_api_key: str
    workloads: bool
    deployment: Mapping[str, Any]
    strategy: Mapping[str, Any] | None
    source: str = ""
    # drydock/Region/v1 failure_domains, as given (the design's schema checks them)
    failure_domains: tuple[Mapping[str, Any], ...] = ()
    # Who provisions the site's nodes: its MAAS, or a real Ironic started with the site.
    provisioner: str = "maas"
    # False: a site of servers with no cluster on them (provisioning only: nothing joins)
    kubernetes: bool = True

    def node(self, name: str) -> NodeSpec:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)


def load_site(path: str | Path) -> SiteSpec:
    """Read and validate a site YAML file."""
    text = Path(path).read_text()
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SiteConfigError([f"not valid YAML: {exc}"]) from exc
    return parse_site(raw, source=str(path))


def parse_site(raw: Any, *, source: str = "") -> SiteSpec:
    """Validate a parsed site YAML; raises SiteConfigError listing every problem."""
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise SiteConfigError(["the site YAML must be a mapping"])
    _check_keys(raw, {"site", "region", "defaults", "nodes", "etcd", "faults", "timings",
                      "maas", "workloads", "deployment_configuration",
                      "deployment_strategy", "failure_domains", "provisioner", "kubernetes"},
                "top level",
                problems)
    name = raw.get("site")
    if not isinstance(name, str) or not NAME_RE.match(name):
        problems.append("site: a lowercase name is required")
        name = "site"
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.append("defaults: must be a mapping")
        defaults = {}
    nodes = _parse_nodes(raw.get("nodes"), defaults, problems)
    names = [n.name for n in nodes]
    etcd = _parse_etcd(raw.get("etcd"), set(names), problems)
    faults = _parse_faults(raw.get("faults"), set(names), problems)
    timings = _parse_timings(raw.get("timings"), problems)
    maas = raw.get("maas") or {}
    key = maas.get("api_key", DEFAULT_KEY) if isinstance(maas, dict) else DEFAULT_KEY
    if not isinstance(key, str) or len(key.split(":")) != 3:
        problems.append("maas.api_key: must be 'consumer:token:secret'")
    deployment = raw.get("deployment_configuration") or {}
    if not isinstance(deployment, dict):
        problems.append("deployment_configuration: must be a mapping")
        deployment = {}
    strategy = raw.get("deployment_strategy")
    if strategy is not None and not (isinstance(strategy, dict)
                                     and isinstance(strategy.get("groups"), list)):
        problems.append("deployment_strategy: must be a mapping with a list of groups")
    domains = raw.get("failure_domains") or []
    if not isinstance(domains, list) or not all(isinstance(d, dict) for d in domains):
        problems.append("failure_domains: must be a list of mappings (name, by, budget)")
        domains = []
    provisioner = raw.get("provisioner", "maas")
    if provisioner not in PROVISIONERS:
        problems.append(f"provisioner: must be one of {', '.join(PROVISIONERS)}")
    kubernetes = raw.get("kubernetes", True)
    if not isinstance(kubernetes, bool):
        problems.append("kubernetes: must be true or false")
    if problems:
        raise SiteConfigError(problems)
    return SiteSpec(
        name=name, region=str(raw.get("region") or f"{name}-region"), nodes=tuple(nodes),
        etcd=tuple(etcd), faults=tuple(faults), timings=timings, maas_api_key=str(key),
        workloads=bool(raw.get("workloads", True)), deployment=deployment,
        strategy=strategy, source=source, failure_domains=tuple(domains),
        provisioner=str(provisioner), kubernetes=bool(kubernetes),
    )


def _check_keys(raw: Mapping[str, Any], allowed: set[str], where: str,
                problems: list[str]) -> None:
    for key in raw:
        if key not in allowed:
            problems.append(f"{where}: unknown key {key!r}")


def _parse_nodes(raw: Any, defaults: Mapping[str, Any], problems: list[str]) -> list[NodeSpec]:
    if not isinstance(raw, list) or not raw:
        problems.append("nodes: a non-empty list is required")
        return []
    out: list[NodeSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"nodes[{index}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: must be a mapping")
            continue
        node = _parse_node(item, defaults, index, where, problems)
        if node is None:
            continue
        if node.name in seen:
            problems.append(f"{where}: duplicate node name {node.name!r}")
        seen.add(node.name)
        out.append(node)
    return out


def _parse_node(item: Mapping[str, Any], defaults: Mapping[str, Any], index: int, where: str,
                problems: list[str]) -> NodeSpec | None:
    _check_keys(item, {"name", "rack", "tags", "labels", "control_plane", "profile", "bmc",
                       "disks", "state", "mac", "address", "kubelet_shutdown"}, where, problems)
    name = item.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        problems.append(f"{where}: name must be a lowercase DNS label, got {name!r}")
        return None
    where = f"node {name}"
    rack = item.get("rack")
    if not isinstance(rack, str) or not rack:
        problems.append(f"{where}: rack is required")
        rack = ""
    tags = item.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.append(f"{where}: tags must be a list of strings")
        tags = []
    labels = item.get("labels") or {}
    if not isinstance(labels, dict):
        problems.append(f"{where}: labels must be a mapping")
        labels = {}
    state = item.get("state", defaults.get("state", "deployed"))
    if state not in INITIAL_STATES:
        problems.append(f"{where}: state must be one of {', '.join(INITIAL_STATES)}")
    bmc = _parse_bmc(item.get("bmc"), defaults.get("bmc") or {}, where, problems)
    disks = _parse_disks(item.get("disks", defaults.get("disks")), where, problems)
    control = item.get("control_plane", "control" in tags)
    return NodeSpec(
        name=name, rack=rack, tags=tuple(tags),
        labels={str(k): str(v) for k, v in labels.items()},
        control_plane=bool(control), profile=str(item.get("profile") or
                                                 (tags[0] if tags else "default")),
        bmc=bmc, disks=disks, state=str(state),
        mac=str(item.get("mac") or _mac(index + 1)),
        address=str(item.get("address") or f"10.23.{index // 250}.{index % 250 + 2}"),
        kubelet_shutdown=bool(item.get("kubelet_shutdown", True)),
    )


def _mac(index: int) -> str:
    return f"52:54:00:{(index >> 16) & 0xFF:02x}:{(index >> 8) & 0xFF:02x}:{index & 0xFF:02x}"


def _parse_bmc(raw: Any, defaults: Mapping[str, Any], where: str,
               problems: list[str]) -> BmcSpec:
    merged = {**defaults, **(raw or {})} if isinstance(raw, dict) or raw is None else None
    if merged is None:
        problems.append(f"{where}: bmc must be a mapping")
        merged = {}
    btype = merged.get("type", "redfish")
    if btype not in BMC_TYPES:
        problems.append(f"{where}: bmc.type must be redfish or ipmi, got {btype!r}")
    impl = merged.get("impl", "pyghmi" if btype == "ipmi" else "sushy")
    if btype == "ipmi" and impl not in IPMI_IMPLS:
        problems.append(f"{where}: bmc.impl must be pyghmi or ipmi_sim, got {impl!r}")
    user, password = merged.get("user", "admin"), merged.get("password", "password")
    if not isinstance(user, str) or not user or not isinstance(password, str) or not password:
        problems.append(f"{where}: bmc.user and bmc.password must be non-empty strings")
    return BmcSpec(type=str(btype), impl=str(impl), user=str(user), password=str(password),
                   ignore_graceful_shutdown=bool(merged.get("ignore_graceful_shutdown", False)),
                   drive_erase=bool(merged.get("drive_erase", True)))


DEFAULT_DISKS: list[dict[str, Any]] = [
    {"name": "sda", "size_gb": 100, "partitions": [
        {"name": "boot", "size": "1g", "filesystem": {"mountpoint": "/boot", "fstype": "ext4"}},
        {"name": "root", "size": "50g", "filesystem": {"mountpoint": "/", "fstype": "ext4"}},
        {"name": "var", "size": ">40g", "filesystem": {"mountpoint": "/var", "fstype": "xfs"}},
    ]},
    {"name": "sdb", "size_gb": 500, "partitions": [
        {"name": "data", "size": ">400g", "filesystem": {"mountpoint": "/var/lib/data",
                                                         "fstype": "xfs"}},
    ]},
]


def _parse_disks(raw: Any, where: str, problems: list[str]) -> tuple[DiskSpec, ...]:
    raw = DEFAULT_DISKS if raw is None else raw
    if not isinstance(raw, list) or not raw:
        problems.append(f"{where}: disks must be a non-empty list")
        return ()
    disks = []
    for disk in raw:
        if not isinstance(disk, dict) or not isinstance(disk.get("name"), str):
            problems.append(f"{where}: each disk needs a name")
            continue
        parts = disk.get("partitions") or []
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            problems.append(f"{where}: disk {disk['name']}: partitions must be a list of mappings")
            parts = []
        disks.append(DiskSpec(name=disk["name"], size_gb=int(disk.get("size_gb", 100)),
                              partitions=tuple(parts),
                              secure_erase=bool(disk.get("secure_erase", True))))
    if disks and sum(1 for d in disks if d.is_os_disk) != 1:
        problems.append(f"{where}: exactly one disk must hold the partition mounted at /")
    return tuple(disks)


def _parse_etcd(raw: Any, names: set[str], problems: list[str]) -> list[EtcdClusterSpec]:
    if raw is None:
        return []
    clusters = raw.get("clusters") if isinstance(raw, dict) else None
    if not isinstance(clusters, list):
        problems.append("etcd: must be a mapping with a list of clusters")
        return []
    out = []
    for index, item in enumerate(clusters):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            problems.append(f"etcd.clusters[{index}]: needs a name")
            continue
        members = item.get("members") or []
        if not isinstance(members, list) or not members:
            problems.append(f"etcd cluster {item['name']}: members must be a non-empty list")
            members = []
        for member in members:
            if member not in names:
                problems.append(f"etcd cluster {item['name']}: member {member!r} is not a node")
        minimum = item.get("minimum_healthy_members", len(members) // 2 + 1)
        if not isinstance(minimum, int) or not 0 < minimum <= max(len(members), 1):
            problems.append(f"etcd cluster {item['name']}: minimum_healthy_members must be "
                            f"between 1 and the number of members")
            minimum = 1
        label = item.get("label") or {"kubernetes-etcd": "enabled"}
        key, value = next(iter(label.items())) if isinstance(label, dict) and label else ("", "")
        out.append(EtcdClusterSpec(name=item["name"], members=tuple(members),
                                   minimum_healthy_members=minimum, label=(key, str(value))))
    return out


def _parse_faults(raw: Any, names: set[str], problems: list[str]) -> list[FaultSpec]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append("faults: must be a list")
        return []
    out = []
    for index, item in enumerate(raw):
        try:
            out.append(parse_fault(item, names))
        except SiteConfigError as exc:
            problems.extend(f"faults[{index}]: {p}" for p in exc.problems)
    return out


def parse_fault(item: Any, names: set[str]) -> FaultSpec:
    """Validate one fault `{node, operation, effect}` against the site's node names."""
    if not isinstance(item, dict):
        raise SiteConfigError(["a fault must be an object {node, operation, effect}"])
    problems = []
    for key in item:
        if key not in ("node", "operation", "effect"):
            problems.append(f"unknown field {key!r}")
    if item.get("node") not in names:
        problems.append(f"node: {item.get('node')!r} is not a node of this site")
    if item.get("operation") not in FAULT_OPERATIONS:
        problems.append(f"operation: must be one of {', '.join(FAULT_OPERATIONS)}")
    if item.get("effect") not in FAULT_EFFECTS:
        problems.append("effect: must be fail or hang (ignore for bmc.graceful_shutdown)")
    elif (item.get("effect") == "ignore") != (item.get("operation") == IGNORED_ONLY) \
            and item.get("operation") in FAULT_OPERATIONS:
        problems.append(f"effect: {IGNORED_ONLY} takes ignore, and only it does")
    if problems:
        raise SiteConfigError(problems)
    return FaultSpec(node=item["node"], operation=item["operation"], effect=item["effect"])


KUBE_TIMINGS = {
    "node_lease_duration_s": "kwok's node lease duration (it renews every quarter of it)",
    "node_monitor_period_s": "how often the node-lifecycle controller looks",
    "node_monitor_grace_period_s": "silence after which a node turns Unknown",
    "pod_ready_delay_ms": "a pod turns Ready this long (up to twice) after it is bound",
    "kubelet_shutdown_delay": "seconds the kubelet-shutdown pod's script takes",
    "poll_interval": "how often the hosts look at the cluster",
}


def _parse_kube_timings(raw: Any, problems: list[str]) -> dict[str, float]:
    if not isinstance(raw, dict):
        problems.append("timings.kube: must be a mapping")
        return {}
    values: dict[str, float] = {}
    for key, value in raw.items():
        if key not in KUBE_TIMINGS:
            problems.append(f"timings.kube: unknown key {key!r} (known: "
                            f"{', '.join(sorted(KUBE_TIMINGS))})")
        elif not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            problems.append(f"timings.kube.{key}: must be a number >= 0")
        else:
            values[key] = float(value)
    return values


def _parse_timings(raw: Any, problems: list[str]) -> Timings:
    if raw is None:
        return Timings()
    if not isinstance(raw, dict):
        problems.append("timings: must be a mapping")
        return Timings()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "kube":
            values[key] = _parse_kube_timings(value, problems)
        elif key not in Timings.__dataclass_fields__:
            problems.append(f"timings: unknown key {key!r}")
        elif not isinstance(value, int | float) or value < 0:
            problems.append(f"timings.{key}: must be a number of seconds >= 0")
        else:
            values[key] = float(value)
    return Timings(**values)
