"""Shipyard's actions: each a definition of steps the workflow engine runs."""

from __future__ import annotations

from shipyard_api.actions import redeploy, site
from shipyard_api.workflow.definitions import ActionDefinition


def definitions() -> dict[str, ActionDefinition]:
    """Every action Shipyard can run, by name."""
    defs = [redeploy.definition(), site.relabel_definition(),
            site.site_definition("deploy_site"), site.site_definition("update_site")]
    return {d.name: d for d in defs}
