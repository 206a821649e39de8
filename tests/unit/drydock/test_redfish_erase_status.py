"""Following an erase task costs one GET per look: a Task resource answers 200 with the Task
while it runs and when it ended, and that answer is used; a task monitor's 202 carries the
running Task; an answer that is no Task is read again as a Task (sushy's way)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from drydock_api.drivers.ports import BmcAccess
from drydock_api.drivers.redfish.driver import RedfishDriver

TASK = "/redfish/v1/TaskService/Tasks/erase-1"
ROOT = {"@odata.id": "/redfish/v1/", "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
        "Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.8.0",
        "UUID": "00000000-0000-0000-0000-000000000000"}


def task(state: str, status: str = "OK") -> dict[str, object]:
    return {"@odata.id": TASK, "@odata.type": "#Task.v1_4_3.Task", "Id": "erase-1",
            "Name": "Secure erase of sda", "TaskState": state, "TaskStatus": status,
            "Messages": [{"Message": f"erase {state.lower()}"}]}


class Bmc:
    """Answers the root, and the task URI from a list of (status, body) in turn, counting
    the task GETs."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, object]] = []
        self.gets = 0
        bmc = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/") == "/redfish/v1":
                    self._send(200, ROOT)
                    return
                bmc.gets += 1
                status, body = bmc.answers.pop(0) if len(bmc.answers) > 1 else bmc.answers[0]
                self._send(status, body)

            def _send(self, status: int, body: object) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.access = BmcAccess("redfish", "127.0.0.1", self.server.server_address[1],
                                "admin", "secret", "1")


@pytest.fixture
def bmc() -> Iterator[Bmc]:
    b = Bmc()
    yield b
    b.server.shutdown()
    b.server.server_close()


def look(bmc: Bmc, *answers: tuple[int, object]) -> tuple[str, str, int]:
    bmc.answers, bmc.gets = list(answers), 0
    status = RedfishDriver(timeout=5).erase_status(bmc.access, TASK)
    return status.state, status.message, bmc.gets


def test_a_task_resource_answering_200_is_read_once_per_look(bmc: Bmc):
    assert look(bmc, (200, task("Running"))) == ("running", "erase running", 1)
    assert look(bmc, (200, task("Completed"))) == ("completed", "erase completed", 1)
    state, message, gets = look(bmc, (200, task("Exception", "Critical")))
    assert (state, gets) == ("failed", 1) and "erase exception" in message


def test_a_task_monitor_s_202_carries_the_running_task(bmc: Bmc):
    assert look(bmc, (202, task("Running"))) == ("running", "erase running", 1)


def test_an_answer_that_is_no_task_is_read_again_as_the_task(bmc: Bmc):
    assert look(bmc, (200, {"Messages": []}), (200, task("Completed"))) == (
        "completed", "erase completed", 2)
