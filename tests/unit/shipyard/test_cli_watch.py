"""`shipyard describe action/ID --watch` and `create action --wait`: what changes, as it
changes (appended lines when not a terminal, one JSON object per change with -o json, a
table redrawn in place on a terminal), and `-o` after the sub-command."""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console

from shipyard_api.cli.main import Shipyard, cli, hoist_output
from shipyard_api.cli.watch import changed_lines, progress_lines, watch


def drain(left: int) -> dict[str, Any]:
    return {"phase": "evicting", "pods_left": left, "removed": 4 - left, "groups": [
        {"reason": "PDB web allows 0 disruptions (needs 3 healthy pods, has 3)",
         "count": left - 1, "pods": []},
        {"reason": "eviction lock l2-lock.maintenance.yaook.cloud/x held by agent-1",
         "count": 1, "pods": []}]}


def view(state: str, step_state: str, details: dict[str, Any]) -> dict[str, Any]:
    return {"id": "A1", "name": "redeploy_server", "action_lifecycle": state.capitalize(),
            "state": state, "message": None, "steps": [
                {"id": "decommission.node05", "state": step_state, "attempts": 1,
                 "notes": [], "details": details, "reason": None}]}


class FakeShipyard(Shipyard):
    """Serves a scripted sequence of action views (the last one repeats)."""

    def __init__(self, views: list[dict[str, Any]], output: str, tty: bool) -> None:
        super().__init__("http://shipyard", None, output, None)
        self.views = views
        self.console = Console(file=io.StringIO(), force_terminal=tty, width=160)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.views.pop(0) if len(self.views) > 1 else self.views[0]

    def long_poll(self, path: str, since: str | None, wait: float
                  ) -> tuple[Any, str | None, str | None]:
        return self.request("GET", path), None, None  # a Shipyard that cannot long-poll


SCRIPT = [view("running", "running", {"drain": drain(3)}),
          view("running", "running", {"drain": drain(3)}),
          view("running", "running", {"drain": drain(2)}),
          view("complete", "success", {"drain": drain(0), "promenade": {}})]


def test_progress_lines_group_the_pods_left_by_reason() -> None:
    assert progress_lines({"details": {"drain": drain(3)}}) == [
        "3 pods left (evicting, 1 removed)",
        "PDB web allows 0 disruptions (needs 3 healthy pods, has 3): 2 pods",
        "eviction lock l2-lock.maintenance.yaook.cloud/x held by agent-1: 1 pod"]
    assert progress_lines({"details": {}}) == []


def test_plain_output_appends_one_block_per_change(capsys: Any) -> None:
    sy = FakeShipyard(list(SCRIPT), "table", tty=False)
    last = watch(sy, "A1", 0.0, None, tty=False)
    out = capsys.readouterr().out.splitlines()
    assert last["state"] == "complete"
    assert sum("decommission.node05 running" in line for line in out) == 2  # 3 left, 2 left
    assert any("PDB web allows 0 disruptions (needs 3 healthy pods, has 3): 2 pods" in line
               for line in out)
    assert any("PDB web allows 0 disruptions (needs 3 healthy pods, has 3): 1 pod" in line
               for line in out)
    assert out[-1].endswith("eviction lock l2-lock.maintenance.yaook.cloud/x held by "
                            "agent-1: 1 pod") or "action A1 complete" in " ".join(out)
    assert "\x1b[" not in "".join(out)  # no cursor movement in a pipe


def test_json_output_is_one_object_per_change(capsys: Any) -> None:
    sy = FakeShipyard(list(SCRIPT), "json", tty=False)
    watch(sy, "A1", 0.0, None, tty=False)
    lines = capsys.readouterr().out.splitlines()
    objects = [json.loads(line) for line in lines]
    assert [o["steps"][0]["details"]["drain"]["pods_left"] for o in objects] == [3, 2, 0]


def test_a_terminal_gets_the_table_redrawn_in_place() -> None:
    sy = FakeShipyard(list(SCRIPT), "table", tty=True)
    watch(sy, "A1", 0.0, None, tty=True)
    screen = sy.console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[" in screen  # cursor movement: redrawn, not appended
    assert "2 pods left (evicting, 2 removed)" in screen


def test_changed_lines_name_only_what_changed() -> None:
    first = changed_lines(None, SCRIPT[0])
    assert first[0].endswith("action A1 running")
    assert changed_lines(SCRIPT[0], SCRIPT[1]) == []


def test_output_option_is_accepted_after_the_subcommand() -> None:
    assert hoist_output(["describe", "action/A1", "-o", "json", "--watch"]) == [
        "-o", "json", "describe", "action/A1", "--watch"]
    assert hoist_output(["get", "actions", "--output=yaml"]) == [
        "--output=yaml", "get", "actions"]
    assert hoist_output(["get", "actions", "-ojson"]) == ["-ojson", "get", "actions"]
    parsed = cli.make_context("shipyard", ["describe", "action/A1", "-o", "json", "--watch"])
    assert parsed.params["output"] == "json"
