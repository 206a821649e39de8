"""The wire types in common/clients/generated/ are what tools/wiretypes.py writes from the
OpenAPI documents now (regenerate with `make wiretypes`), and the clients' own vocabularies
(task and result status enums) list exactly the values the documents do."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import get_args

import pytest

from common.clients import drydock
from common.clients.generated import drydock as wire_drydock

ROOT = Path(__file__).resolve().parents[3]
GENERATED = ROOT / "common" / "clients" / "generated"


def _wiretypes():  # tools/ is no package: load the script the Makefile runs
    spec = importlib.util.spec_from_file_location("wiretypes", ROOT / "tools" / "wiretypes.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("datamodel-codegen", path=str(Path(sys.executable).parent))
                    is None, reason="datamodel-code-generator (the test extra) not installed")
def test_committed_wire_types_are_current(tmp_path: Path) -> None:
    written = _wiretypes().generate(tmp_path)
    assert [p.name for p in written] == sorted(p.name for p in GENERATED.glob("*.py"))
    stale = [p.name for p in written if p.read_text() != (GENERATED / p.name).read_text()]
    assert not stale, f"regenerate with `make wiretypes`: {stale} differ from the documents"


def test_status_enums_list_the_documents_values() -> None:
    assert {s.value for s in drydock.TaskStatus} == set(get_args(wire_drydock.TaskStatus))
    assert {s.value for s in drydock.ResultStatus} == set(get_args(wire_drydock.ResultStatus))
    with pytest.raises(ValueError):
        drydock.task_status("done")
    assert drydock.result_status("partial_success") == "partial_success"
