"""Shipyard's policy rules: documents, revisions, actions (each action its own rule)."""

from __future__ import annotations

from oslo_policy import policy

from common.api import API_PREFIX as P
from common.policy import ADMIN, READER, rule

ACTIONS = ("redeploy_server", "relabel_nodes", "deploy_site", "update_site")


def list_rules() -> list[policy.RuleDefault]:
    """Rule defaults (also the `shipyard` namespace of oslopolicy-sample-generator)."""
    rules = [
        rule("shipyard:get_health_extended", READER, "Extended health", f"{P}/health/extended",
             "GET"),
        rule("shipyard:create_configdocs", ADMIN, "Stage documents",
             f"{P}/configdocs/{{collection}}", "POST"),
        rule("shipyard:get_configdocs", READER, "Read staged or committed documents",
             f"{P}/configdocs/{{collection}}", "GET"),
        rule("shipyard:get_configdocs_cleartext", ADMIN, "Read secrets in clear text",
             f"{P}/configdocs/{{collection}}", "GET"),
        rule("shipyard:get_configdocs_status", READER, "Compare collections between versions",
             f"{P}/configdocs", "GET"),
        rule("shipyard:get_renderedconfigdocs", READER, "Read rendered documents",
             f"{P}/renderedconfigdocs", "GET"),
        rule("shipyard:commit_configdocs", ADMIN, "Commit the buffer", f"{P}/commitconfigdocs",
             "POST"),
        rule("shipyard:list_revisions", READER, "List revisions", f"{P}/revisions", "GET"),
        rule("shipyard:get_revision_documents", READER, "Documents of a revision",
             f"{P}/revisions/{{revision_id}}/documents", "GET"),
        rule("shipyard:manage_tags", ADMIN, "Add or delete revision tags",
             f"{P}/revisions/{{revision_id}}/tags/{{tag}}", "POST"),
        rule("shipyard:list_actions", READER, "List actions", f"{P}/actions", "GET"),
        rule("shipyard:create_action", ADMIN, "Create an action", f"{P}/actions", "POST"),
        rule("shipyard:get_action", READER, "Show an action", f"{P}/actions/{{action_id}}",
             "GET"),
        rule("shipyard:get_action_step", READER, "Show an action's step",
             f"{P}/actions/{{action_id}}/steps/{{step_id}}", "GET"),
        rule("shipyard:invoke_action_control", ADMIN, "Pause, unpause or stop an action",
             f"{P}/actions/{{action_id}}/control/{{control_verb}}", "POST"),
        rule("shipyard:create_plan", READER, "Plan an action: what it would do now (nothing "
             "is changed)", f"{P}/plans", "POST"),
        rule("shipyard:get_plan", READER, "Show a plan", f"{P}/plans/{{plan_id}}", "GET"),
        rule("shipyard:get_site_statuses", READER, "Nodes' provisioning and power state",
             f"{P}/site_statuses", "GET"),
    ]
    rules += [rule(f"shipyard:action_{a}", ADMIN, f"Run the {a} action", f"{P}/actions", "POST")
              for a in ACTIONS]
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
