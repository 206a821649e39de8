"""deploy_site, update_site and relabel_nodes (site-wide, or a few nodes for relabel)."""

from __future__ import annotations

from collections.abc import Mapping

from common.errors import Conflict
from common.jsontypes import as_list
from common.status import simple_message
from common.workflow import Outcome, StepPolicy, done
from shipyard_api.actions import baremetal, labels, site_budget, steps
from shipyard_api.actions.known import refuse_unknown
from shipyard_api.actions.params import Params
from shipyard_api.actions.ports import DocumentsPort, services
from shipyard_api.workflow.definitions import (
    ActionDefinition,
    ActionParameters,
    Prepared,
    StepContext,
    StepDef,
)

SITE_PARAMS = ("allow-intermediate-commits", site_budget.PARAM)
# The actions that refuse intermediate commits unless allowed (Airship's validators also
# check them for update_software, which Berth does not include).
INTERMEDIATE_CHECKED = ("deploy_site", "update_site")


def prepare_site(raw: Mapping[str, object], documents: DocumentsPort) -> Prepared:
    """The committed revision; 409 IntermediateCommits unless explicitly allowed."""
    p = Params(raw, SITE_PARAMS)
    allow = p.boolean("allow-intermediate-commits")
    over_budget = site_budget.read(p)
    p.raise_if_invalid()
    revision = documents.revision_id("committed")
    notes = []
    if revision is not None and not allow:
        others = documents.intermediate_commits(revision)
        if others:
            raise Conflict(
                f"Committed revisions {others} have not been used by a site action since the "
                f"last one; the action would use revision {revision}. Set the parameter "
                "allow-intermediate-commits=true to go on.", reason="IntermediateCommits")
    elif allow:
        notes.append(simple_message("Intermediate commit check skipped "
                                  "(allow-intermediate-commits=true)", error=False))
    params: ActionParameters = {"allow-intermediate-commits": allow, "target-revision": "committed",
              **over_budget}
    return Prepared(params, None, revision, notes)


def prepare_relabel(raw: Mapping[str, object], documents: DocumentsPort) -> Prepared:
    p = Params(raw, ("target_nodes",))
    targets = p.nodes("target_nodes", required=False)
    p.raise_if_invalid()
    revision = documents.revision_id("committed")
    refuse_unknown(targets, documents, revision)
    return Prepared({"target_nodes": targets, "target-revision": "committed"}, targets,
                    revision)


def relabel_nodes(ctx: StepContext) -> Outcome:
    """Relabel the target nodes (all when none); after a baremetal step, the nodes it deployed."""
    targets = ctx.parameters.get("target_nodes")
    baremetal_output = ctx.output("baremetal")
    if "deployed" in baremetal_output:
        targets = [str(n) for n in as_list(baremetal_output["deployed"])]
        if not targets:
            return done(note="No node was deployed; nothing to relabel")
    return labels.put_design_labels(ctx, list(targets) if targets else None)


def relabel_policy(ctx: StepContext) -> StepPolicy:
    return services(ctx).settings.policy(
        steps.config_value(ctx, "physical_provisioner", "relabel_nodes_timeout"))


def site_definition(name: str) -> ActionDefinition:
    """deploy_site / update_site: preflight, intermediate-commit check, design validation,
    the strategy-driven baremetal step, relabel; the revision is tagged at the end."""
    return ActionDefinition(name, [
        StepDef("preflight", steps.preflight, steps.preflight_policy),
        StepDef("intermediate_commit_check", steps.intermediate_commits,
                steps.preflight_policy),
        StepDef("resolve_design", steps.resolve_design, steps.preflight_policy),
        StepDef("validate_design", baremetal.validate_design, steps.preflight_policy),
        StepDef("baremetal", baremetal.baremetal, baremetal.baremetal_policy,
                cancel=baremetal.cancel),
        StepDef("relabel_nodes", relabel_nodes, relabel_policy),
    ], prepare_site, steps.tag_site_action, admit=site_budget.admit(name))


def relabel_definition() -> ActionDefinition:
    return ActionDefinition("relabel_nodes", [
        StepDef("preflight", steps.preflight, steps.preflight_policy),
        StepDef("resolve_design", steps.resolve_design, steps.preflight_policy),
        StepDef("relabel_nodes", relabel_nodes, relabel_policy),
    ], prepare_relabel)
