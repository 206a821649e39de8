"""A service told to read a config file that is not there refuses to start (exit 2, the
reason on stderr) instead of running on silent defaults: the APIs and both workers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from common.server import run
from drydock_api.worker import main as drydock_worker
from shipyard_api.worker import main as shipyard_worker

COMMANDS: dict[str, Callable[[list[str]], None]] = {
    "api": lambda argv: run("shipyard", lambda: None, 9000, argv),
    "shipyard-worker": shipyard_worker,
    "drydock-worker": drydock_worker,
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_missing_config_file_is_refused(command: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "absent.conf"
    with pytest.raises(SystemExit) as exit_info:
        COMMANDS[command](["--config-file", str(missing)])
    assert exit_info.value.code == 2
    assert f"{missing}: no such file" in capsys.readouterr().err
