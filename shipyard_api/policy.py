"""Shipyard's policy rules: documents, revisions, actions (each action its own rule), and
Airship's `workflow_orchestrator:*` names, so an Airship policy file works unchanged."""

from __future__ import annotations

from oslo_policy import policy

from common.api import API_PREFIX as P
from common.policy import ADMIN, READER, rule

ACTIONS = ("redeploy_server", "relabel_nodes", "deploy_site", "update_site", "test_site",
           "update_software")
AIRSHIP = "workflow_orchestrator"

# Berth's rule name → (default check, description, path, method). Each Berth rule defers to
# the Airship rule of the same suffix, which holds the default: overriding either name in
# the policy file takes effect.
_ROUTES: list[tuple[str, str, str, str, str]] = [
    ("create_configdocs", ADMIN, "Stage documents", f"{P}/configdocs/{{collection_id}}",
     "POST"),
    ("get_configdocs", READER, "Read staged or committed documents (secrets redacted)",
     f"{P}/configdocs/{{collection_id}}", "GET"),
    ("get_configdocs_cleartext", ADMIN, "Read secrets in clear text",
     f"{P}/configdocs/{{collection_id}}", "GET"),
    ("get_configdocs_status", READER, "Compare collections between versions",
     f"{P}/configdocs", "GET"),
    ("get_renderedconfigdocs", READER, "Read rendered documents", f"{P}/renderedconfigdocs",
     "GET"),
    ("get_renderedconfigdocs_cleartext", ADMIN, "Read rendered documents with secrets in "
     "clear text", f"{P}/renderedconfigdocs", "GET"),
    ("commit_configdocs", ADMIN, "Commit the buffer", f"{P}/commitconfigdocs", "POST"),
    ("list_actions", READER, "List actions", f"{P}/actions", "GET"),
    ("create_action", ADMIN, "Create an action", f"{P}/actions", "POST"),
    ("get_action", READER, "Show an action", f"{P}/actions/{{action_id}}", "GET"),
    ("get_action_step", READER, "Show an action's step",
     f"{P}/actions/{{action_id}}/steps/{{step_id}}", "GET"),
    ("get_action_step_logs", READER, "Read the log of an action's step",
     f"{P}/actions/{{action_id}}/steps/{{step_id}}/logs", "GET"),
    ("get_action_validation", READER, "Show a validation of an action",
     f"{P}/actions/{{action_id}}/validations/{{validation_id}}", "GET"),
    ("invoke_action_control", ADMIN, "Pause, unpause or stop an action",
     f"{P}/actions/{{action_id}}/control/{{control_verb}}", "POST"),
    ("list_workflows", READER, "List workflows (the runs of actions)", f"{P}/workflows",
     "GET"),
    ("get_workflow", READER, "Show a workflow and its steps", f"{P}/workflows/{{workflow_id}}",
     "GET"),
    ("get_notedetails", READER, "Read the details of a note (the rule of the note's action "
     "or step is checked too)", f"{P}/notedetails/{{note_id}}", "GET"),
    ("get_site_statuses", READER, "Nodes' provisioning and power state",
     f"{P}/site_statuses", "GET"),
]


def _paired(suffix: str, check: str, description: str, path: str,
            method: str) -> list[policy.RuleDefault]:
    return [rule(f"{AIRSHIP}:{suffix}", check, description, path, method),
            rule(f"shipyard:{suffix}", f"rule:{AIRSHIP}:{suffix}",
                 f"{description} (defers to {AIRSHIP}:{suffix})", path, method)]


def list_rules() -> list[policy.RuleDefault]:
    """Rule defaults (also the `shipyard` namespace of oslopolicy-sample-generator)."""
    rules = [
        policy.RuleDefault("admin_required", "role:admin",
                           description="Airship's base rule: admin authority"),
        policy.RuleDefault("deny_all", "!", description="Airship's base rule: deny everyone"),
        rule("shipyard:get_health_extended", READER, "Extended health", f"{P}/health/extended",
             "GET"),
    ]
    for route in _ROUTES:
        rules += _paired(*route)
    rules += [
        rule("shipyard:list_revisions", READER, "List revisions", f"{P}/revisions", "GET"),
        rule("shipyard:get_revision_documents", READER, "Documents of a revision",
             f"{P}/revisions/{{revision_id}}/documents", "GET"),
        rule("shipyard:manage_tags", ADMIN, "Add or delete revision tags",
             f"{P}/revisions/{{revision_id}}/tags/{{tag}}", "POST"),
        rule("shipyard:create_plan", READER, "Plan an action: what it would do now (nothing "
             "is changed)", f"{P}/plans", "POST"),
        rule("shipyard:get_plan", READER, "Show a plan", f"{P}/plans/{{plan_id}}", "GET"),
    ]
    for a in ACTIONS:
        rules += _paired(f"action_{a}", ADMIN, f"Run the {a} action", f"{P}/actions", "POST")
    rules.append(rule("shipyard:action_disrupt_pdbs", ADMIN,
                      "Create an action with disrupt-pdbs: its drains may delete the pods of "
                      "the named PodDisruptionBudgets that still refuse their eviction after "
                      "disrupt-after seconds (besides the action's own rule)", f"{P}/actions",
                      "POST"))
    rules += [  # the audit log names every user and object: admin only
        rule("shipyard:read_audit", ADMIN, "Read audit log entries", f"{P}/audit", "GET"),
        rule("shipyard:verify_audit", ADMIN, "Verify every hash chain of the audit log",
             f"{P}/audit/verify", "GET"),
    ]
    return rules
