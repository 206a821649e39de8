"""oslo.policy enforcement: one Enforcer per service app and a hook per responder."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import falcon
from cachetools import TTLCache
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


DECISION_SECONDS = 2.0
DECISIONS_KEPT = 4096

Decision = tuple[str, str | None, tuple[str, ...]]


class Policy:
    """Wraps an oslo.policy Enforcer with the service's registered defaults.

    A decision depends only on the rule, the caller's user and roles (no rule has a target)
    and the policy file, so it is kept for `DECISION_SECONDS`: an edited policy file takes
    effect within that time, and a request does not pay for oslo.policy's file checks."""

    def __init__(self, conf: cfg.ConfigOpts, defaults: Iterable[policy.RuleDefault], *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._enforcer = policy.Enforcer(conf)
        self._enforcer.register_defaults(list(defaults))
        self._decisions: TTLCache[Decision, bool] = TTLCache(
            maxsize=DECISIONS_KEPT, ttl=DECISION_SECONDS, timer=clock)
        self._lock = threading.Lock()

    def allows(self, rule_name: str, user: str | None, roles: Iterable[str]) -> bool:
        key = (rule_name, user, tuple(sorted(roles)))
        with self._lock:
            kept = self._decisions.get(key)
        if kept is not None:
            return kept
        creds = {"user_id": user, "roles": list(key[2])}
        allowed = bool(self._enforcer.enforce(rule_name, {}, creds, do_raise=False))
        with self._lock:
            self._decisions[key] = allowed
        return allowed

    def authorize(self, rule_name: str, user: str | None, roles: Iterable[str]) -> None:
        if not self.allows(rule_name, user, roles):
            raise Forbidden(f"Policy {rule_name} does not allow this request")

    def rule_names(self) -> list[str]:
        return sorted(self._enforcer.registered_rules)


R = TypeVar("R")  # the responder (or resource) decorated


def authorize(rule_name: str) -> Callable[[R], R]:
    """Decorate a responder so that it runs only when `rule_name` allows the caller."""

    def hook(req: falcon.Request, resp: falcon.Response, resource: object,
             params: dict[str, object]) -> None:
        check(req, rule_name)

    return falcon.before(hook)


def check(req: falcon.Request, rule_name: str) -> None:
    """Raise 401 when the caller is unknown, 403 when `rule_name` denies them."""
    ctx = req.context.berth
    if not ctx.authenticated:
        raise Unauthenticated("Missing or invalid X-Auth-Token")
    enforcer: Policy = req.context.policy
    enforcer.authorize(rule_name, ctx.user, ctx.roles)
