"""OobDriver for Redfish BMCs over sushy: power state, shutdown/ForceOff, Drive.SecureErase."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sushy
from sushy import auth as sushy_auth
from sushy import exceptions as sushy_exc

from drydock_api.drivers.ports import EraseStatus, OobError
from drydock_api.nodes.design import BmcAccess

SECURE_ERASE = "#Drive.SecureErase"
ERASE_ACTION = "/Actions/Drive.SecureErase"
TASKS = "/redfish/v1/TaskService/Tasks"
SYNC_PREFIX = "sync:"
TASK_RUNNING = ("New", "Starting", "Running", "Pending", "Suspended", "Stopping",
                "Cancelling", "Service")


def _json_or_empty(resp: Any) -> dict[str, Any]:
    try:
        body = resp.json() if resp.content else {}
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


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


class RedfishDriver:
    """One sushy root per BMC, reused; the System is re-read on every call."""

    def __init__(self, *, timeout: float = 30.0, scheme: str = "http",
                 factory: Callable[..., Any] = sushy.Sushy) -> None:
        self._timeout = timeout
        self._scheme = scheme
        self._factory = factory
        self._roots: dict[tuple[str, int, str], Any] = {}
        self._lock = threading.Lock()

    def _root(self, bmc: BmcAccess) -> Any:
        key = (bmc.address, bmc.port, bmc.account)
        with self._lock:
            root = self._roots.get(key)
        if root is None:
            scheme = "https" if bmc.port == 443 and self._scheme == "http" else self._scheme
            with translated(bmc, "connect"):
                root = self._factory(
                    f"{scheme}://{bmc.address}:{bmc.port}",
                    auth=sushy_auth.BasicAuth(username=bmc.account, password=bmc.credential),
                    verify=False, read_timeout=self._timeout, connect_timeout=self._timeout,
                    server_side_retries=0)
            with self._lock:
                self._roots[key] = root
        return root

    def _system(self, bmc: BmcAccess) -> Any:
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

    def _drives(self, bmc: BmcAccess) -> Iterator[dict[str, Any]]:
        conn = self._root(bmc)._conn
        system = self._system(bmc)
        storage_ref = (system.json.get("Storage") or {}).get("@odata.id")
        if not storage_ref:
            return
        for member in conn.get(storage_ref).json().get("Members") or []:
            storage = conn.get(member["@odata.id"]).json()
            for drive_ref in storage.get("Drives") or []:
                yield conn.get(drive_ref["@odata.id"]).json()

    def erasable_drives(self, bmc: BmcAccess) -> dict[str, str]:
        out: dict[str, str] = {}
        with translated(bmc, "list drives"):
            for drive in self._drives(bmc):
                target = ((drive.get("Actions") or {}).get(SECURE_ERASE) or {}).get("target")
                if target:
                    for name in (drive.get("Id"), drive.get("Name")):
                        if isinstance(name, str) and name:
                            out[name.removeprefix("/dev/")] = str(target)
        return out

    def secure_erase(self, bmc: BmcAccess, drive: str) -> str:
        """POST the action; a 202 names the task (Location, or the Task in the body). A BMC
        that answers 200/204 did the erase before answering: the handle says so."""
        with translated(bmc, "Drive.SecureErase"):
            resp = self._root(bmc)._conn.post(drive, data={})
        if resp.status_code != 202:
            return f"{SYNC_PREFIX}{resp.status_code}"
        body = _json_or_empty(resp)
        task = resp.headers.get("Location") or body.get("@odata.id")
        if not task:
            raise OobError(f"Redfish BMC {bmc.describe()} accepted Drive.SecureErase of "
                           f"{drive} but named no task to follow")
        return str(task)

    def find_erase(self, bmc: BmcAccess, drive: str) -> str | None:
        """The erase task of `drive` (its action target) the BMC knows: the task the Drive's
        `Operations` associates, else the last task of the TaskService whose `Payload`
        targets the action (a running one first)."""
        conn = self._root(bmc)._conn
        with translated(bmc, "look up erase tasks"):
            if drive.endswith(ERASE_ACTION):
                body = conn.get(drive[:-len(ERASE_ACTION)]).json()
                for op in body.get("Operations") or []:
                    task = (op.get("AssociatedTask") or {}).get("@odata.id")
                    if task:
                        return str(task)
            try:
                members = conn.get(TASKS).json().get("Members") or []
            except sushy_exc.ResourceNotFoundError:
                return None
            found: list[tuple[bool, str]] = []
            for member in members:
                task = conn.get(member["@odata.id"]).json()
                if (task.get("Payload") or {}).get("TargetUri") == drive:
                    found.append((task.get("TaskState") in TASK_RUNNING,
                                  str(task.get("@odata.id") or member["@odata.id"])))
        running = [uri for live, uri in found if live]
        chosen = running or [uri for _, uri in found]
        return chosen[-1] if chosen else None

    def erase_status(self, bmc: BmcAccess, task: str) -> EraseStatus:
        if task.startswith(SYNC_PREFIX):
            return EraseStatus("completed", f"the BMC answered {task[len(SYNC_PREFIX):]} "
                                            "once the erase was done")
        with translated(bmc, f"erase task {task}"):
            resp = self._root(bmc)._conn.get(task)
        body = _json_or_empty(resp)
        state = str(body.get("TaskState") or ("Running" if resp.status_code == 202 else ""))
        words = "; ".join(str(m.get("Message")) for m in body.get("Messages") or []
                          if isinstance(m, dict) and m.get("Message"))
        if state in TASK_RUNNING:
            return EraseStatus("running", words or state)
        if state == "Completed" and body.get("TaskStatus", "OK") in ("OK", "Warning", None):
            return EraseStatus("completed", words or "Completed")
        return EraseStatus("failed", f"task {state or 'in an unknown state'}"
                                     f" ({body.get('TaskStatus')}): {words or 'no message'}")
