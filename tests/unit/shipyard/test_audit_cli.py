"""`shipyard audit verify` / `audit list` over HTTP, and `shipyard-db` / `drydock-db
audit-verify` on the database: exit 0 while the chains hold, 1 naming a broken link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from sqlalchemy import text

from common.audit import Actor, append
from tests.unit.shipyard.conftest import Harness
from tests.unit.shipyard.test_cli import run, served  # noqa: F401 - the served fixture

SERVED = tuple[str, dict[str, str]]


def _tamper(harness: Harness, seq: int = 2) -> None:
    with harness.engine_db.begin() as conn:
        conn.execute(text("UPDATE audit_entries SET payload = replace(payload, 'pending', "
                          f"'running') WHERE stream = 'shipyard.actions' AND seq = {seq}"))


def test_shipyard_audit_verify_and_list(served: SERVED, harness: Harness) -> None:  # noqa: F811
    harness.commit(tag="site-action-success")
    action = harness.create("redeploy_server", {"target_nodes": "node01"})
    harness.drive(action["id"])
    ok = run(served, "audit", "verify")
    assert ok.exit_code == 0, ok.output
    assert "shipyard.actions" in ok.output and "Every audit chain holds" in ok.output
    listed = run(served, "-o", "json", "audit", "list", "--stream", "shipyard.actions",
                 "--limit", "1")
    assert listed.exit_code == 0 and '"change": "created"' in listed.output
    _tamper(harness, 1)
    bad = run(served, "audit", "verify")
    assert bad.exit_code == 1
    assert "stream shipyard.actions seq 1" in bad.output and "expected" in bad.output
    assert run(served, "audit", "verify", token="reader").exit_code == 1  # 403


def _db(kind: str, tmp_path: Path) -> tuple[Any, str]:
    url = f"sqlite:///{tmp_path}/{kind}.db"
    if kind == "shipyard":
        from shipyard_api.db import make_engine, upgrade
        from shipyard_api.db.cli import main
    else:
        from drydock_api.db import make_engine, upgrade
        from drydock_api.db.cli import main  # type: ignore[no-redef]
    upgrade(url)
    engine = make_engine(url)
    for i in range(3):
        with engine.begin() as conn:
            append(conn, f"{kind}.things", f"thing/{i}", "state", None, "pending",
                   at=float(i), actor=Actor("admin"))
    return main, url


def test_service_db_audit_verify(tmp_path: Path) -> None:
    for kind in ("shipyard", "drydock"):
        main, url = _db(kind, tmp_path)
        ok = CliRunner().invoke(main, ["audit-verify", "--url", url])
        assert ok.exit_code == 0, ok.output
        assert f"{kind}.things: 3 entries" in ok.output
        from sqlalchemy import create_engine
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM audit_entries WHERE seq = 3"))
        engine.dispose()
        bad = CliRunner().invoke(main, ["audit-verify", "--url", url])
        assert bad.exit_code == 1
        assert f"stream {kind}.things seq 3" in bad.output
