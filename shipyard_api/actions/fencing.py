"""How a node is taken out of service: graceful, or fence-first when it is not healthy.

`assess` reads the node as it is now (Kubernetes readiness and since when, the BMC's power
state or why it cannot tell, MAAS status, etcd membership) and `choose` decides, as a table:

    Kubernetes        BMC                 path
    ----------------  ------------------  -------------------------------------------
    any               did not answer      refused: power-off could not be confirmed
    absent            on / off            graceful (nothing left to drain)
    Ready             on                  graceful (drain, then destroy)
    Ready             off                 fence-first (the node is down; Kubernetes
                                          has not noticed yet)
    not Ready         on / off            fence-first (force off, confirm, then let the
                                          control plane delete its pods)

Pods are never force-deleted on a node whose power-off is not confirmed at its BMC: a
partitioned node may still be running them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from common.clients.promenade import NodeView
from common.context import RequestContext
from common.workflow import Outcome, done, failed
from shipyard_api.actions import power, steps
from shipyard_api.actions.ports import Services, services
from shipyard_api.clients.ports import node_names_filter
from shipyard_api.workflow.definitions import StepContext

GRACEFUL, FENCE_FIRST = "graceful", "fence-first"


@dataclass(frozen=True)
class Facts:
    node: str
    kubernetes: str  # Ready | NotReady | Unknown | absent
    not_ready_for: float | None  # seconds, when Kubernetes says when it changed
    power: str | None  # on | off | None (unknown)
    bmc: str  # the BMC's address
    bmc_error: str | None
    maas_status: str | None
    etcd: tuple[str, ...]


@dataclass(frozen=True)
class Path:
    path: str | None  # None: refused
    reason: str


def choose(f: Facts) -> Path:
    """The decision table of the module docstring."""
    since = f" for {f.not_ready_for:.0f} s" if f.not_ready_for is not None else ""
    if f.power is None:
        what = ("its power-off could not be confirmed, so its pods are not deleted"
                if f.kubernetes not in ("Ready", "absent") else
                "redeploy_server needs it to power off and wipe the node")
        cause = f.bmc_error or f"BMC {f.bmc} reported no power state"
        return Path(None, f"{f.node}: {cause}; {what} (Kubernetes: {f.kubernetes}{since}); "
                    "nothing was changed")
    if f.kubernetes == "absent":
        etcd = "; its etcd members are removed" if f.etcd else ""
        return Path(GRACEFUL, f"{f.node} is not in Kubernetes (power {f.power}): nothing to "
                    f"drain{etcd}")
    if f.kubernetes == "Ready" and f.power == "on":
        return Path(GRACEFUL, f"{f.node} is Ready and powered on")
    if f.kubernetes == "Ready":
        return Path(FENCE_FIRST, f"{f.node} is powered off at its BMC although Kubernetes "
                    "still says Ready: its pods are removed once the power-off is confirmed")
    return Path(FENCE_FIRST, f"{f.node} is {f.kubernetes} in Kubernetes{since} with power "
                f"{f.power}: it is forced off and confirmed off at its BMC before the control "
                "plane deletes its pods")


def _kubernetes(view: NodeView | None, now: float) -> tuple[str, float | None]:
    if view is None:
        return "absent", None
    kubelet = view.get("kubelet") or {}
    ready = str(kubelet.get("ready", "Unknown"))
    if ready == "True":
        return "Ready", None
    since = kubelet.get("ready_since")
    try:
        changed = datetime.fromisoformat(str(since).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return ("NotReady" if ready == "False" else "Unknown"), None
    return ("NotReady" if ready == "False" else "Unknown"), max(0.0, now - changed)


def read_facts(svc: Services, rc: RequestContext, design_ref: str, node: str,
               etcd: Sequence[str], now: float) -> Facts:
    """The node as Promenade (Kubernetes) and Drydock (BMC, MAAS) see it now."""
    kube, for_ = _kubernetes(svc.promenade.node_status(node, ctx=rc), now)
    drydock = svc.drydock.node(node, design_ref, ctx=rc)
    power = drydock.get("power_state")
    return Facts(
        node=node, kubernetes=kube, not_ready_for=for_,
        power=str(power) if power in ("on", "off") else None,
        bmc=str(drydock.get("oob_address") or "of the node"),
        bmc_error=drydock.get("power_error") or (None if power else "no power state"),
        maas_status=drydock.get("maas_status"), etcd=tuple(etcd))


def facts(ctx: StepContext, node: str) -> Facts:
    return read_facts(services(ctx), ctx.request_context(), str(steps.design(ctx)["design_ref"]),
                      node, (steps.design(ctx).get("etcd") or {}).get(node, []), ctx.now)


def assess(ctx: StepContext) -> Outcome:
    """Read the node's state and pick its path; refuse at once when nothing can be confirmed."""
    assert ctx.node is not None
    found = facts(ctx, ctx.node)
    path = choose(found)
    details = {"facts": asdict(found), "path": path.path, "reason": path.reason}
    if path.path is None:
        return failed("PowerOffUnconfirmed", path.reason, details)
    return done({"path": path.path}, details=details, note=f"{path.path}: {path.reason}")


def path_of(ctx: StepContext) -> str:
    return str(ctx.output("assess_node").get("path") or GRACEFUL)


def fence(ctx: StepContext) -> Outcome:
    """Fence-first: Drydock powers the node off (forced at once, unless the action asks for
    a power policy) and confirms Off at its BMC."""
    assert ctx.node is not None
    if path_of(ctx) != FENCE_FIRST:
        return done(note="Graceful path: the node is not fenced")
    return power.with_report(steps.drydock_task(
        ctx, "power_off_nodes", node_names_filter([ctx.node]),
        power.fence_options(ctx.parameters),
        steps.config_value(ctx, "physical_provisioner", "destroy_interval")))
