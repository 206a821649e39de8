"""Success criteria arithmetic: which criteria a group's node results miss (each on its own)."""

from __future__ import annotations

from shipyard_api.strategy.model import SuccessCriteria


def missed_criteria(criteria: SuccessCriteria, succeeded: int, failed: int,
                    total: int) -> list[str]:
    """Why the group fails its criteria (empty when it meets them all).

    `total` is the group's full node set; nodes neither succeeded nor failed count against
    the percentage and the minimum but not as failures. A group of no nodes is 100%
    successful but fails any minimum or maximum criterion (spec 001: it still counts as 0
    nodes).
    """
    out: list[str] = []
    pct = criteria.percent_successful_nodes
    if pct is not None:
        achieved = 100.0 if total == 0 else 100.0 * succeeded / total
        if achieved + 1e-9 < pct:
            out.append(f"{achieved:.4g}% of nodes successful ({succeeded} of {total}), "
                       f"{pct:g}% required")
    minimum = criteria.minimum_successful_nodes
    if minimum is not None and (total == 0 or succeeded < minimum):
        out.append(f"{succeeded} node(s) successful, at least {minimum} required"
                   + (" (the group selects no nodes)" if total == 0 else ""))
    maximum = criteria.maximum_failed_nodes
    if maximum is not None and (total == 0 or failed > maximum):
        out.append(f"{failed} node(s) failed, at most {maximum} allowed"
                   + (" (the group selects no nodes)" if total == 0 else ""))
    return out
