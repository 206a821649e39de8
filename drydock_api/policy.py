"""Drydock's policy rules: tasks per action, nodes, node filters, validation."""

from __future__ import annotations

from oslo_policy import policy

from common.api import API_PREFIX as P
from common.policy import ADMIN, READER, rule

ACTIONS = ("validate_design", "verify_site", "prepare_site", "verify_nodes", "prepare_nodes",
           "deploy_nodes", "destroy_nodes", "relabel_nodes", "power_off_nodes")


def list_rules() -> list[policy.RuleDefault]:
    """Rule defaults (also the `drydock` namespace of oslopolicy-sample-generator)."""
    rules = [
        rule("drydock:get_health_extended", READER, "Extended health", f"{P}/health/extended",
             "GET"),
        rule("drydock:list_tasks", READER, "List tasks", f"{P}/tasks", "GET"),
        rule("drydock:get_task", READER, "Show a task", f"{P}/tasks/{{task_id}}", "GET"),
        rule("drydock:delete_tasks", ADMIN, "Purge tasks that finished more than `days` days "
             "ago (Airship's task retention)", f"{P}/tasks", "DELETE"),
        rule("drydock:read_build_data", READER, "Build data of a node or of a task",
             f"{P}/nodes/{{name}}/builddata", "GET"),
        rule("drydock:preview_task", READER, "What a task would do to each node (nothing "
             "is touched)", f"{P}/tasks/preview", "POST"),
        rule("drydock:terminate_task", ADMIN, "Terminate a task",
             f"{P}/tasks/{{task_id}}/terminate", "POST"),
        rule("drydock:node_filter", READER, "Resolve a node filter", f"{P}/nodefilter", "POST"),
        rule("drydock:list_nodes", READER, "List nodes", f"{P}/nodes", "GET"),
        rule("drydock:wipe_plan", READER, "How destroy_nodes would keep or wipe each disk",
             f"{P}/wipeplan", "POST"),
        rule("drydock:get_node", READER, "Show a node", f"{P}/nodes/{{name}}", "GET"),
        rule("drydock:update_node", ADMIN, "Retire or unretire a node", f"{P}/nodes/{{name}}",
             "PATCH"),
        rule("drydock:provide_node", ADMIN, "Make a torn-down node available",
             f"{P}/nodes/{{name}}/provide", "POST"),
        rule("drydock:reboot_node", ADMIN, "Request a reboot",
             f"{P}/nodes/{{name}}/reboot", "POST"),
        rule("drydock:get_reboot", READER, "List reboot requests",
             f"{P}/nodes/{{name}}/reboot", "GET"),
        rule("drydock:delete_reboot", ADMIN, "Release a keyed reboot request",
             f"{P}/nodes/{{name}}/reboot/{{key}}", "DELETE"),
        rule("drydock:take_budget_slot", ADMIN, "Take a failure-domain slot for a node "
             "going out of service", f"{P}/budgets/slots", "POST"),
        rule("drydock:get_budget_slots", READER, "List failure-domain slots held",
             f"{P}/budgets/slots", "GET"),
        rule("drydock:renew_budget_slot", ADMIN, "Renew a holder's failure-domain slots",
             f"{P}/budgets/slots/{{holder}}", "PUT"),
        rule("drydock:release_budget_slot", ADMIN, "Give up a holder's failure-domain slots",
             f"{P}/budgets/slots/{{holder}}", "DELETE"),
        rule("drydock:validatedesign", ADMIN, "Validate a design", f"{P}/validatedesign",
             "POST"),
    ]
    rules += [rule(f"drydock:{a}", ADMIN, f"Create a {a} task", f"{P}/tasks", "POST")
              for a in ACTIONS]
    rules += [  # the audit log names every user and object: admin only
        rule("drydock:read_audit", ADMIN, "Read audit log entries", f"{P}/audit", "GET"),
        rule("drydock:verify_audit", ADMIN, "Verify every hash chain of the audit log",
             f"{P}/audit/verify", "GET"),
    ]
    return rules
