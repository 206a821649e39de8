"""Redfish BMCs: the real sushy-tools emulator, its systems backed by the site model.

The emulator's Flask app is a module-level object of sushy-tools; its systems, storage and drive
drivers are replaced (once per process, `sushy_drivers.install_drivers`) by drivers that find
the site to serve in the WSGI environ, which `RedfishBmc` fills per request. `RedfishBmc`
also adds Drive.SecureErase.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import uuid as uuidlib
from collections.abc import Callable, Iterable
from typing import Any

from sitesim.model import SiteModel
from sitesim.siteconfig import NodeSpec

ENVIRON_KEY = "sitesim.redfish"
STORAGE_ID = "1"
ERASE_RE = re.compile(r"^/redfish/v1/Systems/([^/]+)/Storage/([^/]+)/Drives/([^/]+)"
                      r"/Actions/Drive\.SecureErase/?$")
DRIVE_RE = re.compile(r"^/redfish/v1/Systems/([^/]+)/Storage/([^/]+)/Drives/([^/]+)/?$")
SYSTEM_RE = re.compile(r"^/redfish/v1/(?:Systems|Managers)/([^/]+)")
TASK_RE = re.compile(r"^/redfish/v1/TaskService/Tasks/(erase-[0-9a-f]+)/?$")
TASKS_PATH = "/redfish/v1/TaskService/Tasks"
ROOT_PATH = "/redfish/v1"
RUNNING, COMPLETED, EXCEPTION = "Running", "Completed", "Exception"
BMC_DOWN_HOLD = 60.0  # seconds a request to a killed BMC hangs before a 503


def system_uuid(site: str, node: str) -> str:
    """The Redfish System Id/UUID of a node (stable for a site and node name)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"sitesim:{site}:{node}"))


class EraseTask:
    """A Drive.SecureErase running on the BMC: Running for `timings.erase` seconds, then
    Completed (the drive is wiped) or Exception (fault `bmc.erase: fail`); held Running while
    a `bmc.erase: hang` fault is in place."""

    def __init__(self, task_id: str, node: str, drive: str, fail: bool,
                 target: str = "") -> None:
        self.id, self.node, self.drive, self.fail = task_id, node, drive, fail
        self.target = target  # the action URI that started it (the Task's Payload)
        self.state = RUNNING
        self.message = f"Secure erase of {drive} running"

    def body(self) -> dict[str, Any]:
        ok = self.state == COMPLETED
        return {"@odata.type": "#Task.v1_4_3.Task", "@odata.id": self.uri, "Id": self.id,
                "Name": f"Secure erase of {self.drive}", "TaskState": self.state,
                "TaskStatus": "Critical" if self.state == EXCEPTION else "OK",
                "PercentComplete": 100 if self.state != RUNNING else 50,
                "Payload": {"TargetUri": self.target, "HttpOperation": "POST",
                            "JsonBody": "{}"},
                "Messages": [{"Message": self.message,
                              "MessageId": "Base.1.8.Success" if ok else "Base.1.8.GeneralError"
                              if self.state == EXCEPTION else "TaskEvent.1.0.TaskStarted"}]}

    @property
    def uri(self) -> str:
        return f"/redfish/v1/TaskService/Tasks/{self.id}"


class RedfishBackend:
    """What the emulator's drivers need from one site: its systems, power, boot and drives."""

    def __init__(self, model: SiteModel, nodes: list[NodeSpec]) -> None:
        self.model = model
        self.nodes = {system_uuid(model.spec.name, n.name): n for n in nodes}
        self.by_name = {n.name: uid for uid, n in self.nodes.items()}
        self.tasks: dict[str, EraseTask] = {}
        self._lock = threading.Lock()

    def erasable(self, node: NodeSpec) -> set[str]:
        """Drives whose BMC offers Drive.SecureErase (the BMC can, and so can the drive)."""
        return {d.name for d in node.disks if d.secure_erase} if node.bmc.drive_erase else set()

    def start_erase(self, node: NodeSpec, drive: str, target: str = "") -> EraseTask:
        self.model.record_call("redfish", "secure_erase", node.name)
        self.model.record_call("redfish", f"secure_erase:{drive}", node.name)  # per drive
        fail = self.model.fault("bmc.erase", node.name) == "fail"
        task = EraseTask(f"erase-{uuidlib.uuid4().hex[:12]}", node.name, drive, fail, target)
        with self._lock:
            self.tasks[task.id] = task
        self.model.record_operation("bmc", "secure_erase", node.name,
                                    self.model.spec.timings.erase)
        self.model.scheduler.call_later(self.model.spec.timings.erase,
                                        lambda: self._finish(task))
        return task

    def _finish(self, task: EraseTask) -> None:
        if self.model.fault("bmc.erase", task.node) == "hang":
            self.model.scheduler.call_later(max(self.model.spec.timings.erase, 0.1),
                                            lambda: self._finish(task))
            return
        if task.fail:
            task.state, task.message = EXCEPTION, f"Secure erase of {task.drive} failed"
            return
        self.model.wipe_disk(task.node, task.drive, "redfish Drive.SecureErase")
        task.state, task.message = COMPLETED, f"Secure erase of {task.drive} completed"

    def node_of(self, identity: str) -> NodeSpec:
        from sushy_tools import error
        if identity in self.nodes:
            return self.nodes[identity]
        if identity in self.by_name:
            return self.nodes[self.by_name[identity]]
        raise error.NotFound(f"System {identity} was not found")

    def set_power(self, identity: str, reset_type: str) -> None:
        from sushy_tools import error
        node = self.node_of(identity)
        op = POWER_OPS.get(reset_type)
        if op is None:
            raise error.BadRequest(f"Reset type {reset_type} is not supported")
        self.model.record_call("redfish", op, node.name)
        effect = self.model.fault("bmc.power", node.name)
        if effect == "hang":
            self.model.wait_while_hung("bmc.power", node.name)
        elif effect == "fail":
            raise error.FishyError(f"BMC of {node.name} failed to apply {reset_type}")
        self._apply(node, reset_type)

    def _apply(self, node: NodeSpec, reset_type: str) -> None:
        timings, name = self.model.spec.timings, node.name
        if reset_type in ("On", "ForceOn", "PushPowerButton") and not self.model.is_on(name):
            self.model.set_power_later(name, True, timings.power)
        elif reset_type in ("ForceOff", "PushPowerButton"):
            self.model.set_power_later(name, False, timings.power)
        elif reset_type == "GracefulShutdown":
            if not node.bmc.ignore_graceful_shutdown \
                    and self.model.fault("bmc.graceful_shutdown", name) is None:
                self.model.set_power_later(name, False, timings.graceful_shutdown)
        elif reset_type in ("ForceRestart", "GracefulRestart", "PowerCycle"):
            self.model.set_power(name, False)
            self.model.set_power_later(name, True, timings.power)

    def storage(self, identity: str) -> list[dict[str, Any]]:
        node = self.node_of(identity)
        return [{"Id": STORAGE_ID, "Name": "Local Storage Controller",
                 "StorageControllers": [{"MemberId": "0", "Name": "Sitesim RAID",
                                         "SpeedGbps": 12}],
                 "Drives": [d.name for d in node.disks]}]

    def drives(self, identity: str, storage_id: str) -> list[dict[str, Any]]:
        from sushy_tools import error
        node = self.node_of(identity)
        if storage_id != STORAGE_ID:
            raise error.NotFound(f"Storage {storage_id} was not found")
        return [{"Id": d.name, "Name": d.name, "CapacityBytes": d.size_gb * 10**9,
                 "Protocol": "SATA"} for d in node.disks]


POWER_OPS = {
    "On": "power_on", "ForceOn": "power_on", "ForceOff": "power_off",
    "GracefulShutdown": "graceful_shutdown", "ForceRestart": "power_cycle",
    "GracefulRestart": "power_cycle", "PowerCycle": "power_cycle",
    "PushPowerButton": "power_button", "Nmi": "nmi",
}


REDFISH_BOOT = {"hdd": "Hdd", "pxe": "Pxe", "cd": "Cd", "network": "Pxe", "disk": "Hdd",
                "bios": "BiosSetup", "biossetup": "BiosSetup", "floppy": "Floppy",
                "usb": "Usb", "uefihttp": "UefiHttp", "none": "None"}

StartResponse = Callable[..., Any]


class RedfishBmc:
    """WSGI app: per-system basic auth, the emulator, plus Drive.SecureErase on every drive."""

    def __init__(self, model: SiteModel, nodes: list[NodeSpec], emulator: Any) -> None:
        """`emulator`: the sushy-tools app with the site drivers in
        (`sitesim.bmc.sushy_drivers.install_drivers()`)."""
        self.backend = RedfishBackend(model, nodes)
        self._emulator = emulator

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        environ[ENVIRON_KEY] = self.backend
        system = SYSTEM_RE.match(path)
        if system and not self._answers(system.group(1)):
            return _json(start_response, 503, _error("BMC unavailable"))
        if system and not self._authorized(system.group(1), environ):
            return _json(start_response, 401, _error("Authentication required"),
                         [("WWW-Authenticate", 'Basic realm="sitesim"')])
        if path.rstrip("/") == TASKS_PATH and environ.get("REQUEST_METHOD") == "GET":
            return _json(start_response, 200, self._task_collection())
        task = TASK_RE.match(path)
        if task and task.group(1) in self.backend.tasks:
            return _json(start_response, 200, self.backend.tasks[task.group(1)].body())
        erase = ERASE_RE.match(path)
        if erase:
            if environ.get("REQUEST_METHOD") != "POST":
                return _json(start_response, 405, _error("Method not allowed"))
            return self._secure_erase(start_response, *erase.groups())
        if DRIVE_RE.match(path) and environ.get("REQUEST_METHOD") == "GET":
            return self._drive_with_actions(environ, start_response, path)
        if path.rstrip("/") == ROOT_PATH and environ.get("REQUEST_METHOD") == "GET":
            return self._root_with_tasks(environ, start_response)
        result: Iterable[bytes] = self._emulator(environ, start_response)
        return result

    def _answers(self, identity: str) -> bool:
        """A killed BMC answers nothing: the request hangs until the client gives up (or the
        BMC is restarted within a minute)."""
        try:
            node = self.backend.node_of(identity)
        except Exception:  # unknown systems get the emulator's own 404
            return True
        return self.backend.model.wait_for_bmc(node.name, BMC_DOWN_HOLD)

    def _authorized(self, identity: str, environ: dict[str, Any]) -> bool:
        try:
            node = self.backend.node_of(identity)
        except Exception:  # unknown systems get the emulator's own 404
            return True
        header = environ.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return (user, password) == (node.bmc.user, node.bmc.password)

    def _secure_erase(self, start_response: StartResponse, identity: str, storage_id: str,
                      drive: str) -> Iterable[bytes]:
        try:
            node = self.backend.node_of(identity)
        except Exception:
            return _json(start_response, 404, _error(f"System {identity} was not found"))
        if storage_id != STORAGE_ID or drive not in {d.name for d in node.disks}:
            return _json(start_response, 404, _error(f"Drive {drive} was not found"))
        if drive not in self.backend.erasable(node):
            return _json(start_response, 400, _error(
                f"Drive.SecureErase is not supported by drive {drive}"))
        target = (f"/redfish/v1/Systems/{identity}/Storage/{storage_id}/Drives/{drive}"
                  "/Actions/Drive.SecureErase")
        task = self.backend.start_erase(node, drive, target)
        return _json(start_response, 202, task.body(), [("Location", task.uri)])

    def _task_collection(self) -> dict[str, Any]:
        """The TaskService's tasks (every erase task this BMC process started)."""
        uris = [{"@odata.id": t.uri} for t in list(self.backend.tasks.values())]
        return {"@odata.type": "#TaskCollection.TaskCollection", "@odata.id": TASKS_PATH,
                "Name": "Task Collection", "Members@odata.count": len(uris), "Members": uris}

    def _root_with_tasks(self, environ: dict[str, Any],
                         start_response: StartResponse) -> Iterable[bytes]:
        """The emulator's service root, linking the TaskService as a real BMC's does (the
        emulator serves it but leaves it out of the root)."""
        status, headers, body = self._emulate(environ)
        if status.startswith("200"):
            root = json.loads(body)
            root.setdefault("TaskService", {"@odata.id": "/redfish/v1/TaskService"})
            body = json.dumps(root).encode()
        return _rewritten(start_response, status, headers, body)

    def _emulate(self, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
        """The emulator's answer (status, headers, body), to be rewritten."""
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured.update(status=status, headers=headers)
            return lambda data: None

        body = b"".join(self._emulator(environ, capture))
        return captured["status"], captured["headers"], body

    def _drive_with_actions(self, environ: dict[str, Any], start_response: StartResponse,
                            path: str) -> Iterable[bytes]:
        status, headers, body = self._emulate(environ)
        match = DRIVE_RE.match(path)
        try:
            offered = match is not None and match.group(3) in self.backend.erasable(
                self.backend.node_of(match.group(1)))
        except Exception:  # unknown system: the emulator's answer stands
            offered = False
        if status.startswith("200") and offered:
            drive = json.loads(body)
            target = path.rstrip("/") + "/Actions/Drive.SecureErase"
            drive["Actions"] = {"#Drive.SecureErase": {"target": target}}
            running = [t for t in list(self.backend.tasks.values())
                       if t.target == target and t.state == RUNNING]
            drive["Operations"] = [{"OperationName": "Sanitize", "PercentageComplete": 50,
                                    "AssociatedTask": {"@odata.id": t.uri}} for t in running]
            body = json.dumps(drive).encode()
        return _rewritten(start_response, status, headers, body)


def _rewritten(start_response: StartResponse, status: str, headers: list[tuple[str, str]],
               body: bytes) -> Iterable[bytes]:
    """Answer with the emulator's status and headers around a rewritten body."""
    kept = [(k, v) for k, v in headers if k.lower() != "content-length"]
    start_response(status, kept + [("Content-Length", str(len(body)))])
    return [body]


def _error(message: str) -> dict[str, Any]:
    return {"error": {"code": "Base.1.0.GeneralError", "message": message,
                      "@Message.ExtendedInfo": [{"Message": message}]}}


def _json(start_response: StartResponse, code: int, body: dict[str, Any],
          headers: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
    data = json.dumps(body).encode()
    reason = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request",
              401: "Unauthorized", 404: "Not Found",
              405: "Method Not Allowed", 500: "Internal Server Error"}.get(code, "")
    start_response(f"{code} {reason}", [("Content-Type", "application/json"),
                                        ("Content-Length", str(len(data)))] + (headers or []))
    return [data]
