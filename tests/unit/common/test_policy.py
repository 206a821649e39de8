"""Policy decisions are kept briefly: an edited policy file takes effect within
DECISION_SECONDS, and a caller's decision never leaks to another caller."""

import os

import pytest
from oslo_config import cfg
from oslo_policy import opts as policy_opts

from common.errors import Forbidden
from common.policy import ADMIN, DECISION_SECONDS, READER, Policy, rule

RULES = [rule("svc:read", READER, "Read things", "/things", "GET"),
         rule("svc:write", ADMIN, "Write things", "/things", "POST")]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def setup(tmp_path):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text("{}\n")
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    policy_opts.set_defaults(conf)  # registers the options; a policy_file here would
    # change oslo.policy's default for every later ConfigOpts of the process
    conf.set_override("policy_file", str(policy_file), group="oslo_policy")
    clock = Clock()
    enforcer = Policy(conf, RULES, clock=clock)
    return enforcer, policy_file, clock


def test_a_decision_depends_on_the_callers_roles(setup):
    enforcer, _, _ = setup
    assert enforcer.allows("svc:read", "bob", ["reader"])
    assert not enforcer.allows("svc:write", "bob", ["reader"])
    assert enforcer.allows("svc:write", "alice", ["admin"])
    assert not enforcer.allows("svc:read", "eve", [])
    with pytest.raises(Forbidden):
        enforcer.authorize("svc:write", "bob", ["reader"])


def test_an_edited_policy_file_takes_effect_once_kept_decisions_expire(setup):
    enforcer, policy_file, clock = setup
    assert enforcer.allows("svc:read", "bob", ["reader"])
    policy_file.write_text('"svc:read": "role:admin"\n')
    later = policy_file.stat().st_mtime + 10  # oslo.policy reloads a file that got newer
    os.utime(policy_file, (later, later))
    assert enforcer.allows("svc:read", "bob", ["reader"])  # kept decision
    clock.now += DECISION_SECONDS + 0.1
    assert not enforcer.allows("svc:read", "bob", ["reader"])
    assert enforcer.allows("svc:read", "alice", ["admin"])
