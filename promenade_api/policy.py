"""Promenade's policy rules, one per endpoint of the teardown spec."""

from __future__ import annotations

from oslo_policy import policy

from common.api import API_PREFIX as P
from common.policy import ADMIN, READER, rule


def list_rules() -> list[policy.RuleDefault]:
    """Rule defaults (also the `promenade` namespace of oslopolicy-sample-generator)."""
    return [
        rule("promenade:get_health_extended", READER, "Extended health", f"{P}/health/extended",
             "GET"),
        rule("promenade:decommission_node", ADMIN, "Decommission a node",
             f"{P}/nodes/{{node_id}}/decommission", "POST"),
        rule("promenade:get_decommission", READER,
             "A node's active or latest decommission run: its phases, attempts and answer",
             f"{P}/nodes/{{node_id}}/decommission", "GET"),
        rule("promenade:preview_decommission", READER,
             "What a decommission would do now (nothing is changed)",
             f"{P}/nodes/{{node_id}}/decommission/preview", "POST"),
        rule("promenade:drain_node", ADMIN, "Drain a node", f"{P}/nodes/{{node_id}}/drain",
             "POST"),
        policy.DocumentedRuleDefault(
            name="promenade:disrupt_pdbs", check_str=ADMIN,
            description="Drain or decommission with disrupt-pdbs: delete the pods of the "
            "named PodDisruptionBudgets that still refuse their eviction after disrupt-after "
            "seconds (besides the endpoint's own rule)",
            operations=[{"path": f"{P}/nodes/{{node_id}}/drain", "method": "POST"},
                        {"path": f"{P}/nodes/{{node_id}}/decommission", "method": "POST"}]),
        rule("promenade:clear_labels", ADMIN, "Clear a node's labels",
             f"{P}/nodes/{{node_id}}/clear-labels", "POST"),
        rule("promenade:remove_etcd", ADMIN, "Remove a node's etcd members",
             f"{P}/nodes/{{node_id}}/remove-etcd", "POST"),
        rule("promenade:join_etcd", ADMIN,
             "Add a node's etcd members back as learners and promote them once in sync",
             f"{P}/nodes/{{node_id}}/join-etcd", "POST"),
        rule("promenade:shutdown_kubelet", ADMIN, "Shut down a node's kubelet",
             f"{P}/nodes/{{node_id}}/shutdown-kubelet", "POST"),
        rule("promenade:remove_from_cluster", ADMIN, "Delete a node from Kubernetes",
             f"{P}/nodes/{{node_id}}/remove-from-cluster", "POST"),
        rule("promenade:get_etcd_health", READER, "etcd member health",
             f"{P}/etcd-cluster-health-statuses", "GET"),
        rule("promenade:get_node", READER, "Operator view of a node", f"{P}/nodes/{{node_id}}",
             "GET"),
        rule("promenade:update_node_labels", ADMIN, "Replace a node's labels",
             f"{P}/node-labels/{{node_id}}", "PUT"),
        policy.DocumentedRuleDefault(
            name="kubernetes_provisioner:post_validatedesign", check_str=ADMIN,
            description="Validate documents", operations=[
                {"path": f"{P}/validatedesign", "method": "POST"}],
            deprecated_rule=policy.DeprecatedRule(
                name="promenade:validate_design", check_str=ADMIN,
                deprecated_reason="Airship's rule name", deprecated_since="Berth 1.1")),
        rule("kubernetes_provisioner:get_join_scripts", ADMIN, "Get join script for node",
             f"{P}/join-scripts", "GET"),
    ]
