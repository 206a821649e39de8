"""Design validation for POST /validatedesign and validate_design tasks."""

from __future__ import annotations

from common.documents import Document, validate_documents
from common.status import Message, validation_message
from drydock_api.nodes import domains
from drydock_api.nodes.design import NODE, PASSPHRASE, parse_design


def validate_design(docs: list[Document]) -> list[Message]:
    """Every problem in Drydock's own documents (other services validate theirs): schema
    errors, OOB address/credentials, host profiles, OS disk, duplicate names, failure-domain
    declarations."""
    mine = [d for d in docs if str(d.get("schema", "")).startswith("drydock/")
            or d.get("schema") == PASSPHRASE]
    messages = validate_documents(mine)
    if not any(d.get("schema") == NODE for d in docs):
        messages.append(validation_message("The design has no drydock/BaremetalNode/v1 "
                                           "documents", name="NoNodes", level="Warning",
                                           error=False))
    design = parse_design(docs)
    messages += design.problems + domains.problems(docs, design)
    return messages
