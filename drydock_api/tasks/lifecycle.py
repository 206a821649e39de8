"""prepare_nodes and deploy_nodes, per node: enlist, commission, storage, deploy (to MAAS
Deployed; whether the Kubernetes node is Ready is Shipyard's wait_node_ready)."""

from __future__ import annotations

import base64
import re

import yaml

from common.jsontypes import JSON, JSONObject, as_list, as_object, member
from common.workflow import Done, Failed, Outcome, Retry
from drydock_api.drivers.ports import BlockDevice, Machine
from drydock_api.tasks import bmccheck
from drydock_api.tasks.context import NodeContext, NodeStep, node_step

COMMISSIONED = ("Ready", "Allocated", "Deployed", "Deploying")
COMMISSIONABLE = ("New", "Failed commissioning")
BUSY = ("Commissioning", "Testing", "Releasing", "Disk erasing", "Deploying")
SIZE_RE = re.compile(r"^\s*(>)?\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*$", re.IGNORECASE)
UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
KEY_TAG = "__baid__"  # MAAS tag <hostname>__baid__<key>: the node's boot action key (Airship)
BOOTACTION_API_FILE = "/etc/drydock/bootaction-api"


def _machine(ctx: NodeContext) -> Machine | None:
    return ctx.ports.machines.find_machine(ctx.node.name)


def _boot_mac(ctx: NodeContext) -> str | None:
    mac = member(ctx.node.data, "metadata", "boot_mac")
    return str(mac).lower() if mac else None


def enlist(ctx: NodeContext) -> Outcome:
    """Known to MAAS (by hostname, or by boot MAC and renamed) → done. Otherwise PXE boot it
    once through its BMC and power-cycle it, then wait for MAAS to enlist it."""
    machines, node, state = ctx.ports.machines, ctx.node, ctx.state
    machine = _machine(ctx)
    if machine is not None:
        how = "enlisted after PXE boot" if state.get("pxe_at") else "already known"
        return Done(f"{ctx.ports.provisioner} {how}: {machine.system_id} "
                    f"({machine.status_name})",
                    output={"system_id": machine.system_id, "pxe": bool(state.get("pxe_at"))})
    mac = _boot_mac(ctx)
    found = machines.find_by_mac(mac) if mac else None
    if found is not None:
        renamed = machines.rename(found.system_id, node.name)
        return Done(f"{ctx.ports.provisioner} knew boot MAC {mac} as {found.hostname}: "
                    f"renamed to {node.name}",
                    output={"system_id": renamed.system_id, "pxe": bool(state.get("pxe_at"))})
    asked = state.get("pxe")
    if asked is None or "error" in as_object(asked):  # never asked, or the BMC refused: ask (again)
        bmc = node.bmc
        if bmc is None:
            return Failed("NoOobAccess", f"Node {node.name} is unknown to "
                          f"{ctx.ports.provisioner} and has no usable "
                          f"oob access to PXE boot it")
        refused = bmccheck.gate(ctx)
        if refused is not None:
            return refused
        boot, power = ctx.ports.boot, ctx.ports.power

        def pxe_boot() -> None:
            boot.set_pxe_boot(bmc)
            power.power_cycle(bmc)

        ctx.ask("pxe", "PXE boot and power cycle", pxe_boot, bmc=bmc.describe())
        state["pxe_at"] = ctx.clock()
        return Retry(ctx.settings.maas_poll, "PXE boot and power cycle requested")
    return Retry(ctx.settings.maas_poll,
                 f"waiting for {ctx.ports.provisioner} to enlist the machine")


def commission(ctx: NodeContext) -> Outcome:
    """New or Failed commissioning → commission (once) and wait for Ready."""
    machines, state, who = ctx.ports.machines, ctx.state, ctx.ports.provisioner
    machine = _machine(ctx)
    if machine is None:
        return Failed("MachineGone", f"{who} no longer knows the machine")
    status = machine.status_name
    if status in COMMISSIONED:
        how = "commissioned" if state.get("requested") else f"{status}, no commissioning needed"
        return Done(f"{who}: {how}", output={"status": status})
    if status == "Failed commissioning" and state.get("requested"):
        return Failed("CommissioningFailed",
                      f"{who} failed to commission {ctx.node.name}: {_detail(machine)}",
                      details={"maas_status": status})
    if status in COMMISSIONABLE:
        machines.commission(machine.system_id)
        state["requested"] = True
        return Retry(ctx.settings.maas_poll, "commissioning requested")
    if status in BUSY:
        return Retry(ctx.settings.maas_poll, f"{who} status {status}")
    return Failed("NotCommissionable",
                  f"{who} status {status}: cannot commission; release or fix the machine first",
                  details={"maas_status": status})


def _detail(machine: Machine) -> str:
    msg = machine.status_message
    return machine.status_name + (f": {msg}" if msg and msg != machine.status_name else "")


def parse_size(text: JSON) -> int | None:
    """'50g' → bytes; '>40g' → None (the rest of the disk). ValueError when unreadable."""
    match = SIZE_RE.match(str(text))
    if not match:
        raise ValueError(f"unreadable partition size {text!r}")
    if match.group(1):
        return None
    return int(float(match.group(2)) * UNITS[match.group(3).lower()])


def _wanted(spec: JSON) -> list[tuple[JSON, str | None, str | None]]:
    out = []
    for part in as_list(member(spec, "partitions")):
        fs = as_object(member(part, "filesystem"))
        fstype, mount = fs.get("fstype"), fs.get("mountpoint")
        out.append((member(part, "size"), None if fstype is None else str(fstype),
                    None if mount is None else str(mount)))
    return out


def _lay_out(ctx: NodeContext, system_id: str, device: BlockDevice,
             wanted: list[tuple[JSON, str | None, str | None]]) -> None:
    storage = ctx.ports.storage
    for part in device.partitions:
        storage.delete_partition(system_id, device.id, part.id)
    if device.fstype:
        storage.unformat_device(system_id, device.id)
    for size, fstype, mount in wanted:
        part_id = storage.create_partition(system_id, device.id, parse_size(size))
        if fstype:
            storage.format_partition(system_id, device.id, part_id, fstype, mount)


def _kept(ctx: NodeContext) -> list[str]:
    records = ctx.ports.records
    return records.kept_disks(ctx.node.name) if records is not None else []


def _leave_unused(ctx: NodeContext, system_id: str, device: BlockDevice) -> None:
    """A kept disk: no partition or filesystem in MAAS's layout, so curtin never touches it
    (these are record edits; no byte on the disk changes)."""
    storage = ctx.ports.storage
    for part in device.partitions:
        storage.delete_partition(system_id, device.id, part.id)
    if device.fstype:
        storage.unformat_device(system_id, device.id)


def kept_mounts(ctx: NodeContext) -> list[list[str]]:
    """cloud-init `mounts` entries for the kept disks' existing filesystems, as designed:
    partition n of the design is /dev/<disk><n>."""
    devices = as_object(member(ctx.node.data, "storage", "physical_devices"))
    out = []
    for name in _kept(ctx):
        for index, (_, fstype, mount) in enumerate(_wanted(devices.get(name)), start=1):
            if mount:
                out.append([f"/dev/{name}{index}", str(mount), str(fstype or "auto"),
                            "defaults,nofail", "0", "2"])
    return out


def user_data(ctx: NodeContext, bootaction_api: str | None = None) -> str | None:
    """cloud-init user data: the kept disks' mounts, and where the node's boot action
    agent reaches Drydock (/etc/drydock/bootaction-api) when it has boot actions."""
    mounts = kept_mounts(ctx)
    config: JSONObject = {"mounts": [list[JSON](m) for m in mounts]} if mounts else {}
    if bootaction_api:
        config["write_files"] = [{"path": BOOTACTION_API_FILE, "permissions": "0644",
                                  "content": bootaction_api + "\n"}]
    if not config:
        return None
    text = "#cloud-config\n" + yaml.safe_dump(config, default_flow_style=None)
    return base64.b64encode(text.encode()).decode()


def hand_over_boot_actions(ctx: NodeContext, system_id: str) -> str | None:
    """As Airship's Drydock: record the node's boot actions under a new key and hand the key
    to the machine as the MAAS tag <hostname>__baid__<key> (earlier ones deleted). Returns
    the boot action API for the user data, or None when no boot action applies."""
    port, site, name = ctx.ports.bootactions, ctx.ports.site, ctx.node.name
    if port is None:
        return None
    for tag in site.tags():
        if tag.startswith(f"{name}{KEY_TAG}"):
            site.delete_tag(tag)
    begun = port.begin(name, ctx.task, ctx.design_ref, ctx.request)
    if begun is None:
        return None
    key, actions = begun
    tag = f"{name}{KEY_TAG}{key}"
    site.create_tag(tag, "boot action key")
    site.tag_machine(tag, system_id)
    ctx.state["bootactions"] = [*actions]
    ctx.message({"message": f"Boot actions {', '.join(str(a['action_name']) for a in actions)} "
                 f"for {name}; key handed over in its {ctx.ports.provisioner} tag "
                 f"{name}{KEY_TAG}…",
                 "error": False, "kind": "SimpleMessage", "node": name,
                 "bootactions": actions})
    return port.report_url


def apply_storage(ctx: NodeContext) -> Outcome:
    """Make MAAS's storage configuration match the design, disk by disk; a disk already laid
    out as designed is left as it is. Disks kept by a preserving teardown are left out of the
    layout (unpartitioned, unformatted): deploy mounts their existing filesystems instead."""
    machine = _machine(ctx)
    if machine is None:
        return Failed("MachineGone", f"{ctx.ports.provisioner} no longer knows the machine")
    if machine.status_name in ("Deployed", "Deploying"):
        return Done(f"{machine.status_name}: storage left as it is")
    devices = as_object(member(ctx.node.data, "storage", "physical_devices"))
    have = {d.name: d for d in ctx.ports.storage.block_devices(machine.system_id)}
    missing = sorted(n for n in devices if n not in have)
    if missing:
        return Failed("DiskMissing", f"{ctx.ports.provisioner} found no disk "
                      f"{', '.join(missing)} on {ctx.node.name} "
                      f"(found: {', '.join(sorted(have)) or 'none'})")
    changed, kept, preserved = [], [], []
    keep = set(_kept(ctx))
    for name, spec in devices.items():
        if name in keep:
            _leave_unused(ctx, machine.system_id, have[name])
            preserved.append(name)
            continue
        wanted = _wanted(spec)
        current = [(p.fstype, p.mount_point) for p in have[name].partitions]
        if current == [(f, m) for _, f, m in wanted] and not have[name].fstype:
            kept.append(name)
            continue
        _lay_out(ctx, machine.system_id, have[name], wanted)
        changed.append(name)
    parts = [f"laid out {', '.join(changed)}"] if changed else []
    parts += [f"{', '.join(kept)} already as designed"] if kept else []
    parts += [f"{', '.join(preserved)} kept out of the layout (preserved data, mounted as it "
              "is at deploy)"] if preserved else []
    return Done("Storage: " + "; ".join(parts or ["no disks in the design"]),
                output={"changed": changed, "kept": kept, "preserved": preserved})


def _platform(ctx: NodeContext, key: str) -> str:
    return str(member(ctx.node.data, "platform", key) or "")


def deploy(ctx: NodeContext) -> Outcome:
    """Allocate and deploy with the design's image (once); wait for Deployed."""
    machines, state, who = ctx.ports.machines, ctx.state, ctx.ports.provisioner
    machine = _machine(ctx)
    if machine is None:
        return Failed("MachineUnknown", f"{who} does not know the machine: run prepare_nodes "
                      "first")
    status = machine.status_name
    if status == "Deployed":
        how = "deployed" if state.get("requested") else "already deployed, left untouched"
        return Done(f"{who}: {how}", output={"already": not state.get("requested")})
    if status == "Failed deployment" and state.get("requested"):
        return Failed("DeploymentFailed",
                      f"{who} failed to deploy {ctx.node.name}: {_detail(machine)}",
                      details={"maas_status": status})
    if status in BUSY:
        return Retry(ctx.settings.maas_poll, f"{who} status {status}")
    if status == "Ready":
        machines.allocate(machine.system_id)
        status = "Allocated"
    if status == "Allocated":
        image, kernel = _platform(ctx, "image"), _platform(ctx, "kernel")
        if ctx.ports.records is not None:  # the disks are written again: a new life
            ctx.ports.records.end_teardown(ctx.node.name)
        api = hand_over_boot_actions(ctx, machine.system_id)
        machines.deploy(machine.system_id, image, kernel or None, user_data(ctx, api))
        state["requested"] = True
        mounts = ", ".join(f"{m[0]} at {m[1]}" for m in kept_mounts(ctx))
        return Retry(ctx.settings.maas_poll, f"deploying {image or 'the default image'}"
                     + (f"; mounting kept {mounts}" if mounts else ""))
    return Failed("NotDeployable",
                  f"{who} status {status}: not ready to deploy (prepare_nodes first)",
                  details={"maas_status": status})


def mark_prepared(ctx: NodeContext) -> Outcome:
    if ctx.ports.records is not None:
        ctx.ports.records.torn_down(ctx.node.name, False)
    return Done("Node available for deployment")


def prepare_steps(options: JSONObject) -> list[NodeStep]:
    return [
        node_step("enlist", enlist, lambda s: s.enlist_timeout),
        node_step("commission", commission, lambda s: s.commission_timeout),
        node_step("apply_storage", apply_storage, lambda s: s.release_timeout),
        node_step("mark_prepared", mark_prepared, lambda s: s.release_timeout),
    ]


def deploy_steps(options: JSONObject) -> list[NodeStep]:
    return [
        node_step("deploy", deploy, lambda s: s.deploy_timeout),
    ]
