"""The action registry: for each task action, its option checks and per-node step list.

A lifecycle action is added by giving it a step list here; the orchestrator runs any list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from common.jsontypes import JSONObject
from common.status import validation_message
from common.workflow import Done, Failed, Outcome
from drydock_api.nodes.validation import validate_design
from drydock_api.tasks import budget, destroy, lifecycle, site
from drydock_api.tasks.context import (
    NodeContext,
    NodeStep,
    SiteContext,
    SiteFn,
    SiteOutcome,
    node_step,
)

ALL_ACTIONS = ("validate_design", "verify_site", "prepare_site", "verify_nodes",
               "prepare_nodes", "deploy_nodes", "destroy_nodes", "relabel_nodes",
               "power_off_nodes")


@dataclass(frozen=True)
class ActionDef:
    """Either `steps(options)`, the per-node steps, or `site`, one site-level function."""

    name: str
    check_options: Callable[[JSONObject], list[str]]
    steps: Callable[[JSONObject], list[NodeStep]] | None
    exclusive: bool = True
    site: SiteFn | None = None
    skip_retired: bool = False
    needs_filter: bool = False
    teardown: bool = False  # the node's teardown record follows it (tasks.teardown)
    # runs on the design's provisioner: refused at creation when it is not configured
    needs_provisioner: bool = True


def no_options(name: str) -> Callable[[JSONObject], list[str]]:
    def check(options: JSONObject) -> list[str]:
        return [f"options: unknown option {k!r} for {name}" for k in options]

    return check


def validate(ctx: SiteContext) -> SiteOutcome:
    backends = ctx.ports.backends
    messages = validate_design(ctx.documents, backends.names() if backends else None)
    bad = any(m["error"] for m in messages)
    if not messages:
        messages = [validation_message("Design is valid", name="DesignValidation",
                                       error=False, level="Info")]
    return SiteOutcome(not bad, "Design invalid" if bad else "Design valid", messages)


def verify_oob(ctx: NodeContext) -> Outcome:
    if ctx.node.bmc is None:
        return Failed("NoOobAccess", f"Node {ctx.node.name} has no usable oob address and "
                      f"credentials")
    state = ctx.ports.power.power_state(ctx.node.bmc)
    return Done(f"BMC {ctx.node.bmc.describe()} answers: power {state}",
                output={"power_state": state})


def verify_maas(ctx: NodeContext) -> Outcome:
    machine, who = ctx.ports.machines.find_machine(ctx.node.name), ctx.ports.provisioner
    if machine is None:
        return Done(f"{who} does not know this machine", output={"maas_status": None})
    return Done(f"{who} status {machine.status_name}",
                output={"maas_status": machine.status_name})


def relabel(ctx: NodeContext) -> Outcome:
    if ctx.ports.labeller is None:
        return Failed("NoLabeller", "No Promenade client configured")
    ctx.ports.labeller.put_labels(ctx.node.name, dict(ctx.node.labels), ctx.request)
    labels = ", ".join(f"{k}={v}" for k, v in sorted(ctx.node.labels.items())) or "none"
    return Done(f"Kubernetes labels set through Promenade: {labels}")


def budgeted(steps: Callable[[JSONObject], list[NodeStep]]
             ) -> Callable[[JSONObject], list[NodeStep]]:
    """`steps` after take_budget_slot when the task's nodes are in failure domains (the
    node's slots come first)."""
    first = budget.take_step(lambda ctx: ctx.ports.budgets)
    return lambda options: ([first] if budget.uses_slots(options) else []) + steps(options)


def build_actions() -> dict[str, ActionDef]:
    """The implemented actions; the others are refused with 400 UnsupportedAction."""
    return {
        "validate_design": ActionDef("validate_design", no_options("validate_design"), None,
                                     exclusive=False, site=validate, needs_provisioner=False),
        "verify_nodes": ActionDef(
            "verify_nodes", no_options("verify_nodes"),
            lambda o: [node_step("verify_oob", verify_oob, lambda s: s.power_timeout),
                       node_step("verify_maas", verify_maas, lambda s: s.release_timeout)],
            exclusive=False),
        "verify_site": ActionDef("verify_site", no_options("verify_site"), None,
                                 exclusive=False, site=site.verify_site),
        "prepare_site": ActionDef("prepare_site", no_options("prepare_site"), None,
                                  exclusive=False, site=site.prepare_site),
        "prepare_nodes": ActionDef("prepare_nodes", no_options("prepare_nodes"),
                                   budgeted(lifecycle.prepare_steps), skip_retired=True),
        "deploy_nodes": ActionDef("deploy_nodes", no_options("deploy_nodes"),
                                  budgeted(lifecycle.deploy_steps), skip_retired=True),
        "destroy_nodes": ActionDef("destroy_nodes", destroy.check_options,
                                   budgeted(destroy.steps),
                                   needs_filter=True, teardown=True),
        "power_off_nodes": ActionDef("power_off_nodes", destroy.check_power_off_options,
                                     budgeted(destroy.power_off_steps),
                                     needs_filter=True),
        "relabel_nodes": ActionDef(
            "relabel_nodes", no_options("relabel_nodes"),
            lambda o: [node_step("relabel", relabel, lambda s: s.release_timeout)]),
    }
