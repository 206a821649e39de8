"""The top-level message of an error's status body keeps its cause; a database that cannot be
reached is 503 with Retry-After, whichever layer raised it (SQLAlchemy or the driver)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import falcon
import falcon.testing
import pytest
import sqlalchemy
from oslo_config import cfg

from common import config
from common.app import create_service_app, service_spec
from common.errors import BadGateway, ValidationFailed
from common.status import simple_message, status_body, validation_message
from promenade_api.errors import DisassociateStepFailure, DrainNodeError


def test_a_step_error_says_what_failed_and_why_at_the_top() -> None:
    err = DrainNodeError("Drain of node01 failed: HTTP 429: would violate the budget",
                         messages=[simple_message("HTTP 429: would violate the budget")])
    body = err.to_status()
    assert body["message"] == "Drain of node01 failed: HTTP 429: would violate the budget"
    assert body["message"] != "Drain node failed"


def test_a_wrapper_keeps_the_first_cause_of_its_list() -> None:
    failure = DisassociateStepFailure("Decommission failed", messages=[
        simple_message("drain: succeeded", error=False),
        simple_message("remove-etcd: quorum of kubernetes-etcd would be lost"),
        simple_message("etcd-ready: skipped")])
    assert failure.to_status()["message"] == (
        "Decommission failed: remove-etcd: quorum of kubernetes-etcd would be lost "
        "(and 1 more)")


def test_a_peers_error_keeps_the_peers_cause() -> None:
    peer = status_body(500, "Drain of node01 failed: pod db-0 would violate its budget",
                       reason="DisassociateStepFailure",
                       messages=[simple_message("pod db-0 would violate its budget")])
    err = BadGateway("Promenade failed", peer_status=peer)
    assert "db-0 would violate its budget" in err.to_status()["message"]


def test_validation_failures_name_the_first_problem_and_count_the_others() -> None:
    err = ValidationFailed("Invalid action parameters", messages=[
        validation_message(f"problem {i}", name="ActionParameters") for i in range(3)])
    assert err.to_status()["message"] == "Invalid action parameters: problem 0 (and 2 more)"


def test_the_top_level_message_is_bounded() -> None:
    err = ValidationFailed("Invalid", messages=[simple_message("x" * 5000)])
    assert len(err.to_status()["message"]) <= 1000


class Broken:
    """A resource whose database is away, as each layer reports it."""

    auth_required = False

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp

    def on_get(self, req: falcon.Request, resp: falcon.Response, how: str) -> None:
        if how == "driver":  # a raw DBAPI connection checked out of the pool
            raise sqlite3.OperationalError("unable to open database file")
        if how == "sqlalchemy":
            engine = sqlalchemy.create_engine(f"sqlite:///{self.tmp}/missing/dir/x.db")
            with engine.connect() as conn:
                conn.execute(sqlalchemy.text("SELECT 1"))
        if how == "wrapped":
            try:
                raise sqlite3.OperationalError("attempt to write a readonly database")
            except sqlite3.OperationalError as exc:
                raise RuntimeError("could not save") from exc
        if how == "integrity":
            raise sqlite3.IntegrityError("UNIQUE constraint failed")
        raise AssertionError(how)


@pytest.fixture
def client(tmp_path: Path) -> falcon.testing.TestClient:
    conf = cfg.ConfigOpts()
    config.register_common(conf)
    conf([], default_config_files=[])
    spec = service_spec(conf, "shipyard", [("/broken/{how}", Broken(tmp_path))], [])
    return falcon.testing.TestClient(create_service_app(spec))


@pytest.mark.parametrize("how", ["driver", "sqlalchemy", "wrapped"])
def test_a_database_that_cannot_be_reached_is_503_with_retry_after(client: Any,
                                                                   how: str) -> None:
    resp = client.simulate_get(f"/broken/{how}")
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "5"
    assert resp.json["reason"] == "ServiceUnavailable" and resp.json["retry"] is True
    assert "database" in resp.json["message"]


def test_a_database_bug_is_still_500(client: Any) -> None:
    resp = client.simulate_get("/broken/integrity")
    assert resp.status_code == 500 and "Retry-After" not in resp.headers
