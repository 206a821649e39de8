"""Request parsing shared by Promenade's resources: node names (the path parameter and any
name under /nodes/ no route matched), whole numbers, design refs."""

from __future__ import annotations

import re
from collections.abc import Iterable

import falcon

from common import disruption
from common.body import read_json, read_text
from common.bodyschema import require_schema
from common.context import RequestContext
from common.errors import BadRequest, Forbidden
from common.jsontypes import JSON
from common.nodenames import require_name, require_names
from common.status import simple_message
from promenade_api.errors import MissingDesignRef

WHOLE = re.compile(r"[0-9]{1,9}")  # ASCII digits only: "٣" or "²" pass str.isdigit()


def _node_param(req: falcon.Request, resp: falcon.Response, resource: object,
                params: dict[str, object]) -> None:
    params["node_id"] = require_name(params.get("node_id"), "node_id")


checked_node = falcon.before(_node_param)
"""Below `@authorize`: the {node_id} path parameter is a node name as Kubernetes defines it,
or 400 InvalidNodeName before anything is read or changed."""


def leaving_names(raw: object) -> tuple[str, ...]:
    """The `leaving` query parameter: node names, comma-separated (InvalidNodeName)."""
    if not isinstance(raw, str):
        return ()
    return tuple(require_names([n for n in raw.split(",") if n.strip()], "leaving"))


class Query:
    """Reads whole-number parameters, collecting every problem before raising one 400."""

    def __init__(self, req: falcon.Request, allowed: Iterable[str]) -> None:
        self._req = req
        self.problems: list[str] = [
            f"Unknown query parameter {name!r}" for name in sorted(req.params)
            if name not in set(allowed)]

    def whole(self, name: str) -> int | None:
        raw = self._req.params.get(name)
        if raw is None:
            return None
        if isinstance(raw, list) or not WHOLE.fullmatch(str(raw).strip()):
            self.problems.append(f"{name} must be a whole number of seconds, not {raw!r}")
            return None
        return int(str(raw).strip())

    def flag(self, name: str) -> bool:
        """A true/false parameter (absent: false)."""
        raw = self._req.params.get(name)
        if raw is None:
            return False
        if isinstance(raw, list) or str(raw).lower() not in ("true", "false"):
            self.problems.append(f"{name} must be true or false, not {raw!r}")
            return False
        return str(raw).lower() == "true"

    def check(self, *rules: tuple[bool, str]) -> None:
        """Add each message whose condition is true, then raise 400 if anything is wrong."""
        self.problems += [message for failed, message in rules if failed]
        if self.problems:
            raise BadRequest("Invalid query parameters",
                             messages=[simple_message(p) for p in self.problems])


def design_ref_body(req: falcon.Request) -> JSON:
    """The design reference of the body: `{rel, href, type}`, or a bare href (a JSON string,
    or a text/plain body), checked against the document's DesignRef: without an href 400
    MissingDesignRef, a bad one 400 InvalidDesignRef listing every problem."""
    if (req.content_type or "").split(";")[0].strip().lower() == "text/plain":
        body: JSON = read_text(req, ("text/plain",)).strip()
        if not body:
            raise MissingDesignRef("The text/plain body must be the design's href")
        component = "Href"
    else:
        body, component = read_json(req, required=False), "DesignRef"
        href = body.get("href") if isinstance(body, dict) else body
        if not (isinstance(href, str) and href.strip()):
            raise MissingDesignRef("A design reference is required in the body: {rel: design, "
                                   "href: ..., type: application/x-yaml} or a bare href")
    require_schema("promenade", component, body, "Invalid design reference",
                   reason="InvalidDesignRef")
    return body.strip() if isinstance(body, str) else body


def leave_of(req: falcon.Request, query: Query) -> disruption.Leave | None:
    """The `disrupt-pdbs` and `disrupt-after` parameters (problems go to `query`); a leave
    needs the rule promenade:disrupt_pdbs (403), checked once the parameters are read."""
    raw = req.params.get(disruption.PDBS)
    after = req.params.get(disruption.AFTER)
    if isinstance(raw, list) or isinstance(after, list):
        query.problems.append(f"{disruption.PDBS} and {disruption.AFTER} are given once each")
        return None
    leave, problems = disruption.check_leave(disruption.from_query(raw), after,
                                             after is not None)
    query.problems += problems
    return leave


def operator_of(ctx: RequestContext, service_roles: Iterable[str]) -> str:
    """Who gives a leave to disrupt: the authenticated caller, or, when the caller is a
    service, the operator it passes on (X-End-User); a service passing none is refused."""
    if ctx.on_behalf_of:
        return ctx.on_behalf_of
    if set(service_roles).intersection(ctx.roles):
        raise Forbidden(f"{ctx.user} is a service: a leave to disrupt PodDisruptionBudgets "
                        "needs the operator who gave it (X-End-User)",
                        reason="OperatorRequired")
    return str(ctx.user)
