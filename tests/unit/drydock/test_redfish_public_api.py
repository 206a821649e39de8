"""Drydock's Redfish driver reaches storage, drives and erase tasks through sushy's public
resources and TaskMonitor: no sushy private attribute, no hand-built TaskService path."""

from __future__ import annotations

import ast
from pathlib import Path

DRIVER = Path(__file__).resolve().parents[3] / "drydock_api" / "drivers" / "redfish" / "driver.py"


def test_the_redfish_driver_uses_no_private_sushy_attribute():
    tree = ast.parse(DRIVER.read_text())
    private = sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                      and node.attr in ("_conn", "_path", "_connector", "_response", "_task")})
    assert not private, f"the driver reaches into sushy: {private}"


def test_erase_tasks_are_followed_through_sushy_s_task_monitor():
    text = DRIVER.read_text()
    assert "TaskMonitor.from_response" in text and "get_task_monitor" in text
    assert "/redfish/v1/TaskService/Tasks" not in text
