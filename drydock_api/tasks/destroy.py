"""destroy_nodes, per node: plan the wipe, power off, wipe, release and delete in MAAS, report
every disk, retire. Each step idempotent."""

from __future__ import annotations

from common.jsontypes import JSON, JSONObject, as_object, as_str, member
from common.workflow import Done, Failed, Outcome, Retry, StepDef, StepPolicy
from drydock_api.drivers.ports import BmcAccess, MaasError
from drydock_api.nodes import power
from drydock_api.tasks import teardown, wipe
from drydock_api.tasks.context import NodeContext, NodeStep, node_step
from drydock_api.tasks.render import iso

ERASE_MODES = ("secure", "secure_only", "quick", "zero")
OS_DISK_ERASE = ("bmc", "none")
IN_PROGRESS = ("Releasing", "Disk erasing")
FAILED = ("Failed releasing", "Failed disk erasing")
NOTHING_TO_RELEASE = ("Ready", "New", "Commissioning", "Failed commissioning", "Testing",
                      "Failed testing")
OPTIONS = ("preserve_local_storage", "erase", "os_disk_erase", "retire", "retired_reason",
           "all_nodes", "power_policy", "grace_period")


def check_options(options: JSONObject) -> list[str]:
    problems = [f"options: unknown option {k!r} for destroy_nodes" for k in options
                if k not in OPTIONS]
    for key in ("preserve_local_storage", "retire", "all_nodes"):
        if key in options and not isinstance(options[key], bool):
            problems.append(f"options.{key} must be true or false")
    if options.get("erase", "secure") not in ERASE_MODES:
        problems.append(f"options.erase must be one of {', '.join(ERASE_MODES)}")
    if options.get("os_disk_erase", "bmc") not in OS_DISK_ERASE:
        problems.append("options.os_disk_erase must be bmc or none")
    if "os_disk_erase" in options and not options.get("preserve_local_storage"):
        problems.append("options.os_disk_erase is only allowed with preserve_local_storage")
    if "erase" in options and options.get("preserve_local_storage"):
        problems.append("options.erase chooses how every disk is wiped: not with "
                        "preserve_local_storage (the OS disk alone is erased through its BMC)")
    reason = options.get("retired_reason")
    if reason is not None and not isinstance(reason, str):
        problems.append("options.retired_reason must be a string")
    if reason is not None and not options.get("retire"):
        problems.append("options.retired_reason is only allowed with retire: true")
    return problems + power.check(options)


def _bmc(ctx: NodeContext) -> BmcAccess:
    if ctx.node.bmc is None:
        raise ValueError(f"Node {ctx.node.name} has no usable oob address and credentials "
                         f"in the design")
    return ctx.node.bmc


def plan_wipe(ctx: NodeContext) -> Outcome:
    """Before anything is touched: how each disk will be kept or wiped, or why it cannot be
    done truthfully (then the node is refused, untouched)."""
    node, options = ctx.node, ctx.options
    need_bmc = wipe.needs_bmc(options)
    erasable = set(ctx.ports.erase.erasable_drives(node.bmc)) if need_bmc and node.bmc else set()
    plan = wipe.plan(node, options, erasable)
    if plan.maas_erase and not plan.refusal:
        machine = ctx.ports.machines.find_machine(node.name)
        plan = wipe.with_maas(plan, node, options, erasable,
                              wipe.MaasView(machine.status_name if machine else None))
    if plan.refusal:
        return Failed(plan.reason, f"{plan.reason}: {plan.refusal}",
                      details={"refused": True, "erasable": sorted(erasable),
                               "maas_status": plan.maas_status})
    return Done("Wipe plan: " + wipe.describe_plan(plan),
                output={"disks": plan.disks, "maas_erase": plan.maas_erase,
                        "maas_status": plan.maas_status, "maas_acquire": plan.acquire})


def policy_of(ctx: NodeContext) -> power.PowerPolicy:
    """The task's power policy: its options (`force: true` is `power_policy: hard`), the
    design's grace period, else `[oob] graceful_timeout`."""
    options = ctx.options
    name = options.get("power_policy") or (power.HARD if options.get("force")
                                           else power.SOFT_THEN_HARD)
    return power.resolve(name, options.get("grace_period"), ctx.design_grace,
                         ctx.settings.graceful_timeout)


def power_off(ctx: NodeContext) -> Outcome:
    """Power off by the task's policy (nodes.power): graceful shutdown, ForceOff once the
    grace period has passed since the first request (also after a takeover); ForceOff at once
    when the task asks for hard; a failure when soft-only and the node stays on. Done once the
    BMC reports off, recording what the node got. Each request is written ahead
    (NodeContext.ask): a graceful shutdown that may have reached the BMC is never asked
    again; one the BMC refused or did not answer is."""
    bmc, oob, state, now = _bmc(ctx), ctx.ports.power, ctx.state, ctx.clock()
    policy = policy_of(ctx)
    asked = state.get("graceful")
    graceful, force = asked if isinstance(asked, dict) else None, as_object(state.get("force"))
    if oob.power_state(bmc) == "off":
        got = _got(policy, graceful, force)
        return Done(f"Powered off through {bmc.describe()}: {got['summary']}",
                    output={"forced": bool(force), "power": got}, details={"power": got})
    first = None if graceful is None else _seconds(graceful.get("first_at", graceful["at"]))
    if graceful is not None and "error" in graceful and not force:
        first = None  # refused or unanswered: asked again, counted from the first request
    step = power.next_step(policy, first, "accepted_at" in force, now)
    if step == power.Next.GRACEFUL:
        ctx.ask("graceful", "GracefulShutdown", lambda: oob.power_off(bmc, graceful=True),
                bmc=bmc.describe(), first_at=(graceful or {}).get("first_at", now))
        return Retry(ctx.settings.power_poll, "graceful shutdown requested")
    if step == power.Next.FORCE:
        return _force_off(ctx, bmc, None if first is None else now - first)
    if step == power.Next.GIVE_UP:
        got = power.record(policy, "not-off")
        return Failed("GracefulShutdownTimeout", f"Node {ctx.node.name} {got['summary']}",
                      details={"power": got})
    return Retry(ctx.settings.power_poll, "waiting for the BMC to report power off")


def _seconds(value: JSON) -> float | None:
    """A time or duration recorded in the step's state (None: not recorded)."""
    return float(value) if isinstance(value, int | float) else None


def _got(policy: power.PowerPolicy, graceful: JSONObject | None,
         force: JSONObject) -> JSONObject:
    """What the node got, from the requests recorded in the step's state."""
    if force:
        after = _seconds(force.get("after"))
        return power.record(policy, "hard" if after is None else "forced",
                            forced_after=after, at=_seconds(force.get("at")))
    if graceful:
        return power.record(policy, "graceful", at=_seconds(graceful.get("at")))
    return power.record(policy, "already-off")


def _force_off(ctx: NodeContext, bmc: BmcAccess, after: float | None) -> Retry:
    """ForceOff once: asked again only when no acceptance was recorded (the BMC refused it,
    or the worker died before saving the answer); forcing off a node that is off, or going
    off, changes nothing more. `after`: seconds since the first graceful request (None: hard
    on request)."""
    force = as_object(ctx.state.get("force"))
    if "accepted_at" not in force:
        waited = force.get("after", after)
        ctx.ask("force", "ForceOff", lambda: ctx.ports.power.power_off(bmc, graceful=False),
                bmc=bmc.describe(), **({} if waited is None else {"after": waited}))
        return Retry(ctx.settings.power_poll, "ForceOff requested")
    return Retry(ctx.settings.power_poll, "waiting for the BMC to report power off")


def check_power_off_options(options: JSONObject) -> list[str]:
    problems = [f"options: unknown option {k!r} for power_off_nodes" for k in options
                if k not in ("force", "power_policy", "grace_period")]
    if "force" in options and not isinstance(options["force"], bool):
        problems.append("options.force must be true or false")
    if "force" in options and "power_policy" in options:
        problems.append("options.force is the older name of power_policy hard: give one "
                        "of them")
    merged = dict(options)
    if options.get("force") is True:
        merged["power_policy"] = power.HARD
    return problems + power.check(merged)


def power_off_steps(options: JSONObject) -> list[NodeStep]:
    return [power_step()]


def power_step() -> NodeStep:
    """The power-off step: it may take the grace period plus `[oob] power_timeout`."""
    def policy(ctx: NodeContext) -> StepPolicy:
        p = policy_of(ctx)
        grace = 0.0 if p.policy == power.HARD else p.grace_period
        return ctx.settings.policy(ctx.settings.power_timeout + grace)

    return StepDef("power_off", power_off, policy)


def wipe_disks(ctx: NodeContext) -> Outcome:
    """Erase the disks planned for the BMC's Drive.SecureErase, following each BMC task to
    its end: done only when every task completed; a failed task fails the node. A disk an
    earlier task of this teardown attested erased is not erased again; each erase is written
    ahead, and one that may have reached the BMC is looked up there, never sent again."""
    planned = [str(d["disk"]) for d in wipe.planned_disks(ctx.previous)
               if d["method"] == wipe.BMC]
    if not planned:
        return Done("No disk to erase through the BMC", output={"bmc": {}})
    bmc, erase, state = _bmc(ctx), ctx.ports.erase, ctx.state
    finished = as_object(state.get("finished"))
    state["finished"] = finished
    for disk, e in teardown.earlier_erases(ctx.teardown, ctx.task).items():
        if disk in planned and disk not in finished:
            finished[disk] = {"task": e.get("bmc_task"), "message": e.get("message"),
                              "at": e.get("at"), "earlier_task": e.get("task")}
    todo = [d for d in planned if d not in finished]
    unstarted = [d for d in todo if not member(state.get(f"erase:{d}"), "job")]
    if unstarted:
        erasable = erase.erasable_drives(bmc)
        for disk in unstarted:
            _start_erase(ctx, bmc, disk, erasable[disk])
    for disk in todo:
        job = as_object(state[f"erase:{disk}"])
        status = erase.erase_status(bmc, str(job["job"]))
        if status.state == "failed":
            return Failed("SecureEraseFailed",
                          f"Drive.SecureErase of {disk} failed on {bmc.describe()}: "
                          f"{status.message}", details={"disk": disk, "task": job["job"]})
        if status.state == "completed":
            now = ctx.clock()
            finished[disk] = {"task": job["job"], "message": status.message, "at": now}
            ctx.attested[disk] = {"drive": job.get("drive"), "method": wipe.BMC, "at": now,
                                  "bmc_task": job["job"], "message": status.message}
    running = [d for d in planned if d not in finished]
    if running:
        return Retry(ctx.settings.power_poll, f"BMC erasing {', '.join(running)}")
    earlier = sorted({str(member(f, "earlier_task")) for f in finished.values()
                      if member(f, "earlier_task")})
    return Done(f"Erased {', '.join(planned)} through {bmc.describe()} (BMC tasks completed"
                + (f"; erased earlier by task {', '.join(earlier)}" if earlier else "") + ")",
                output={"bmc": finished})


def _start_erase(ctx: NodeContext, bmc: BmcAccess, disk: str, drive: str) -> None:
    """Drive.SecureErase of one disk, unless the BMC already runs (or ran) one asked for it.

    An erase asked before without a recorded task (the worker died before saving the BMC's
    answer, or saw no answer) is looked up at the BMC: its task list and the drive's
    operations. When the BMC knows of none, the request did not start an erase, and it is
    sent: an erase is never left undone on a guess, and the window where the BMC could
    have started one and forgotten it is one HTTP request wide."""
    key = f"erase:{disk}"
    if key in ctx.state:
        job = ctx.ports.erase.find_erase(bmc, drive)
        if job is not None:
            ctx.accepted(key, job=job, found_at_bmc=True)
            return
    ctx.ask(key, "SecureErase", lambda: ctx.ports.erase.secure_erase(bmc, drive),
            bmc=bmc.describe(), disk=disk, drive=drive)


def release(ctx: NodeContext) -> Outcome:
    """Release in MAAS once (a machine already releasing/erasing is waited for, not
    re-released). When the plan leaves the wipe to MAAS, the release carries the erase: a
    machine that is (or became) Ready is allocated first, since MAAS releases a Ready machine
    without erasing; one MAAS can neither release nor allocate fails WipeNotPossible."""
    machines, name, state = ctx.ports.machines, ctx.node.name, ctx.state
    planned_erase = as_str(member(ctx.previous.get("plan_wipe"), "maas_erase"))
    machine = machines.find_machine(name)
    if machine is None:
        if planned_erase:
            return _wipe_not_possible(name, "its machine left MAAS before MAAS erased it", None)
        return Done(f"Not in {ctx.ports.provisioner}: nothing to release",
                    output={"absent": True})
    status = machine.status_name
    if NodeContext.unanswered(state.get("release")):  # the release may have been accepted
        state["requested"] = status not in wipe.RELEASE_ERASES
    if status in FAILED and state.get("requested"):
        detail = machine.status_message if machine.status_message != status else None
        return Failed("ReleaseFailed", f"{ctx.ports.provisioner} failed to release {name}: "
                      f"{status}"
                      + (f": {detail}" if detail else ""), details={"maas_status": status})
    if status in IN_PROGRESS:
        if status == "Disk erasing":  # seen erasing: true even when another worker asked
            state["erase"] = planned_erase
            state["requested"] = True
        return Retry(ctx.settings.maas_poll, f"{ctx.ports.provisioner} status {status}")
    if status in NOTHING_TO_RELEASE:
        requested = bool(state.get("requested"))
        if planned_erase and not requested:
            return _acquire(ctx, machine.system_id, status)
        how = "released" if requested else f"{status}, nothing to release"
        erase = state.get("erase")
        if erase:
            how += f" after its {erase} erase of every disk"
        return Done(f"{ctx.ports.provisioner}: {how}",
                    output={"status": status, "requested": requested, "erase": erase,
                            "at": ctx.clock(), "acquired": bool(state.get("acquired"))})
    erase = planned_erase
    state["erase"] = erase
    state["requested"] = True  # saved with the intent: a takeover must not release again
    answer = ctx.ask("release", "release", lambda: machines.release(machine.system_id, erase),
                     machine=machine.system_id, erase=erase)
    if answer.status_name in NOTHING_TO_RELEASE:  # MAAS answers a Ready machine, does nothing
        state["requested"] = False
    return Retry(ctx.settings.maas_poll, "release requested")


def _wipe_not_possible(name: str, why: str, status: str | None) -> Failed:
    return Failed(wipe.NOT_POSSIBLE, f"WipeNotPossible: Node {name}: every disk is to be "
                  f"wiped by MAAS at release, and {why}; MAAS erased no disk",
                  details={"maas_status": status})


def _acquire(ctx: NodeContext, system_id: str, status: str) -> Outcome:
    """A machine that became Ready (or was planned Ready) is allocated, so that MAAS
    releases it with erase; any other status cannot be erased by MAAS."""
    if status != wipe.ALLOCATABLE:
        return _wipe_not_possible(ctx.node.name, f"MAAS now reports it {status}, which "
                                  "MAAS neither releases nor allocates", status)
    try:
        ctx.ports.machines.allocate(system_id)
    except MaasError as exc:
        if exc.transient:
            raise
        return _wipe_not_possible(ctx.node.name, "MAAS refused to allocate the Ready "
                                  f"machine for its erase: {exc.message}", status)
    ctx.state["acquired"] = True
    return Retry(ctx.settings.maas_poll, "Ready machine allocated, to be released with erase")


def delete(ctx: NodeContext) -> Outcome:
    machine, who = ctx.ports.machines.find_machine(ctx.node.name), ctx.ports.provisioner
    if machine is None:
        return Done(f"Not in {who}: nothing to delete")
    ctx.ports.machines.delete_machine(machine.system_id)
    if who == "Ironic":  # Ironic discovers no machine: the node stays enrolled
        return Done(f"Ironic: node {machine.system_id} unreserved and kept enrolled "
                    "(manageable) for prepare_nodes")
    return Done(f"Deleted machine {machine.system_id} from MAAS")


def forget(ctx: NodeContext) -> Outcome:
    """The node is torn down: it stays off, and every reboot request on it is dropped."""
    if ctx.ports.records is None:
        return Done("Torn down")
    kept = [str(d["disk"]) for d in wipe.planned_disks(ctx.previous) if d["result"] == "kept"]
    cleared = ctx.ports.records.forget(ctx.node.name, kept)
    return Done(f"Torn down; {cleared} reboot request(s) cleared", output={"cleared": cleared})


def report_disks(ctx: NodeContext) -> Outcome:
    """Per disk: kept or wiped, by which method, verified by what, and when."""
    disks = wipe.report(ctx.previous, iso)
    text = "; ".join(wipe.describe_entry(d) for d in disks)
    missing = wipe.unverified(ctx.previous, disks)
    if missing:  # never "not wiped" unless the request asked for it
        return Failed(wipe.NOT_POSSIBLE, f"WipeNotPossible: Node {ctx.node.name}: no erase "
                      "was verified for "
                      f"{', '.join(missing)}. Disks: {text}", details={"disks": disks})
    return Done(f"Disks: {text or 'none in the design'}", output={"disks": disks},
                records=tuple(disks))


def retire(ctx: NodeContext) -> Outcome:
    reason = as_str(ctx.options.get("retired_reason"))
    if ctx.ports.retire is None:
        return Failed("RetirementUnavailable", "Retirement is not available")
    if ctx.ports.retirement is not None:  # Ironic's own flag first (spec 003)
        ctx.ports.retirement.retire(ctx.node.name, reason)
    ctx.ports.retire(ctx.node.name, reason)
    where = f" (and in {ctx.ports.provisioner})" if ctx.ports.retirement is not None else ""
    return Done(f"Retired{where}{': ' + reason if reason else ''}")


def steps(options: JSONObject) -> list[NodeStep]:
    out = [
        node_step("plan_wipe", plan_wipe, lambda s: s.power_timeout),
        power_step(),
        node_step("wipe_disks", wipe_disks, lambda s: s.release_timeout),
        node_step("release", release, lambda s: s.release_timeout),
        node_step("delete", delete, lambda s: s.release_timeout),
        node_step("forget", forget, lambda s: s.release_timeout),
        node_step("report_disks", report_disks, lambda s: s.release_timeout),
    ]
    if options.get("retire"):
        out.append(node_step("retire", retire, lambda s: s.release_timeout))
    return out
