"""Design validation for POST /validatedesign and validate_design tasks."""

from __future__ import annotations

from collections.abc import Collection

from common.documents import Document, doc_ref, validate_documents
from common.jsontypes import JSONObject, as_list
from common.status import Message, validation_message
from drydock_api.drivers.provisioners import problems as provisioner_problems
from drydock_api.nodes import domains
from drydock_api.nodes.design import NODE, PASSPHRASE, parse_design
from drydock_api.nodes.filters import check_filter

BOOT_ACTION = "drydock/BootAction/v1"


def validate_design(docs: list[Document],
                    provisioners: Collection[str] | None = None) -> list[Message]:
    """Every problem in Drydock's own documents (other services validate theirs): schema
    errors, OOB address/credentials, host profiles, OS disk, duplicate names, failure-domain
    declarations, and (given the provisioners this Drydock is configured for) a Region
    naming a provisioner that is not among them."""
    mine = [d for d in docs if str(d.get("schema", "")).startswith("drydock/")
            or d.get("schema") == PASSPHRASE]
    messages = validate_documents(mine)
    if not any(d.get("schema") == NODE for d in docs):
        messages.append(validation_message("The design has no drydock/BaremetalNode/v1 "
                                           "documents", name="NoNodes", level="Warning",
                                           error=False))
    design = parse_design(docs)
    messages += design.problems + domains.problems(docs, design)
    if provisioners is not None:
        messages += provisioner_problems(design.provisioner, sorted(provisioners))
    messages += [validation_message(p, name="BootAction", documents=[doc_ref(d)])
                 for d in docs if d.get("schema") == BOOT_ACTION for p in boot_action_problems(d)]
    return messages


def boot_action_problems(doc: Document) -> list[str]:
    """What makes a BootAction unusable beyond its schema: an asset with neither location
    nor data, a file or unit without a path, a malformed node filter."""
    raw_data = doc.get("data")
    data: JSONObject = raw_data if isinstance(raw_data, dict) else {}
    name = doc_ref(doc)["name"]
    out = [f"BootAction {name}: {p}" for p in check_filter(data.get("node_filter"))]
    for i, raw in enumerate(as_list(data.get("assets"))):
        if not isinstance(raw, dict):
            continue
        if raw.get("location") is None and raw.get("data") is None:
            out.append(f"BootAction {name}: asset {i} has neither location nor data")
        if raw.get("type") in ("unit", "file") and not raw.get("path"):
            out.append(f"BootAction {name}: asset {i} ({raw.get('type')}) has no path")
    return out
