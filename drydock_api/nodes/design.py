"""The design's nodes: BaremetalNode documents with HostProfile applied, credentials resolved."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from common.documents import Document, doc_ref
from common.jsontypes import JSON, JSONObject, as_int, as_list, as_object
from common.status import Message, validation_message
from drydock_api.drivers.ports import DEFAULT_PROVISIONER, BmcAccess
from drydock_api.nodes import power

NODE = "drydock/BaremetalNode/v1"
PROFILE = "drydock/HostProfile/v1"
REGION = "drydock/Region/v1"
PASSPHRASE = "deckhand/Passphrase/v1"
RACK = "drydock/Rack/v1"
DEFAULT_PORTS = {"redfish": 443, "ipmi": 623}


@dataclass(frozen=True)
class NodeDef:
    """One node of the design, with its host profile applied."""

    name: str
    rack: str | None
    tags: tuple[str, ...]
    labels: dict[str, str]
    oob_type: str | None
    oob_address: str | None
    oob_port: int | None
    bmc: BmcAccess | None
    disks: tuple[str, ...]
    os_disk: str | None
    data: JSONObject = field(repr=False, default_factory=dict)
    provisioner: str = DEFAULT_PROVISIONER  # the design's Region's


@dataclass
class Design:
    """Nodes by name plus rack labels and every problem found while reading them."""

    nodes: dict[str, NodeDef]
    rack_labels: dict[str, dict[str, str]]
    problems: list[Message]
    power_grace: float | None = None  # Region power.grace_period: the site-wide default
    provisioner: str = DEFAULT_PROVISIONER  # Region provisioner: maas or ironic


def merge(base: JSON, over: JSON) -> JSON:
    """Host-profile inheritance: dicts merged recursively, anything else the node wins."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = merge(base.get(key), value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(over)


def _mounts_root(entry: JSON) -> bool:
    return as_object(as_object(entry).get("filesystem")).get("mountpoint") == "/"


def os_disk_of(storage: JSON) -> str | None:
    """The physical device holding the partition mounted at `/` (directly or via a VG)."""
    if not isinstance(storage, dict):
        return None
    for name, dev in as_object(storage.get("physical_devices")).items():
        if any(_mounts_root(part) for part in as_list(as_object(dev).get("partitions"))):
            return str(name)
    for group in as_object(storage.get("volume_groups")).values():
        if any(_mounts_root(lv) for lv in as_list(as_object(group).get("logical_volumes"))):
            pvs = as_list(as_object(group).get("physical_devices"))
            return str(pvs[0]) if pvs else None
    return None


def _passphrases(docs: list[Document]) -> dict[str, str]:
    return {doc_ref(d)["name"]: str(d.get("data")) for d in docs if d.get("schema") == PASSPHRASE}


def _problem(text: str, check: str, doc: Document) -> Message:
    return validation_message(text, name=check, documents=[doc_ref(doc)])


def _credential(oob: JSONObject, secrets: dict[str, str], doc: Document,
                problems: list[Message]) -> str | None:
    cred = oob.get("credential")
    if isinstance(cred, dict) and isinstance(cred.get("passphrase"), str):
        if cred["passphrase"] not in secrets:
            problems.append(_problem(f"Node {doc_ref(doc)['name']}: oob.credential references "
                                     f"unknown Passphrase {cred['passphrase']}",
                                     "MissingOobCredential", doc))
            return None
        return secrets[cred["passphrase"]]
    if isinstance(cred, str) and cred:
        return cred
    problems.append(_problem(f"Node {doc_ref(doc)['name']}: no oob.credential",
                             "MissingOobCredential", doc))
    return None


def provisioner_of(docs: list[Document]) -> str:
    """The Region's `provisioner` (maas when no Region names one)."""
    for doc in docs:
        data = doc.get("data")
        if doc.get("schema") == REGION and isinstance(data, dict) and data.get("provisioner"):
            return str(data["provisioner"])
    return DEFAULT_PROVISIONER


def _bmc(name: str, data: JSONObject, secrets: dict[str, str], doc: Document,
         problems: list[Message], provisioner: str = DEFAULT_PROVISIONER
         ) -> tuple[str | None, str | None, int | None, BmcAccess | None]:
    oob = as_object(data.get("oob"))
    otype = oob.get("type")
    if not isinstance(otype, str) or otype not in DEFAULT_PORTS:
        problems.append(_problem(f"Node {name}: oob.type must be redfish or ipmi, got {otype!r}",
                                 "InvalidOobType", doc))
        return None, None, None, None
    found = next((a.get("address") for a in as_list(data.get("addressing"))
                  if isinstance(a, dict) and a.get("network") == oob.get("network")), None)
    address = str(found) if found else None
    if not address:
        problems.append(_problem(f"Node {name}: no address on oob network "
                                 f"{oob.get('network')!r}", "MissingOobAddress", doc))
    port = as_int(oob.get("port") or DEFAULT_PORTS[otype])
    account = oob.get("account")
    if not isinstance(account, str) or not account:
        problems.append(_problem(f"Node {name}: no oob.account", "MissingOobCredential", doc))
    cred = _credential(oob, secrets, doc, problems)
    bmc = None
    if address and isinstance(account, str) and account and cred is not None:
        sid = oob.get("system_id")
        bmc = BmcAccess(type=otype, address=address, port=port, account=account,
                        credential=cred, system_id=str(sid) if sid else None,
                        provisioner=provisioner)
    return otype, address, port, bmc


def _profile_chain(name: str, profiles: dict[str, Document]) -> list[Document] | None:
    """The profile and its ancestors, root first; None when one is missing or a cycle."""
    chain: list[Document] = []
    seen: set[str] = set()
    current: str | None = name
    while current:
        if current in seen or current not in profiles:
            return None
        seen.add(current)
        chain.insert(0, profiles[current])
        parent = (profiles[current].get("data") or {}).get("host_profile")
        current = str(parent) if parent else None
    return chain


def _node(doc: Document, profiles: dict[str, Document], secrets: dict[str, str],
          problems: list[Message], provisioner: str = DEFAULT_PROVISIONER) -> NodeDef:
    name = doc_ref(doc)["name"]
    raw = doc.get("data") if isinstance(doc.get("data"), dict) else {}
    data: JSONObject = dict(raw or {})
    profile_name = data.get("host_profile")
    if profile_name:
        chain = _profile_chain(str(profile_name), profiles)
        if chain is None:
            problems.append(_problem(f"Node {name}: unknown host profile {profile_name} (or a "
                                     f"profile it inherits from is missing or circular)",
                                     "UnknownHostProfile", doc))
        else:
            inherited: JSON = {}
            for prof in chain:
                inherited = merge(inherited, prof.get("data") or {})
            data = as_object(merge(inherited, data))
    otype, address, port, bmc = _bmc(name, data, secrets, doc, problems, provisioner)
    meta = as_object(data.get("metadata"))
    storage = as_object(data.get("storage"))
    devices = storage.get("physical_devices") or {}
    os_disk = os_disk_of(storage)
    if os_disk is None:
        problems.append(_problem(f"Node {name}: no identifiable OS disk (no partition mounted "
                                 f"at /)", "NoOsDisk", doc))
    labels = meta.get("owner_data") or {}
    rack = meta.get("rack")
    return NodeDef(
        name=name, rack=None if rack is None else str(rack),
        tags=tuple(str(t) for t in as_list(meta.get("tags"))),
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        oob_type=otype, oob_address=address, oob_port=port, bmc=bmc,
        disks=tuple(str(d) for d in devices) if isinstance(devices, dict) else (),
        os_disk=os_disk, data=data, provisioner=provisioner)


def parse_design(docs: list[Document]) -> Design:
    """Every BaremetalNode of `docs` with its profile applied; problems are collected."""
    problems: list[Message] = []
    profiles: dict[str, Document] = {}
    for doc in docs:
        if doc.get("schema") == PROFILE:
            profiles[doc_ref(doc)["name"]] = doc
    secrets = _passphrases(docs)
    provisioner = provisioner_of(docs)
    nodes: dict[str, NodeDef] = {}
    for doc in docs:
        if doc.get("schema") != NODE:
            continue
        node = _node(doc, profiles, secrets, problems, provisioner)
        if node.name in nodes:
            problems.append(_problem(f"Duplicate node name {node.name}", "DuplicateNode", doc))
        nodes[node.name] = node
    problems += [validation_message(p, name="PowerSettings")
                 for p in power.design_problems(docs)]
    return Design(nodes=nodes, rack_labels=_rack_labels(docs), problems=problems,
                  power_grace=power.design_grace(docs), provisioner=provisioner)


def _rack_labels(docs: list[Document]) -> dict[str, dict[str, str]]:
    """Rack labels: `drydock/Rack/v1` docs (`data.labels`) or Region `data.racks`."""
    out: dict[str, dict[str, str]] = {}
    for doc in docs:
        labels = (doc.get("data") or {}).get("labels") if doc.get("schema") == RACK else None
        if isinstance(labels, dict):
            out[doc_ref(doc)["name"]] = {str(k): str(v) for k, v in labels.items()}
    for doc in docs:
        if doc.get("schema") != REGION or not isinstance(doc.get("data"), dict):
            continue
        racks = doc["data"].get("racks") or {}
        if isinstance(racks, dict):
            for rack, spec in racks.items():
                labels = (spec or {}).get("labels") if isinstance(spec, dict) else None
                if isinstance(labels, dict):
                    out[str(rack)] = {str(k): str(v) for k, v in labels.items()}
        elif isinstance(racks, list):
            for spec in racks:
                if isinstance(spec, dict) and spec.get("name"):
                    out[str(spec["name"])] = {str(k): str(v)
                                              for k, v in (spec.get("labels") or {}).items()}
    return out
