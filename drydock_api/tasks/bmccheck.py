"""The BMC check before enrolment: a node unknown to MAAS is held to Drydock's Redfish
profile before its BMC is asked to PXE boot it ([oob] bmc_check: off, warn, refuse)."""

from __future__ import annotations

from common.errors import BerthError
from common.jsontypes import as_list
from common.status import simple_message
from common.workflow import Failed, Outcome
from drydock_api.tasks.context import NodeContext

MODES = ("off", "warn", "refuse")
REASON = "BmcProfileCheckFailed"
KEY = "bmc_check"  # the enlist step's state: the failed requirements ([] when it passed)


def gate(ctx: NodeContext) -> Outcome | None:
    """Run the check once per enlist step (a Redfish BMC, the mode not off). None: go on
    (passed, or failed with warn: a warning message); Failed with refuse, naming each failed
    requirement, nothing asked of the BMC. A BMC that cannot be checked counts as failing."""
    mode, bmc, check = ctx.settings.bmc_check, ctx.node.bmc, ctx.ports.bmc_check
    if mode == "off" or bmc is None or bmc.type != "redfish" or check is None:
        return None
    recorded = ctx.state.get(KEY)
    if recorded is None:
        try:
            failed = check(bmc)
        except BerthError as exc:
            failed = [f"not checked: {exc.message}"]
        ctx.state[KEY] = [*failed]
        ctx.checkpoint()
    else:
        failed = [str(f) for f in as_list(recorded)]
    if not failed:
        return None
    node = ctx.node.name
    text = f"its BMC {bmc.describe()} does not meet Drydock's Redfish profile: " \
        + "; ".join(failed)
    if mode == "refuse":
        return Failed(REASON, f"{text}; not enrolled ([oob] bmc_check = refuse)",
                      details={KEY: failed})
    if not ctx.state.get("bmc_warned"):
        ctx.state["bmc_warned"] = True
        ctx.message(simple_message(f"{node}: {text}; enrolling it anyway ([oob] bmc_check = "
                                   "warn)",
                                   error=False, node=node, step="enlist", reason=REASON,
                                   context_type="node", context=node))
    return None
