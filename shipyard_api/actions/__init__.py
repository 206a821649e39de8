"""Shipyard's actions: each a definition of steps the workflow engine runs."""

from __future__ import annotations

from dataclasses import replace

from shipyard_api.actions import redeploy, site
from shipyard_api.workflow.definitions import ActionDefinition


def definitions() -> dict[str, ActionDefinition]:
    """Every action Shipyard can run, by name; each step of an action created from a plan
    first re-checks the facts the plan relied on (shipyard_api/plans/recheck.py)."""
    from shipyard_api.plans.recheck import guarded  # plans build on the actions' modules

    defs = [redeploy.definition(), site.relabel_definition(),
            site.site_definition("deploy_site"), site.site_definition("update_site")]
    return {d.name: replace(d, steps=[replace(s, run=guarded(s.run)) for s in d.steps])
            for d in defs}
