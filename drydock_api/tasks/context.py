"""What a node step gets (the per-node context, the ports and settings) and how Drydock's steps
are defined; what a step returns (Done / Retry / Failed) is common.workflow's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NoReturn, Protocol, TypedDict, TypeVar, Unpack

from common.context import RequestContext
from common.documents import Document
from common.jsontypes import JSON, JSONObject
from common.status import Message
from common.workflow import Outcome, StepDef, StepPolicy
from drydock_api.drivers.ports import (
    BmcAccess,
    BootInterface,
    EraseInterface,
    MachinesInterface,
    OobDriver,
    PowerInterface,
    Provisioner,
    SiteInterface,
    StorageInterface,
)
from drydock_api.drivers.provisioners import Backends, Retirement
from drydock_api.nodes.design import NodeDef


class Labeller(Protocol):
    """Promenade's node-labels endpoint."""

    def put_labels(self, node: str, labels: dict[str, str], ctx: RequestContext) -> None: ...


class NodeRecords(Protocol):
    """Drydock's own node state that steps change (teardown, retirement)."""

    def torn_down(self, name: str, value: bool) -> None: ...

    def retired(self, name: str) -> tuple[bool, str | None]: ...

    def kept_disks(self, name: str) -> list[str]: ...

    def end_teardown(self, name: str) -> None: ...

    def forget(self, name: str, kept: list[str]) -> int:
        """End a teardown in one transaction: torn down, `kept` disks recorded, reboot
        requests dropped; how many were."""
        ...


class Budgets(Protocol):
    """Failure-domain slots of tasks (tasks.budget.TaskBudgets)."""

    def take(self, ctx: NodeContext) -> Outcome: ...

    def retake(self, ctx: NodeContext, blocked: list[str]) -> Outcome | None: ...

    def release(self, options: JSONObject, node: str) -> None: ...

    def renew(self, options: JSONObject) -> int: ...


T = TypeVar("T")
MAX_RETRY_DELAY = 30.0  # the longest wait between retries of a transient driver error (s)


@dataclass(frozen=True)
class StepSettings:
    graceful_timeout: float = 60.0
    power_timeout: float = 300.0
    power_poll: float = 2.0
    release_timeout: float = 1800.0
    maas_poll: float = 5.0
    retry_delay: float = 1.0
    retries: int = 3
    outage_window: float = 0.0  # transient BMC/MAAS failures are retried this long (s)
    enlist_timeout: float = 1800.0
    commission_timeout: float = 3600.0
    deploy_timeout: float = 3600.0
    first_poll: float = 0.1  # MAAS/BMC polls start this soon after a change (s) ...
    poll_backoff: float = 0.1  # ... then wait this fraction of the time since the change
    bmc_check: str = "off"  # before enrolment: off | warn | refuse (tasks.bmccheck)

    def policy(self, timeout: float) -> StepPolicy:
        """A step's timeout, with the retries of transient driver errors these settings give."""
        return StepPolicy(timeout=timeout, retries=self.retries, backoff=self.retry_delay,
                          max_backoff=MAX_RETRY_DELAY, outage_window=self.outage_window)


class BootActions(Protocol):
    """The boot actions of a node's deploy (drydock_api.bootactions.service)."""

    report_url: str

    def begin(self, node: str, task_id: str, design_ref: JSON, ctx: RequestContext | None
              ) -> tuple[str, list[JSONObject]] | None: ...


class _NotGiven:
    """A port its holder was not given (a test hands a step only the ports it uses): any use
    fails, naming the port."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> NoReturn:
        raise AttributeError(f"no {self._name} port was given ({attr} asked)")


def _not_given(name: str) -> _NotGiven:
    return field(default_factory=lambda: _NotGiven(name))


class PortsExtras(TypedDict, total=False):
    """The ports besides the provisioner's and the BMC's (Ports.of)."""

    labeller: Labeller | None
    retire: Callable[[str, str | None], None] | None
    records: NodeRecords | None
    budgets: Budgets | None
    bootactions: BootActions | None
    bmc_check: Callable[[BmcAccess], list[str]] | None
    provisioner: str
    backends: Backends | None
    retirement: Retirement | None


@dataclass
class Ports:
    """What steps reach the world through, one interface per concern (drivers.ports): a step
    uses only those it needs. `Ports.of` gives all six from one provisioner and one BMC
    driver."""

    machines: MachinesInterface = _not_given("machines")
    storage: StorageInterface = _not_given("storage")
    site: SiteInterface = _not_given("site")
    power: PowerInterface = _not_given("power")
    boot: BootInterface = _not_given("boot")
    erase: EraseInterface = _not_given("erase")
    labeller: Labeller | None = None
    retire: Callable[[str, str | None], None] | None = None
    records: NodeRecords | None = None
    budgets: Budgets | None = None  # failure-domain slots (tasks.budget)
    bootactions: BootActions | None = None  # records and keys of boot actions at deploy
    # a Redfish BMC against Drydock's profile: the failed requirements ([]: it passes)
    bmc_check: Callable[[BmcAccess], list[str]] | None = None
    provisioner: str = "MAAS"  # the provisioner's name in step messages (MAAS or Ironic)
    backends: Backends | None = None  # the configured provisioners (a design picks one)
    retirement: Retirement | None = None  # the provisioner's own retired flag (Ironic's)

    @classmethod
    def of(cls, maas: Provisioner, oob: OobDriver, **others: Unpack[PortsExtras]) -> Ports:
        """The provisioner's three interfaces from `maas`, the BMC's three from `oob`."""
        return cls(machines=maas, storage=maas, site=maas, power=oob, boot=oob, erase=oob,
                   **others)

    def for_provisioner(self, name: str) -> Ports:
        """These ports with the provisioner a design's Region names as machines, storage and
        site (422 when it is not configured), and its own retired flag where it keeps one."""
        if self.backends is None:
            return self
        backend = self.backends.get(name)
        if backend.label == self.provisioner:  # these ports are that provisioner's already
            return self
        port = backend.port
        return replace(self, machines=port, storage=port, site=port,
                       provisioner=backend.label, retirement=backend.retirement)


@dataclass
class NodeContext:
    """Everything one node step may use. `state` is the step's progress: saved with the step
    (with its retry) after every attempt and at each `checkpoint()`, and handed back to the
    worker that takes the step over. `attested` (disk → how it was erased) is saved with the
    node's teardown at the same moments. `teardown` is that teardown as the node's task found
    it (earlier tasks' erases); `task` the id of the running top-level task."""

    node: NodeDef
    options: JSONObject
    ports: Ports
    settings: StepSettings
    request: RequestContext
    clock: Callable[[], float]
    previous: JSONObject = field(default_factory=dict)
    state: JSONObject = field(default_factory=dict)
    cancelled: Callable[[], bool] = lambda: False
    checkpoint: Callable[[], None] = lambda: None
    attested: dict[str, JSONObject] = field(default_factory=dict)
    teardown: JSONObject | None = None
    task: str = ""
    design_grace: float | None = None  # the design's Region power.grace_period
    design_ref: JSON = None  # the task's design reference
    action: str = ""  # the task's action
    message: Callable[[Message], None] = lambda m: None  # a message of the step now

    def intend(self, key: str, asked: str, **what: JSON) -> JSONObject:
        """Write ahead: record durably that `asked` is about to be sent, before it is. A
        worker that finds the intent without `accepted_at` cannot know whether it reached
        its target, and must find out there instead of asking again."""
        entry: JSONObject = {"asked": asked, **what, "at": self.clock()}
        self.state[key] = entry
        self.checkpoint()
        return entry

    def ask(self, key: str, asked: str, send: Callable[[], T], **what: JSON) -> T:
        """Write the intent, send, and note the acceptance (`job`: what `send` returned when
        it names something to follow; see `accepted`). A failure is saved with the intent
        before it is raised: the worker saw it, so the request was refused or may not have
        arrived."""
        entry = self.intend(key, asked, **what)
        try:
            answer = send()
        except Exception as exc:
            entry["error"] = str(exc)
            self.checkpoint()
            raise
        self.accepted(key, **({"job": answer} if isinstance(answer, str) else {}))
        return answer

    @staticmethod
    def unanswered(entry: JSON) -> bool:
        """An intent recorded with neither acceptance nor failure: the worker that sent it
        died in between, and it may have reached its target."""
        return isinstance(entry, dict) and "accepted_at" not in entry and "error" not in entry

    def accepted(self, key: str, **info: JSON) -> JSONObject:
        """The request of intent `key` was accepted (with the job to follow). Saved with the
        step's next write: the next intent's, or the attempt's own as it is judged, which
        follows at once. If the worker dies before that write, the worker taking over finds
        the intent unanswered, as after a death during the request, and asks the target
        (`unanswered`)."""
        entry = self.state[key]
        if not isinstance(entry, dict):
            raise TypeError(f"no intent {key!r} was recorded")
        entry.update(info, accepted_at=self.clock())
        return entry


@dataclass
class SiteContext:
    """What a site-level action (no per-node steps) gets: the design's documents and ports."""

    documents: list[Document]
    options: JSONObject
    ports: Ports
    request: RequestContext


@dataclass(frozen=True)
class SiteOutcome:
    ok: bool
    message: str
    messages: list[Message] = field(default_factory=list)


StepFn = Callable[[NodeContext], Outcome]
SiteFn = Callable[[SiteContext], SiteOutcome]


NodeStep = StepDef[NodeContext]


def node_step(name: str, fn: StepFn, timeout: Callable[[StepSettings], float]) -> NodeStep:
    """A node step whose timeout the settings give (e.g. `lambda s: s.power_timeout`)."""
    return StepDef(name, fn, lambda ctx: ctx.settings.policy(timeout(ctx.settings)))
