"""Target nodes must be nodes of the design: checked once at creation (one set lookup), so
names the design does not hold are refused at POST instead of occupying the engine."""

from __future__ import annotations

from collections.abc import Sequence

from common.errors import ValidationFailed
from common.status import validation_message
from shipyard_api.actions.design import node_names
from shipyard_api.actions.ports import DocumentsPort

MAX_LISTED = 50  # unknown names listed one by one; the rest are counted


def refuse_unknown(targets: Sequence[str] | None, documents: DocumentsPort,
                   revision: int | None) -> None:
    """400 naming the targets that are not nodes of design revision `revision`; while that
    revision does not exist yet (no site action has succeeded), of the committed design,
    whose revision a site action would make it. Without any committed design nothing is
    known to check against (preflight then reports the missing revision)."""
    if not targets:
        return
    against = revision if revision is not None else documents.revision_id("committed")
    if against is None:
        return
    known = set(node_names(documents.rendered_documents(against, cleartext=False)))
    unknown = [name for name in targets if name not in known]
    if not unknown:
        return
    which = (f"design revision {against}" if revision is not None else
             f"the committed design (revision {against}; the target revision does not exist "
             "yet)")
    messages = [validation_message(f"{name} is not a node of {which}", name="ActionParameters")
                for name in unknown[:MAX_LISTED]]
    if len(unknown) > MAX_LISTED:
        messages.append(validation_message(
            f"... and {len(unknown) - MAX_LISTED} more target_nodes that are not nodes of "
            f"{which}", name="ActionParameters"))
    raise ValidationFailed(f"{len(unknown)} of the {len(targets)} target_nodes are not nodes "
                           f"of {which}", messages=messages)
