"""OobDriver for Redfish BMCs over sushy: power state, shutdown/ForceOff, Drive.SecureErase."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import requests
import sushy
from sushy import auth as sushy_auth
from sushy import connector as sushy_connector
from sushy import exceptions as sushy_exc
from sushy.resources.base import ResourceBase
from sushy.resources.constants import Health
from sushy.resources.system import system as sushy_system
from sushy.resources.system.storage import drive as sushy_drive
from sushy.resources.taskservice import task as sushy_task
from sushy.resources.taskservice import taskservice as sushy_taskservice
from sushy.resources.taskservice.constants import TaskState
from sushy.taskmonitor import TaskMonitor

from drydock_api.drivers.ports import BmcAccess, EraseStatus, OobError

SECURE_ERASE = "#Drive.SecureErase"
ERASE_ACTION = "/Actions/Drive.SecureErase"
TASK_SERVICE = "/redfish/v1/TaskService"  # where a BMC whose root links none keeps it
SYNC_PREFIX = "sync:"
R = TypeVar("R", bound=ResourceBase)


@contextmanager
def translated(bmc: BmcAccess, what: str) -> Iterator[None]:
    """sushy/requests exceptions → OobError naming the BMC (never its credential)."""
    try:
        yield
    except sushy_exc.ConnectionError as exc:
        raise OobError(f"Redfish BMC {bmc.describe()} unreachable during {what}",
                       transient=True) from exc
    except sushy_exc.HTTPError as exc:
        code = getattr(exc, "status_code", None)
        raise OobError(f"Redfish BMC {bmc.describe()} refused {what} ({code}): "
                       f"{getattr(exc, 'detail', '') or exc}",
                       transient=bool(code and code >= 500)) from exc
    except sushy_exc.SushyError as exc:
        raise OobError(f"Redfish BMC {bmc.describe()} failed {what}: {exc}") from exc
    except (OSError, ValueError, KeyError) as exc:
        raise OobError(f"Redfish BMC {bmc.describe()} failed {what}: {exc}",
                       transient=True) from exc


RUNNING_STATES = frozenset({
    TaskState.NEW, TaskState.STARTING, TaskState.RUNNING, TaskState.PENDING,
    TaskState.SUSPENDED, TaskState.STOPPING, TaskState.CANCELLING, TaskState.SERVICE})


@dataclass(frozen=True)
class _Bmc:
    """One BMC's sushy root and the connector it was built on (Drydock's own, so the
    action sushy has no method for, Drive.SecureErase, is posted through it)."""

    root: sushy.Sushy
    conn: sushy_connector.Connector

    def resource(self, cls: type[R], path: str) -> R:
        found: R = cls(self.conn, path, redfish_version=self.root.redfish_version,
                       registries=self.root.lazy_registries, root=self.root)
        return found


def _words(task: sushy_task.Task | None) -> str:
    messages = task.messages if task is not None else []
    return "; ".join(str(m.message) for m in messages or [] if m.message)


def _task_service(bmc: _Bmc) -> sushy_taskservice.TaskService:
    """The BMC's TaskService: the root's link (`Tasks` in DSP0268, `TaskService` on some
    BMCs), else the path where the specification puts it."""
    links = bmc.root.json
    for name in ("Tasks", "TaskService"):
        ref = (links.get(name) or {}).get("@odata.id")
        if isinstance(ref, str) and ref:
            return bmc.resource(sushy_taskservice.TaskService, ref)
    return bmc.resource(sushy_taskservice.TaskService, TASK_SERVICE)


class RedfishDriver:
    """One sushy root per BMC, reused; the System is re-read on every call."""

    def __init__(self, *, timeout: float = 30.0, scheme: str = "http",
                 factory: Callable[..., sushy.Sushy] = sushy.Sushy) -> None:
        self._timeout = timeout
        self._scheme = scheme
        self._factory = factory
        self._bmcs: dict[tuple[str, int, str], _Bmc] = {}
        self._lock = threading.Lock()

    def _bmc(self, bmc: BmcAccess) -> _Bmc:
        key = (bmc.address, bmc.port, bmc.account)
        with self._lock:
            known = self._bmcs.get(key)
        if known is None:
            scheme = "https" if bmc.port == 443 and self._scheme == "http" else self._scheme
            url = f"{scheme}://{bmc.address}:{bmc.port}"
            conn = sushy_connector.Connector(
                url, verify=False, server_side_retries=0,
                default_request_timeout=self._timeout, connect_timeout=self._timeout)
            with translated(bmc, "connect"):
                root = self._factory(
                    url, auth=sushy_auth.BasicAuth(username=bmc.account, password=bmc.credential),
                    verify=False, read_timeout=self._timeout, connect_timeout=self._timeout,
                    server_side_retries=0, connector=conn)
            known = _Bmc(root, conn)
            with self._lock:
                self._bmcs[key] = known
        return known

    def _root(self, bmc: BmcAccess) -> sushy.Sushy:
        return self._bmc(bmc).root

    def _system(self, bmc: BmcAccess) -> sushy_system.System:
        root = self._root(bmc)
        if bmc.system_id:
            return root.get_system(f"/redfish/v1/Systems/{bmc.system_id}")
        members = root.get_system_collection().get_members()
        if not members:
            raise OobError(f"Redfish BMC {bmc.describe()} exposes no System")
        return members[0]

    def power_state(self, bmc: BmcAccess) -> str:
        with translated(bmc, "power state"):
            state = self._system(bmc).power_state
        if state == sushy.POWER_STATE_OFF:
            return "off"
        return "on" if state is not None else "unknown"

    def power_off(self, bmc: BmcAccess, *, graceful: bool) -> None:
        reset = sushy.RESET_GRACEFUL_SHUTDOWN if graceful else sushy.RESET_FORCE_OFF
        with translated(bmc, "graceful shutdown" if graceful else "force off"):
            self._system(bmc).reset_system(reset)

    def power_on(self, bmc: BmcAccess) -> None:
        with translated(bmc, "power on"):
            self._system(bmc).reset_system(sushy.RESET_ON)

    def power_cycle(self, bmc: BmcAccess) -> None:
        with translated(bmc, "power cycle"):
            system = self._system(bmc)
            off = system.power_state == sushy.POWER_STATE_OFF
            system.reset_system(sushy.RESET_ON if off else sushy.RESET_FORCE_RESTART)

    def set_pxe_boot(self, bmc: BmcAccess) -> None:
        with translated(bmc, "boot override"):
            self._system(bmc).set_system_boot_options(
                target=sushy.BOOT_SOURCE_TARGET_PXE, enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)

    def _drives(self, bmc: BmcAccess) -> Iterator[sushy_drive.Drive]:
        system = self._system(bmc)
        if not (system.json.get("Storage") or {}).get("@odata.id"):
            return
        for storage in system.storage.get_members():
            yield from storage.drives

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        out: dict[str, str] = {}
        with translated(bmc, "list drives"):
            for drive in self._drives(bmc):
                action = (drive.json.get("Actions") or {}).get(SECURE_ERASE) or {}
                target = action.get("target")
                if target:
                    for name in (drive.identity, drive.name):
                        if isinstance(name, str) and name:
                            out[name.removeprefix("/dev/")] = str(target)
        return out

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        """POST the action; a 202 names the task (sushy's TaskMonitor.from_response: the
        Task the body names, else Location). A BMC that answers 200/204 did the erase
        before answering: the handle says so."""
        known = self._bmc(bmc)
        with translated(bmc, "Drive.SecureErase"):
            resp = known.conn.post(drive, data={})
        if resp.status_code != 202:
            return f"{SYNC_PREFIX}{resp.status_code}"
        try:
            monitor = TaskMonitor.from_response(
                known.conn, resp, drive, redfish_version=known.root.redfish_version,
                registries=known.root.lazy_registries)
        except (sushy_exc.MissingHeaderError, ValueError) as exc:
            raise OobError(f"Redfish BMC {bmc.describe()} accepted Drive.SecureErase of "
                           f"{drive} but named no task to follow") from exc
        return str(monitor.task_monitor_uri)

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        """The erase task of `drive` (its action target) the BMC knows: the task the Drive's
        `Operations` associates, else the last task of the TaskService whose `Payload`
        targets the action (a running one first)."""
        known = self._bmc(bmc)
        with translated(bmc, "look up erase tasks"):
            if drive.endswith(ERASE_ACTION):
                resource = known.resource(sushy_drive.Drive, drive[:-len(ERASE_ACTION)])
                for op in resource.json.get("Operations") or []:
                    task = (op.get("AssociatedTask") or {}).get("@odata.id")
                    if task:
                        return str(task)
            try:
                tasks = _task_service(known).tasks.get_members()
            except sushy_exc.ResourceNotFoundError:
                return None
            found = [(t.task_state in RUNNING_STATES, str(t.path)) for t in tasks
                     if (t.json.get("Payload") or {}).get("TargetUri") == drive]
        running = [uri for live, uri in found if live]
        chosen = running or [uri for _, uri in found]
        return chosen[-1] if chosen else None

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        """The erase's task through sushy's TaskMonitor, one GET: still processing (202),
        its Task read from the monitor's answer; otherwise the Task the answer carries (the
        URI a BMC names is often the Task resource itself, which answers 200 while it runs),
        else the Task read again (as Ironic does)."""
        if task.startswith(SYNC_PREFIX):
            return EraseStatus("completed", f"the BMC answered {task[len(SYNC_PREFIX):]} "
                                            "once the erase was done")
        known = self._bmc(bmc)
        with translated(bmc, f"erase task {task}"):
            monitor = known.root.get_task_monitor(task)
            if monitor.is_processing:
                running = monitor.task
                state = running.task_state if running is not None else None
                return EraseStatus("running", _words(running) or (state or TaskState.RUNNING).value)
            doc = _task_document(monitor.response)
            current = monitor.get_task() if doc is None else sushy_task.Task(
                known.conn, task, redfish_version=known.root.redfish_version,
                registries=known.root.lazy_registries, json_doc=doc, root=known.root)
        return _outcome(current)


def _task_document(response: requests.Response) -> dict[str, object] | None:
    """The Task a 200 answer carries (its `Id` and `TaskState`), else None."""
    if response.status_code != 200 or not response.content:
        return None
    try:
        doc = response.json()
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and doc.get("Id") and doc.get("TaskState") else None


def _outcome(task: sushy_task.Task) -> EraseStatus:
    """A Task read with 200: running, completed (OK or Warning) or failed."""
    state, words = task.task_state, _words(task)
    if state in RUNNING_STATES:
        return EraseStatus("running", words or state.value)
    status = task.task_status
    if state == TaskState.COMPLETED and status in (Health.OK, Health.WARNING, None):
        return EraseStatus("completed", words or "Completed")
    named = state.value if state is not None else task.json.get("TaskState")
    shown = status.value if status is not None else task.json.get("TaskStatus")
    return EraseStatus("failed", f"task {named or 'in an unknown state'}"
                                 f" ({shown}): {words or 'no message'}")
