"""How destroy_nodes keeps or wipes each disk, truthfully: the plan (pure) and the report.

Every wipe is real or refused. MAAS can only erase every disk of a machine (at release), and
editing partitions in MAAS changes no byte on a disk, so erasing one disk alone needs the
BMC's Drive.SecureErase, followed to the end of its task. Where that is missing the plan says
why and the node is refused before anything is touched.

    options                                      OS disk               other disks
    (default: erase secure)                      BMC if it covers every disk, else MAAS
                                                 secure_erase at release (zeroes a drive
                                                 that cannot secure erase)
    erase: secure_only                           BMC for every disk, or refused
    erase: quick | zero                          MAAS quick_erase | MAAS erase (zeroing)
    preserve_local_storage                       BMC, or refused       kept
    preserve_local_storage, os_disk_erase: none  not erased; the       kept
                                                 redeploy overwrites it

A wipe left to MAAS needs a machine MAAS can release with erase: one it has allocated or
deployed, or a Ready one that Drydock allocates first (MAAS releases a Ready machine as a
no-op, without erasing). A machine MAAS does not know, or one it can neither release nor
allocate (New, Commissioning, Failed commissioning, Testing...), cannot be wiped there: the
node fails with WipeNotPossible before anything is touched. "Not wiped" is a result only when
the request asked for it (preserve_local_storage with os_disk_erase: none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from common.jsontypes import JSON, JSONObject, as_list, as_object, member
from drydock_api.drivers.ports import DriverError, EraseInterface, MachineLookup
from drydock_api.nodes.design import NodeDef

BMC = "redfish Drive.SecureErase"
MAAS_METHODS = {
    "secure": "MAAS secure_erase at release (a drive that cannot secure erase is zeroed)",
    "quick": "MAAS quick_erase at release (signatures and 2 MiB at each end; data blocks "
             "remain)",
    "zero": "MAAS erase at release (every block zeroed)",
}
OVERWRITE = "none at teardown: the next deploy's layout overwrites it (old blocks remain)"


# MAAS statuses from which a release with erase is accepted (MAAS's RELEASABLE_STATUSES),
# those where a release is under way (followed to its end), and the one MAAS allocates from.
RELEASE_ERASES = frozenset({"Allocated", "Deployed", "Deploying", "Failed deployment",
                            "Failed releasing", "Failed disk erasing", "Broken", "Reserved"})
RELEASE_UNDER_WAY = frozenset({"Releasing", "Disk erasing"})
ALLOCATABLE = "Ready"
REFUSED, NOT_POSSIBLE = "WipeRefused", "WipeNotPossible"


@dataclass
class Plan:
    disks: list[JSONObject] = field(default_factory=list)
    maas_erase: str | None = None
    refusal: str | None = None
    reason: str = REFUSED
    maas_status: str | None = None
    acquire: bool = False  # a Ready machine: allocated first, then released with erase


@dataclass(frozen=True)
class MaasView:
    """The node's machine as MAAS reports it now: its status, None when MAAS lacks it."""

    status: str | None


def needs_bmc(options: Mapping[str, JSON]) -> bool:
    if options.get("preserve_local_storage"):
        return bool(options.get("os_disk_erase", "bmc") == "bmc")
    return options.get("erase", "secure") in ("secure", "secure_only")


def _entry(disk: str, result: str, method: str | None) -> JSONObject:
    return {"disk": disk, "result": result, "method": method}


def _why_not(node: NodeDef, erasable: set[str], disks: list[str]) -> str:
    if node.bmc is None:
        return f"{node.name} has no usable oob access in the design"
    if node.bmc.type != "redfish":
        return f"its BMC ({node.bmc.type}) has no per-drive erase"
    offered = ", ".join(sorted(erasable)) or "no drive"
    return (f"its BMC {node.bmc.describe()} offers Drive.SecureErase on {offered}, "
            f"not on {', '.join(d for d in disks if d not in erasable)}")


def plan(node: NodeDef, options: Mapping[str, JSON], erasable: set[str]) -> Plan:
    """Each design disk: kept, or wiped by which method; or why this cannot be done."""
    disks = list(node.disks)
    if options.get("preserve_local_storage"):
        return _plan_preserve(node, options, erasable, disks)
    mode = str(options.get("erase", "secure"))
    bmc_covers = bool(disks) and all(d in erasable for d in disks)
    if mode == "secure_only" and not bmc_covers:
        return Plan(refusal=(
            f"Node {node.name}: erase secure_only needs every disk erased by a verified "
            f"secure erase, and {_why_not(node, erasable, disks)}; MAAS's secure erase "
            "falls back to zeroing without saying so. Nothing was touched."))
    if mode in ("secure", "secure_only") and bmc_covers:
        return Plan([_entry(d, "wiped", BMC) for d in disks])
    maas = "secure" if mode == "secure_only" else mode
    return Plan([_entry(d, "wiped", MAAS_METHODS[maas]) for d in disks], maas_erase=maas)


def with_maas(p: Plan, node: NodeDef, options: Mapping[str, JSON], erasable: set[str],
              machine: MaasView) -> Plan:
    """A plan that leaves the wipe to MAAS, checked against the machine's status: kept
    (acquiring a Ready machine first), or refused with WipeNotPossible."""
    if p.refusal or not p.maas_erase:
        return p
    status = machine.status
    if status in RELEASE_ERASES or status in RELEASE_UNDER_WAY:
        return Plan(p.disks, p.maas_erase, maas_status=status)
    if status == ALLOCATABLE:
        return Plan(p.disks, p.maas_erase, maas_status=status, acquire=True)
    mode = str(options.get("erase", "secure"))
    if mode == "secure":
        need = (f"every disk must be wiped (the default), and "
                f"{_why_not(node, erasable, list(node.disks))}")
    else:
        need = f"erase: {mode} is an erase MAAS does at release"
    where = ("the machine is not in MAAS" if status is None else
             f"MAAS neither releases nor allocates a machine in status {status}")
    return Plan(maas_status=status, reason=NOT_POSSIBLE, refusal=(
        f"Node {node.name}: {need}; MAAS cannot erase it: {where}. Nothing was touched. "
        "Bring the machine to Ready in MAAS (commission it), give its BMC Drive.SecureErase "
        "on every disk, or ask for the OS disk to be left to the redeploy "
        "(preserve_local_storage with os_disk_erase: none)."))


def _plan_preserve(node: NodeDef, options: Mapping[str, JSON], erasable: set[str],
                   disks: list[str]) -> Plan:
    os_disk = node.os_disk
    if not os_disk:
        return Plan(refusal=f"Node {node.name}: preserve_local_storage needs the OS disk, and "
                            "the design names none (no partition mounted at /). Nothing was "
                            "touched.")
    kept = [_entry(d, "kept", None) for d in disks if d != os_disk]
    if options.get("os_disk_erase", "bmc") == "none":
        return Plan([_entry(os_disk, "not wiped", OVERWRITE), *kept])
    if os_disk not in erasable:
        return Plan(refusal=(
            f"Node {node.name}: preserve_local_storage must erase the OS disk {os_disk} alone "
            f"with a verified method, and {_why_not(node, erasable, [os_disk])}; MAAS can "
            "only erase every disk. Nothing was touched. Choose os_disk_erase: none (the "
            "redeploy overwrites the OS disk) or a full wipe."))
    return Plan([_entry(os_disk, "wiped", BMC), *kept])


def plan_for(node: NodeDef, options: Mapping[str, JSON], erase: EraseInterface,
             machine: Callable[[], MaasView] | None = None) -> JSONObject:
    """The plan of one node as JSON, asking its BMC which drives it can erase and, when the
    wipe is left to MAAS and `machine` is given, MAAS for the machine's status."""
    erasable: set[str] = set()
    if needs_bmc(options) and node.bmc is not None:
        try:
            erasable = set(erase.erasable_drives(node.bmc))
        except DriverError as exc:
            return {"node": node.name, "refusal": f"Node {node.name}: its BMC could not say "
                    f"which drives it can erase: {exc.message}", "disks": [],
                    "maas_erase": None, "reason": REFUSED}
    p = plan(node, options, erasable)
    if machine is not None and p.maas_erase and not p.refusal:
        try:
            p = with_maas(p, node, options, erasable, machine())
        except DriverError as exc:
            return {"node": node.name, "refusal": f"Node {node.name}: MAAS could not say "
                    f"what state its machine is in: {exc.message}", "disks": [],
                    "maas_erase": None, "reason": NOT_POSSIBLE}
    return as_json(node.name, p)


def machine_of(maas: MachineLookup, name: str) -> Callable[[], MaasView]:
    """Reads the node's machine from MAAS when the plan needs it."""
    def read() -> MaasView:
        found = maas.find_machine(name)
        return MaasView(found.status_name if found else None)
    return read


def as_json(name: str, p: Plan) -> JSONObject:
    out: JSONObject = {"node": name, "refusal": p.refusal, "disks": list[JSON](p.disks),
                       "maas_erase": p.maas_erase}
    if p.refusal:
        out["reason"] = p.reason
    if p.maas_status is not None or p.reason == NOT_POSSIBLE:
        out.update(maas_status=p.maas_status, maas_acquire=p.acquire)
    return out


def describe_plan(p: Plan) -> str:
    text = "; ".join(f"{d['disk']} {d['result']}" + (f" ({d['method']})" if d["method"] else "")
                     for d in p.disks) or "no disks in the design"
    if p.acquire:
        text += (f"; the machine is {p.maas_status} in MAAS: allocated first, then released "
                 "with erase")
    return text


def _at(value: JSON) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def planned_disks(previous: Mapping[str, JSON]) -> list[JSONObject]:
    """The disks of the plan_wipe step's output."""
    return [as_object(d) for d in as_list(member(previous.get("plan_wipe"), "disks"))]


def report(previous: Mapping[str, JSON], iso: Callable[[float | None], str | None]
           ) -> list[JSONObject]:
    """The plan made true: each disk with what verified it and when (None: nothing did)."""
    bmc = as_object(member(previous.get("wipe_disks"), "bmc"))
    released = as_object(previous.get("release"))
    out = []
    for entry in planned_disks(previous):
        row: JSONObject = {**entry, "verified_by": None, "at": None}
        if entry["method"] == BMC:
            done = as_object(bmc.get(str(entry["disk"])))
            row["verified_by"] = f"BMC task {done.get('task')}: {done.get('message')}"
            if done.get("earlier_task"):
                row["verified_by"] = (f"erased earlier by task {done['earlier_task']} "
                                      f"({row['verified_by']})")
                row["earlier_task"] = done["earlier_task"]
            row["at"] = iso(_at(done.get("at")))
        elif entry["result"] == "wiped":
            if released.get("requested") and released.get("erase"):
                row["verified_by"] = (f"MAAS finished the {released['erase']} erase "
                                      f"(Disk erasing, then {released.get('status')})"
                                      + (" of the machine Drydock allocated for it"
                                         if released.get("acquired") else ""))
                if released.get("earlier_task"):
                    row["verified_by"] = (f"erased earlier by task {released['earlier_task']}"
                                          f" ({row['verified_by']})")
                    row["earlier_task"] = released["earlier_task"]
                row["at"] = iso(_at(released.get("at")))
            else:  # never a success: report_disks fails the node (WipeNotPossible)
                status = released.get("status") or "not in MAAS"
                row.update(result="not wiped", verified_by=None,
                           method=f"{entry['method']}: not run, MAAS did not erase "
                                  f"({status})")
        out.append(row)
    return out


def unverified(previous: Mapping[str, JSON], rows: list[JSONObject]) -> list[str]:
    """Disks the plan said would be wiped and that no BMC task or MAAS erase verified."""
    planned = {str(d["disk"]) for d in planned_disks(previous) if d["result"] == "wiped"}
    return [str(r["disk"]) for r in rows if r["disk"] in planned and not r.get("verified_by")]


def describe_entry(d: Mapping[str, JSON]) -> str:
    text = f"{d['disk']} {d['result']}"
    details = [str(d[k]) for k in ("method", "verified_by") if d.get(k)]
    if d.get("at"):
        details.append(f"at {d['at']}")
    return text + (f" ({', '.join(details)})" if details else "")
