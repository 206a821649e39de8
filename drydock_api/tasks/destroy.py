"""destroy_nodes, per node: power off, wipe, release in MAAS, delete, retire. Each idempotent."""

from __future__ import annotations

from typing import Any

from drydock_api.nodes.design import BmcAccess
from drydock_api.tasks.outcomes import Done, Failed, NodeContext, Outcome, Retry, StepDef

ERASE_MODES = ("secure", "quick")
IN_PROGRESS = ("Releasing", "Disk erasing")
FAILED = ("Failed releasing", "Failed disk erasing")
NOTHING_TO_RELEASE = ("Ready", "New", "Commissioning", "Failed commissioning", "Testing",
                      "Failed testing")


def check_options(options: dict[str, Any]) -> list[str]:
    problems = [f"options: unknown option {k!r} for destroy_nodes" for k in options
                if k not in ("preserve_local_storage", "erase", "retire", "retired_reason",
                              "all_nodes")]
    for key in ("preserve_local_storage", "retire", "all_nodes"):
        if key in options and not isinstance(options[key], bool):
            problems.append(f"options.{key} must be true or false")
    if options.get("erase", "secure") not in ERASE_MODES:
        problems.append("options.erase must be quick or secure")
    reason = options.get("retired_reason")
    if reason is not None and not isinstance(reason, str):
        problems.append("options.retired_reason must be a string")
    if reason is not None and not options.get("retire"):
        problems.append("options.retired_reason is only allowed with retire: true")
    return problems


def _bmc(ctx: NodeContext) -> BmcAccess:
    if ctx.node.bmc is None:
        raise ValueError(f"Node {ctx.node.name} has no usable oob address and credentials "
                         f"in the design")
    return ctx.node.bmc


def power_off(ctx: NodeContext) -> Outcome:
    """Graceful shutdown, ForceOff after graceful_timeout, done once the BMC reports off."""
    bmc, oob, state, now = _bmc(ctx), ctx.ports.oob, ctx.state, ctx.clock()
    if oob.power_state(bmc) == "off":
        how = ("forced off after the graceful shutdown timed out" if state.get("forced")
               else "shut down gracefully" if "graceful_at" in state else "already off")
        return Done(f"Powered off through {bmc.describe()}: {how}",
                    data={"forced": bool(state.get("forced"))})
    if "graceful_at" not in state:
        oob.power_off(bmc, graceful=True)
        state["graceful_at"] = now
        return Retry(ctx.settings.power_poll, "graceful shutdown requested")
    if not state.get("forced") and now - state["graceful_at"] >= ctx.settings.graceful_timeout:
        oob.power_off(bmc, graceful=False)
        state["forced"] = True
        return Retry(ctx.settings.power_poll, "ForceOff requested")
    return Retry(ctx.settings.power_poll, "waiting for the BMC to report power off")


def wipe_disks(ctx: NodeContext) -> Outcome:
    """BMC Drive.SecureErase where offered; the rest is left to MAAS's erase at release.
    With preserve_local_storage only the OS disk is wiped, so it must be erasable by the BMC."""
    node, preserve = ctx.node, bool(ctx.options.get("preserve_local_storage"))
    erase = ctx.options.get("erase", "secure")
    if preserve and not node.os_disk:
        return Failed(f"Node {node.name}: no OS disk in the design (no partition mounted at /)")
    targets = [node.os_disk] if preserve and node.os_disk else list(node.disks)
    erasable = (ctx.ports.oob.erasable_drives(_bmc(ctx))
                if targets and (erase == "secure" or preserve) else {})
    done: list[str] = ctx.state.setdefault("erased", [])
    for disk in targets:
        if disk in erasable and disk not in done:
            ctx.ports.oob.secure_erase(_bmc(ctx), erasable[disk])
            done.append(disk)
    left = [d for d in targets if d not in done]
    kept = [d for d in node.disks if d not in targets]
    maas_erase = erase if (left or not targets) and not preserve else None
    maas_wipe = left if preserve else []
    parts = []
    if done:
        parts.append(f"secure-erased {', '.join(done)} through the BMC")
    if maas_erase:
        parts.append(f"MAAS {maas_erase}-erases {', '.join(left) or 'every disk'} at release")
    if maas_wipe:
        parts.append(f"{', '.join(maas_wipe)} wiped through MAAS's block-device API after "
                     f"release (no BMC erase offered; MAAS erase would wipe every disk)")
    if kept:
        parts.append(f"preserved {', '.join(kept)}")
    return Done("Wipe: " + "; ".join(parts or ["nothing to wipe"]),
                data={"bmc_erased": done, "maas_erase": maas_erase, "preserved": kept,
                      "maas_wipe": maas_wipe})


def wipe_os_disk(ctx: NodeContext) -> Outcome:
    """preserve_local_storage without a BMC erase: the OS disk's partitions and filesystem are
    removed through MAAS's block-device API once released (MAAS refuses storage edits on a
    Deployed machine), so only that disk loses its data."""
    wanted = (ctx.previous.get("wipe_disks") or {}).get("maas_wipe") or []
    if not wanted:
        return Done("No disk to wipe through MAAS")
    maas = ctx.ports.maas
    machine = maas.find_machine(ctx.node.name)
    if machine is None:
        return Failed(f"MAAS no longer knows {ctx.node.name}: cannot wipe {', '.join(wanted)}")
    devices = {d.name: d for d in maas.block_devices(machine.system_id)}
    wiped = []
    for name in wanted:
        device = devices.get(name)
        if device is None or not (device.partitions or device.fstype):
            if name in ctx.state.get("wiped", []):
                continue
            return Failed(f"MAAS has no partition or filesystem on {name} to remove: cannot "
                          f"wipe it alone")
        for part in device.partitions:
            maas.delete_partition(machine.system_id, device.id, part.id)
        if device.fstype:
            maas.unformat_device(machine.system_id, device.id)
        ctx.state.setdefault("wiped", []).append(name)
        wiped.append(name)
    return Done(f"Wiped {', '.join(wanted)} through MAAS (partitions and filesystem removed)",
                data={"wiped": wanted})


def release(ctx: NodeContext) -> Outcome:
    """Release in MAAS once (a machine already releasing/erasing is waited for, not re-released)."""
    maas, name, state = ctx.ports.maas, ctx.node.name, ctx.state
    machine = maas.find_machine(name)
    if machine is None:
        return Done("Not in MAAS: nothing to release", data={"absent": True})
    status = machine.status_name
    if status in FAILED and state.get("requested"):
        detail = machine.status_message if machine.status_message != status else None
        return Failed(f"MAAS failed to release {name}: {status}"
                      + (f": {detail}" if detail else ""), details={"maas_status": status})
    if status in IN_PROGRESS:
        return Retry(ctx.settings.maas_poll, f"MAAS status {status}")
    if status in NOTHING_TO_RELEASE:
        how = "released" if state.get("requested") else f"{status}, nothing to release"
        return Done(f"MAAS: {how}", data={"status": status})
    erase = (ctx.previous.get("wipe_disks") or {}).get("maas_erase")
    maas.release(machine.system_id, erase)
    state["requested"] = True
    return Retry(ctx.settings.maas_poll, "release requested")


def delete(ctx: NodeContext) -> Outcome:
    machine = ctx.ports.maas.find_machine(ctx.node.name)
    if machine is None:
        return Done("Not in MAAS: nothing to delete")
    ctx.ports.maas.delete_machine(machine.system_id)
    return Done(f"Deleted machine {machine.system_id} from MAAS")


def forget(ctx: NodeContext) -> Outcome:
    """The node is torn down: it stays off, and every reboot request on it is dropped."""
    if ctx.ports.records is None:
        return Done("Torn down")
    ctx.ports.records.torn_down(ctx.node.name, True)
    cleared = ctx.ports.records.clear_reboots(ctx.node.name)
    return Done(f"Torn down; {cleared} reboot request(s) cleared", data={"cleared": cleared})


def retire(ctx: NodeContext) -> Outcome:
    reason = ctx.options.get("retired_reason")
    if ctx.ports.retire is None:
        return Failed("Retirement is not available")
    ctx.ports.retire(ctx.node.name, reason)
    return Done(f"Retired{': ' + reason if reason else ''}")


def steps(options: dict[str, Any]) -> list[StepDef]:
    out = [
        StepDef("power_off", power_off, lambda s: s.power_timeout),
        StepDef("wipe_disks", wipe_disks, lambda s: s.power_timeout),
        StepDef("release", release, lambda s: s.release_timeout),
        StepDef("wipe_os_disk", wipe_os_disk, lambda s: s.release_timeout),
        StepDef("delete", delete, lambda s: s.release_timeout),
        StepDef("forget", forget, lambda s: s.release_timeout),
    ]
    if options.get("retire"):
        out.append(StepDef("retire", retire, lambda s: s.release_timeout))
    return out
