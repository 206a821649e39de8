"""oslo.policy enforcement: one Enforcer per service app and a hook per responder."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import falcon
from oslo_config import cfg
from oslo_policy import policy

from common.errors import Forbidden, Unauthenticated

ADMIN = "role:admin"
READER = "role:admin or role:reader"


def rule(name: str, check: str, description: str, path: str, method: str) -> policy.RuleDefault:
    """A documented rule default for one endpoint."""
    return policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=[{"path": path, "method": method}],
    )


class Policy:
    """Wraps an oslo.policy Enforcer with the service's registered defaults."""

    def __init__(self, conf: cfg.ConfigOpts, defaults: Iterable[policy.RuleDefault]) -> None:
        self._enforcer = policy.Enforcer(conf)
        self._enforcer.register_defaults(list(defaults))

    def authorize(self, rule_name: str, user: str | None, roles: Iterable[str]) -> None:
        creds = {"user_id": user, "roles": list(roles)}
        if not self._enforcer.enforce(rule_name, {}, creds, do_raise=False):
            raise Forbidden(f"Policy {rule_name} does not allow this request")

    def rule_names(self) -> list[str]:
        return sorted(self._enforcer.registered_rules)


Hook = Callable[[falcon.Request, falcon.Response, Any, dict[str, Any]], None]


def authorize(rule_name: str) -> Callable[[Any], Any]:
    """Decorate a responder so that it runs only when `rule_name` allows the caller."""

    def hook(req: falcon.Request, resp: falcon.Response, resource: Any,
             params: dict[str, Any]) -> None:
        check(req, rule_name)

    return falcon.before(hook)


def check(req: falcon.Request, rule_name: str) -> None:
    """Raise 401 when the caller is unknown, 403 when `rule_name` denies them."""
    ctx = req.context.berth
    if not ctx.authenticated:
        raise Unauthenticated("Missing or invalid X-Auth-Token")
    enforcer: Policy = req.context.policy
    enforcer.authorize(rule_name, ctx.user, ctx.roles)
